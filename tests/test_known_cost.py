"""A model-free harness's cost is a known $0; an unknown cost stays unknown, and the report draws
the accuracy-against-cost plot from known costs only, saying whom it leaves out and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import Stats
from analysis._synthetic import ProviderSpec, SyntheticConfig, write_runs
from analysis.compare import main
from harnesses._nothing import NothingAgent
from harnesses._protocol import TrajectoryDraft, is_model_free
from harnesses.scripted._agent import ScriptedAgent
from harnesses.scripted._conversation import ConversationAgent
from ledgerbench_core.trajectory import Usage

pytestmark = pytest.mark.timeout(180)


def test_model_free_harnesses_record_a_known_zero_cost() -> None:
    for agent in (ScriptedAgent(), NothingAgent(), ConversationAgent(ask=False)):
        assert is_model_free(agent), agent
        assert TrajectoryDraft().recorded_cost(model_free=is_model_free(agent)) == 0.0


def test_a_cost_nobody_declared_or_reported_stays_unknown() -> None:
    class Undeclared:
        name = "plug-in"

    assert not is_model_free(Undeclared())
    assert TrajectoryDraft().recorded_cost(model_free=False) is None
    # a truthy value that is not True is no declaration
    assert not is_model_free(type("Odd", (), {"model_free": "yes"})())


def test_a_model_free_harness_that_called_a_model_is_not_priced_at_zero() -> None:
    draft = TrajectoryDraft()
    draft.add_model_event(0.0, duration_s=0.1, usage=Usage(input_tokens=10, output_tokens=2))
    assert draft.recorded_cost(model_free=True) is None
    draft.add_usage(Usage(input_tokens=10, output_tokens=2), cost_usd=0.003)
    assert draft.recorded_cost(model_free=True) == pytest.approx(0.003)


def test_usage_a_server_did_not_report_makes_the_cost_unknown() -> None:
    draft = TrajectoryDraft()
    draft.add_usage(Usage(input_tokens=10, output_tokens=2), cost_usd=0.003)
    draft.add_usage(None)
    assert draft.recorded_cost(model_free=False) is None
    assert draft.recorded_cost(model_free=True) is None


def _report(tmp: Path, costs: list[float | None]) -> tuple[Stats, str, Path]:
    specs = [
        ProviderSpec(name, effect=0.05 * n, cost_per_question=cost)
        for n, (name, cost) in enumerate(zip("ABC", costs, strict=False))
    ]
    config = SyntheticConfig(specs, questions={"obligations": 20, "business_brief": 6}, seed=4)
    runs = write_runs(tmp / "runs", config)
    out = tmp / "report"
    args = [*map(str, runs), "--judge", "rules", "--out", str(out), "--bootstrap", "50"]
    assert main([*args, "--quiet"]) == 0
    stats = Stats.model_validate_json((out / "stats.json").read_text())
    return stats, (out / "report.md").read_text(), out


def test_zero_cost_runs_get_the_cost_plot(tmp_path: Path) -> None:
    stats, text, out = _report(tmp_path, [0.0, 0.0])
    ops = {(o.provider, o.task_type): o for o in stats.operations}
    assert ops[("A", "obligations")].cost_per_question == 0.0
    assert ops[("A", "obligations")].cost_known == 20
    assert (out / "cost.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Accuracy against cost" in text and "cost unknown" not in text


def test_unknown_costs_are_left_out_of_the_plot_and_the_report_says_why(tmp_path: Path) -> None:
    _, text, out = _report(tmp_path / "some", [0.0, None, 0.01])
    assert (out / "cost.png").exists()
    assert "Left out of the accuracy-against-cost plot, cost unknown: B;" in text
    assert "reported no token usage" in text

    _, text, out = _report(tmp_path / "none", [None, None])
    assert not (out / "cost.png").exists()
    assert "No accuracy-against-cost plot: the cost is unknown for A, B;" in text
