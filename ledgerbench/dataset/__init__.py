"""Moved to :mod:`ledgerbench_core.dataset`: this path re-exports its public names for one
version (see the README, "Moved in this version")."""

from ledgerbench_core.dataset import *  # noqa: F403
from ledgerbench_core.dataset import __all__ as __all__
