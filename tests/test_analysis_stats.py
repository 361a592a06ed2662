"""compute_stats on hand-built providers: pass^k by hand, budgets, direction, missing scores."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import ProviderData, Settings, compute_stats
from analysis._data import SCORE_COLUMNS, TRAJECTORY_COLUMNS
from analysis._schema import GuardKind, ProviderInfo

pytestmark = pytest.mark.timeout(60)


def provider(name: str, rows: list[dict], latency: dict[str, float] | None = None) -> ProviderData:
    """rows: question_id, trial, task_type, metric, status, score."""
    scores = pd.DataFrame(rows, columns=SCORE_COLUMNS)
    keys = scores[["question_id", "trial", "task_type"]].drop_duplicates()
    traj = keys.assign(
        status="ok",
        latency_s=[(latency or {}).get(q, 10.0) for q in keys["question_id"]],
        timeout_s=60.0,
        tool_calls=3,
        tokens=math.nan,
        cost_usd=0.01,
    )[TRAJECTORY_COLUMNS]
    info = ProviderInfo(name=name, source="run", path=name, trajectories=len(traj))
    return ProviderData(info, scores, traj)


def row(qid, metric, score, trial=0, task="obligations", status="scored") -> dict:
    value = score if status == "scored" else math.nan
    return {
        "question_id": qid,
        "trial": trial,
        "task_type": task,
        "metric": metric,
        "status": status,
        "score": value,
    }


def test_pass_k_matches_the_formula_by_hand():
    # q1: 2 of 3 trials pass; q2: 3 of 3; q3: 0 of 3.
    passes = {"q1": [1, 1, 0], "q2": [1, 1, 1], "q3": [0, 0, 0]}
    rows = [
        row(q, "accuracy", float(v), trial=t) for q, vs in passes.items() for t, v in enumerate(vs)
    ]
    stats = compute_stats([provider("A", rows)], Settings(reference="A", judge="x", bootstrap=50))
    values = {p.k: p.value for p in stats.pass_k}
    assert values[1] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert values[2] == pytest.approx((1 / 3 + 1 + 0) / 3)  # C(2,2)/C(3,2) = 1/3
    assert values[3] == pytest.approx((0 + 1 + 0) / 3)
    variance = next(t for t in stats.trials if t.metric == "accuracy")
    assert variance.mean_variance == pytest.approx(np.var([1, 1, 0], ddof=1) / 3)
    # The mean score uses per-question means over trials.
    cell = next(c for c in stats.scores if c.metric == "accuracy" and c.scope == "obligations")
    assert cell.score.estimate == pytest.approx((2 / 3 + 1 + 0) / 3) and cell.n == 3


def test_latency_budget_zeroes_applicable_metrics_including_judge_errors_only():
    rows = [
        row("q1", "accuracy", 1.0),
        row("q1", "clarity", None, status="judge_error"),
        row("q1", "recency", None, status="not_applicable"),
        row("q2", "accuracy", 1.0),
        row("q2", "clarity", 0.5),
    ]
    data = provider("A", rows, latency={"q1": 90.0, "q2": 5.0})
    settings = Settings(
        reference="A", judge="x", bootstrap=50, latency_budget={"obligations": 60.0}
    )
    stats = compute_stats([data], settings)
    scores = {
        (c.metric, c.scope): c.score.estimate for c in stats.scores if c.scope == "obligations"
    }
    assert scores[("accuracy", "obligations")] == pytest.approx(0.5)  # q1 -> 0, q2 = 1
    assert scores[("clarity", "obligations")] == pytest.approx(0.25)  # q1 judge error -> 0
    assert "recency" not in stats.metrics  # never applies to obligations: stays missing
    missing = {m.metric: m for m in stats.missing}
    assert missing["accuracy"].rescored_as_failure == 1
    assert stats.operations[0].over_budget == 1


def test_needs_llm_metrics_are_counted_and_named():
    rows = [row(f"q{i}", "structure", 0.5 + 0.1 * (i % 3)) for i in range(6)]
    rows += [row(f"q{i}", "clarity", None, status="needs_llm") for i in range(6)]
    stats = compute_stats([provider("A", rows)], Settings(reference="A", judge="x", bootstrap=50))
    assert "clarity" not in stats.metrics
    clarity = next(m for m in stats.missing if m.metric == "clarity")
    assert clarity.needs_llm == 6 and clarity.scored == 0
    assert any("No scores at all for clarity" in c for c in stats.caveats)


def test_direction_follows_raw_scores_and_a_disagreeing_model_is_flagged():
    """B answers only the hard questions: raw mean lower, within-question effect higher."""
    rng = np.random.default_rng(0)
    difficulty = {f"q{i}": 0.3 * (i % 2) for i in range(40)}  # odd questions are easy
    a_rows = [row(q, "structure", 0.3 + d + rng.normal(0, 0.02)) for q, d in difficulty.items()]
    b_rows = [
        row(q, "structure", 0.35 + d + rng.normal(0, 0.02))
        for q, d in difficulty.items()
        if d == 0 or q in ("q1", "q3")
    ]
    stats = compute_stats(
        [provider("A", a_rows), provider("B", b_rows)],
        Settings(reference="A", judge="x", bootstrap=100),
    )
    contrast = next(
        c
        for m in stats.models
        for c in m.contrasts
        if c.scope == "equal_weight" and m.metric == "structure"
    )
    assert contrast.lmm_estimate > 0 and contrast.raw_difference < 0
    assert contrast.direction == "lower"
    assert any(g.kind == GuardKind.direction_disagrees for g in stats.guards)
    assert any(g.kind == GuardKind.unpaired_questions and g.provider == "B" for g in stats.guards)
