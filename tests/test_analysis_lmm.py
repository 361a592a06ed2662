"""Mixed models: design and contrasts checked by hand, planted effects, null calibration, guards."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from analysis._lmm import (
    MetricInput,
    analyse_metric,
    contrast_vector,
    design_matrix,
    fit_mixed_model,
)
from analysis._schema import EQUAL_WEIGHT, GuardKind, Severity

pytestmark = pytest.mark.timeout(120)

TASKS3 = ["obligations", "entity_performance", "business_brief"]


def simulate(
    effects: dict[str, float],
    questions: dict[str, int],
    seed: int,
    task_effects: dict[tuple[str, str], float] | None = None,
    question_sd: float = 0.15,
    noise_sd: float = 0.1,
) -> pd.DataFrame:
    """Continuous scores: 0.5 + provider effect (+ per task) + question effect + noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for task, count in questions.items():
        for q in range(count):
            shared = rng.normal(0.0, question_sd)
            for provider, effect in effects.items():
                extra = (task_effects or {}).get((provider, task), 0.0)
                score = 0.5 + effect + extra + shared + rng.normal(0.0, noise_sd)
                rows.append(
                    {
                        "provider": provider,
                        "question_id": f"{task}-{q}",
                        "task_type": task,
                        "score": score,
                    }
                )
    return pd.DataFrame(rows)


def analyse(data: pd.DataFrame, tasks: list[str], providers: list[str], **kwargs):
    return analyse_metric(
        MetricInput(
            metric="overall",
            data=data,
            reference=providers[0],
            providers=providers,
            task_types=tasks,
            **kwargs,
        )
    )


def contrast(model, provider: str, scope: str):
    return next(c for c in model.contrasts if c.provider == provider and c.scope == scope)


# ---------------------------------------------------------------------------------------------
# Design and contrast vectors, by hand
# ---------------------------------------------------------------------------------------------


def test_contrast_vector_two_task_types_by_hand():
    data = simulate({"A": 0, "B": 0}, {"obligations": 3, "business_brief": 3}, seed=0)
    tasks = ["obligations", "business_brief"]
    names = list(design_matrix(data, "A", ["B"], tasks).columns)
    assert names == [
        "Intercept",
        "provider[T.B]",
        "task_type[T.business_brief]",
        "provider[T.B]:task_type[T.business_brief]",
    ]
    # Equal weight, K = 2: beta_B + (1/2) gamma_{B,brief}.
    assert contrast_vector(names, "B", tasks, EQUAL_WEIGHT).tolist() == [0, 1, 0, 0.5]
    assert contrast_vector(names, "B", tasks, "obligations").tolist() == [0, 1, 0, 0]
    assert contrast_vector(names, "B", tasks, "business_brief").tolist() == [0, 1, 0, 1]


def test_contrast_vector_three_task_types_by_hand():
    data = simulate({"A": 0, "B": 0, "C": 0}, {t: 3 for t in TASKS3}, seed=0)
    names = list(design_matrix(data, "A", ["B", "C"], TASKS3).columns)
    assert names == [
        "Intercept",
        "provider[T.B]",
        "provider[T.C]",
        "task_type[T.entity_performance]",
        "task_type[T.business_brief]",
        "provider[T.B]:task_type[T.entity_performance]",
        "provider[T.B]:task_type[T.business_brief]",
        "provider[T.C]:task_type[T.entity_performance]",
        "provider[T.C]:task_type[T.business_brief]",
    ]
    third = 1 / 3
    expected_ew_c = [0, 0, 1, 0, 0, 0, 0, third, third]
    assert np.allclose(contrast_vector(names, "C", TASKS3, EQUAL_WEIGHT), expected_ew_c)
    expected_ep_b = [0, 1, 0, 0, 0, 1, 0, 0, 0]
    assert contrast_vector(names, "B", TASKS3, "entity_performance").tolist() == expected_ep_b


def test_equal_weight_contrast_equals_mean_of_cell_differences():
    """With complete balanced data the ML fixed effects reproduce cell means exactly."""
    data = simulate({"A": 0, "B": 0.1}, {"obligations": 12, "entity_performance": 8}, seed=3)
    model, _ = analyse(data, ["obligations", "entity_performance"], ["A", "B"])
    cells = data.groupby(["task_type", "provider"])["score"].mean()
    diffs = [cells[(t, "B")] - cells[(t, "A")] for t in ("obligations", "entity_performance")]
    assert contrast(model, "B", EQUAL_WEIGHT).lmm_estimate == pytest.approx(np.mean(diffs))
    assert contrast(model, "B", "entity_performance").lmm_estimate == pytest.approx(diffs[1])


def test_manual_design_matches_formula_interface():
    import statsmodels.formula.api as smf

    data = simulate({"A": 0, "B": 0.05, "C": -0.05}, {t: 15 for t in TASKS3}, seed=4)
    exog = design_matrix(data, "A", ["B", "C"], TASKS3)
    ours = fit_mixed_model(data, exog)
    formula = smf.mixedlm(
        "score ~ C(provider, Treatment('A')) * C(task_type, Treatment('obligations'))",
        data,
        groups=data["question_id"],
    ).fit(reml=False)
    # patsy orders interactions by task type first; compare by matching names.
    theirs = dict(zip(formula.fe_params.index, formula.fe_params.to_numpy(), strict=True))
    renamed = {
        name.replace("provider[", "C(provider, Treatment('A'))[").replace(
            "task_type[", "C(task_type, Treatment('obligations'))["
        ): value
        for name, value in zip(ours.fe_names, ours.params, strict=True)
    }
    assert set(renamed) == set(theirs)
    for name, value in renamed.items():
        assert value == pytest.approx(theirs[name], abs=1e-6)


# ---------------------------------------------------------------------------------------------
# Known effects
# ---------------------------------------------------------------------------------------------


def test_planted_effect_is_recovered_within_interval():
    planted = 0.08
    data = simulate({"A": 0, "B": planted}, {t: 40 for t in TASKS3}, seed=11)
    model, guards = analyse(data, TASKS3, ["A", "B"])
    c = contrast(model, "B", EQUAL_WEIGHT)
    assert c.tested and model.converged
    assert c.lmm_estimate - 1.96 * c.lmm_se <= planted <= c.lmm_estimate + 1.96 * c.lmm_se
    assert c.p_value < 0.001
    assert not [g for g in guards if g.severity == Severity.not_tested]


def test_planted_task_specific_effect_shows_in_its_task_type_only():
    data = simulate(
        {"A": 0, "B": 0},
        {t: 40 for t in TASKS3},
        seed=12,
        task_effects={("B", "business_brief"): 0.15},
    )
    model, _ = analyse(data, TASKS3, ["A", "B"])
    brief = contrast(model, "B", "business_brief")
    assert brief.lmm_estimate == pytest.approx(0.15, abs=2.5 * brief.lmm_se)
    assert brief.p_value < 0.001
    assert contrast(model, "B", "obligations").p_value > 0.01
    ew = contrast(model, "B", EQUAL_WEIGHT)
    assert ew.lmm_estimate == pytest.approx(0.05, abs=2.5 * ew.lmm_se)


def test_null_effect_gives_roughly_uniform_p_values():
    p_values = []
    for seed in range(60):
        data = simulate({"A": 0, "B": 0}, {"obligations": 15, "business_brief": 15}, seed=seed)
        model, _ = analyse(data, ["obligations", "business_brief"], ["A", "B"])
        p_values.append(contrast(model, "B", EQUAL_WEIGHT).p_value)
    p = np.array(p_values)
    assert scipy_stats.kstest(p, "uniform").pvalue > 0.01
    assert 0 <= np.mean(p < 0.05) <= 0.15
    assert 0.35 <= np.mean(p < 0.5) <= 0.65


# ---------------------------------------------------------------------------------------------
# Guards
# ---------------------------------------------------------------------------------------------


def kinds(guards) -> set[GuardKind]:
    return {g.kind for g in guards}


def test_guard_few_observations_excludes_the_provider():
    data = simulate({"A": 0, "B": 0.1, "C": 0}, {"obligations": 20}, seed=1)
    few = data["question_id"].isin(["obligations-0", "obligations-1"])
    data = data[(data["provider"] != "C") | few]
    model, guards = analyse(data, ["obligations"], ["A", "B", "C"])
    assert GuardKind.few_observations in kinds(guards)
    assert not contrast(model, "C", EQUAL_WEIGHT).tested
    assert "2 scored observation" in contrast(model, "C", EQUAL_WEIGHT).not_tested_reason
    assert contrast(model, "B", EQUAL_WEIGHT).tested
    assert model.providers == ["A", "B"]


def test_guard_few_observations_in_one_task_type():
    data = simulate({"A": 0, "B": 0.1}, {"obligations": 20, "business_brief": 20}, seed=2)
    keep = ~((data["provider"] == "B") & (data["task_type"] == "business_brief")) | data[
        "question_id"
    ].isin([f"business_brief-{i}" for i in range(3)])
    model, guards = analyse(data[keep], ["obligations", "business_brief"], ["A", "B"])
    assert not contrast(model, "B", "business_brief").tested
    assert contrast(model, "B", "obligations").tested
    assert any(
        g.kind == GuardKind.few_observations and g.task_type == "business_brief" for g in guards
    )


def test_guard_zero_variance():
    data = simulate({"A": 0, "B": 0}, {"obligations": 10}, seed=0).assign(score=1.0)
    model, guards = analyse(data, ["obligations"], ["A", "B"])
    assert GuardKind.zero_variance in kinds(guards)
    assert not model.fitted
    assert "zero variance" in contrast(model, "B", EQUAL_WEIGHT).not_tested_reason


def test_guard_constant_within_providers_gives_undefined_se():
    data = simulate({"A": 0, "B": 0}, {"obligations": 10}, seed=0)
    data["score"] = np.where(data["provider"] == "A", 0.5, 0.75)
    model, guards = analyse(data, ["obligations"], ["A", "B"])
    assert GuardKind.constant_provider in kinds(guards)
    # The degenerate fit ends as "no standard error" or "did not converge" depending on the
    # statsmodels/BLAS build; either way the guard refuses the test and says why.
    assert kinds(guards) & {GuardKind.undefined_se, GuardKind.not_converged}
    c = contrast(model, "B", EQUAL_WEIGHT)
    assert not c.tested and c.p_value is None
    assert (
        "standard error is undefined" in c.not_tested_reason
        or c.not_tested_reason == "the mixed model did not converge"
    )


def test_guard_not_converged_and_warning_captured():
    data = simulate({"A": 0, "B": 0.1}, {"obligations": 20}, seed=5)
    model, guards = analyse(data, ["obligations"], ["A", "B"], fit_options={"maxiter": 0})
    assert model.converged is False
    assert {GuardKind.not_converged, GuardKind.convergence_warning} <= kinds(guards)
    assert any("ConvergenceWarning" in w for w in model.warnings)
    reason = contrast(model, "B", EQUAL_WEIGHT).not_tested_reason
    assert reason == "the mixed model did not converge"


def test_guard_singular_design_for_an_empty_provider_task_cell():
    data = simulate({"A": 0, "B": 0.1, "C": 0}, {"obligations": 10, "business_brief": 10}, seed=6)
    data = data[~((data["provider"] == "C") & (data["task_type"] == "business_brief"))]
    model, guards = analyse(data, ["obligations", "business_brief"], ["A", "B", "C"])
    assert GuardKind.singular_design in kinds(guards)
    assert "singular design" in contrast(model, "C", EQUAL_WEIGHT).not_tested_reason
    assert contrast(model, "B", EQUAL_WEIGHT).tested


def test_single_provider_has_no_contrasts():
    data = simulate({"A": 0}, {"obligations": 10}, seed=0)
    model, guards = analyse(data, ["obligations"], ["A"])
    assert model.contrasts == [] and not model.fitted
    assert "single provider" in model.not_tested_reason
    assert guards == []


def test_guard_fit_error_when_the_fit_raises():
    # No question effect puts the MLE on the boundary; plain L-BFGS then meets a singular
    # information matrix and statsmodels raises instead of returning a fit.
    data = simulate({"A": 0, "B": 0.1}, {"obligations": 20}, seed=5, question_sd=0.0)
    model, guards = analyse(data, ["obligations"], ["A", "B"], fit_options={"method": "lbfgs"})
    assert GuardKind.fit_error in kinds(guards) and not model.fitted
    reason = contrast(model, "B", EQUAL_WEIGHT).not_tested_reason
    assert reason.startswith("the model could not be fitted (LinAlgError")
