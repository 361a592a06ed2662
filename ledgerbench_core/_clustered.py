"""Cluster-aware standard errors: items of one template (or research kind) are correlated, so the
template, not the item, is the independent unit.

Every mean the report shows (a task type's mean, an equal-weight mean, the Overall, and the
difference of two providers' figures) is a linear function of per-item scores. Its variance is
estimated from per-item *influence* values ``IF_i`` (how much item ``i`` moves the statistic):
within a task type, ``var = G/(G-1) sum_g (sum_{i in g} IF_i)^2`` over the G clusters (the CR1
cluster-robust variance; for a plain mean ``IF_i = (y_i - mean)/n`` and this is exactly the
intercept-only OLS cluster-robust variance statsmodels computes). Task types are independent
strata: variances add, and the degrees of freedom combine by Welch-Satterthwaite (one task type:
G - 1). With every item its own cluster the same formula is the classic ``s^2/n``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats as scipy_stats

if TYPE_CHECKING:
    from ledgerbench_core._overall import ScoredAnswer

AUTO_CLUSTER_FIELDS = ("template", "kind")
"""``--cluster auto``: an obligation item's generator template, else a research item's kind."""


def cluster_keys(
    items: list[str], metadata: Mapping[str, Mapping[str, str]], setting: str, task_type: str
) -> tuple[str | None, dict[str, str], str | None]:
    """(field used or None, question_id -> cluster key, note) for the items of one task type.

    ``setting``: ``auto`` (template, else kind), ``none`` or a metadata field. An item without
    the field is a cluster of its own; items falling into fewer than 2 clusters are analysed with
    items as the unit (a cluster-robust variance needs at least 2), and the note says so.
    """
    candidates = (
        () if setting == "none" else AUTO_CLUSTER_FIELDS if setting == "auto" else (setting,)
    )
    field = next((f for f in candidates if any(f in metadata.get(q, {}) for q in items)), None)
    if field is None:
        note = None
        if setting not in ("auto", "none"):
            note = f"no {task_type} item has a metadata field {setting!r}: items are the unit"
        return None, {q: q for q in items}, note
    keys = {q: metadata.get(q, {}).get(field, f"item:{q}") for q in items}
    if len(set(keys.values())) < 2:
        note = (
            f"every {task_type} item has the same {field}: one cluster cannot give a variance, "
            "so its items are the unit"
        )
        return None, {q: q for q in items}, note
    return field, keys, None


def cluster_codes(keys: Sequence[object]) -> np.ndarray:
    """Integer codes 0..G-1 in order of first appearance (items of their own: 0..n-1)."""
    seen: dict[object, int] = {}
    return np.array([seen.setdefault(key, len(seen)) for key in keys], dtype=int)


@dataclass
class StratumVariance:
    variance: float
    clusters: int
    """Clusters with at least one contributing item."""


def stratum_variance(
    influence: np.ndarray, contributes: np.ndarray, codes: np.ndarray
) -> StratumVariance:
    """CR1 variance of a statistic from its per-item influence in one stratum (NaN from fewer
    than 2 clusters)."""
    used = np.unique(codes[contributes])
    if len(used) < 2:
        return StratumVariance(math.nan, len(used))
    sums = np.bincount(codes, weights=np.where(contributes, influence, 0.0))
    g = len(used)
    return StratumVariance(float(g / (g - 1) * (sums**2).sum()), g)


def combine_strata(parts: Sequence[StratumVariance]) -> tuple[float, float]:
    """(standard error, Satterthwaite degrees of freedom) of a sum over independent strata."""
    if not parts or any(not math.isfinite(p.variance) for p in parts):
        return math.nan, math.nan
    total = sum(p.variance for p in parts)
    if total <= 0:
        return 0.0, float(sum(p.clusters - 1 for p in parts))
    denominator = sum(p.variance**2 / (p.clusters - 1) for p in parts)
    return math.sqrt(total), float(total**2 / denominator)


def t_interval(estimate: float, se: float, df: float, confidence: float) -> tuple[float, float]:
    """``estimate +- t_{df, (1+confidence)/2} se`` (NaN bounds when se or df is undefined)."""
    if not (math.isfinite(se) and math.isfinite(df) and df > 0):
        return math.nan, math.nan
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, df)) * se
    return estimate - half, estimate + half


def t_p_value(estimate: float, se: float, df: float) -> float:
    """Two-sided p of ``estimate / se`` on a t distribution with ``df`` degrees of freedom."""
    return float(2.0 * scipy_stats.t.sf(abs(estimate / se), df))


def minimum_detectable(se: float, df: float, confidence: float, power: float) -> float:
    """Smallest true difference a two-sided t test at ``1 - confidence`` finds with ``power``
    (``df`` infinite: the normal test)."""
    if math.isnan(df) or df <= 0 or not math.isfinite(se):
        return math.nan
    return float((scipy_stats.t.ppf(0.5 + confidence / 2, df) + scipy_stats.t.ppf(power, df)) * se)


def random_intercept_cluster_cov(
    x: np.ndarray,
    y: np.ndarray,
    questions: np.ndarray,
    clusters: np.ndarray,
    params: np.ndarray,
    group_variance: float,
    residual_variance: float,
) -> tuple[np.ndarray, int]:
    """CR1 sandwich covariance of the fixed effects of ``y = X b + u_question + e`` (GLS with the
    fitted variances), clustered by ``clusters`` (each question inside one cluster), and G.

    ``V^-1`` of a question's block is ``(I - w J) / var(e)`` with ``w = lam / (1 + n lam)``,
    ``lam = var(u) / var(e)``; the bread is ``(X' V^-1 X)^-1`` and the meat sums, per cluster,
    the outer product of ``X_g' V_g^-1 e_g`` (the residual variance cancels).
    """
    bread, per_cluster = random_intercept_cluster_scores(
        x, y, questions, clusters, params, group_variance, residual_variance
    )
    g = per_cluster.shape[0]
    meat = per_cluster.T @ per_cluster
    factor = g / (g - 1) if g > 1 else math.nan
    return factor * bread @ meat @ bread, g


def random_intercept_cluster_scores(
    x: np.ndarray,
    y: np.ndarray,
    questions: np.ndarray,
    clusters: np.ndarray,
    params: np.ndarray,
    group_variance: float,
    residual_variance: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The sandwich's parts: the bread ``(X' V^-1 X)^-1`` (up to the residual variance, which
    cancels) and ``[G, k]``, each cluster's ``X_g' V_g^-1 e_g``, clusters in order of first
    appearance (:func:`cluster_codes`)."""
    q_codes = cluster_codes(list(questions))
    lam = group_variance / residual_variance if residual_variance > 0 else 0.0
    sizes = np.bincount(q_codes).astype(float)
    w = lam / (1.0 + sizes * lam)
    x_sums = np.zeros((len(sizes), x.shape[1]))
    np.add.at(x_sums, q_codes, x)
    whitened_x = x - w[q_codes, None] * x_sums[q_codes]
    bread = np.linalg.inv(whitened_x.T @ x)
    scores = whitened_x * (y - x @ params)[:, None]
    c_codes = cluster_codes(list(clusters))
    per_cluster = np.zeros((int(c_codes.max()) + 1, x.shape[1]))
    np.add.at(per_cluster, c_codes, scores)
    return bread, per_cluster


def item_clusters(
    task_of: Mapping[str, str], metadata: Mapping[str, Mapping[str, str]], setting: str = "auto"
) -> tuple[dict[str, str], str]:
    """question_id -> cluster key over every task type (:func:`cluster_keys`), and a label such
    as ``obligations by template, entity_performance by kind, business_brief by item``."""
    by_task: dict[str, list[str]] = defaultdict(list)
    for qid, task_type in task_of.items():
        by_task[task_type].append(qid)
    keys: dict[str, str] = {}
    labels = []
    for task_type, items in by_task.items():
        field, found, _note = cluster_keys(items, metadata, setting, task_type)
        keys.update({q: f"{task_type}:{k}" for q, k in found.items()})
        labels.append(f"{task_type} by {field or 'item'}")
    if all(label.endswith(" by item") for label in labels):
        return keys, "items as the unit"
    return keys, ", ".join(labels)


def run_clusters(run_dir: Path, task_of: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """:func:`item_clusters` from the run's dataset (items are the unit when it is missing)."""
    from ledgerbench_core.dataset._scenarios import dataset_scenarios
    from ledgerbench_core.trajectory import RunManifest

    try:
        manifest = RunManifest.model_validate_json((run_dir / "manifest.json").read_bytes())
        _, _, metadata = dataset_scenarios(manifest.dataset_path, run_dir)
    except (OSError, ValueError):
        metadata = {}
    return item_clusters(task_of, metadata)


def overall_interval(
    answers: Iterable[ScoredAnswer], clusters: Mapping[str, str], confidence: float = 0.95
) -> tuple[float, float, float, float] | None:
    """(low, high, se, df) of a run's Overall (:func:`judge.overall`) from the clustered (CR1)
    variance of its per-item influence; ``clusters``: question_id -> key (missing: the item).
    None without an Overall or with fewer than 2 clusters in some task type."""
    from ledgerbench_core._overall import overall, paper_cells

    per_question: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for answer in answers:
        for dimension, value in answer.dimensions.items():
            per_question[(dimension, answer.task_type, answer.question_id)].append(value)
    cells: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for (dimension, task_type, qid), values in per_question.items():
        cells[(dimension, task_type)][qid] = sum(values) / len(values)
    means = defaultdict(dict)
    for (dimension, task_type), values in cells.items():
        means[dimension][task_type] = sum(values.values()) / len(values)
    estimate = overall(means)
    kept = {d: list(t) for d, t in paper_cells(means).items() if t}
    if estimate is None or not kept:
        return None
    influence: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for dimension, tasks in kept.items():
        weight = 1.0 / (len(kept) * len(tasks))
        for task_type in tasks:
            values = cells[(dimension, task_type)]
            mean = means[dimension][task_type]
            for qid, value in values.items():
                influence[task_type][qid] += weight * (value - mean) / len(values)
    parts = []
    for by_question in influence.values():
        qids = list(by_question)
        codes = cluster_codes([clusters.get(q, q) for q in qids])
        values = np.array([by_question[q] for q in qids])
        parts.append(stratum_variance(values, np.ones(len(qids), dtype=bool), codes))
    se, df = combine_strata(parts)
    low, high = t_interval(estimate, se, df, confidence)
    if math.isnan(low):
        return None
    return low, high, se, df
