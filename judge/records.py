"""Moved to :mod:`ledgerbench_core.scores`: this path re-exports its public names for one
version (see the README, "Moved in this version")."""

from ledgerbench_core.scores import *  # noqa: F403
from ledgerbench_core.scores import __all__ as __all__
