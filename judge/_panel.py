"""A judge panel: ``judge.run RUN --judge A --judge B --judge C`` scores with each judge, then
writes the panel's mean per assertion as its own judge (``scores/panel-....jsonl``).

A member's verdict counts for an assertion when it decided it (non-null, in a scored dimension);
the panel's assertion score is the mean of those verdicts, so it may lie between grid points.
An answer any member could not judge for infrastructure reasons is an infrastructure failure for
the panel too.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

from judge._base import dimension_from_assertions, mean, overall_score, stable_hash
from ledgerbench_core.dataset import Dimension
from ledgerbench_core.scores import (
    AssertionScore,
    DimensionScore,
    DimensionStatus,
    JudgeManifest,
    ScoreRecord,
    ScoreStatus,
)


def panel_name(members: list[str]) -> str:
    return "panel-" + stable_hash(sorted(members))[:8]


def panel_records(members: dict[str, list[ScoreRecord]], name: str) -> list[ScoreRecord]:
    """One record per answer every member scored: the mean of the members' assertion verdicts."""
    by_key: dict[tuple[str, int], dict[str, ScoreRecord]] = defaultdict(dict)
    for judge, records in members.items():
        for record in records:
            by_key[(record.question_id, record.trial)][judge] = record
    panel = []
    for (question_id, trial), records in sorted(by_key.items()):
        if len(records) < len(members):
            continue  # not every member has judged it (yet)
        first = next(iter(records.values()))
        base = {
            "question_id": question_id,
            "trial": trial,
            "task_type": first.task_type,
            "judge": name,
            "answer_sha256": first.answer_sha256,
            "judged_at": dt.datetime.now(dt.UTC),
            "grading_version": "panel("
            + ",".join(f"{j}:{r.grading_version}" for j, r in sorted(records.items()))
            + ")",
            "item_sha256": first.item_sha256,
            "erp_snapshot_hash": first.erp_snapshot_hash,
            "world_snapshot_hash": first.world_snapshot_hash,
        }
        if any(r.status is ScoreStatus.infra_error for r in records.values()):
            panel.append(ScoreRecord(status=ScoreStatus.infra_error, extra={}, **base))
            continue
        unscored = [r.unscored_reason for r in records.values() if r.status is ScoreStatus.unscored]
        if unscored:  # a member could not check it: the panel's mean would drop that check
            panel.append(
                ScoreRecord(status=ScoreStatus.unscored, unscored_reason=unscored[0], **base)
            )
            continue
        dimensions = _mean_dimensions(records)
        panel.append(
            ScoreRecord(
                status=ScoreStatus.scored,
                dimensions=dimensions,
                overall=overall_score(dimensions),
                extra={"members": {j: r.overall for j, r in records.items()}},
                **base,
            )
        )
    return panel


def _mean_dimensions(records: dict[str, ScoreRecord]) -> dict[Dimension, DimensionScore]:
    verdicts: dict[Dimension, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    order: dict[Dimension, list[str]] = defaultdict(list)
    errors: dict[Dimension, int] = defaultdict(int)
    for record in records.values():
        for dimension, score in record.dimensions.items():
            if score.status is DimensionStatus.judge_error:
                errors[dimension] += 1
                continue
            for assertion in score.assertions:
                if assertion.assertion_id not in order[dimension]:
                    order[dimension].append(assertion.assertion_id)
                if assertion.score is not None and score.status is DimensionStatus.scored:
                    verdicts[dimension][assertion.assertion_id].append(assertion.score)
    dimensions = {}
    for dimension in set(order) | set(errors):
        if not order[dimension]:
            dimensions[dimension] = DimensionScore(
                status=DimensionStatus.judge_error, error="every panel member failed"
            )
            continue
        assertions = []
        for assertion_id in order[dimension]:
            scores = verdicts[dimension].get(assertion_id, [])
            assertions.append(
                AssertionScore(
                    assertion_id=assertion_id,
                    score=mean(scores),
                    reason=f"mean of {len(scores)} of {len(records)} panel verdicts",
                    decided_by="panel",
                )
            )
        dimensions[dimension] = dimension_from_assertions(
            assertions, undecided_status=DimensionStatus.not_applicable
        )
    return dict(sorted(dimensions.items(), key=lambda kv: list(Dimension).index(kv[0])))


def write_panel(run_dir: Path, member_names: list[str], name: str | None = None) -> Path:
    """Write ``scores/<name>.jsonl`` and its manifest from the members' scores files."""
    from judge._runner import read_scores

    scores_dir = run_dir / "scores"
    name = name or panel_name(member_names)
    members = {m: read_scores(scores_dir / f"{m}.jsonl")[0] for m in member_names}
    records = panel_records(members, name)
    path = scores_dir / f"{name}.jsonl"
    temporary = path.with_suffix(".jsonl.tmp")
    temporary.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    temporary.replace(path)
    hashes = {}
    for member in member_names:
        manifest_path = scores_dir / f"{member}.manifest.json"
        if manifest_path.exists():
            hashes[member] = JudgeManifest.model_validate_json(
                manifest_path.read_text(encoding="utf-8")
            ).instructions_hash
    now = dt.datetime.now(dt.UTC)
    manifest = JudgeManifest(
        judge=name,
        model=None,
        mode="panel",
        settings={"judge": "panel", "members": member_names},
        grading_version=records[0].grading_version if records else None,
        instructions_hash=stable_hash(hashes),
        run_dir=str(run_dir),
        started_at=now,
        finished_at=now,
        counts={
            "records": len(records),
            "scored": sum(r.status is ScoreStatus.scored for r in records),
            "infra_error": sum(r.status is ScoreStatus.infra_error for r in records),
        },
    )
    (scores_dir / f"{name}.manifest.json").write_text(
        manifest.model_dump_json(indent=2) + "\n", encoding="utf-8"
    )
    return path
