"""`python -m ledgerbench.export --format inspect`: a run round-trips through Inspect's reader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.run_files import QUESTIONS, SCRIPT_PAYLOAD, write_sample_runs

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def inspect_log() -> ModuleType:
    """Inspect's log reader, imported only by the worker that runs these tests (it is slow)."""
    return pytest.importorskip(
        "inspect_ai.log", reason="inspect-ai not installed: pip install '.[inspect]'"
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_sample_runs(tmp_path_factory.mktemp("export-runs"))


def _export(
    run: Path, out: Path, command: str = "ledgerbench.export"
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            command,
            str(run),
            "--format",
            "inspect",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


@pytest.fixture(scope="module")
def exported(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logs") / "run-a.eval"
    result = _export(runs[0], out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Inspect log: {out} (3 samples)")
    return out


def test_log_reads_back_with_samples_messages_events_scores_and_usage(
    inspect_log: ModuleType, exported: Path
):
    log = inspect_log.read_eval_log(str(exported))
    assert log.status == "success"
    assert log.eval.task == "ledgerbench" and log.eval.model == "openai/m-1"
    assert log.eval.dataset.samples == len(QUESTIONS)
    samples = {sample.id: sample for sample in log.samples}
    assert set(samples) == {q.id for q in QUESTIONS}

    aged = samples["obl-aged-001"]
    assert aged.input == QUESTIONS[0].query
    assert aged.target == QUESTIONS[0].ground_truth
    assert [m.role for m in aged.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert aged.messages[0].text == "You are a careful finance analyst."
    thinking = aged.messages[2]
    assert [c.type for c in thinking.content] == ["reasoning", "text"]
    assert thinking.tool_calls[0].function == "get_aging"
    assert aged.messages[3].tool_call_id == thinking.tool_calls[0].id
    assert SCRIPT_PAYLOAD in aged.messages[3].text  # tool output kept verbatim
    assert aged.output.completion.startswith("The balance is USD 12,500.00.")

    assert [e.event for e in aged.events] == ["model", "tool", "model"]
    first_call, tool, second_call = aged.events
    assert first_call.output.choices[0].message.tool_calls[0].function == "get_aging"
    assert [m.role for m in first_call.input] == ["system", "user"]
    assert [m.role for m in second_call.input] == ["system", "user", "assistant", "tool"]
    assert first_call.output.usage.input_tokens == 900
    assert first_call.metadata == {"request_id": "req_abc123"}
    assert first_call.working_time == pytest.approx(1.5)
    assert tool.function == "get_aging" and tool.working_time == pytest.approx(0.2)

    assert aged.scores["rules"].value == {"answer_mean": 1.0, "accuracy": 1.0}
    assert "accuracy.balance" in aged.scores["rules"].explanation
    assert aged.model_usage["m-1"].input_tokens == 2300
    assert aged.total_time == pytest.approx(4.2) and aged.working_time == pytest.approx(4.0)

    brief = samples["brief-003"]  # an infrastructure failure: an error, never a score
    assert brief.error.message == "provider_unavailable: HTTP 503 from the provider x4"
    assert brief.scores is None
    assert samples["obl-overdue-002"].metadata["scenario"] == "Overdue Invoices"

    (rules,) = log.results.scores
    assert rules.name == "rules" and rules.scored_samples == 2
    assert rules.metrics["overall"].value == pytest.approx(0.75)  # the run's Overall
    assert rules.metrics["answer_mean"].value == pytest.approx(0.75)
    assert log.stats.model_usage["m-1"].input_tokens == 3 * 2300


def test_version_1_records_and_json_logs(inspect_log: ModuleType, runs: list[Path], tmp_path: Path):
    from ledgerbench._inspect_log import export_inspect

    out = tmp_path / "run-b.json"
    assert export_inspect(runs[1], out) == (out, 3)
    assert json.loads(out.read_text())["eval"]["task"] == "ledgerbench"
    log = inspect_log.read_eval_log(str(out))
    brief = next(s for s in log.samples if s.id == "brief-003")  # the version-1 line
    assert [m.role for m in brief.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert brief.metadata["termination"] == "completed"
    timed_out = next(s for s in log.samples if s.id == "obl-overdue-002")
    assert timed_out.limit.type == "time" and timed_out.limit.limit == 60


def test_bad_input_is_one_line(tmp_path: Path):
    result = _export(tmp_path / "missing", tmp_path / "x.eval")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"ledgerbench.export: error: {tmp_path / 'missing'} is not a run directory (needs "
        "manifest.json and trajectories.jsonl); pass runs/NAME as written by "
        "python -m harnesses.run"
    ]


def test_old_command_forwards_with_a_deprecation_line(
    inspect_log: ModuleType, runs: list[Path], tmp_path: Path
):
    """``python -m harnesses.export`` (moved to the roof in #43) still writes the same log for one
    version, saying once on stderr which command to use."""
    out = tmp_path / "old.eval"
    result = _export(runs[0], out, command="harnesses.export")
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines() == [
        "harnesses.export is deprecated: use python -m ledgerbench.export (same arguments)"
    ]
    assert result.stdout.startswith(f"Inspect log: {out} (3 samples)")
    assert len(inspect_log.read_eval_log(str(out)).samples) == 3
    bad = _export(tmp_path / "missing", tmp_path / "x.eval", command="harnesses.export")
    assert bad.returncode == 2
    assert (
        bad.stderr.strip()
        .splitlines()[-1]
        .startswith(f"ledgerbench.export: error: {tmp_path / 'missing'} is not a run directory")
    )


def test_without_inspect_ai_the_error_says_how_to_install(runs: list[Path], tmp_path: Path):
    code = (
        "import sys; sys.modules['inspect_ai'] = None\n"  # as if the extra were not installed
        "from ledgerbench.export import main\n"
        f"raise SystemExit(main([{str(runs[0])!r}, '--format', 'inspect', '--out', "
        f"{str(tmp_path / 'x.eval')!r}]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "ledgerbench.export: error: the Inspect export needs inspect-ai; install it with "
        "pip install 'ledgerbench[inspect]' (or pip install 'inspect-ai>=0.3,<0.4')"
    ]
    assert not (tmp_path / "x.eval").exists()
