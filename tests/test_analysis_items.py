"""Item diagnostics, pass^k and flip rate per task type, signal-to-noise: checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import ProviderData, Settings, compute_stats
from analysis._data import SCORE_COLUMNS, TRAJECTORY_COLUMNS
from analysis._schema import ProviderInfo

pytestmark = pytest.mark.timeout(60)

# question -> per-agent trial verdicts (obligations accuracy 1/0), 2 trials each.
PASSES = {
    "A": {"q1": [1, 1], "q2": [1, 0], "q3": [0, 0], "q4": [1, 1]},
    "B": {"q1": [1, 1], "q2": [1, 1], "q3": [0, 0], "q4": [0, 0]},
    "C": {"q1": [1, 1], "q2": [0, 0], "q3": [0, 0], "q4": [1, 0]},
    "scripted": {"q1": [1, 1], "q2": [0, 0], "q3": [0, 0], "q4": [0, 0]},
}


def _provider(name: str, passes: dict[str, list[int]], clarity: float) -> ProviderData:
    rows = []
    for q, verdicts in passes.items():
        for trial, v in enumerate(verdicts):
            base = {"question_id": q, "trial": trial, "task_type": "obligations"}
            rows.append(base | {"metric": "accuracy", "status": "scored", "score": float(v)})
            value = clarity + 0.01 * trial + 0.05 * int(q[1:])
            rows.append(base | {"metric": "clarity", "status": "scored", "score": value})
            rows.append(base | {"metric": "overall", "status": "scored", "score": (v + value) / 2})
    scores = pd.DataFrame(rows, columns=SCORE_COLUMNS)
    traj = scores[["question_id", "trial", "task_type"]].drop_duplicates()
    traj = traj.assign(
        status="ok", latency_s=1.0, timeout_s=60.0, tool_calls=1, tokens=math.nan, cost_usd=0.01
    )[TRAJECTORY_COLUMNS]
    info = ProviderInfo(name=name, source="run", path=name, harness=name, trajectories=len(traj))
    return ProviderData(info, scores, traj)


@pytest.fixture(scope="module")
def stats():
    clarity = {"A": 0.6, "B": 0.5, "C": 0.4, "scripted": 0.2}
    providers = [_provider(n, p, clarity[n]) for n, p in PASSES.items()]
    return compute_stats(providers, Settings(reference="A", judge="x", bootstrap=20))


def test_items_pass_rates_solved_flags_baselines_and_discrimination(stats):
    items = {i.question_id: i for i in stats.items}
    assert items["q1"].always_solved and not items["q1"].never_solved
    assert items["q3"].never_solved and not items["q3"].always_solved
    assert items["q2"].pass_rate == {"A": 0.5, "B": 1.0, "C": 0.0}
    assert items["q2"].scripted == 0.0 and items["q1"].scripted == 1.0
    assert items["q2"].nothing is None
    overall = {
        c.provider: c.score.estimate
        for c in stats.scores
        if c.metric == "overall" and c.scope == "equal_weight"
    }
    rates = [0.5, 1.0, 0.0]
    totals = [overall[n] for n in ("A", "B", "C")]
    assert items["q2"].discrimination == pytest.approx(np.corrcoef(rates, totals)[0, 1])
    assert items["q1"].discrimination is None  # no spread: every agent solved it


def test_pass_k_and_flip_rate_per_task_type(stats):
    by = {(p.provider, p.task_type, p.k): p.value for p in stats.pass_k}
    assert by[("A", "obligations", 1)] == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert by[("A", "obligations", 2)] == pytest.approx((1 + 0 + 0 + 1) / 4)
    flips = {(f.provider, f.task_type): f for f in stats.flips}
    assert (flips[("A", "obligations")].flipped, flips[("A", "obligations")].questions) == (1, 4)
    assert flips[("B", "obligations")].rate == 0.0
    assert flips[("C", "obligations")].rate == pytest.approx(0.25)


def test_signal_to_noise_is_agent_spread_over_trial_spread(stats):
    (cell,) = stats.signal_noise
    answer_means = {}
    trial_sd = []
    for name, passes in PASSES.items():
        clarity = {"A": 0.6, "B": 0.5, "C": 0.4, "scripted": 0.2}[name]
        per_trial = [
            np.mean(
                [(v[t] + clarity + 0.01 * t + 0.05 * int(q[1:])) / 2 for q, v in passes.items()]
            )
            for t in (0, 1)
        ]
        answer_means[name] = np.mean(per_trial)
        trial_sd.append(np.std(per_trial, ddof=1))
    assert cell.signal == pytest.approx(np.std(list(answer_means.values()), ddof=1))
    assert cell.noise == pytest.approx(np.mean(trial_sd))
    assert cell.ratio == pytest.approx(cell.signal / cell.noise)


def test_pareto_front_keeps_only_points_nothing_beats():
    from analysis._plots import pareto_front

    points = [
        ("A", 0.02, 0.6),
        ("B", 0.02, 0.7),
        ("C", 0.2, 0.5),
        ("D", 0.01, 0.4),
        ("E", 0.3, 0.9),
    ]
    assert [p[0] for p in pareto_front(points)] == ["D", "B", "E"]
    assert [p[0] for p in pareto_front([("A", 0.1, 0.5), ("B", 0.1, 0.5)])] == ["A", "B"]


def test_infrastructure_failures_per_reason_with_excluded_counts(tmp_path):
    import json

    from analysis._synthetic import ProviderSpec, SyntheticConfig, write_runs
    from analysis.compare import main

    config = SyntheticConfig(
        [ProviderSpec("A"), ProviderSpec("B", error_rate=0.2)],
        questions={"obligations": 30, "business_brief": 10},
        seed=2,
    )
    runs = write_runs(tmp_path / "runs", config)
    failed = {}
    for line in (runs[1] / "trajectories.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["status"] == "error":
            key = (record["task_type"], record["termination"]["reason"])
            failed[key] = failed.get(key, 0) + 1
    assert failed
    for convention, excluded in (("exclude", True), ("zero", False)):
        out = tmp_path / convention
        argv = [*map(str, runs), "--out", str(out), "--bootstrap", "20", "--quiet"]
        assert main([*argv, "--infra-failures", convention]) == 0
        cells = json.loads((out / "stats.json").read_text())["infra_failures"]
        assert {(c["task_type"], c["reason"]): c["count"] for c in cells} == failed
        assert all(c["provider"] == "B" for c in cells)
        assert all(c["excluded"] == (c["count"] if excluded else 0) for c in cells)
        assert "### Infrastructure failures" in (out / "report.md").read_text()


def test_runs_that_are_all_baselines_are_the_agents():
    providers = [_provider(n, PASSES[n], 0.5) for n in ("scripted", "A")]
    providers[1].info.harness = "nothing"
    stats = compute_stats(providers, Settings(reference="scripted", judge="x", bootstrap=20))
    items = {i.question_id: i for i in stats.items}
    assert set(items["q2"].pass_rate) == {"scripted", "A"}
    assert items["q1"].always_solved and items["q3"].never_solved
    assert items["q2"].nothing == 0.5 and items["q2"].scripted == 0.0


def _overall(stats) -> dict[str, float]:
    return {
        c.provider: c.score.estimate
        for c in stats.scores
        if c.metric == "overall" and c.scope == "equal_weight"
    }


def test_upper_lower_index_with_three_agents_compares_the_top_and_bottom_agent(stats):
    overall = _overall(stats)
    ranked = sorted(("A", "B", "C"), key=overall.__getitem__)
    bottom, top = ranked[0], ranked[-1]
    for item in stats.items:
        rates = item.pass_rate
        assert item.discrimination_index == pytest.approx(rates[top] - rates[bottom])


def test_two_agents_get_the_upper_lower_index_and_the_report_says_why_there_is_no_r(tmp_path):
    from analysis._report import build_report, to_markdown

    clarity = {"A": 0.6, "B": 0.5}
    providers = [_provider(n, PASSES[n], clarity[n]) for n in ("A", "B")]
    two = compute_stats(providers, Settings(reference="A", judge="x", bootstrap=20))
    overall = _overall(two)
    better, worse = sorted(("A", "B"), key=overall.__getitem__, reverse=True)
    items = {i.question_id: i for i in two.items}
    assert all(i.discrimination is None for i in two.items)
    for qid, item in items.items():
        expected = np.mean(PASSES[better][qid]) - np.mean(PASSES[worse][qid])
        assert item.discrimination_index == pytest.approx(expected), qid
    assert {i.discrimination_index for i in two.items} - {0.0}  # some item separates them
    text = to_markdown(build_report(two, []))
    assert "With two agents r is not computed" in text
    assert "most discriminating items (by D)" in text


def test_upper_lower_index_needs_halves_that_the_overall_separates():
    from analysis._items import upper_lower_index

    assert upper_lower_index({"A": 1.0}, {"A": 0.7}) is None
    assert upper_lower_index({"A": 1.0, "B": 0.0}, {"A": 0.7, "B": 0.7}) is None
    assert upper_lower_index({"A": 1.0, "B": 0.0}, {"A": 0.7, "B": 0.5}) == 1.0
    four = {"A": 1.0, "B": 1.0, "C": 0.5, "D": 0.0}
    totals = {"A": 0.9, "B": 0.8, "C": 0.4, "D": 0.3}
    assert upper_lower_index(four, totals) == pytest.approx(1.0 - 0.25)
    five = four | {"E": 0.0}
    assert upper_lower_index(five, totals | {"E": 0.6}) == pytest.approx(1.0 - 0.25)
