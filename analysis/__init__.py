"""Analysis: mixed models, contrasts, bootstrap intervals and reports.

Entry point: ``python -m analysis.compare`` (see :mod:`analysis.compare`), or :func:`compare` with a
:class:`CompareConfig`. Every number lands in ``stats.json`` (schema :class:`Stats`).
"""

from analysis._compare import CompareConfig, compare
from analysis._data import InputError, ProviderData
from analysis._load import load_provider
from analysis._schema import STATS_FORMAT_VERSION, Correction, Settings, Stats
from analysis._stats import compute_stats

__all__ = [
    "STATS_FORMAT_VERSION",
    "CompareConfig",
    "Correction",
    "InputError",
    "ProviderData",
    "Settings",
    "Stats",
    "compare",
    "compute_stats",
    "load_provider",
]
