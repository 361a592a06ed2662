"""``--model pooled`` follows the same rule as the pairwise model: where items are clustered, its
contrasts have cluster-robust standard errors and t tests (task types as strata), checked against
a dense computation and against the pairwise fit where the two models coincide."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from analysis import Settings, compute_stats
from analysis._lmm import design_matrix
from analysis._schema import EQUAL_WEIGHT, ModelKind
from tests.test_analysis_clustered import _design, _provider

pytestmark = pytest.mark.timeout(120)


def _contrast(stats, provider: str, reference: str, scope: str):
    model = next(m for m in stats.models if m.metric == "clarity")
    return next(
        c
        for c in model.contrasts
        if (c.provider, c.reference, c.scope) == (provider, reference, scope)
    )


def test_pooled_equals_pairwise_where_the_two_models_coincide():
    """Two providers in one task type: the pooled model is the pair's model, so the clustered
    estimate, SE, df and p must be the pairwise ones."""
    qids, meta, a, b = _design(11)
    tasks = dict.fromkeys(qids, "obligations")
    providers = [_provider("A", a, tasks, meta), _provider("B", b, tasks, meta)]
    settings = Settings(reference="A", judge="x", bootstrap=50)
    pairwise = _contrast(compute_stats(providers, settings), "B", "A", "obligations")
    pooled = _contrast(
        compute_stats(providers, settings.model_copy(update={"model": ModelKind.pooled})),
        "B",
        "A",
        "obligations",
    )
    assert pooled.fit == "pooled" and pairwise.fit == "pairwise"
    assert pooled.df == pairwise.df == 11  # 12 templates
    assert pooled.clusters == pairwise.clusters == 12
    for field in ("lmm_estimate", "lmm_se", "naive_se", "p_value", "mdd"):
        assert getattr(pooled, field) == pytest.approx(getattr(pairwise, field), rel=1e-6), field
    assert pooled.lmm_se != pytest.approx(pooled.naive_se, rel=1e-3)


def _three_providers_two_task_types():
    qids, meta, a, b = _design(12)
    qids2, meta2, a2, b2 = _design(13, templates=7)
    rename = {q: "r" + q for q in qids2}
    meta |= {rename[q]: m for q, m in meta2.items()}
    tasks = dict.fromkeys(qids, "obligations") | dict.fromkeys(rename.values(), "business_brief")
    a |= {rename[q]: v for q, v in a2.items()}
    b |= {rename[q]: v for q, v in b2.items()}
    rng = np.random.default_rng(14)
    c = {q: v + 0.03 + rng.normal(0, 0.08) for q, v in a.items()}
    return tasks, meta, {"A": a, "B": b, "C": c}


def _dense_stratified_se(data, tasks, meta, c_names, c_values, tau2, sigma2):
    """The contrast's CR1 variance per task type from dense matrices, strata added, and the
    Satterthwaite df: independent of the closed forms and of the per-cluster sums."""
    x = design_matrix(data, "A", ["B", "C"], ["obligations", "business_brief"])
    c = np.array([dict(zip(c_names, c_values, strict=True)).get(n, 0.0) for n in x.columns])
    x = x.to_numpy(float)
    y = data["score"].to_numpy(float)
    questions = data["question_id"].to_numpy()
    same_question = (questions[:, None] == questions[None, :]).astype(float)
    v_inv = np.linalg.inv(sigma2 * np.eye(len(y)) + tau2 * same_question)
    bread = np.linalg.inv(x.T @ v_inv @ x)
    beta = bread @ x.T @ v_inv @ y
    e = y - x @ beta
    clusters = np.array([f"{tasks[q]}:{meta[q]['template']}" for q in questions])
    parts = []
    for task_type in ("obligations", "business_brief"):
        labels = sorted({k for k in clusters if k.startswith(task_type)})
        total = 0.0
        for label in labels:
            rows = clusters == label
            total += float(c @ bread @ x[rows].T @ v_inv[np.ix_(rows, rows)] @ e[rows]) ** 2
        g = len(labels)
        parts.append((g / (g - 1) * total, g - 1))
    variance = sum(v for v, _ in parts)
    parts = [(v, df) for v, df in parts if v > 1e-12 * variance]
    df = variance**2 / sum(v**2 / df for v, df in parts)
    return math.sqrt(variance), df, float(c @ beta)


@pytest.mark.parametrize(
    ("provider", "reference", "scope"),
    [
        ("B", "A", EQUAL_WEIGHT),
        ("C", "A", "obligations"),
        ("C", "A", "business_brief"),
        ("C", "B", EQUAL_WEIGHT),  # a pair without the reference: difference of two contrasts
    ],
)
def test_pooled_contrasts_have_the_stratified_cluster_robust_se(provider, reference, scope):
    import pandas as pd

    tasks, meta, scores = _three_providers_two_task_types()
    providers = [_provider(n, s, tasks, meta) for n, s in scores.items()]
    settings = Settings(reference="A", judge="x", bootstrap=50, model=ModelKind.pooled)
    stats = compute_stats(providers, settings)
    model = next(m for m in stats.models if m.metric == "clarity")
    contrast = _contrast(stats, provider, reference, scope)
    data = pd.DataFrame(
        [
            {"provider": p, "question_id": q, "task_type": tasks[q], "score": v}
            for p, s in scores.items()
            for q, v in s.items()
        ]
    )
    se, df, estimate = _dense_stratified_se(
        data,
        tasks,
        meta,
        list(contrast.contrast_vector),
        list(contrast.contrast_vector.values()),
        model.group_variance,
        model.residual_variance,
    )
    assert contrast.tested and contrast.fit == "pooled"
    assert contrast.lmm_estimate == pytest.approx(estimate, abs=1e-9)
    assert contrast.lmm_se == pytest.approx(se, rel=1e-9)
    assert contrast.df == pytest.approx(df, rel=1e-9)
    assert contrast.p_value == pytest.approx(2 * scipy_stats.t.sf(abs(estimate / se), df))
    assert contrast.naive_se is not None and contrast.naive_se != pytest.approx(se, rel=1e-3)
    expected_clusters = {"obligations": 12, "business_brief": 7}
    tasks_in = list(expected_clusters) if scope == EQUAL_WEIGHT else [scope]
    assert contrast.clusters == sum(expected_clusters[t] for t in tasks_in)


def test_pooled_without_clusters_keeps_the_model_se_and_a_normal_test():
    qids, _meta, a, b = _design(15)
    tasks = dict.fromkeys(qids, "obligations")
    providers = [_provider("A", a, tasks, {}), _provider("B", b, tasks, {})]
    settings = Settings(reference="A", judge="x", bootstrap=50, model=ModelKind.pooled)
    contrast = _contrast(compute_stats(providers, settings), "B", "A", "obligations")
    assert contrast.df is None and contrast.naive_se is None
    z = contrast.lmm_estimate / contrast.lmm_se
    assert contrast.p_value == pytest.approx(2 * scipy_stats.norm.sf(abs(z)))
