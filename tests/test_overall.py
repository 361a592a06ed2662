"""One Overall (issue 25): one run through judge.summary, analysis.compare, the pipeline headline,
the viewer and the Inspect export shows the same figure, the paper's Overall: the mean of the
dimension scores, each an equal-weight mean over the task types it has scores in (a question's
trials averaged first). The per-answer mean every tool also shows is called answer_mean."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest

from ledgerbench_core._overall import ScoredAnswer, overall, overall_text, run_overall
from ledgerbench_core.dataset import Dimension, TaskType
from ledgerbench_core.scores import DimensionScore, DimensionStatus, ScoreRecord, ScoreStatus
from tests.fakes.judge_data import question, trajectory, write_run

pytestmark = pytest.mark.timeout(300)

# Hand-computed. Per question (trials averaged): q1 accuracy (1 + 0.5) / 2 = 0.75, clarity 0.5;
# q2 accuracy 0, clarity 1; r1 clarity 0.25, recency 1. Dimensions, equal weight over task
# types: accuracy (0.75 + 0) / 2 = 0.375; clarity ((0.5 + 1) / 2 + 0.25) / 2 = 0.5; recency 1.
EXPECTED_OVERALL = (0.375 + 0.5 + 1.0) / 3  # 0.625
# The per-answer mean, averaged the same way: obligations ((0.75 + 0.5) / 2 + 0.5) / 2 =
# 0.5625, research 0.625 -> 0.59375. Another figure, so another name.
EXPECTED_ANSWER_MEAN = (0.5625 + 0.625) / 2

SCORES = {  # (question, trial) -> dimension -> score
    ("q1", 0): {Dimension.accuracy: 1.0, Dimension.clarity: 0.5},
    ("q1", 1): {Dimension.accuracy: 0.5, Dimension.clarity: 0.5},
    ("q2", 0): {Dimension.accuracy: 0.0, Dimension.clarity: 1.0},
    ("r1", 0): {Dimension.clarity: 0.25, Dimension.recency: 1.0},
}


def test_the_definition_by_hand() -> None:
    answers = [
        ScoredAnswer(qid, "obligations" if qid.startswith("q") else "research", {
            d.value: v for d, v in dims.items()
        })
        for (qid, _trial), dims in SCORES.items()
    ]  # fmt: skip
    assert run_overall(answers) == pytest.approx(EXPECTED_OVERALL)
    # a task type or dimension added later enters by having scores (general over task types)
    assert overall({"accuracy": {"a": 1.0, "b": 0.0}, "new": {"c": 0.5}}) == pytest.approx(0.5)
    assert overall({}) is None and overall_text(None) == "-"


def _record(qid: str, trial: int, task_type: TaskType, dims: dict) -> ScoreRecord:
    dimensions = {
        d: DimensionScore(status=DimensionStatus.scored, score=v) for d, v in dims.items()
    }
    dimensions[Dimension.structure] = DimensionScore(status=DimensionStatus.judge_error, error="x")
    return ScoreRecord(
        question_id=qid,
        trial=trial,
        task_type=task_type,
        judge="rules",
        status=ScoreStatus.scored,
        dimensions=dimensions,
        overall=sum(dims.values()) / len(dims),
        answer_sha256="0" * 64,
        judged_at=dt.datetime(2026, 3, 2, tzinfo=dt.UTC),
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tags = {Dimension.accuracy: ["accuracy.ground_truth"], Dimension.clarity: ["clarity.x"]}
    research_tags = {Dimension.clarity: ["clarity.x"], Dimension.recency: ["recency.x"]}
    questions = [
        question("q1", tags=tags),
        question("q2", tags=tags),
        question("r1", task_type=TaskType.entity_performance, tags=research_tags),
    ]
    trajectories = [
        trajectory(
            qid,
            trial=trial,
            task_type=TaskType.obligations if qid.startswith("q") else TaskType.entity_performance,
        )
        for qid, trial in SCORES
    ]
    run = write_run(tmp_path_factory.mktemp("overall") / "run", questions, trajectories)
    from judge._base import sha256_text

    records = []
    for (qid, trial), dims in SCORES.items():
        task_type = TaskType.obligations if qid.startswith("q") else TaskType.entity_performance
        record = _record(qid, trial, task_type, dims)
        record.answer_sha256 = sha256_text(trajectories[0].answer)
        records.append(record)
    (run / "scores").mkdir()
    (run / "scores" / "rules.jsonl").write_text(
        "".join(r.model_dump_json() + "\n" for r in records)
    )
    return run


def test_one_run_shows_one_overall_in_all_five_tools(run_dir: Path, tmp_path: Path, capsys) -> None:
    shown = overall_text(EXPECTED_OVERALL)  # "0.625"

    # 1. judge.summary
    from judge.summary import main as summary_main

    assert summary_main([str(run_dir), "--judge", "rules", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["rules"]
    assert summary["overall"] == pytest.approx(EXPECTED_OVERALL)
    assert summary["equal_weight"]["answer_mean"]["mean"] == pytest.approx(EXPECTED_ANSWER_MEAN)
    assert summary_main([str(run_dir), "--judge", "rules"]) == 0
    assert f"Overall {shown}" in capsys.readouterr().out

    # 2. analysis.compare
    from analysis.compare import main as compare_main

    report = tmp_path / "report"
    assert compare_main([str(run_dir), "--judge", "rules", "--out", str(report), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert f": Overall {shown}" in printed
    stats = json.loads((report / "stats.json").read_text())
    (row,) = stats["headline"]
    assert row["overall"]["score"] == pytest.approx(EXPECTED_OVERALL)
    # One entity-performance item: its variance (hence the Overall's) cannot be estimated.
    assert row["overall"]["ci_low"] is None
    assert row["answer_mean"]["score"] == pytest.approx(EXPECTED_ANSWER_MEAN)

    # 3. the pipeline headline (from the report's stats.json)
    from ledgerbench.pipeline import headline

    assert any(f"Overall {shown}" in line for line in headline(report))

    # 4. the viewer
    from ledgerbench.viewer._build import build_viewer

    page, _ = build_viewer([run_dir], tmp_path / "viewer")
    index = json.loads(re.search(r'id="lb-index">(.*?)</script>', page.read_text()).group(1))
    assert index["runs"][0]["overall"] == {"rules": shown}

    # 5. the Inspect export
    inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect-ai not installed")
    from ledgerbench._inspect_log import export_inspect

    out, _ = export_inspect(run_dir, tmp_path / "run.eval")
    (scores,) = inspect_log.read_eval_log(str(out)).results.scores
    assert overall_text(scores.metrics["overall"].value) == shown
    assert scores.metrics["answer_mean"].value == pytest.approx(EXPECTED_ANSWER_MEAN)
