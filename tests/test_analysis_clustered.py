"""Clustered intervals and tests: checked against statsmodels and the formulas by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from analysis import ProviderData, Settings, compute_stats
from analysis._data import SCORE_COLUMNS, TRAJECTORY_COLUMNS
from analysis._schema import EQUAL_WEIGHT, ProviderInfo
from analysis._stats import Bootstrap
from analysis.compare import main
from ledgerbench_core._clustered import random_intercept_cluster_cov

pytestmark = pytest.mark.timeout(120)


def _provider(name: str, scores: dict[str, float], tasks: dict[str, str], meta) -> ProviderData:
    rows = [
        {
            "question_id": q,
            "trial": 0,
            "task_type": tasks[q],
            "metric": "clarity",
            "status": "scored",
            "score": v,
        }
        for q, v in scores.items()
    ]
    frame = pd.DataFrame(rows, columns=SCORE_COLUMNS)
    traj = frame[["question_id", "trial", "task_type"]].assign(
        status="ok", latency_s=1.0, timeout_s=60.0, tool_calls=1, tokens=math.nan, cost_usd=0.01
    )[TRAJECTORY_COLUMNS]
    info = ProviderInfo(name=name, source="run", path=name, trajectories=len(traj))
    return ProviderData(info, frame, traj, item_metadata=meta)


def _design(seed: int, templates: int = 12, sizes=(1, 2, 3, 5, 8)):
    """Unequal template sizes, correlated within template, two providers, one task type."""
    rng = np.random.default_rng(seed)
    qids, meta, a, b = [], {}, {}, {}
    for t in range(templates):
        shared, own = rng.normal(0, 0.15), rng.normal(0, 0.1)
        for k in range(sizes[t % len(sizes)]):
            q = f"q{t}-{k}"
            qids.append(q)
            meta[q] = {"template": f"T{t}"}
            a[q] = 0.5 + shared + rng.normal(0, 0.1)
            b[q] = 0.55 + shared + own + rng.normal(0, 0.1)
    return qids, meta, a, b


def test_clustered_mean_matches_statsmodels_and_the_t_formula():
    import statsmodels.api as sm

    qids, meta, a, b = _design(1)
    tasks = dict.fromkeys(qids, "obligations")
    stats = compute_stats(
        [_provider("A", a, tasks, meta), _provider("B", b, tasks, meta)],
        Settings(reference="A", judge="x", bootstrap=50),
    )
    for name, values in (("A", a), ("B", b)):
        cell = next(
            c
            for c in stats.scores
            if c.provider == name and c.metric == "clarity" and c.scope == "obligations"
        )
        y = np.array([values[q] for q in qids])
        groups = np.array([int(meta[q]["template"][1:]) for q in qids])
        ols = sm.OLS(y, np.ones((len(y), 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
        g = len(set(groups))
        assert cell.se == pytest.approx(float(ols.bse[0]), abs=1e-9)
        assert cell.df == g - 1
        half = scipy_stats.t.ppf(0.975, g - 1) * float(ols.bse[0])
        assert cell.score.estimate == pytest.approx(y.mean(), abs=1e-12)
        assert cell.score.ci_low == pytest.approx(y.mean() - half, abs=1e-9)
        assert cell.score.ci_high == pytest.approx(y.mean() + half, abs=1e-9)
        # The naive interval: s / sqrt(n), n - 1 df.
        naive_half = scipy_stats.t.ppf(0.975, len(y) - 1) * y.std(ddof=1) / math.sqrt(len(y))
        assert cell.naive.ci_low == pytest.approx(y.mean() - naive_half, abs=1e-9)
        assert cell.score.ci_high - cell.score.ci_low > cell.naive.ci_high - cell.naive.ci_low


def test_equal_weight_mean_adds_task_type_variances_with_satterthwaite_df():
    qids, meta, a, _ = _design(2)
    qids2, meta2, a2, _ = _design(3, templates=7)
    rename = {q: "r" + q for q in qids2}
    meta |= {rename[q]: m for q, m in meta2.items()}
    scores = a | {rename[q]: v for q, v in a2.items()}
    tasks = dict.fromkeys(qids, "obligations") | dict.fromkeys(rename.values(), "business_brief")
    stats = compute_stats(
        [_provider("A", scores, tasks, meta)], Settings(reference="A", judge="x", bootstrap=50)
    )
    cells = {c.scope: c for c in stats.scores if c.metric == "clarity"}
    v1, v2 = cells["obligations"].se ** 2 / 4, cells["business_brief"].se ** 2 / 4
    ew = cells[EQUAL_WEIGHT]
    assert ew.se == pytest.approx(math.sqrt(v1 + v2), abs=1e-12)
    expected_df = (v1 + v2) ** 2 / (v1**2 / 11 + v2**2 / 6)
    assert ew.df == pytest.approx(expected_df, rel=1e-12)


def _dense_sandwich(x, y, questions, clusters, beta, tau2, sigma2):
    """The same CR1 sandwich from dense matrices (independent of the closed forms)."""
    n = len(y)
    z = (questions[:, None] == np.unique(questions)[None, :]).astype(float)
    v_inv = np.linalg.inv(sigma2 * np.eye(n) + tau2 * z @ z.T)
    bread = np.linalg.inv(x.T @ v_inv @ x)
    e = y - x @ beta
    meat = np.zeros((x.shape[1], x.shape[1]))
    labels = np.unique(clusters)
    for label in labels:
        rows = clusters == label
        u = x[rows].T @ v_inv[np.ix_(rows, rows)] @ e[rows]
        meat += np.outer(u, u)
    g = len(labels)
    return g / (g - 1) * bread @ meat @ bread


def test_mixed_model_sandwich_matches_a_dense_computation_on_an_unbalanced_design():
    rng = np.random.default_rng(5)
    rows = []
    for q in range(40):
        for provider in (0, 1):
            if provider == 1 and q % 4 == 0:  # unbalanced: B misses every fourth question
                continue
            rows.append((q, provider, q // 5))
    questions = np.array([r[0] for r in rows])
    x = np.column_stack([np.ones(len(rows)), [r[1] for r in rows]])
    clusters = np.array([r[2] for r in rows])
    y = 0.5 + 0.05 * x[:, 1] + rng.normal(0, 0.1, 40)[questions] + rng.normal(0, 0.1, len(rows))
    beta, tau2, sigma2 = np.array([0.49, 0.06]), 0.011, 0.009
    cov, g = random_intercept_cluster_cov(x, y, questions, clusters, beta, tau2, sigma2)
    assert g == 8
    np.testing.assert_allclose(
        cov, _dense_sandwich(x, y, questions, clusters, beta, tau2, sigma2), rtol=1e-10
    )


def test_without_a_question_variance_the_sandwich_is_statsmodels_ols_cluster():
    import statsmodels.api as sm

    rng = np.random.default_rng(6)
    questions = np.repeat(np.arange(30), 2)
    x = np.column_stack([np.ones(60), np.tile([0.0, 1.0], 30)])
    clusters = questions // 3
    y = rng.normal(0.5, 0.1, 60)
    ols = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": clusters})
    cov, _ = random_intercept_cluster_cov(x, y, questions, clusters, ols.params, 0.0, 0.01)
    # statsmodels' CR1 also multiplies by (N - 1) / (N - K); ours (like the mean's) does not.
    np.testing.assert_allclose(cov * (59 / 58), ols.cov_params(), rtol=1e-10)


def test_cluster_bootstrap_draws_whole_clusters_and_reduces_to_the_item_bootstrap():
    qids, meta, a, b = _design(4)
    frame = pd.DataFrame(
        [
            {
                "provider": p,
                "metric": "clarity",
                "task_type": "obligations",
                "question_id": q,
                "score": v[q],
            }
            for p, v in (("A", a), ("B", b))
            for q in qids
        ]
    )
    settings = Settings(reference="A", judge="x", bootstrap=200)
    clusters = {q: meta[q]["template"] for q in qids}
    boot = Bootstrap.run(frame, ["A", "B"], ["clarity"], settings, clusters)
    codes = boot.codes["obligations"]
    assert int(codes.max()) + 1 == 12
    items = Bootstrap.run(frame, ["A", "B"], ["clarity"], settings)
    assert not items.clustered("obligations") and boot.clustered("obligations")
    # The resampled means differ from the item bootstrap, and spread wider (correlated items).
    wide = np.std(boot.strata[("clarity", "obligations")].resampled[:, 1])
    narrow = np.std(items.strata[("clarity", "obligations")].resampled[:, 1])
    assert wide > narrow


def test_cluster_option_is_checked_and_recorded(tmp_path, capsys):
    from analysis._synthetic import ProviderSpec, SyntheticConfig, write_runs

    runs = write_runs(
        tmp_path / "runs",
        SyntheticConfig(
            [ProviderSpec("A"), ProviderSpec("B", effect=0.02)],
            questions={"obligations": 40, "business_brief": 10},
            template_size=4,
            provider_template_sd=0.1,
        ),
    )
    out = tmp_path / "out"
    assert main([*map(str, runs), "--out", str(out), "--cluster", "nope", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: --cluster nope: no dataset item has a metadata field 'nope' (fields: template); "
        "use auto, none or one of those"
    ]
    assert not out.exists()
    assert main([*map(str, runs), "--out", str(out), "--bootstrap", "50", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "Items clustered (financial obligations 10 templates / 40 items" in printed
    assert "B - A: Overall" in printed and "MDE" in printed
    report = (out / "report.md").read_text()
    assert "## Appendix: clustering" in report and "Naive 95% CI" in report
    assert main([*map(str, runs), "--out", str(out), "--cluster", "none", "--quiet"]) == 0
    assert "Items are the unit, no clustering" in capsys.readouterr().out


def test_judge_summary_shows_the_same_clustered_overall_interval_as_the_report(tmp_path, capsys):
    import json

    from analysis._synthetic import ProviderSpec, SyntheticConfig, write_runs
    from judge.summary import main as summary_main

    runs = write_runs(
        tmp_path / "runs",
        SyntheticConfig(
            [ProviderSpec("A"), ProviderSpec("B", effect=0.02)],
            questions={"obligations": 40, "entity_performance": 20, "business_brief": 10},
            template_size=4,
            provider_template_sd=0.1,
            trials=2,
        ),
    )
    out = tmp_path / "out"
    assert main([*map(str, runs), "--out", str(out), "--bootstrap", "20", "--quiet"]) == 0
    capsys.readouterr()
    cell = next(
        c
        for c in json.loads((out / "stats.json").read_text())["scores"]
        if c["provider"] == "A" and c["metric"] == "overall" and c["scope"] == EQUAL_WEIGHT
    )
    assert summary_main([str(runs[0]), "--judge", "rules", "--json"]) == 0
    interval = json.loads(capsys.readouterr().out)["rules"]["overall_interval"]
    assert interval["low"] == pytest.approx(cell["score"]["ci_low"], abs=1e-12)
    assert interval["high"] == pytest.approx(cell["score"]["ci_high"], abs=1e-12)
    assert interval["df"] == pytest.approx(cell["df"], abs=1e-9)
    assert "obligations by template" in interval["clustered"]
    assert summary_main([str(runs[0]), "--judge", "rules"]) == 0
    low, high = cell["score"]["ci_low"], cell["score"]["ci_high"]
    assert f"[{low:.3f}, {high:.3f}] (95%, clustered: obligations by template" in (
        capsys.readouterr().out
    )


def test_inspect_export_carries_the_clustered_overall_stderr(tmp_path):
    import datetime as dt

    inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect-ai not installed")
    from ledgerbench._inspect_log import export_inspect
    from ledgerbench_core._clustered import overall_interval
    from ledgerbench_core._overall import ScoredAnswer
    from ledgerbench_core.dataset import Dimension, TaskType
    from ledgerbench_core.scores import DimensionScore, DimensionStatus, ScoreRecord, ScoreStatus
    from tests.fakes.judge_data import question, trajectory, write_run

    questions = []
    for i in range(8):
        q = question(f"q{i}")
        q.metadata = {"template": f"T{i // 3}"}
        questions.append(q)
    records = [trajectory(q.id) for q in questions]
    run = write_run(tmp_path / "run", questions, records)
    values = [0.9, 0.8, 1.0, 0.2, 0.4, 0.3, 0.6, 0.7]
    scores = []
    for q, v in zip(questions, values, strict=True):
        dims = {Dimension.accuracy: v, Dimension.clarity: 1 - v / 2}
        scores.append(
            ScoreRecord(
                question_id=q.id,
                trial=0,
                task_type=TaskType.obligations,
                judge="rules",
                status=ScoreStatus.scored,
                dimensions={
                    d: DimensionScore(status=DimensionStatus.scored, score=s)
                    for d, s in dims.items()
                },
                overall=sum(dims.values()) / 2,
                answer_sha256="0" * 64,
                judged_at=dt.datetime(2026, 3, 2, tzinfo=dt.UTC),
            )
        )
    (run / "scores").mkdir()
    (run / "scores" / "rules.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in scores))
    out, _ = export_inspect(run, tmp_path / "run.eval")
    (result,) = inspect_log.read_eval_log(str(out)).results.scores
    metric = result.metrics["overall_stderr"]
    answers = [
        ScoredAnswer(q.id, "obligations", {"accuracy": v, "clarity": 1 - v / 2})
        for q, v in zip(questions, values, strict=True)
    ]
    clusters = {q.id: q.metadata["template"] for q in questions}
    _low, _high, se, _df = overall_interval(answers, clusters)
    assert metric.value == pytest.approx(se, abs=1e-12)
    assert metric.metadata["df"] == 2 and metric.metadata["clustered"] == "obligations by template"
    naive = overall_interval(answers, {})
    assert naive[2] != pytest.approx(se)


@pytest.mark.parametrize(("shift", "distinguishable"), [(0.023, False), (0.05, True)])
def test_a_difference_inside_the_mde_gets_no_headline_p(shift: float, distinguishable: bool):
    qids = [f"q{i}" for i in range(100)]
    tasks = dict.fromkeys(qids, "obligations")
    a = dict.fromkeys(qids, 0.5)
    b = {q: 0.5 + shift + (0.1 if i % 2 else -0.1) for i, q in enumerate(qids)}
    stats = compute_stats(
        [_provider("A", a, tasks, {}), _provider("B", b, tasks, {})],
        Settings(reference="A", judge="x", bootstrap=200),
    )
    overall = next(
        c
        for m in stats.models
        for c in m.contrasts
        if c.metric == "overall" and c.scope == EQUAL_WEIGHT
    )
    se = np.std([0.1 if i % 2 else -0.1 for i in range(100)], ddof=1) / 10
    assert overall.p_value < 0.05  # both are "significant" at 5%
    assert overall.mdd == pytest.approx(
        (scipy_stats.t.ppf(0.975, overall.df) + scipy_stats.t.ppf(0.8, overall.df)) * se
    )
    assert overall.distinguishable is distinguishable
    cell = next(r for r in stats.headline if r.provider == "B").overall
    assert cell.distinguishable is distinguishable
    assert (cell.significance != "") is distinguishable


def test_identical_runs_are_not_tested_with_the_reason():
    qids, meta, a, _ = _design(7)
    tasks = dict.fromkeys(qids, "obligations")
    stats = compute_stats(
        [_provider("A", a, tasks, meta), _provider("B", dict(a), tasks, meta)],
        Settings(reference="A", judge="x", bootstrap=50),
    )
    overall = next(
        c
        for m in stats.models
        for c in m.contrasts
        if c.metric == "overall" and c.scope == EQUAL_WEIGHT
    )
    assert not overall.tested and overall.p_value is None
    assert overall.not_tested_reason == (
        "the paired differences do not vary: zero variance, nothing to test"
    )
