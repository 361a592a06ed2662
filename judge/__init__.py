"""Judge: LLM rubric judge (DSPy) and deterministic checks, scoring trajectories on eight dimensions."""

from judge.records import (
    AssertionScore,
    DimensionScore,
    DimensionStatus,
    JudgeManifest,
    ScoreRecord,
    ScoreStatus,
)

__all__ = [
    "AssertionScore",
    "DimensionScore",
    "DimensionStatus",
    "JudgeManifest",
    "ScoreRecord",
    "ScoreStatus",
]
