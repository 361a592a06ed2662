"""Moved to :mod:`ledgerbench_core.scores`: this path re-exports its public names for one
version (see the README, "Moved in this version")."""

from ledgerbench_core.scores import (
    SCORE_FORMAT_VERSION,
    AssertionScore,
    DimensionScore,
    DimensionStatus,
    JudgeManifest,
    ScoreRecord,
    ScoreStatus,
)

__all__ = [
    "SCORE_FORMAT_VERSION",
    "AssertionScore",
    "DimensionScore",
    "DimensionStatus",
    "JudgeManifest",
    "ScoreRecord",
    "ScoreStatus",
]
