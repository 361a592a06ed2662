"""Judge panels (mean verdict per assertion as its own judge) and the self-preference fit."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from judge._panel import panel_records
from judge._runner import read_scores
from judge.compare import main as compare_main
from judge.run import main as run_main
from ledgerbench_core.dataset import Dimension, ExpectedFact, TaskType
from ledgerbench_core.scores import (
    AssertionScore,
    DimensionScore,
    DimensionStatus,
    JudgeManifest,
    ScoreRecord,
    ScoreStatus,
)
from tests.fakes.judge_data import question, trajectory, write_run

pytestmark = pytest.mark.timeout(120)
NOW = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)


def test_panel_cli_writes_the_mean_per_assertion_as_its_own_judge(tmp_path, capsys) -> None:
    q = question(
        "q0", expected=[ExpectedFact(kind="amount", field="balance", value=1234.56, tolerance=0.01)]
    )
    run = write_run(tmp_path / "run", [q], [trajectory("q0", answer="SYNCUS-0001: USD 1,234.56.")])
    argv = [str(run), "--judge", "rules", "--judge", "tests.fakes.judge_data:ConstantJudge"]
    assert run_main([*argv, "--name", "panel-two", "--no-progress"]) == 0
    assert "panel of rules, constant" in capsys.readouterr().out
    (record,), _ = read_scores(run / "scores" / "panel-two.jsonl")
    accuracy = record.dimensions[Dimension.accuracy]
    assert accuracy.assertions[0].score == pytest.approx(0.75)  # rules 1, constant 0.5
    assert accuracy.assertions[0].decided_by == "panel"
    clarity = record.dimensions[Dimension.clarity]  # the rules leave clarity to an LLM
    assert clarity.score == pytest.approx(0.5)
    assert record.extra["members"] == {"rules": pytest.approx(1.0), "constant": 0.5}
    manifest = json.loads((run / "scores" / "panel-two.manifest.json").read_text())
    assert manifest["mode"] == "panel" and manifest["settings"]["members"] == ["rules", "constant"]
    # the members' own scores files are there too
    assert (run / "scores" / "rules.jsonl").exists() and (
        run / "scores" / "constant.jsonl"
    ).exists()


def _record(qid: str, judge: str, score: float | None, status=ScoreStatus.scored) -> ScoreRecord:
    dims = {}
    if score is not None:
        dims[Dimension.accuracy] = DimensionScore(
            status=DimensionStatus.scored,
            score=score,
            assertions=[AssertionScore(assertion_id="accuracy.ground_truth", score=score)],
        )
    return ScoreRecord(
        question_id=qid,
        task_type=TaskType.obligations,
        judge=judge,
        status=status,
        dimensions=dims,
        overall=score,
        answer_sha256="x",
        judged_at=NOW,
    )


def test_panel_records_skip_failed_members_and_keep_infrastructure_failures() -> None:
    members = {
        "a": [_record("q0", "a", 1.0), _record("q1", "a", None, ScoreStatus.infra_error)],
        "b": [_record("q0", "b", 0.25), _record("q1", "b", None, ScoreStatus.infra_error)],
        "c": [
            _record("q0", "c", None).model_copy(
                update={
                    "dimensions": {
                        Dimension.accuracy: DimensionScore(
                            status=DimensionStatus.judge_error, error="x"
                        )
                    }
                }
            )
        ],
    }
    records = {r.question_id: r for r in panel_records(members, "panel")}
    assert records["q0"].dimensions[Dimension.accuracy].score == pytest.approx(0.625)
    assert "q1" not in records  # c has not judged q1
    members["c"].append(_record("q1", "c", None, ScoreStatus.infra_error))
    records = {r.question_id: r for r in panel_records(members, "panel")}
    assert records["q1"].status is ScoreStatus.infra_error


def _write_scores(run_dir, judge: str, model: str, scores: dict[str, float]) -> None:
    directory = run_dir / "scores"
    directory.mkdir(parents=True, exist_ok=True)
    records = [_record(qid, judge, s) for qid, s in scores.items()]
    (directory / f"{judge}.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    manifest = JudgeManifest(
        judge=judge,
        model=model,
        mode="per-dimension",
        instructions_hash="h",
        run_dir=str(run_dir),
        started_at=NOW,
    )
    (directory / f"{judge}.manifest.json").write_text(manifest.model_dump_json())


@pytest.mark.parametrize(
    ("bias", "expected"),
    [(0.25, "judges favour their own family"), (0.0, "no evidence that judges favour")],
)
def test_self_preference_fit_finds_a_planted_bias(tmp_path, capsys, bias, expected) -> None:
    rng = np.random.default_rng(3)
    questions = [question(f"q{i}") for i in range(30)]
    grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    runs = {}
    for name, (harness, model) in {
        "gpt": ("openai", "gpt-5.2"),
        "claude": ("claude", "claude-s"),
    }.items():
        runs[name] = write_run(
            tmp_path / name,
            questions,
            [trajectory(q.id) for q in questions],
            harness=harness,
            model=model,
        )
    judges = {
        "openai-gpt-5.2": ("openai/gpt-5.2", "gpt"),
        "anthropic-claude": ("anthropic/claude-s", "claude"),
    }
    for judge, (model, own_run) in judges.items():
        for name, run in runs.items():
            base = rng.choice(grid[1:4], size=len(questions))
            lift = bias if name == own_run else 0.0
            scores = {
                q.id: float(np.clip(b + lift, 0, 1)) for q, b in zip(questions, base, strict=True)
            }
            _write_scores(run, judge, model, scores)
    out = tmp_path / f"compare-{bias}"
    argv = [
        str(runs["gpt"]),
        str(runs["claude"]),
        "--judges",
        *judges,
        "--self-preference",
        "--no-plots",
        "--bootstrap",
        "50",
        "--out",
        str(out),
    ]
    assert compare_main(argv) == 0
    text = (out / "agreement.md").read_text()
    assert expected in text
    data = json.loads((out / "agreement.json").read_text())["self_preference"]
    assert data["judge_families"] == ["anthropic", "openai"]
    if bias:
        assert data["low"] > 0 and data["effect"] == pytest.approx(bias, abs=0.1)
    else:
        assert data["low"] <= 0 <= data["high"]
    capsys.readouterr()
