"""What every judge receives and returns, and the score arithmetic shared by all judges."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from ledgerbench_core.dataset import Dimension, Question
from ledgerbench_core.scores import AssertionScore, DimensionScore, DimensionStatus
from ledgerbench_core.trajectory import TrajectoryRecord, Usage

ALLOWED_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)


class JudgeAbort(RuntimeError):
    """The judge cannot work at all (bad credentials, unknown model, no billing): stop the run
    instead of filling the scores file with judge errors."""


class JudgeUnreachable(JudgeAbort):
    """The judge model does not answer (connection refused, no reply in time): the pre-flight
    call failed, or the circuit breaker tripped after records in a row could not reach it."""


UNREACHABLE = "judge_unreachable"
"""``ScoreRecord.extra`` key: the transport error with which the judge model could not be reached
for this record (an infrastructure failure of the judge, counted by the circuit breaker)."""
GRADING_FAILED = "grading_failed"
"""``extra`` key of a conversation a model judge could not grade: the dimensions that failed. The
record is ``unscored`` and a plain resume judges it again."""

NEEDS_LLM = "needs an LLM judge"


@dataclass
class JudgeItem:
    """One trajectory to score, with its question and the evidence the agent saw."""

    question: Question
    trajectory: TrajectoryRecord


@dataclass
class JudgeOutcome:
    """A judge's verdict on one trajectory, before the runner wraps it into a ScoreRecord."""

    dimensions: dict[Dimension, DimensionScore]
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    calls: int = 0
    """Model calls actually made (cache hits excluded)."""
    cache_hits: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    unscored: str | None = None
    """Set when a check the answer needs could not run (no ERP or world database): the record is
    ``unscored``, neither right nor wrong."""


class Judge(Protocol):
    """A judge scores a trajectory's answer on the question's dimensions."""

    name: str
    """Default scores-file name, e.g. ``openai-gpt-5.2`` or ``rules``."""
    model: str | None
    mode: str

    def settings(self) -> dict[str, Any]:
        """Everything that changes scores (model, temperature, mode, limits); recorded, hashed."""
        ...

    def instructions_hash(self) -> str:
        """Hash of the instruction texts (rubrics, prompts, rule versions)."""
        ...

    def score(self, item: JudgeItem) -> JudgeOutcome: ...


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stable_hash(value: Any) -> str:
    """SHA-256 of the canonical JSON of ``value``."""
    return sha256_text(json.dumps(value, sort_keys=True, default=str, separators=(",", ":")))


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def dimension_from_assertions(
    assertions: list[AssertionScore], *, undecided_status: DimensionStatus
) -> DimensionScore:
    """Dimension score = mean of the non-null assertion scores.

    With no score at all the status is ``undecided_status`` (``not_applicable`` for an LLM judge,
    ``needs_llm`` when the rules left every assertion to an LLM).
    """
    scores = [a.score for a in assertions if a.score is not None]
    if not scores:
        status = undecided_status
        if undecided_status is DimensionStatus.needs_llm and all(a.decided_by for a in assertions):
            status = DimensionStatus.not_applicable  # every rule ruled its assertion out
        return DimensionScore(status=status, assertions=assertions)
    return DimensionScore(status=DimensionStatus.scored, score=mean(scores), assertions=assertions)


def overall_score(dimensions: dict[Dimension, DimensionScore]) -> float | None:
    """Question overall = mean of its scored dimensions (judge errors and n/a are left out)."""
    return mean(
        [
            d.score
            for d in dimensions.values()
            if d.status is DimensionStatus.scored and d.score is not None
        ]
    )


def answer_is_empty(answer: str) -> bool:
    return not answer.strip()


def zero_dimensions(question: Question, reason: str) -> dict[Dimension, DimensionScore]:
    """Every assertion 0: the user got nothing (an empty answer)."""
    return {
        dimension: DimensionScore(
            status=DimensionStatus.scored,
            score=0.0,
            assertions=[
                AssertionScore(
                    assertion_id=a.id, score=0.0, reason=reason, decided_by="empty_answer"
                )
                for a in assertions
            ],
        )
        for dimension, assertions in question.tags.items()
        if assertions
    }
