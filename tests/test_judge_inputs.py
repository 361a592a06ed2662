"""Issue 37: a score is a function of recorded inputs. The judge finds the run's ERP by snapshot
hash (or refuses in one line), two judges at once leave one set of scores, scores of another
grading version are refused and labelled, and a partly judged run says so beside its figures."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from judge import JudgeRunConfig, JudgeRunError, read_scores, run_judge
from judge._grading import RULES_GRADING
from judge._runner import _judge_lock
from ledgerbench._runs import list_runs
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.timeout(300)

DATASET = REPO_ROOT / "datasets" / "obligations.yaml"


@pytest.fixture(scope="module")
def url_run(tmp_path_factory, erp_server) -> Path:
    """A scripted run made against a server by ``--erp-url``: its manifest knows no database,
    only the snapshot hash the server reported."""
    out = tmp_path_factory.mktemp("url") / "run"
    args = [sys.executable, "-m", "harnesses.run", "--harness", "scripted", "--no-progress"]
    args += ["--dataset", str(DATASET), "--limit", "12", "--erp-url", erp_server.url]
    args += ["--out", str(out)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=280, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["erp_db_url"] is None and manifest["erp_snapshot_hash"]
    return out


def _copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to, ignore=shutil.ignore_patterns("scores", ".judge.lock"))
    return to


def _overall(run: Path, **options) -> float:
    from judge import run_overall, scored_answers

    result = run_judge(JudgeRunConfig(run_dir=run, progress=False, **options))
    records, _ = read_scores(result.scores_path)
    return run_overall(scored_answers(records))


def test_the_same_answers_get_the_same_overall_however_the_erp_is_given(
    tmp_path, url_run: Path, erp_db_url: str
) -> None:
    given = _overall(_copy(url_run, tmp_path / "given"), erp_db=erp_db_url)
    recorded = _copy(url_run, tmp_path / "recorded")
    manifest = json.loads((recorded / "manifest.json").read_text())
    manifest["erp_db_url"] = erp_db_url  # a runner-started server records its database
    (recorded / "manifest.json").write_text(json.dumps(manifest))
    assert abs(_overall(recorded) - given) < 1e-12
    try:  # found in the default workspace (when it holds that snapshot), or refused
        plain = _overall(_copy(url_run, tmp_path / "plain"))
    except JudgeRunError as exc:
        assert "no ERP database with the run's snapshot" in str(exc)
        assert not (tmp_path / "plain" / "scores").exists()
    else:
        assert abs(plain - given) < 1e-12


def test_a_database_of_another_snapshot_is_refused_in_one_line(
    tmp_path, url_run: Path, erp_db_url: str
) -> None:
    run = _copy(url_run, tmp_path / "run")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["erp_snapshot_hash"] = "ab" * 32
    (run / "manifest.json").write_text(json.dumps(manifest))
    done = _judge_process(run, erp_db_url).communicate(timeout=120)
    assert done[1].strip().count("\n") == 0, done[1]
    assert "holds ERP snapshot" in done[1] and "but the run used abababababab" in done[1]
    assert not (run / "scores").exists()


def _judge_process(run: Path, erp_db_url: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "judge.run", str(run), "--judge", "rules", "--no-progress"]
    args += ["--erp-db", erp_db_url]
    return subprocess.Popen(
        args, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_two_judges_at_once_give_one_set_of_scores(
    tmp_path, url_run: Path, erp_db_url: str
) -> None:
    run = _copy(url_run, tmp_path / "run")
    first, second = _judge_process(run, erp_db_url), _judge_process(run, erp_db_url)
    outcomes = [(*p.communicate(timeout=200), p.returncode) for p in (first, second)]
    for _, stderr, code in outcomes:
        assert code == 0 or (
            code == 2
            and stderr.strip().count("\n") == 0
            and "is in use by another judge (pid" in stderr
        ), stderr
    assert any(code == 0 for *_, code in outcomes)
    records, bad = read_scores(run / "scores" / "rules.jsonl")
    keys = [(r.question_id, r.trial) for r in records]
    assert bad == 0 and len(keys) == len(set(keys)) == 12


def test_a_second_judge_says_who_holds_the_lock_and_writes_nothing(
    tmp_path, url_run: Path, erp_db_url: str
) -> None:
    run = _copy(url_run, tmp_path / "run")
    lock = _judge_lock(run)
    try:
        _, stderr = _judge_process(run, erp_db_url).communicate(timeout=120)
    finally:
        lock.release()
    assert stderr.strip() == (
        f"error: {run} is in use by another judge (pid {os.getpid()}); wait for it to finish "
        f"or stop it (kill {os.getpid()})"
    )
    assert not (run / "scores").exists()


def test_scores_of_another_grading_version_are_refused_and_labelled(
    tmp_path, url_run: Path, erp_db_url: str
) -> None:
    run = _copy(url_run, tmp_path / "run")
    run_judge(JudgeRunConfig(run_dir=run, erp_db=erp_db_url, progress=False))
    scores, manifest = run / "scores" / "rules.jsonl", run / "scores" / "rules.manifest.json"
    old = scores.read_text().replace(
        f'"grading_version":"{RULES_GRADING}"', '"grading_version":"rules-g0"'
    )
    scores.write_text(old)
    manifest.write_text(manifest.read_text().replace(f'"{RULES_GRADING}"', '"rules-g0"'))
    before = scores.read_bytes(), manifest.read_bytes()
    with pytest.raises(JudgeRunError, match="grading version rules-g0 and this judge grades"):
        run_judge(JudgeRunConfig(run_dir=run, erp_db=erp_db_url, progress=False))
    assert (scores.read_bytes(), manifest.read_bytes()) == before, "nothing rewritten"
    (listing,) = list_runs(run.parent)
    assert listing.scored["rules"] == (
        f"grading rules-g0, current {RULES_GRADING}: re-score with --overwrite"
    )


def test_a_partly_judged_run_says_so_beside_its_figures(
    tmp_path, url_run: Path, erp_db_url: str
) -> None:
    run = _copy(url_run, tmp_path / "run")
    run_judge(JudgeRunConfig(run_dir=run, erp_db=erp_db_url, progress=False))
    scores = run / "scores" / "rules.jsonl"
    scores.write_text("".join(scores.read_text().splitlines(keepends=True)[:5]))
    (listing,) = list_runs(run.parent)
    assert listing.scored["rules"] == f"5/12 scored, grading {RULES_GRADING}"
    done = subprocess.run(
        [sys.executable, "-m", "judge.summary", str(run)],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    )  # fmt: skip
    assert f"(5/12 scored, grading {RULES_GRADING})" in done.stdout
    assert "7 of the run's 12 answers not judged yet" in done.stdout

    from ledgerbench.viewer._build import _run_info, load_run

    info = _run_info(load_run(run))  # the viewer's run list and summary row
    assert info["judged"]["rules"] == f"5/12 scored, grading {RULES_GRADING}"
    assert info["summary"]["judged"]["rules"] == f"5/12 scored, grading {RULES_GRADING}"

    pytest.importorskip("inspect_ai", reason="inspect-ai not installed: pip install '.[inspect]'")
    from ledgerbench._inspect_log import build_eval_log, read_run

    (score,) = build_eval_log(read_run(run)).results.scores
    assert score.metadata["judged"] == f"5/12 scored, grading {RULES_GRADING}"
    assert score.metadata["scored"] == 5 and score.metadata["unjudged"] == 7


def _strip_provenance(scores_dir: Path) -> None:
    """The scores as a version-1 judge wrote them: no grading version, no hashes."""
    added = ("judge_version", "grading_version", "item_sha256", "erp_snapshot_hash")
    added += ("world_snapshot_hash", "unscored_reason", "erp_db", "world_db")
    for path in scores_dir.glob("rules*"):
        if path.suffix == ".jsonl":
            lines = [json.loads(line) for line in path.read_text().splitlines()]
            for line in lines:
                line["version"] = 1
                for key in added:
                    line.pop(key, None)
            path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        else:
            manifest = json.loads(path.read_text())
            for key in added:
                manifest.pop(key, None)
            path.write_text(json.dumps(manifest))


def test_scores_of_an_older_format_are_labelled_and_not_resumed(
    tmp_path, url_run: Path, erp_db_url: str
) -> None:
    run = _copy(url_run, tmp_path / "run")
    run_judge(JudgeRunConfig(run_dir=run, erp_db=erp_db_url, progress=False))
    _strip_provenance(run / "scores")
    before = {p.name: p.read_bytes() for p in (run / "scores").glob("rules*")}
    args = [sys.executable, "-m", "judge.run", str(run), "--judge", "rules"]
    done = subprocess.run(
        [*args, "--erp-db", erp_db_url], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120
    )
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0, done.stderr
    assert "holds scores of grading version unknown" in done.stderr and "--overwrite" in done.stderr
    assert {p.name: p.read_bytes() for p in (run / "scores").glob("rules*")} == before
    (listing,) = list_runs(run.parent)
    assert listing.scored["rules"] == (
        f"grading unknown (scored before grading versions), current {RULES_GRADING}: "
        "re-score with --overwrite"
    )


def test_a_url_run_that_recorded_no_snapshot_is_refused_in_one_line(
    tmp_path, url_run: Path
) -> None:
    run = _copy(url_run, tmp_path / "run")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["erp_snapshot_hash"] = None  # as runs made before the manifest recorded it
    (run / "manifest.json").write_text(json.dumps(manifest))
    done = subprocess.run(
        [sys.executable, "-m", "judge.run", str(run), "--judge", "rules"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: the run's manifest names no ERP snapshot (a run from an older format, or a "
        "server whose erp_info reports none) and no readable database: pass --erp-db URL of the "
        "database the run was made against"
    )
    assert not (run / "scores").exists()


def test_answers_whose_checks_lack_the_database_are_unscored_and_counted(tmp_path) -> None:
    from judge._summary import run_summary, summary_markdown
    from ledgerbench_core.dataset import Dimension, ExpectedFact
    from ledgerbench_core.scores import ScoreStatus
    from tests.fakes.judge_data import question, trajectory, write_run

    fact = ExpectedFact(kind="amount", field="balance", value=1234.56, tolerance=0.01)
    tags = {
        Dimension.accuracy: ["accuracy.ground_truth"],
        Dimension.citations: ["citations.erp_link"],
    }
    refs = ["/erp/USMF/customers/SYNCUS-0001"]
    questions = [question(f"q{i}", tags=tags, expected=[fact], record_refs=refs) for i in range(2)]
    answers = ["USD 1,234.56 (/erp/USMF/customers/SYNCUS-0001).", "USD 1,234.56."]
    runs = tmp_path / "runs"
    run = write_run(
        runs / "run", questions, [trajectory(f"q{i}", a) for i, a in enumerate(answers)]
    )
    result = run_judge(JudgeRunConfig(run_dir=run, progress=False))  # the run names no ERP
    records, _ = read_scores(result.scores_path)
    by_id = {r.question_id: r for r in records}
    assert by_id["q0"].status is ScoreStatus.unscored and by_id["q0"].dimensions == {}
    assert "ERP" in by_id["q0"].unscored_reason and by_id["q0"].overall is None
    assert by_id["q1"].status is ScoreStatus.scored  # no check of it reads the ERP
    summary, _ = run_summary("rules", records, [t for t in _trajectories(run)])
    text = summary_markdown(summary, "rules")
    assert f"(1/2 scored, 1 unscored, grading {RULES_GRADING})" in text
    (listing,) = list_runs(runs)
    assert listing.scored["rules"] == f"1/2 scored, 1 unscored, grading {RULES_GRADING}"


def _trajectories(run: Path) -> list:
    from judge._runner import read_trajectories

    return read_trajectories(run)[0]


def test_the_report_refuses_mixing_fully_and_partly_judged_runs_unless_asked(
    tmp_path, url_run: Path, erp_db_url: str, capsys
) -> None:
    from analysis.compare import main

    full, part = _copy(url_run, tmp_path / "full"), _copy(url_run, tmp_path / "part")
    for run in (full, part):
        run_judge(JudgeRunConfig(run_dir=run, erp_db=erp_db_url, progress=False))
    scores = part / "scores" / "rules.jsonl"
    scores.write_text("".join(scores.read_text().splitlines(keepends=True)[:5]))
    args = [str(full), str(part), "--label", "full", "--label", "part", "--quiet"]
    args += ["--bootstrap", "20", "--out", str(tmp_path / "report")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        f"error: part is partly judged (5/12 scored, grading {RULES_GRADING}) and other inputs "
        f"fully: finish judging it (python -m judge.run {part} ...) or pass --allow-partly-judged"
    )
    assert not (tmp_path / "report").exists()
    assert main([*args, "--allow-partly-judged"]) == 0
    report = (tmp_path / "report" / "report.md").read_text()
    tools = r"all \(\d+\)"  # the Tools column: every tool the server offered
    assert re.search(
        rf"\| part \| world \| {tools} \| 5/12 scored, grading {RULES_GRADING} \|", report
    )
    assert re.search(
        rf"\| full \(ref\.\) \| world \| {tools} \| grading {RULES_GRADING} \|", report
    )


def test_a_run_folder_of_an_older_format_is_refused_in_one_line(tmp_path) -> None:
    run = tmp_path / "old"
    run.mkdir()
    old_manifest = {"version": 0, "run_id": "old", "harness": "scripted", "erp": "sqlite:///x"}
    (run / "manifest.json").write_text(json.dumps(old_manifest))
    (run / "trajectories.jsonl").write_text('{"question_id": "q1", "answer": "1"}\n')
    done = subprocess.run(
        [sys.executable, "-m", "judge.run", str(run), "--judge", "rules"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0, done.stderr
    assert "is not a run manifest this version reads" in done.stderr
    assert "older format" in done.stderr and "harnesses.run" in done.stderr
    assert sorted(p.name for p in run.iterdir()) == ["manifest.json", "trajectories.jsonl"]
