"""Builders for judge tests: questions, trajectories and a run directory on disk."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

from ledgerbench_core.dataset import (
    Assertion,
    Dataset,
    DatasetHeader,
    Dimension,
    ExpectedFact,
    Question,
    TaskType,
    dataset_hash,
    write_dataset,
)
from ledgerbench_core.trajectory import RunManifest, Status, ToolCall, TrajectoryRecord

NOW = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


def assertion(assertion_id: str, text: str | None = None) -> Assertion:
    return Assertion(id=assertion_id, text=text or f"text of {assertion_id}")


def question(
    qid: str = "q1",
    *,
    task_type: TaskType = TaskType.obligations,
    tags: dict[Dimension, list[str]] | None = None,
    expected: list[ExpectedFact] | None = None,
    record_refs: list[str] | None = None,
    ground_truth: str | None = "The balance of SYNCUS-0001 is USD 1,234.56.",  # obligations only
    query: str = "What is the open balance of SYNCUS-0001 in USMF as of March 2, 2026?",
    legal_entity: str | None = None,
    as_of: dt.date | None = None,
) -> Question:
    tags = tags or {
        Dimension.accuracy: ["accuracy.ground_truth"],
        Dimension.clarity: ["clarity.acronyms", "clarity.consistent_terms"],
    }
    return Question(
        id=qid,
        query=query,
        task_type=task_type,
        segment="AR" if task_type is TaskType.obligations else "Financial Performance",
        scenario="Outstanding Balance" if task_type is TaskType.obligations else "x",
        tags={d: [assertion(i) for i in ids] for d, ids in tags.items()},
        ground_truth=ground_truth if task_type is TaskType.obligations else None,
        expected=expected or [],
        record_refs=record_refs or [],
        legal_entity=legal_entity,
        as_of=as_of,
    )


def trajectory(
    qid: str = "q1",
    answer: str = "The open balance is USD 1,234.56.",
    *,
    status: Status = Status.ok,
    task_type: TaskType = TaskType.obligations,
    trial: int = 0,
    tool_calls: list[ToolCall] | None = None,
    **extra: Any,
) -> TrajectoryRecord:
    # A plain mapping: the version-1 reader derives the termination from it before validation.
    error = {"class": "ConnectionError", "message": "ERP down"} if status is Status.error else None
    return TrajectoryRecord(
        question_id=qid,
        trial=trial,
        task_type=task_type,
        harness="scripted",
        answer=answer,
        status=status,
        error=error,
        latency_s=1.0,
        timeout_s=60.0,
        tool_calls=tool_calls or [],
        started_at=NOW,
        finished_at=NOW,
        **extra,
    )


def dataset(questions: list[Question]) -> Dataset:
    return Dataset(
        header=DatasetHeader(name="judge-test", rubric_version="rubric-test"), items=questions
    )


def write_run(
    run_dir: Path,
    questions: list[Question],
    trajectories: list[TrajectoryRecord],
    *,
    erp_db_url: str | None = None,
    erp_snapshot_hash: str | None = None,
    harness: str = "scripted",
    model: str | None = None,
) -> Path:
    """A run directory as python -m harnesses.run writes it: manifest, trajectories, dataset."""
    run_dir.mkdir(parents=True, exist_ok=True)
    data = dataset(questions)
    dataset_path = write_dataset(data, run_dir / "dataset.yaml")
    manifest = RunManifest(
        run_id=run_dir.name,
        command=["python", "-m", "harnesses.run"],
        config={},
        config_fingerprint="x",
        harness=harness,
        model=model,
        timeouts={"obligations": 60.0},
        dataset_path=str(dataset_path),
        dataset_hash=dataset_hash(data),
        question_count=len(questions),
        erp_db_url=erp_db_url,
        erp_snapshot_hash=erp_snapshot_hash,
        system_prompt_hash="x",
        started_at=NOW,
    )
    (run_dir / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    (run_dir / "trajectories.jsonl").write_text(
        "".join(t.model_dump_json(by_alias=True) + "\n" for t in trajectories), encoding="utf-8"
    )
    return run_dir


class ConstantJudge:
    """Plug-in judge (``--judge tests.fakes.judge_data:ConstantJudge``): 0.5 on every assertion."""

    name = "constant"
    model = None
    mode = "constant"

    def __init__(self, **options: Any) -> None:
        self.options = options

    def settings(self) -> dict[str, Any]:
        return {"judge": "constant"}

    def instructions_hash(self) -> str:
        return "constant-1"

    def score(self, item: Any) -> Any:
        from judge import AssertionScore, JudgeOutcome, dimension_from_assertions
        from ledgerbench_core.scores import DimensionStatus

        return JudgeOutcome(
            dimensions={
                dimension: dimension_from_assertions(
                    [AssertionScore(assertion_id=a.id, score=0.5) for a in assertions],
                    undecided_status=DimensionStatus.not_applicable,
                )
                for dimension, assertions in item.question.tags.items()
            }
        )


def two_customers(db_url: str) -> tuple[str, str, str]:
    """A real customer of the ERP at ``db_url``, its legal entity and another customer there:
    (legal_entity, account, other_account)."""
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as db:
        le, account = db.execute(
            "select legal_entity, account from customer order by account limit 1"
        ).fetchone()
        other = db.execute(
            "select account from customer where legal_entity = ? and account != ? "
            "order by account limit 1",
            (le, account),
        ).fetchone()[0]
    return le, account, other
