"""Pairwise contrasts: a third provider cannot move a pair's verdict; power; the fast ML fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import Settings, compute_stats
from analysis._lmm import design_matrix, fit_mixed_model
from analysis._schema import GuardKind, ModelKind
from tests.test_analysis_lmm import TASKS3, simulate
from tests.test_analysis_stats import provider, row

pytestmark = pytest.mark.timeout(120)

PLANTED = 0.05


def providers_from(data, metric: str = "clarity") -> list:
    out = []
    for name, cell in data.groupby("provider", sort=False):
        rows = [
            row(q, metric, float(np.clip(s, 0, 1)), task=t)
            for q, t, s in cell[["question_id", "task_type", "score"]].to_numpy()
        ]
        out.append(provider(name, rows))
    return out


def contrast(stats, second: str, first: str, metric: str = "clarity", scope="equal_weight"):
    return next(
        c
        for m in stats.models
        for c in m.contrasts
        if (c.provider, c.reference, c.metric, c.scope) == (second, first, metric, scope)
    )


@pytest.fixture(scope="module")
def planted():
    """A and B differ by PLANTED with little noise; C is very noisy (same questions)."""
    calm = simulate({"A": 0.0, "B": PLANTED}, {t: 30 for t in TASKS3}, seed=3, noise_sd=0.05)
    noisy = simulate({"C": 0.0}, {t: 30 for t in TASKS3}, seed=4, noise_sd=0.45)
    return providers_from(calm), providers_from(noisy)


def test_a_noisy_third_provider_leaves_the_pair_verdict_unchanged(planted):
    pair, noisy = planted
    settings = Settings(reference="A", judge="x", bootstrap=300)
    alone = contrast(compute_stats(pair, settings), "B", "A")
    crowd = contrast(compute_stats([*pair, *noisy], settings), "B", "A")
    assert alone.tested and alone.p_value < 0.001 and alone.significance == "***"
    assert crowd.lmm_estimate == pytest.approx(alone.lmm_estimate, abs=1e-12)
    assert crowd.lmm_se == pytest.approx(alone.lmm_se, abs=1e-12)
    assert crowd.p_value == pytest.approx(alone.p_value, rel=1e-9)
    assert crowd.significance == alone.significance and crowd.fit == "pairwise"
    assert alone.lmm_estimate - 2 * alone.lmm_se < PLANTED < alone.lmm_estimate + 2 * alone.lmm_se
    # The paper's pooled model shares one residual variance: the noisy provider inflates the
    # pair's standard error, which is what the pairwise default avoids.
    pooled = contrast(
        compute_stats([*pair, *noisy], settings.model_copy(update={"model": ModelKind.pooled})),
        "B",
        "A",
    )
    assert pooled.fit == "pooled" and pooled.lmm_se > 2 * alone.lmm_se


def test_every_pair_is_compared_and_the_report_lists_them(planted):
    pair, noisy = planted
    stats = compute_stats([*pair, *noisy], Settings(reference="A", judge="x", bootstrap=100))
    pairs = {
        (c.reference, c.provider)
        for m in stats.models
        for c in m.contrasts
        if c.scope == "equal_weight"
    }
    assert pairs == {("A", "B"), ("A", "C"), ("B", "C")}
    overall = contrast(stats, "C", "B", metric="overall")
    assert overall.fit == "clustered t" and overall.bootstrap is not None


def test_minimum_detectable_difference_follows_the_variance_components():
    data = simulate({"A": 0.0, "B": 0.02}, {"obligations": 80}, seed=9, noise_sd=0.1)
    stats = compute_stats(providers_from(data), Settings(reference="A", judge="x", bootstrap=200))
    c = contrast(stats, "B", "A")
    assert c.mdd == pytest.approx((1.959964 + 0.841621) * c.lmm_se, rel=1e-4)
    # Balanced paired design: SE^2 = 2 * residual variance / n questions.
    residual = contrast(stats, "B", "A", scope="obligations").residual_variance
    expected = (1.959964 + 0.841621) * np.sqrt(2 * residual / 80)
    assert c.mdd == pytest.approx(expected, rel=0.02)
    assert 0.03 < c.mdd < 0.07
    text = next(m for m in stats.models if m.metric == "clarity")
    assert text.fits and text.fits[0].group_variance > 0


def test_interval_and_p_value_disagreement_is_explained():
    rng = np.random.default_rng(1)
    # Bounded scores with a skew: many exact ties and a few large differences.
    rows_a, rows_b = [], []
    for q in range(40):
        base = rng.uniform(0.3, 0.7)
        rows_a.append(row(f"q{q}", "depth", base))
        bump = 0.6 if q < 3 else 0.0
        rows_b.append(row(f"q{q}", "depth", min(1.0, base + bump)))
    stats = compute_stats(
        [provider("A", rows_a), provider("B", rows_b)],
        Settings(reference="A", judge="x", bootstrap=400),
    )
    c = contrast(stats, "B", "A", metric="depth")
    low, high = c.bootstrap.ci_low, c.bootstrap.ci_high
    if (low > 0 or high < 0) != (c.p_value < 0.05):
        assert c.disagreement and "p = " in c.disagreement
        assert any(g.kind == GuardKind.verdicts_disagree for g in stats.guards)
    else:
        assert c.disagreement is None


def test_fast_fit_matches_statsmodels_variance_components():
    data = simulate({"A": 0.0, "B": 0.05, "C": -0.05}, {t: 25 for t in TASKS3}, seed=12)
    exog = design_matrix(data, "A", ["B", "C"], TASKS3)
    fast = fit_mixed_model(data, exog)
    reference = fit_mixed_model(data, exog, {"method": "bfgs"})
    assert fast.converged and reference.converged
    assert np.allclose(fast.params, reference.params, atol=1e-6)
    assert fast.group_variance == pytest.approx(reference.group_variance, rel=1e-3)
    assert fast.residual_variance == pytest.approx(reference.residual_variance, rel=1e-3)
    assert fast.log_likelihood == pytest.approx(reference.log_likelihood, abs=1e-5)
    assert np.allclose(np.sqrt(np.diag(fast.cov)), np.sqrt(np.diag(reference.cov)), rtol=1e-3)


def test_missing_task_type_keeps_the_others_and_is_flagged():
    rows_a = [row(f"o{q}", "clarity", 0.5 + 0.01 * q, task="obligations") for q in range(10)]
    rows_a += [row(f"b{q}", "clarity", 0.6, task="business_brief") for q in range(6)]
    rows_b = [row(f"o{q}", "clarity", 0.55 + 0.01 * q, task="obligations") for q in range(10)]
    stats = compute_stats(
        [provider("A", rows_a), provider("B", rows_b)],
        Settings(reference="A", judge="x", bootstrap=100),
    )
    c = contrast(stats, "B", "A")
    assert c.tested and c.task_types == ["obligations"]
    assert c.lmm_estimate == pytest.approx(0.05, abs=1e-9)
    assert any(g.kind == GuardKind.missing_task_type and g.provider == "B" for g in stats.guards)


def test_scenarios_below_five_answers_show_no_interval():
    rows = [row(f"q{q}", "accuracy", float(q % 2)) for q in range(9)]
    data = provider("A", rows)
    data.scenarios = {f"q{q}": ("Aged Balance" if q < 6 else "Dispute") for q in range(9)}
    stats = compute_stats([data], Settings(reference="A", judge="x", bootstrap=100))
    cells = {c.scenario: c for c in stats.scenarios}
    assert cells["Dispute"].n == 3 and cells["Dispute"].accuracy.ci_low is None
    assert cells["Aged Balance"].n == 6 and cells["Aged Balance"].accuracy.ci_low is not None


def test_providers_on_different_dimension_sets_are_flagged():
    rows_a = [row(f"q{q}", m, 0.5 + 0.02 * q) for q in range(8) for m in ("clarity", "depth")]
    rows_b = [row(f"q{q}", "clarity", 0.6 + 0.02 * q) for q in range(8)]
    stats = compute_stats(
        [provider("A", rows_a), provider("B", rows_b)],
        Settings(reference="A", judge="x", bootstrap=100),
    )
    guard = next(g for g in stats.guards if g.kind == GuardKind.different_dimensions)
    assert "B lacks depth" in guard.message
    # The Overall difference uses the dimensions both have (clarity): +0.1.
    overall = contrast(stats, "B", "A", metric="overall")
    assert overall.bootstrap.estimate == pytest.approx(0.1)


def _unbalanced(seed: int) -> pd.DataFrame:
    """A pair on the judge's quarter grid where B has no answer for the questions A scored
    highest (answers missing where scores are high, as timeouts on hard questions are): an
    unbalanced design, where the observed and expected information differ."""
    data = simulate({"A": 0.0, "B": 0.06}, {"obligations": 60}, seed=seed)
    data["score"] = np.clip(np.round(data["score"] * 4) / 4, 0.0, 1.0)
    first = data[data["provider"] == "A"].set_index("question_id")["score"]
    high = set(first[first > first.quantile(0.6)].index)
    drop = (data["provider"] == "B") & data["question_id"].isin(high)
    return data[~drop].reset_index(drop=True)


@pytest.mark.parametrize("seed", [3, 21, 40])
def test_observed_standard_errors_are_statsmodels_on_an_unbalanced_design(seed: int) -> None:
    from statsmodels.regression.mixed_linear_model import MixedLM

    data = _unbalanced(seed)
    exog = design_matrix(data, "A", ["B"], ["obligations"])
    fitted = MixedLM(data["score"].to_numpy(), exog, groups=data["question_id"].to_numpy()).fit(
        reml=False, method="bfgs"
    )
    theirs = np.sqrt(np.diag(np.asarray(fitted.cov_params())[:2, :2]))
    observed = fit_mixed_model(data, exog)  # the default
    assert np.allclose(np.sqrt(np.diag(observed.cov)), theirs, rtol=2e-3)
    # The expected information is (X' V^-1 X)^-1 at the same estimates: computed here directly.
    expected = fit_mixed_model(data, exog, se="expected")
    assert np.allclose(expected.params, observed.params)
    sigma2, tau2 = expected.residual_variance, expected.group_variance
    x, v_inv = exog.to_numpy(), []
    for _, group in data.groupby("question_id", sort=False):
        n = len(group)
        v_inv.append((group.index, np.linalg.inv(sigma2 * np.eye(n) + tau2 * np.ones((n, n)))))
    information = sum(x[idx].T @ inv @ x[idx] for idx, inv in v_inv)
    assert np.allclose(expected.cov, np.linalg.inv(information), rtol=1e-6)
    assert abs(np.sqrt(expected.cov[1, 1]) / theirs[1] - 1) > 0.02  # a real difference


def test_se_option_reaches_every_contrast_and_is_recorded() -> None:
    data = _unbalanced(21)
    rows = {
        name: [
            row(r.question_id, "clarity", float(r.score))
            for r in data[data["provider"] == name].itertuples()
        ]
        for name in ("A", "B")
    }
    ses = {}
    for se in ("observed", "expected"):
        settings = Settings(reference="A", judge="x", bootstrap=50, se=se)
        stats = compute_stats([provider(n, r) for n, r in rows.items()], settings)
        assert stats.settings.se == se
        ses[se] = contrast(stats, "B", "A").lmm_se
    assert ses["observed"] > 1.02 * ses["expected"]
