"""Moved to :mod:`ledgerbench_core.trajectory`: this path re-exports its public names for one
version (see the README, "Moved in this version")."""

from ledgerbench_core.trajectory import *  # noqa: F403
from ledgerbench_core.trajectory import __all__ as __all__
