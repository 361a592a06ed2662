"""The published FORCE-Bench evaluation files: import keyed by question, Table 1 reproduced.

Reads ``../shared/reference/force-bench/results`` in place (never copied into the repository).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from analysis import Settings, Stats, compute_stats, load_provider
from analysis._published import question_key
from analysis._schema import ModelKind
from analysis._stats import combine
from analysis.compare import main

pytestmark = pytest.mark.timeout(300)

FILES = {
    "Haiku": "eval_results_answers_claude-haiku-4-5_classic_wolf.json",
    "Opus": "eval_results_answers_claude-opus-4-7_notorious_robin.json",
    "GPT": "eval_results_answers_gpt-5.5_keen_rhino.json",
}
DIMENSIONS = [
    "accuracy",
    "citations",
    "clarity",
    "depth",
    "groundedness",
    "recency",
    "relevance",
    "structure",
]
TABLE_1 = {  # the paper's Table 1: eight dimensions, then Overall with its 95% interval
    "Opus": ([0.56, 0.74, 0.67, 0.55, 0.33, 0.77, 0.71, 0.74], (0.63, 0.59, 0.68)),
    "GPT": ([0.67, 0.61, 0.75, 0.63, 0.43, 0.73, 0.79, 0.79], (0.67, 0.64, 0.71)),
}


@pytest.fixture(scope="module")
def results_dir(reference_dir: Path) -> Path:
    folder = reference_dir / "force-bench" / "results"
    if not folder.exists():
        pytest.skip(f"published FORCE-Bench results not found at {folder}")
    return folder


@pytest.fixture(scope="module")
def table1(results_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Stats:
    """``analysis.compare`` as a user reproduces Table 1 (the paper's conventions)."""
    out = tmp_path_factory.mktemp("table1")
    args = [str(results_dir / f) for f in FILES.values()]
    for label in FILES:
        args += ["--label", label]
    args += ["--model", "pooled", "--latency-budget", "paper", "--infra-failures", "zero"]
    assert main([*args, "--out", str(out), "--quiet"]) == 0
    return Stats.model_validate_json((out / "stats.json").read_text())


@pytest.fixture(scope="module")
def providers(results_dir: Path) -> dict:
    loaded = {}
    for label, name in FILES.items():
        provider = load_provider(results_dir / name, judge=None)
        provider.info.name = label
        loaded[label] = provider
    return loaded


@pytest.fixture(scope="module")
def default_stats(providers: dict) -> Stats:
    """Our defaults: pairwise model, failures excluded, no budget; GPT vs Haiku."""
    pair = [providers["Haiku"], providers["GPT"]]
    return compute_stats(pair, Settings(reference="Haiku", judge="gpt-5.2", bootstrap=400))


def headline(stats: Stats, provider: str):
    return next(r for r in stats.headline if r.provider == provider)


@pytest.mark.parametrize("provider", ["Opus", "GPT"])
def test_table1_columns_reproduced(table1: Stats, provider: str):
    row = headline(table1, provider)
    dimensions, (overall, low, high) = TABLE_1[provider]
    for dimension, published in zip(DIMENSIONS, dimensions, strict=True):
        cell = getattr(row, dimension)
        assert cell.score == pytest.approx(published, abs=0.015), dimension
        assert cell.ci_low < cell.score < cell.ci_high
    assert row.overall.score == pytest.approx(overall, abs=0.015)
    assert row.overall.ci_low == pytest.approx(low, abs=0.025)
    assert row.overall.ci_high == pytest.approx(high, abs=0.025)
    # The paper's printed Overall interval is the mean of its eight dimension bounds (Table 1's
    # Overall row averages every row); ours, from the same per-dimension bootstrap, matches it.
    bounds = [getattr(row, d) for d in DIMENSIONS]
    assert sum(c.ci_low for c in bounds) / 8 == pytest.approx(low, abs=0.01)
    assert sum(c.ci_high for c in bounds) / 8 == pytest.approx(high, abs=0.01)
    # The answer-level mean is a different number and is reported under its own name.
    assert row.answer_mean.score > row.overall.score + 0.03


def test_stats_name_the_judge_and_the_conventions(table1: Stats):
    opus = next(p for p in table1.providers if p.name == "Opus")
    assert opus.judge == "gpt-52-2025-12-11" and opus.model == "claude-opus-4-7"
    assert opus.harness == "claude" and opus.questions == 251
    assert table1.settings.model == ModelKind.pooled
    assert table1.settings.latency_budget == {
        "obligations": 60.0,
        "entity_performance": 60.0,
        "business_brief": 300.0,
    }


def test_items_pair_by_question_text_not_by_position(results_dir: Path, providers: dict):
    gpt_raw = json.loads((results_dir / FILES["GPT"]).read_text())["results"]
    opus_raw = json.loads((results_dir / FILES["Opus"]).read_text())["results"]
    assert [i["question"] for i in gpt_raw] != [i["question"] for i in opus_raw]  # shuffled
    ids = {label: set(p.trajectories["question_id"]) for label, p in providers.items()}
    assert len(ids["GPT"]) == 251 and ids["GPT"] == ids["Opus"] == ids["Haiku"]
    # A question's scores are that question's, wherever it sits in each file.
    item = next(i for i in opus_raw if i["plugin"] == "erp_qa" and not i["skipped"])
    qid = question_key("obligations", item["question"])
    scores = providers["Opus"].scores
    accuracy = scores[(scores["question_id"] == qid) & (scores["metric"] == "accuracy")]
    assert accuracy["score"].iloc[0] == pytest.approx(item["tag_scores"]["accuracy"])


def test_operations_skips_and_judge_come_from_the_files(providers: dict):
    opus = providers["Opus"].trajectories
    assert opus["latency_s"].notna().all()
    assert (opus["status"] == "timeout").sum() == 62 and (opus["status"] == "error").sum() == 4
    assert opus["tool_calls"].notna().all() and opus["tool_calls"].mean() > 1  # answers file
    gpt = providers["GPT"].trajectories
    assert (gpt["status"] == "timeout").sum() == 46 and (gpt["status"] == "error").sum() == 2
    assert gpt["tool_calls"].isna().all()  # its answers file is not published
    assert any("tool calls unknown" in c for c in providers["GPT"].caveats)
    assert any("token usage is recorded as 0" in c for c in providers["GPT"].caveats)
    haiku = providers["Haiku"]
    assert any("zeroed 82 answer(s)" in c for c in haiku.caveats)


def test_paper_budget_rescores_the_slow_answers(providers: dict):
    budget = {"obligations": 60.0, "entity_performance": 60.0, "business_brief": 300.0}
    combined = combine(list(providers.values()), budget)
    slow = combined.trajectories[combined.trajectories["over_budget"]]
    counts = slow.groupby("provider").size().to_dict()
    assert counts["Haiku"] >= 82 and counts["GPT"] >= 4
    rescored = combined.scores[combined.scores["status"] == "rescored"]
    assert set(rescored["score"]) == {0.0}


def test_infrastructure_failures_are_excluded_by_default(providers: dict):
    scores = providers["Opus"].scores
    failed = scores[scores["status"] == "infra_error"]
    assert failed["question_id"].nunique() == 4 and failed["score"].isna().all()


def test_gpt_vs_haiku_contrasts_keyed_by_question(default_stats: Stats):
    by = {
        (c.metric, c.scope): c
        for m in default_stats.models
        for c in m.contrasts
        if c.provider == "GPT" and c.reference == "Haiku"
    }
    accuracy = by[("accuracy", "equal_weight")]
    assert accuracy.tested and accuracy.fit == "pairwise" and accuracy.direction == "higher"
    assert accuracy.p_value < 1e-8  # correctly paired; position pairing gave 1.1e-6
    assert accuracy.bootstrap.ci_low > 0 and accuracy.mdd < accuracy.bootstrap.estimate
    for contrast in by.values():
        if contrast.tested and contrast.p_value is not None and contrast.bootstrap:
            low, high = contrast.bootstrap.ci_low, contrast.bootstrap.ci_high
            agree = (low > 0 or high < 0) == (contrast.p_value < 0.05)
            assert agree or contrast.disagreement, (contrast.metric, contrast.scope)
    assert all(math.isfinite(c.mdd) for c in by.values() if c.tested and c.mdd is not None)


@pytest.mark.parametrize(("se", "expected_se", "expected_p"), [
    ("observed", 0.0427, 0.0043),  # the default: statsmodels' standard errors
    ("expected", 0.0356, 0.0006),  # (X' V^-1 X)^-1, what issue 25 found the project used
])  # fmt: skip
def test_standard_errors_on_the_unbalanced_published_cell(
    providers: dict, se: str, expected_se: float, expected_p: float
):
    """Opus vs Haiku groundedness in entity research under the paper's conventions: an
    unbalanced cell (groundedness applied to few answered research items)."""
    budget = {"obligations": 60.0, "entity_performance": 60.0, "business_brief": 300.0}
    pair = [providers["Haiku"], providers["Opus"]]
    settings = Settings(
        reference="Haiku", judge="gpt-5.2", bootstrap=50, latency_budget=budget,
        infra_failures="zero", se=se,
    )  # fmt: skip
    stats = compute_stats(pair, settings)
    cell = next(
        c
        for m in stats.models
        for c in m.contrasts
        if (c.metric, c.scope, c.provider) == ("groundedness", "entity_performance", "Opus")
    )
    assert cell.lmm_se == pytest.approx(expected_se, abs=5e-5)
    assert cell.p_value == pytest.approx(expected_p, abs=5e-5)
