"""Moved to :mod:`judge.linked`: this path re-exports its public names for one
version (see the README, "Moved in this version")."""

from judge.linked import *  # noqa: F403
from judge.linked import __all__ as __all__
