"""What made a score: the grading version of each judge, recorded in every score record.

The rules judge's version (``RULES_GRADING_VERSION``, bumped whenever a rule changes what it
accepts) and :func:`current_grading_version` live in :mod:`ledgerbench_core._grading`, where the
coverage label every stage prints can read them; this module re-exports them.
"""

from __future__ import annotations

from typing import Any

from ledgerbench_core._grading import (
    RULES_GRADING,
    RULES_GRADING_VERSION,
    current_grading_version,
)


def grading_version(judge: Any) -> str:
    """The grading version of ``judge``: its own ``grading_version`` (the rules judge's
    ``rules-gN``; an LLM judge with ``--with-rules`` adds the rules'), else a hash of its
    instructions (an LLM judge's rubric texts: a rubric change is a new grading)."""
    own = getattr(judge, "grading_version", None)
    if isinstance(own, str) and own:
        return own
    return f"instructions-{judge.instructions_hash()[:12]}"


def judge_version(judge: Any) -> str:
    """The judge's version: the rules version for the rules judge, else the model and its
    settings' hash."""
    own = getattr(judge, "version", None)
    if isinstance(own, str) and own:
        return own
    from judge._base import stable_hash

    model = getattr(judge, "model", None) or getattr(judge, "mode", "judge")
    return f"{model}@{stable_hash(judge.settings())[:12]}"


__all__ = [
    "RULES_GRADING",
    "RULES_GRADING_VERSION",
    "current_grading_version",
    "grading_version",
    "judge_version",
]
