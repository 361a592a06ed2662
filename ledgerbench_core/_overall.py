"""The Overall, defined once (docs/statistics.md, "The Overall").

Overall = the mean of the dimension scores, each dimension an equal-weight mean over the task
types it has scores in, each of those the mean over questions (a question's trials averaged
first) of the answers' scored dimension values. It is FORCE-Bench's headline (Table 1's Overall
row: Opus 5.07 / 8 = 0.63). ``judge.summary``, ``analysis.compare`` (the point estimate; its
bootstrap resamples the same formula), the pipeline headline, the viewer and the Inspect export
all compute it with :func:`run_overall` / :func:`overall`; any other aggregate they show has
another name (``answer_mean``: the judge's per-answer mean of scored dimensions, averaged the
same way).

The Overall stays the paper's: accuracy enters it from obligations only. Accuracy of research
items keyed on a world (LedgerBench's extension: the published benchmark had no key for them) is
reported beside it (:func:`extension_accuracy`), never mixed into it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

OVERALL = "overall"
ANSWER_MEAN = "answer_mean"
"""The per-answer mean of the scored dimensions (``ScoreRecord.overall`` in a scores file)."""


@dataclass(frozen=True)
class ScoredAnswer:
    """One judged answer as the Overall needs it."""

    question_id: str
    task_type: str
    dimensions: Mapping[str, float] = field(default_factory=dict)
    """Dimension -> score, the scored dimensions only (judge errors, n/a, needs_llm left out)."""
    answer_mean: float | None = None
    """The judge's per-answer mean (``ScoreRecord.overall``)."""


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def dimension_means(answers: Iterable[ScoredAnswer]) -> dict[str, dict[str, float]]:
    """Dimension -> task type -> mean over questions (each question's trials averaged first)."""
    per_question: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for answer in answers:
        for dimension, value in answer.dimensions.items():
            per_question[(dimension, answer.task_type, answer.question_id)].append(value)
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (dimension, task_type, _question), values in per_question.items():
        cells[(dimension, task_type)].append(sum(values) / len(values))
    means: dict[str, dict[str, float]] = defaultdict(dict)
    for (dimension, task_type), values in cells.items():
        means[dimension][task_type] = sum(values) / len(values)
    return dict(means)


def answer_means(answers: Iterable[ScoredAnswer]) -> dict[str, float]:
    """Task type -> mean over questions of the per-answer mean (trials averaged first)."""
    per_question: dict[tuple[str, str], list[float]] = defaultdict(list)
    for answer in answers:
        if answer.answer_mean is not None:
            per_question[(answer.task_type, answer.question_id)].append(answer.answer_mean)
    cells: dict[str, list[float]] = defaultdict(list)
    for (task_type, _question), values in per_question.items():
        cells[task_type].append(sum(values) / len(values))
    return {task_type: sum(v) / len(v) for task_type, v in cells.items()}


def equal_weight(by_task_type: Mapping[str, float | None]) -> float | None:
    """The mean over the task types that have a value (each weighs the same)."""
    return _mean(v for v in by_task_type.values() if v is not None and v == v)


OPERATIONS_DIMENSIONS = (
    *("accuracy", "citations", "clarity", "depth"),
    *("groundedness", "recency", "relevance", "structure"),
)
EXTENSION_CELLS = frozenset(
    {
        ("accuracy", "entity_performance"),
        ("accuracy", "business_brief"),
        *((dimension, "operations") for dimension in OPERATIONS_DIMENSIONS),
    }
)
"""(dimension, task type) cells the paper's Overall does not have: accuracy of research items and
every dimension of conversations (operations)."""


def paper_cells(
    means: Mapping[str, Mapping[str, float | None]],
) -> dict[str, dict[str, float | None]]:
    """``means`` without the extension's cells (the paper's Table 1 rows)."""
    return {
        dimension: {t: v for t, v in cells.items() if (dimension, t) not in EXTENSION_CELLS}
        for dimension, cells in means.items()
    }


def extension_accuracy(means: Mapping[str, Mapping[str, float | None]]) -> dict[str, float]:
    """Task type -> accuracy of research items keyed on a world (LedgerBench's extension)."""
    cells = means.get("accuracy", {})
    return {t: v for t, v in cells.items() if ("accuracy", t) in EXTENSION_CELLS and v is not None}


def overall(means: Mapping[str, Mapping[str, float | None]]) -> float | None:
    """The Overall of dimension -> task type -> mean: the mean over dimensions of each
    dimension's equal-weight mean over its task types (the paper's cells only). None without any
    score."""
    cells = paper_cells(means)
    return _mean(
        value for value in (equal_weight(task) for task in cells.values()) if value is not None
    )


def run_overall(answers: Iterable[ScoredAnswer], task_type: str | None = None) -> float | None:
    """The Overall of a set of judged answers (of one task type when given)."""
    chosen = [a for a in answers if task_type is None or a.task_type == task_type]
    return overall(dimension_means(chosen))


def overall_text(value: float | None) -> str:
    """How every tool prints an Overall (three decimals; "-" when there is none)."""
    return "-" if value is None else f"{value:.3f}"


def scored_answers(records: Iterable[Any]) -> list[ScoredAnswer]:
    """:class:`ScoredAnswer` of scores-file records (``ledgerbench_core.scores.ScoreRecord``
    or the same fields as a JSON mapping); unjudged records (infrastructure failures) are left
    out."""
    found = []
    for record in records:
        if not isinstance(record, Mapping):  # a ScoreRecord: read its fields as JSON values
            record = {
                "status": str(record.status),
                "question_id": record.question_id,
                "task_type": str(record.task_type),
                "overall": record.overall,
                "dimensions": {
                    str(d): {"status": str(s.status), "score": s.score}
                    for d, s in record.dimensions.items()
                },
            }
        if record.get("status") != "scored":
            continue
        dimensions = {
            str(name): float(score["score"])
            for name, score in (record.get("dimensions") or {}).items()
            if score.get("status") == "scored" and score.get("score") is not None
        }
        found.append(
            ScoredAnswer(
                question_id=str(record["question_id"]),
                task_type=str(record["task_type"]),
                dimensions=dimensions,
                answer_mean=record.get("overall"),
            )
        )
    return found
