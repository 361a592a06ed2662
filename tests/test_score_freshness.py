"""Scores always belong to the answers: stale scores are re-judged by the judge and refused by the
analysis; infrastructure failures (by termination) are never judged; empty answers score 0."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from analysis._data import InputError
from analysis._load import load_run
from judge import JudgeRunConfig, read_scores, run_judge
from ledgerbench_core.dataset import Dimension, ExpectedFact
from ledgerbench_core.scores import ScoreStatus
from ledgerbench_core.trajectory import Status, Termination, TerminationReason
from tests.fakes.judge_data import question, trajectory, write_run

pytestmark = pytest.mark.timeout(60)

RIGHT = "The open balance is USD 1,234.56."


def _questions() -> list:
    fact = ExpectedFact(kind="amount", field="balance", value=1234.56, tolerance=0.01)
    tags = {Dimension.accuracy: ["accuracy.ground_truth"]}
    return [question(f"q{i}", tags=tags, expected=[fact]) for i in range(3)]


def _rewrite(run_dir: Path, trajectories: list) -> None:
    (run_dir / "trajectories.jsonl").write_text(
        "".join(t.model_dump_json(by_alias=True) + "\n" for t in trajectories), encoding="utf-8"
    )


def _accuracy(run_dir: Path) -> list[float]:
    data = load_run(run_dir, "rules")
    rows = data.scores[data.scores["metric"] == "accuracy"]
    return [float(v) for v in rows.sort_values("question_id")["score"]]


def test_rerun_answers_make_old_scores_stale_refused_then_rejudged(tmp_path) -> None:
    questions = _questions()
    run_dir = write_run(tmp_path / "run", questions, [trajectory(q.id, RIGHT) for q in questions])
    first = run_judge(JudgeRunConfig(run_dir=run_dir, progress=False))
    assert first.judged == 3
    assert _accuracy(run_dir) == [1.0, 1.0, 1.0]

    # The run is redone and every answer became an empty timeout (the case behind the issue).
    timeouts = [
        trajectory(q.id, "", status=Status.timeout, termination=Termination.of("time_limit"))
        for q in questions
    ]
    _rewrite(run_dir, timeouts)
    with pytest.raises(InputError) as refused:
        load_run(run_dir, "rules")
    message = str(refused.value)
    assert str(run_dir) in message and "judge rules" in message
    assert "3 score(s) do not match" in message and "answer changed" in message

    # A plain resume of the judge re-judges exactly the changed records.
    again = run_judge(JudgeRunConfig(run_dir=run_dir, progress=False))
    assert again.judged == 3 and again.resumed == 0
    assert any("no longer matched" in w for w in again.warnings)
    records, _ = read_scores(again.scores_path)
    assert len(records) == 3, "stale scores are dropped, not kept beside the new ones"
    assert _accuracy(run_dir) == [0.0, 0.0, 0.0]

    # Nothing changed since: nothing is judged again.
    still = run_judge(JudgeRunConfig(run_dir=run_dir, progress=False))
    assert still.judged == 0 and still.resumed == 3


def test_a_changed_status_with_the_same_answer_is_rejudged(tmp_path) -> None:
    questions = _questions()[:1]
    run_dir = write_run(tmp_path / "run", questions, [trajectory("q0", RIGHT)])
    run_judge(JudgeRunConfig(run_dir=run_dir, progress=False))
    late = Termination.of(TerminationReason.time_limit)
    _rewrite(run_dir, [trajectory("q0", RIGHT, status=Status.timeout, termination=late)])
    with pytest.raises(InputError, match="status ok -> timeout"):
        load_run(run_dir, "rules")
    again = run_judge(JudgeRunConfig(run_dir=run_dir, progress=False))
    assert again.judged == 1
    (record,), _ = read_scores(again.scores_path)
    assert record.extra["trajectory_status"] == "timeout"
    assert record.extra["termination_reason"] == "time_limit"


def test_infrastructure_failures_are_not_judged_and_empty_answers_score_zero(tmp_path) -> None:
    questions = _questions()
    unavailable = Termination.of(TerminationReason.provider_unavailable, "ConnectError: refused")
    trajectories = [
        trajectory("q0", RIGHT),
        # status says error, termination says why: the termination decides, not the status
        trajectory("q1", "", status=Status.error, termination=unavailable),
        trajectory("q2", "", termination=Termination.of(TerminationReason.empty_answer)),
    ]
    run_dir = write_run(tmp_path / "run", questions, trajectories)
    result = run_judge(JudgeRunConfig(run_dir=run_dir, progress=False))
    records = {r.question_id: r for r in read_scores(result.scores_path)[0]}
    assert records["q1"].status is ScoreStatus.infra_error
    assert "ERP down" in records["q1"].extra["infra_error"]
    assert records["q2"].status is ScoreStatus.scored and records["q2"].overall == 0.0

    data = load_run(run_dir, "rules")
    accuracy = data.scores[data.scores["metric"] == "accuracy"].set_index("question_id")
    assert accuracy.loc["q0", "score"] == 1.0
    assert accuracy.loc["q1", "status"] == "infra_error" and math.isnan(accuracy.loc["q1", "score"])
    assert accuracy.loc["q2", "status"] == "scored" and accuracy.loc["q2", "score"] == 0.0
    # Out of the denominator: the mean over scored rows is (1 + 0) / 2, not (1 + 0 + 0) / 3.
    assert accuracy["score"].mean() == pytest.approx(0.5)


def _summary(run_dir: Path, capsys) -> tuple[dict, list[str]]:
    import json

    from judge.summary import main as summary_main

    capsys.readouterr()
    assert summary_main([str(run_dir), "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["rules"], captured.err.strip().splitlines()


def test_summary_leaves_out_and_names_stale_scores(tmp_path, capsys) -> None:
    questions = _questions()
    run_dir = write_run(tmp_path / "run", questions, [trajectory(q.id, RIGHT) for q in questions])
    run_judge(JudgeRunConfig(run_dir=run_dir, progress=False))
    fresh, warnings = _summary(run_dir, capsys)
    assert (fresh["records"], fresh["stale"], warnings) == (3, 0, [])

    wrong = "The open balance is USD 99.00."
    _rewrite(run_dir, [trajectory("q0", wrong), *[trajectory(q.id, RIGHT) for q in questions[1:]]])
    summary, warnings = _summary(run_dir, capsys)
    assert summary["stale"] == 1 and summary["records"] == 2, "the stale score is not averaged"
    (warning,) = warnings
    assert "1 score(s) are stale" in warning and "the analysis refuses them" in warning
    assert f"python -m judge.run {run_dir}" in warning


def test_a_cut_trajectory_line_drops_its_score_in_judge_run_and_summary(tmp_path, capsys) -> None:
    questions = _questions()
    run_dir = write_run(tmp_path / "run", questions, [trajectory(q.id, RIGHT) for q in questions])
    run_judge(JudgeRunConfig(run_dir=run_dir, progress=False))
    path = run_dir / "trajectories.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # a kill -9 mid-write: the last line is cut

    summary, warnings = _summary(run_dir, capsys)
    assert summary["orphaned"] == 1 and summary["records"] == 2
    assert summary["unreadable_trajectory_lines"] == 1
    assert any("line 3" in w and "analysis refuses" in w for w in warnings), warnings
    assert any("belong to no readable record" in w for w in warnings), warnings

    again = run_judge(JudgeRunConfig(run_dir=run_dir, progress=False))
    kept, _ = read_scores(again.scores_path)
    assert sorted(r.question_id for r in kept) == ["q0", "q1"], "the unreadable one's score goes"
    assert any("cannot be read" in w for w in again.warnings), again.warnings
