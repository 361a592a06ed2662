"""From loaded providers to the :class:`~analysis._schema.Stats` document (no I/O here)."""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from analysis._bootstrap import (
    StratumResult,
    draw_indices,
    equal_weight,
    index_counts,
    percentile_interval,
    stratum_from_counts,
)
from analysis._data import (
    ANSWER_MEAN,
    DIMENSIONS,
    INCLUDED,
    OVERALL,
    REPORT_METRICS,
    RESEARCH_ACCURACY,
    RESEARCH_METRICS,
    TASK_TYPES,
    ProviderData,
    finite_or_none,
)
from analysis._items import item_diagnostics, signal_to_noise
from analysis._lmm import RESIDUAL_FLOOR, MetricInput, analyse_metric, fit_random_intercept
from analysis._minimum import paired_count, too_few_paired
from analysis._ops import (
    flip_rates,
    infra_failures,
    missing_counts,
    operations,
    pass_k,
    trial_stats,
)
from analysis._schema import (
    EQUAL_WEIGHT,
    ClusteringCell,
    Contrast,
    Correction,
    FitSummary,
    Guard,
    GuardKind,
    HeadlineCell,
    HeadlineRow,
    InfraFailures,
    Interval,
    MetricModel,
    ModelKind,
    ProviderInfo,
    ResearchGap,
    ScenarioCell,
    ScoreCell,
    Settings,
    Severity,
    Stats,
)
from ledgerbench_core._clustered import (
    StratumVariance,
    cluster_codes,
    cluster_keys,
    combine_strata,
    minimum_detectable,
    random_intercept_cluster_cov,
    stratum_variance,
    t_interval,
    t_p_value,
)

Progress = Callable[[str], None]
MIN_SCENARIO_INTERVAL = 5
"""Scenario cells with fewer answers show n and the mean, no interval."""


@dataclass
class Combined:
    scores: pd.DataFrame
    """All providers' score rows: provider, question_id, trial, task_type, metric, status, score."""
    trajectories: pd.DataFrame
    per_question: pd.DataFrame
    """Included scores averaged over trials: provider, metric, task_type, question_id, score."""
    scenarios: dict[str, str]


def compute_stats(
    providers: list[ProviderData],
    settings: Settings,
    progress: Progress | None = None,
    combined: Combined | None = None,
) -> Stats:
    """Every statistic of the report. ``providers[i].info.name`` must be unique.

    ``combined`` (from :func:`combine` with the same settings) saves combining twice.
    """
    progress = progress or (lambda _step: None)
    names = [p.info.name for p in providers]
    if settings.reference not in names:
        raise ValueError(f"reference {settings.reference!r} is not one of {names}")
    names = [settings.reference, *[n for n in names if n != settings.reference]]
    combined = combined or combine(providers, settings.latency_budget, settings.infra_failures)
    present = set(combined.per_question["metric"])
    modelled = [m for m in REPORT_METRICS if m in present]
    research = [m for m in RESEARCH_METRICS if m in present]
    has_dimensions = any(m in DIMENSIONS for m in modelled)
    metrics = ([OVERALL] if has_dimensions else []) + modelled
    task_types = [t for t in TASK_TYPES if t in set(combined.trajectories["task_type"])]
    guards: list[Guard] = []
    timings: dict[str, float] = {}

    clusters, clustering = resolve_clusters(providers, combined.per_question, settings.cluster)
    started = time.perf_counter()
    boot = Bootstrap.run(combined.per_question, names, modelled + research, settings, clusters)
    scores = boot.score_cells(metrics + research, settings.confidence)
    timings["bootstrap"] = time.perf_counter() - started
    progress("bootstrap")

    started = time.perf_counter()
    models = []
    for metric in modelled + research:
        models.append(
            fit_metric(combined.per_question, metric, names, settings, guards, boot, clusters)
        )
        progress(f"model {metric}")
    if has_dimensions and len(names) > 1:
        models.insert(0, overall_model(boot, names, settings))
    timings["lmm"] = time.perf_counter() - started

    started = time.perf_counter()
    for model in models:
        for contrast in model.contrasts:
            attach_bootstrap(contrast, boot, names, settings, guards)
    attach_directions(models, guards)
    apply_correction(models, settings.correction)
    guards.extend(unpaired_guards(combined.per_question, names))
    guards.extend(coverage_guards(boot, names))
    parts = {
        "headline": headline(names, metrics, scores, models),
        "missing": missing_counts(combined.scores, names),
        "trials": trial_stats(combined.scores, names, modelled + research),
        "pass_k": pass_k(combined.scores, names, settings.pass_threshold),
        "flips": flip_rates(combined.scores, names, settings.pass_threshold),
        "infra_failures": infra_failures(combined.trajectories, names, settings.infra_failures),
        "operations": operations(combined, names, settings),
        "scenarios": scenario_accuracy(combined, names, settings, clusters),
        "research_gaps": research_gaps(providers, names, boot, models, settings),
        "caveats": caveats(providers, names, settings, combined),
    }
    overall = {
        c.provider: c.score.estimate
        for c in scores
        if c.metric == OVERALL and c.scope == EQUAL_WEIGHT and c.score.estimate is not None
    }
    infos = [_info(providers, n) for n in names]
    parts["items"] = item_diagnostics(combined.scores, infos, overall, settings.pass_threshold)
    parts["signal_noise"] = signal_to_noise(combined.scores, names)
    timings["other"] = time.perf_counter() - started
    return Stats(
        created_at=dt.datetime.now(dt.UTC),
        settings=settings,
        providers=[_info(providers, n) for n in names],
        metrics=metrics,
        research_metrics=research,
        task_types=task_types,
        scores=scores,
        models=models,
        guards=_unique(guards),
        timings_s=timings,
        clustering=clustering,
        **parts,
    )


def _unique(guards: list[Guard]) -> list[Guard]:
    """Pairwise fits repeat provider-level guards; keep each one once."""
    seen, out = set(), []
    for guard in guards:
        key = (guard.kind, guard.metric, guard.provider, guard.task_type, guard.message)
        if key not in seen:
            seen.add(key)
            out.append(guard)
    return out


def _info(providers: list[ProviderData], name: str) -> ProviderInfo:
    return next(p.info for p in providers if p.info.name == name)


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------


def combine(
    providers: list[ProviderData],
    budget: dict[str, float],
    infra_failures: InfraFailures = InfraFailures.exclude,
) -> Combined:
    scores = pd.concat(
        [p.scores.assign(provider=p.info.name) for p in providers], ignore_index=True
    )
    # The loaders call the judge's per-answer mean "overall"; here Overall is the paper's.
    scores["metric"] = scores["metric"].replace({OVERALL: ANSWER_MEAN})
    trajectories = pd.concat(
        [p.trajectories.assign(provider=p.info.name) for p in providers], ignore_index=True
    )
    trajectories["over_budget"] = _over_budget(trajectories, budget)
    if budget:
        scores = rescore_over_budget(scores, trajectories)
    if infra_failures == InfraFailures.zero:
        scores = infra_as_zero(scores)
    included = scores[scores["status"].isin(INCLUDED)]
    per_question = (
        included.groupby(["provider", "metric", "task_type", "question_id"], sort=False)["score"]
        .mean()
        .reset_index()
    )
    scenarios: dict[str, str] = {}
    for provider in providers:
        scenarios.update(provider.scenarios)
    return Combined(scores, trajectories, per_question, scenarios)


def _applies_mask(scores: pd.DataFrame) -> np.ndarray:
    """Rows whose (metric, task type) has a scored value from some provider."""
    applies = set(
        map(tuple, scores.loc[scores["status"] == "scored", ["metric", "task_type"]].to_numpy())
    )
    return np.array(
        [(m, t) in applies for m, t in zip(scores["metric"], scores["task_type"], strict=True)],
        dtype=bool,
    )


def infra_as_zero(scores: pd.DataFrame) -> pd.DataFrame:
    """The paper's convention: a failed run scores 0 on every metric that applies to its task."""
    hit = (scores["status"] == "infra_error").to_numpy() & _applies_mask(scores)
    scores = scores.copy()
    scores.loc[hit, "status"] = "infra_as_zero"
    scores.loc[hit, "score"] = 0.0
    return scores


def _over_budget(trajectories: pd.DataFrame, budget: dict[str, float]) -> pd.Series:
    limit = trajectories["task_type"].map(budget).astype(float)
    slow = trajectories["latency_s"].astype(float) > limit
    return slow.fillna(False) & (trajectories["status"] != "error")


def rescore_over_budget(scores: pd.DataFrame, trajectories: pd.DataFrame) -> pd.DataFrame:
    """Answers slower than the budget score 0 on every metric that applies to their task type.

    A metric applies to a task type when any provider has a scored value for it there; judge errors
    and not-applicable dimensions of a slow answer become 0 too (the answer would not have arrived),
    except for metrics that never apply to the task type.
    """
    slow = trajectories.loc[trajectories["over_budget"], ["provider", "question_id", "trial"]]
    if slow.empty:
        return scores
    applies = set(
        map(tuple, scores.loc[scores["status"] == "scored", ["metric", "task_type"]].to_numpy())
    )
    keys = set(map(tuple, slow.to_numpy()))
    row_keys = list(zip(scores["provider"], scores["question_id"], scores["trial"], strict=True))
    is_slow = np.array([k in keys for k in row_keys], dtype=bool)
    applies_mask = np.array(
        [(m, t) in applies for m, t in zip(scores["metric"], scores["task_type"], strict=True)],
        dtype=bool,
    )
    hit = is_slow & applies_mask & (scores["status"] != "infra_error").to_numpy()
    scores = scores.copy()
    scores.loc[hit, "status"] = "rescored"
    scores.loc[hit, "score"] = 0.0
    return scores


# ----------------------------------------------------------------------------------------------
# Clusters
# ----------------------------------------------------------------------------------------------


def resolve_clusters(
    providers: list[ProviderData], per_question: pd.DataFrame, setting: str
) -> tuple[dict[str, str], list[ClusteringCell]]:
    """question_id -> cluster key, and per task type what was used (:func:`cluster_keys`)."""
    metadata: dict[str, dict[str, str]] = {}
    for provider in providers:
        metadata.update(provider.item_metadata)
    clusters: dict[str, str] = {}
    cells = []
    for task_type in TASK_TYPES:
        items = list(
            dict.fromkeys(per_question.loc[per_question["task_type"] == task_type, "question_id"])
        )
        if not items:
            continue
        field, keys, note = cluster_keys(items, metadata, setting, task_type)
        clusters.update({q: f"{task_type}:{k}" for q, k in keys.items()})
        cells.append(
            ClusteringCell(
                task_type=task_type,
                by=field or "item",
                items=len(items),
                clusters=len(set(keys.values())),
                note=note,
            )
        )
    return clusters, cells


# ----------------------------------------------------------------------------------------------
# Bootstrap scores
# ----------------------------------------------------------------------------------------------


def metric_task_types(per_question: pd.DataFrame, metric: str) -> list[str]:
    present = set(per_question.loc[per_question["metric"] == metric, "task_type"])
    return [t for t in TASK_TYPES if t in present]


Weights = dict[tuple[str, str, int], float]
"""(metric, task type, provider index) -> weight of that provider's mean in that cell."""


def _scaled_sum(parts: list[Weights], scale: float) -> Weights:
    total: Weights = {}
    for part in parts:
        for key, weight in part.items():
            total[key] = total.get(key, 0.0) + scale * weight
    return total


@dataclass
class LinearStatistic:
    estimate: float
    se: float
    """Clustered (or naive) standard error; NaN from fewer than 2 clusters in a task type."""
    df: float
    clusters: int


@dataclass
class Bootstrap:
    """Paired, stratified bootstrap of every metric: one draw of questions per task type and
    resample, shared by every provider and every metric (so differences are paired and the
    Overall, a mean over dimensions, is resampled consistently)."""

    names: list[str]
    metrics: list[str]
    """Per-question metrics (dimensions and answer_mean); Overall is derived from them."""
    strata: dict[tuple[str, str], StratumResult]
    """(metric, task type) -> observed and resampled means per provider."""
    values: dict[tuple[str, str], np.ndarray]
    """(metric, task type) -> ``[P, n]`` per-question scores (NaN = missing)."""
    codes: dict[str, np.ndarray]
    """task type -> ``[n]`` cluster code of each question column (0..G-1)."""

    @classmethod
    def run(
        cls,
        per_question: pd.DataFrame,
        names: list[str],
        metrics: list[str],
        settings: Settings,
        clusters: dict[str, str] | None = None,
    ) -> Bootstrap:
        """Resamples clusters (``clusters``: question_id -> key; None: every question its own)
        with replacement within each task type; a drawn cluster brings all its questions."""
        strata: dict[tuple[str, str], StratumResult] = {}
        matrices: dict[tuple[str, str], np.ndarray] = {}
        all_codes: dict[str, np.ndarray] = {}
        for task_index, task_type in enumerate(TASK_TYPES):
            cell = per_question[per_question["task_type"] == task_type]
            if cell.empty:
                continue
            wide = cell.pivot_table(
                index=["metric", "provider"], columns="question_id", values="score", aggfunc="first"
            )
            columns = list(wide.columns)
            codes = cluster_codes([(clusters or {}).get(q, q) for q in columns])
            all_codes[task_type] = codes
            g = int(codes.max()) + 1
            rng = np.random.default_rng([settings.seed, task_index])
            counts = index_counts(draw_indices(rng, g, settings.bootstrap), g)[:, codes]
            for metric in metrics:
                if metric not in wide.index.get_level_values(0):
                    continue
                values = wide.loc[metric].reindex(names).to_numpy(dtype=float)
                strata[(metric, task_type)] = stratum_from_counts(values, counts)
                matrices[(metric, task_type)] = values
        return cls(names, metrics, strata, matrices, all_codes)

    def clustered(self, task_type: str) -> bool:
        """Whether the task type's items are grouped into clusters (not each its own)."""
        codes = self.codes[task_type]
        return int(codes.max()) + 1 < len(codes)

    def single_weights(self, metric: str, scope: str, i: int) -> Weights:
        """Weights of provider i's per-cell means in its score (the formulas of :meth:`single`)."""
        if metric == OVERALL:
            parts = [self.single_weights(d, scope, i) for d in self.dimensions()]
            parts = [p for p in parts if p]
            return _scaled_sum(parts, 1.0 / len(parts)) if parts else {}
        tasks = self.tasks(metric) if scope == EQUAL_WEIGHT else [scope]
        tasks = [t for t in tasks if self.has(metric, t, i)]
        return {(metric, t, i): 1.0 / len(tasks) for t in tasks}

    def difference_weights(self, metric: str, scope: str, i: int, j: int) -> Weights:
        """Weights of the cell means in provider j minus provider i (as :meth:`difference`)."""
        if metric == OVERALL:
            parts = [self.difference_weights(d, scope, i, j) for d in self.dimensions()]
        elif scope == EQUAL_WEIGHT:
            parts = [
                self.difference_weights(metric, t, i, j) for t in self.common_tasks(metric, i, j)
            ]
        else:
            if not (self.has(metric, scope, i) and self.has(metric, scope, j)):
                return {}
            return {(metric, scope, j): 1.0, (metric, scope, i): -1.0}
        parts = [p for p in parts if p]
        return _scaled_sum(parts, 1.0 / len(parts)) if parts else {}

    def linear(self, weights: Weights, naive: bool = False) -> LinearStatistic:
        """A weighted sum of per-cell means with its clustered (or naive) SE and df."""
        estimate = 0.0
        influence: dict[str, np.ndarray] = {}
        contributes: dict[str, np.ndarray] = {}
        for (metric, task_type, i), weight in weights.items():
            row = self.values[(metric, task_type)][i]
            present = ~np.isnan(row)
            count = int(present.sum())
            mean = float(row[present].mean())
            estimate += weight * mean
            step = weight * np.where(present, row - mean, 0.0) / count
            influence[task_type] = influence.get(task_type, 0.0) + step
            contributes[task_type] = contributes.get(task_type, False) | present
        parts: list[StratumVariance] = []
        for task_type, values in influence.items():
            codes = np.arange(len(values)) if naive else self.codes[task_type]
            parts.append(stratum_variance(values, contributes[task_type], codes))
        se, df = combine_strata(parts)
        return LinearStatistic(estimate, se, df, sum(p.clusters for p in parts))

    def tasks(self, metric: str) -> list[str]:
        return [t for t in TASK_TYPES if (metric, t) in self.strata]

    def dimensions(self) -> list[str]:
        return [m for m in self.metrics if m in DIMENSIONS]

    def has(self, metric: str, task_type: str, i: int) -> bool:
        cell = self.strata.get((metric, task_type))
        return cell is not None and bool(np.isfinite(cell.point[i]))

    def single(self, metric: str, scope: str) -> StratumResult | None:
        """Every provider's own score (each over the task types / dimensions it has)."""
        if metric == OVERALL:
            parts = [self.single(d, scope) for d in self.dimensions()]
            parts = [p for p in parts if p is not None]
            if not parts:
                return None
            result = equal_weight(parts)  # the resamples: the same formula, vectorised
            result.point = np.array([self.overall(i, scope) for i in range(len(self.names))])
            result.n = np.max([p.n for p in parts], axis=0)  # answers, not answers x dimensions
            return result
        if scope == EQUAL_WEIGHT:
            parts = [self.strata[(metric, t)] for t in self.tasks(metric)]
            return equal_weight(parts) if parts else None
        return self.strata.get((metric, scope))

    def overall(self, i: int, scope: str) -> float:
        """Provider ``i``'s Overall (NaN without scores), computed by the one definition every
        tool uses (:func:`judge.overall`) from its dimension x task type means."""
        from ledgerbench_core._overall import overall

        tasks = TASK_TYPES if scope == EQUAL_WEIGHT else (scope,)
        means = {
            d: {t: float(self.strata[(d, t)].point[i]) for t in tasks if self.has(d, t, i)}
            for d in self.dimensions()
        }
        value = overall({d: cells for d, cells in means.items() if cells})
        return np.nan if value is None else value

    def common_tasks(self, metric: str, i: int, j: int) -> list[str]:
        if metric == OVERALL:
            found = {t for d in self.dimensions() for t in self.common_tasks(d, i, j)}
            return [t for t in TASK_TYPES if t in found]
        return [t for t in self.tasks(metric) if self.has(metric, t, i) and self.has(metric, t, j)]

    def paired(self, metric: str, scope: str, i: int, j: int) -> dict[str, int]:
        """Task type -> questions both providers have a score for, over the task types the
        contrast of ``metric`` in ``scope`` averages (Overall: a score on some dimension)."""
        tasks = self.common_tasks(metric, i, j) if scope == EQUAL_WEIGHT else [scope]
        metrics = self.dimensions() if metric == OVERALL else [metric]
        counts = {}
        for task_type in tasks:
            cells = [
                self.values[(m, task_type)][[i, j]]
                for m in metrics
                if (m, task_type) in self.values
            ]
            counts[task_type] = paired_count(np.stack(cells)) if cells else 0
        return counts

    def too_few(self, metric: str, scope: str, i: int, j: int, minimum: int) -> str | None:
        """The one rule (:mod:`analysis._minimum`) for this contrast."""
        pair = (self.names[i], self.names[j])
        return too_few_paired(self.paired(metric, scope, i, j), pair, metric, minimum)

    def difference(
        self, metric: str, scope: str, i: int, j: int
    ) -> tuple[float, np.ndarray] | None:
        """Provider j minus provider i (point, ``[B]`` resampled), over what both have."""
        if metric == OVERALL:
            parts = [self.difference(d, scope, i, j) for d in self.dimensions()]
            parts = [p for p in parts if p is not None]
        elif scope == EQUAL_WEIGHT:
            parts = [self.difference(metric, t, i, j) for t in self.common_tasks(metric, i, j)]
        else:
            if not (self.has(metric, scope, i) and self.has(metric, scope, j)):
                return None
            cell = self.strata[(metric, scope)]
            return (
                float(cell.point[j] - cell.point[i]),
                cell.resampled[:, j] - cell.resampled[:, i],
            )
        if not parts:
            return None
        point = float(np.mean([p[0] for p in parts]))
        return point, np.mean(np.stack([p[1] for p in parts]), axis=0)

    def score_cells(self, metrics: list[str], confidence: float) -> list[ScoreCell]:
        cells: list[ScoreCell] = []
        for metric in metrics:
            tasks = (
                sorted({t for d in self.dimensions() for t in self.tasks(d)}, key=TASK_TYPES.index)
                if metric == OVERALL
                else self.tasks(metric)
            )
            for scope in [*tasks, EQUAL_WEIGHT]:
                result = self.single(metric, scope)
                if result is not None:
                    cells.extend(self._cells(result, metric, scope, confidence))
        return cells

    def _cells(
        self, result: StratumResult, metric: str, scope: str, confidence: float
    ) -> list[ScoreCell]:
        cells = []
        for i, name in enumerate(self.names):
            if not np.isfinite(result.point[i]):
                continue
            weights = self.single_weights(metric, scope, i)
            clustered, naive = self.linear(weights), self.linear(weights, naive=True)
            low, high = _clip(t_interval(result.point[i], clustered.se, clustered.df, confidence))
            naive_low, naive_high = _clip(
                t_interval(result.point[i], naive.se, naive.df, confidence)
            )
            difference = None
            found = self.difference(metric, scope, 0, i) if i > 0 else None
            if found is not None:
                d_low, d_high = percentile_interval(found[1][:, None], confidence)
                difference = Interval(
                    estimate=finite_or_none(found[0]),
                    ci_low=finite_or_none(d_low[0]),
                    ci_high=finite_or_none(d_high[0]),
                )
            cells.append(
                ScoreCell(
                    provider=name,
                    metric=metric,
                    scope=scope,
                    n=int(result.n[i]),
                    score=Interval(
                        estimate=finite_or_none(result.point[i]),
                        ci_low=finite_or_none(low),
                        ci_high=finite_or_none(high),
                    ),
                    se=finite_or_none(clustered.se),
                    df=finite_or_none(clustered.df),
                    naive=Interval(
                        estimate=finite_or_none(result.point[i]),
                        ci_low=finite_or_none(naive_low),
                        ci_high=finite_or_none(naive_high),
                    ),
                    difference=difference,
                )
            )
        return cells


def _clip(interval: tuple[float, float]) -> tuple[float, float]:
    """A mean of scores in [0, 1] has its interval clipped to [0, 1] (NaN stays NaN)."""
    low, high = interval
    return (max(low, 0.0) if low == low else low, min(high, 1.0) if high == high else high)


def bootstrap_p(resampled: np.ndarray) -> float | None:
    """Two-sided bootstrap p-value for a zero difference (add-one so it is never exactly 0)."""
    clean = resampled[np.isfinite(resampled)]
    if not len(clean):
        return None
    below, above = int((clean <= 0).sum()), int((clean >= 0).sum())
    return float(min(1.0, 2.0 * (min(below, above) + 1) / (len(clean) + 1)))


# ----------------------------------------------------------------------------------------------
# Models, directions, corrections
# ----------------------------------------------------------------------------------------------


def fit_metric(
    per_question: pd.DataFrame,
    metric: str,
    names: list[str],
    settings: Settings,
    guards: list[Guard],
    boot: Bootstrap | None = None,
    clusters: dict[str, str] | None = None,
) -> MetricModel:
    """Contrasts between every pair of providers for one metric.

    ``pairwise``: one fit per pair on that pair's data and the task types both have, so no other
    provider's data can move the pair's estimate, its standard error or its verdict.
    ``pooled``: one fit with every provider (the paper's model); pairs without the reference are
    differences of two contrasts from the same fit. Either way, where the metric's items are
    clustered (``clusters``: question_id -> key, as the bootstrap's) the SEs are cluster-robust.
    """
    data = per_question.loc[
        per_question["metric"] == metric, ["provider", "question_id", "task_type", "score"]
    ]
    tasks = metric_task_types(per_question, metric)
    if settings.model == ModelKind.pooled or len(names) < 2:
        inp = MetricInput(
            metric=metric,
            data=data,
            reference=settings.reference,
            providers=names,
            task_types=tasks,
            min_observations=settings.min_observations,
            all_pairs=True,
            se=settings.se.value,
            clusters=clusters if _any_clustered(data, clusters) else None,
        )
        model, metric_guards = analyse_metric(inp)
        guards.extend(metric_guards)
        for contrast in model.contrasts:
            contrast.fit = "pooled"
        return model
    model = MetricModel(metric=metric, task_types=tasks, providers=names)
    model.formula = (
        "per pair and task type: score ~ provider + (1 | question_id); the equal-weight "
        "contrast is the mean of the task-type contrasts"
    )
    model.observations, model.questions = len(data), data["question_id"].nunique()
    boot = boot or Bootstrap.run(
        per_question, names, [metric], settings.model_copy(update={"bootstrap": 1})
    )
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            contrasts, fits = pair_contrasts(boot, metric, i, j, tasks, settings, guards)
            model.contrasts.extend(contrasts)
            model.fits.extend(fits)
    tested = [f for f in model.fits if f.converged is not None]
    model.fitted = bool(tested)
    model.converged = all(f.converged for f in tested) if tested else None
    return model


def _any_clustered(data: pd.DataFrame, clusters: dict[str, str] | None) -> bool:
    """Whether some task type's items in ``data`` fall into fewer clusters than items."""
    if not clusters:
        return False
    for _task_type, questions in data.groupby("task_type")["question_id"]:
        items = set(questions)
        if len({clusters.get(q, q) for q in items}) < len(items):
            return True
    return False


def pair_contrasts(
    boot: Bootstrap,
    metric: str,
    i: int,
    j: int,
    tasks: list[str],
    settings: Settings,
    guards: list[Guard],
) -> tuple[list[Contrast], list[FitSummary]]:
    """Provider j vs provider i on their own data, one fit per task type.

    Questions nest in task types and the fixed effects hold every provider x task-type cell, so
    separate fits per task type are one mixed model whose question and residual variances differ
    by task type (business briefs vary far less than obligations). The equal-weight contrast is
    the mean of the task-type contrasts; its variance the sum of theirs over K^2.
    """
    first, second = boot.names[i], boot.names[j]
    per_task: list[Contrast] = []
    fits: list[FitSummary] = []
    for task_type in tasks:
        values = boot.values.get((metric, task_type))
        contrast = Contrast(
            provider=second, reference=first, metric=metric, scope=task_type, tested=False
        )
        contrast.fit = "pairwise"
        per_task.append(contrast)
        if values is None:
            contrast.not_tested_reason = f"no {metric} scores in {task_type}"
            continue
        codes = boot.codes[task_type] if boot.clustered(task_type) else None
        fit = _fit_pair_cell(
            values[[i, j]], (first, second), metric, task_type, guards, settings.se.value, codes
        )
        if isinstance(fit, str):
            contrast.not_tested_reason = fit
            continue
        fits.append(fit[1])
        estimate, se, df, clusters, naive_se = fit[0]
        contrast.lmm_estimate, contrast.lmm_se = estimate, se
        contrast.df, contrast.clusters, contrast.naive_se = df, clusters, naive_se
        contrast.group_variance = fit[1].group_variance
        contrast.residual_variance = fit[1].residual_variance
        contrast.contrast_vector = {f"provider[T.{second}]": 1.0}
        few = boot.too_few(metric, task_type, i, j, settings.min_observations)
        if few:  # still estimated, for the equal-weight contrast; not tested on its own
            contrast.not_tested_reason = few
            guards.append(_not_tested(GuardKind.few_observations, metric, second, task_type, few))
            continue
        contrast.tested = True
        contrast.z = estimate / se
        contrast.p_value = _p_value(estimate, se, df)
    marginal = Contrast(
        provider=second, reference=first, metric=metric, scope=EQUAL_WEIGHT, tested=False
    )
    marginal.fit = "pairwise"
    compared = [c for c in per_task if c.scope in boot.common_tasks(metric, i, j)]
    untested = [c for c in compared if c.lmm_se is None]
    if not compared:
        marginal.not_tested_reason = f"{first} and {second} share no task type with {metric} scores"
    elif untested:
        marginal.not_tested_reason = f"{untested[0].scope}: {untested[0].not_tested_reason}"
    elif few := boot.too_few(metric, EQUAL_WEIGHT, i, j, settings.min_observations):
        marginal.not_tested_reason = few
    else:
        k = len(compared)
        estimate = sum(c.lmm_estimate for c in compared) / k
        se = math.sqrt(sum(c.lmm_se**2 for c in compared)) / k
        marginal.tested, marginal.lmm_estimate, marginal.lmm_se = True, estimate, se
        marginal.naive_se = math.sqrt(sum((c.naive_se or c.lmm_se) ** 2 for c in compared)) / k
        marginal.df = _satterthwaite([(c.lmm_se**2, c.df) for c in compared])
        if any(c.clusters for c in compared):
            marginal.clusters = sum(c.clusters or 0 for c in compared)
        marginal.z = estimate / se
        marginal.p_value = _p_value(estimate, se, marginal.df)
        marginal.contrast_vector = {f"{c.scope}: provider[T.{second}]": 1.0 / k for c in compared}
    return [marginal, *per_task], fits


def _p_value(estimate: float, se: float, df: float | None) -> float:
    """Two-sided Wald p: t with ``df`` (clustered), normal when ``df`` is None."""
    if df is None:
        return float(2.0 * scipy_stats.norm.sf(abs(estimate / se)))
    return t_p_value(estimate, se, df)


def _satterthwaite(parts: list[tuple[float, float | None]]) -> float | None:
    """Degrees of freedom of a sum of independent (variance, df) terms; df None = normal."""
    if all(df is None for _, df in parts):
        return None
    total = sum(v for v, _ in parts)
    denominator = sum(v**2 / df for v, df in parts if df is not None)
    return float(total**2 / denominator) if denominator > 0 else None


MIN_TO_FIT = 2
"""Observations per provider and task type below which a pair's cell is not even estimated."""


def _not_tested(
    kind: GuardKind, metric: str, provider: str | None, task_type: str, why: str
) -> Guard:
    return Guard(
        kind=kind,
        severity=Severity.not_tested,
        metric=metric,
        provider=provider,
        task_type=task_type,
        message=why,
    )


def _too_few(
    values: np.ndarray, pair: tuple[str, str], metric: str, task_type: str, minimum: int
) -> str | None:
    """Too few observations of one provider to estimate the pair's cell at all."""
    for row, name in reversed(list(enumerate(pair))):  # the provider first, then its reference
        count = int((~np.isnan(values[row])).sum())
        if count < minimum:
            return (
                f"{name} has {count} scored {metric} observation(s) in {task_type}; at least "
                f"{minimum} are needed"
            )
    return None


def _fit_pair_cell(
    values: np.ndarray,
    pair: tuple[str, str],
    metric: str,
    task_type: str,
    guards: list[Guard],
    se: str = "observed",
    codes: np.ndarray | None = None,
) -> tuple[tuple[float, float, float | None, int | None, float], FitSummary] | str:
    """``score ~ provider + (1 | question)`` for two providers in one task type (``values`` is
    ``[2, n]``): ((estimate, se, df, clusters, model se), summary), or the reason it was not
    estimated (guard recorded). With cluster ``codes`` of the questions the SE is the
    cluster-robust sandwich of the same fit (df = clusters - 1); without, the model's own."""

    def stop(kind: GuardKind, why: str, provider: str | None = None) -> str:
        guards.append(_not_tested(kind, metric, provider, task_type, why))
        return why

    present = ~np.isnan(values)
    few = _too_few(values, pair, metric, task_type, MIN_TO_FIT)
    if few:
        return stop(GuardKind.few_observations, few)
    scores = values[present]
    if np.ptp(scores) == 0:
        return stop(
            GuardKind.zero_variance,
            f"every {metric} score in {task_type} is {scores[0]:g}: zero variance, nothing to test",
        )
    for row, name in enumerate(pair):
        own = values[row][present[row]]
        if np.ptp(own) == 0:
            guards.append(
                Guard(
                    kind=GuardKind.constant_provider,
                    severity=Severity.warning,
                    metric=metric,
                    provider=name,
                    task_type=task_type,
                    message=(
                        f"every {metric} score of {name} in {task_type} is {own[0]:g}; the "
                        "model's equal-variance assumption is strained, read its p-values with care"
                    ),
                )
            )
    rows, questions = np.nonzero(present)
    exog = pd.DataFrame({"Intercept": np.ones(len(rows)), "second": rows.astype(float)})
    fit = fit_random_intercept(values[rows, questions], exog, questions, se=se)
    se = model_se = math.sqrt(fit.cov[1, 1]) if fit.cov[1, 1] > 0 else math.nan
    df, clusters = None, None
    if codes is not None and fit.residual_variance > RESIDUAL_FLOOR:
        cov, clusters = random_intercept_cluster_cov(
            exog.to_numpy(float),
            values[rows, questions],
            questions,
            codes[questions],
            fit.params,
            fit.group_variance,
            fit.residual_variance,
        )
        se = math.sqrt(cov[1, 1]) if cov[1, 1] > 0 else math.nan
        df = float(clusters - 1)
    if not fit.residual_variance > RESIDUAL_FLOOR or not math.isfinite(se):
        return stop(
            GuardKind.undefined_se,
            "the standard error is undefined: the fit has no residual variance left "
            "(scores constant within each provider)",
        )
    summary = FitSummary(
        providers=list(pair),
        task_types=[task_type],
        observations=len(rows),
        questions=int(present.any(axis=0).sum()),
        converged=fit.converged,
        log_likelihood=finite_or_none(fit.log_likelihood),
        group_variance=finite_or_none(fit.group_variance),
        residual_variance=finite_or_none(fit.residual_variance),
    )
    if not fit.converged:
        return stop(GuardKind.not_converged, "the mixed model did not converge")
    return (float(fit.params[1]), se, df, clusters, model_se), summary


def overall_model(boot: Bootstrap, names: list[str], settings: Settings) -> MetricModel:
    """The paper's Overall has no single-outcome model: each pair is tested by the bootstrap."""
    model = MetricModel(
        metric=OVERALL,
        formula=None,
        task_types=sorted(
            {t for d in boot.dimensions() for t in boot.tasks(d)}, key=TASK_TYPES.index
        ),
        providers=names,
        not_tested_reason=None,
    )
    for i, first in enumerate(names):
        for j in range(i + 1, len(names)):
            for scope in [EQUAL_WEIGHT, *model.task_types]:
                found = boot.difference(OVERALL, scope, i, j)
                contrast = Contrast(
                    provider=names[j],
                    reference=first,
                    metric=OVERALL,
                    scope=scope,
                    tested=found is not None,
                    not_tested_reason=None if found else "no dimension both providers have",
                    fit="clustered t",
                )
                few = boot.too_few(OVERALL, scope, i, j, settings.min_observations)
                if found is not None and few:
                    contrast.tested, contrast.not_tested_reason = False, few
                elif found is not None:
                    linear_t_test(contrast, boot, i, j)
                model.contrasts.append(contrast)
    return model


def linear_t_test(contrast: Contrast, boot: Bootstrap, i: int, j: int) -> None:
    """The Overall's test: the paired difference over its cluster-robust SE (the same CR1
    variance as every mean's), t with Satterthwaite df. The cluster bootstrap's own p
    (``bootstrap_p``) over-rejects with few clusters (bench/bench_clustered_null.py)."""
    linear = boot.linear(boot.difference_weights(contrast.metric, contrast.scope, i, j))
    if not (math.isfinite(linear.se) and linear.se > 0 and math.isfinite(linear.df)):
        contrast.tested = False
        contrast.not_tested_reason = (
            "the paired differences do not vary: zero variance, nothing to test"
            if linear.se == 0
            else "the standard error is undefined (fewer than 2 clusters in a task type)"
        )
        return
    contrast.df, contrast.clusters = linear.df, linear.clusters
    contrast.z = linear.estimate / linear.se
    contrast.p_value = t_p_value(linear.estimate, linear.se, linear.df)


def attach_bootstrap(
    contrast: Contrast, boot: Bootstrap, names: list[str], settings: Settings, guards: list[Guard]
) -> None:
    """Paired bootstrap difference, bootstrap p, minimum detectable difference, agreement check."""
    i, j = names.index(contrast.reference), names.index(contrast.provider)
    found = boot.difference(contrast.metric, contrast.scope, i, j)
    if contrast.scope == EQUAL_WEIGHT:
        contrast.task_types = boot.common_tasks(contrast.metric, i, j)
    else:
        contrast.task_types = [contrast.scope]
    if found is None:
        return
    point, resampled = found
    low, high = percentile_interval(resampled[:, None], settings.confidence)
    contrast.bootstrap = Interval(
        estimate=finite_or_none(point),
        ci_low=finite_or_none(low[0]),
        ci_high=finite_or_none(high[0]),
    )
    contrast.bootstrap_p = bootstrap_p(resampled)
    if contrast.lmm_se is None:  # the Overall (bootstrap tested) or an untested cell
        weights = boot.difference_weights(contrast.metric, contrast.scope, i, j)
        clustered = boot.linear(weights)
        contrast.naive_se = finite_or_none(boot.linear(weights, naive=True).se)
        if contrast.df is None and any(boot.clustered(t) for t in contrast.task_types):
            contrast.df, contrast.clusters = finite_or_none(clustered.df), clustered.clusters
        se = finite_or_none(clustered.se)
    else:
        se = contrast.lmm_se
    df = contrast.df if contrast.df is not None else math.inf
    contrast.mdd = finite_or_none(
        minimum_detectable(se, df, settings.confidence, settings.power) if se else math.nan
    )
    if contrast.tested and contrast.mdd is not None:
        contrast.distinguishable = abs(point) >= contrast.mdd
    if contrast.tested and contrast.p_value is not None:
        contrast.disagreement = disagreement(contrast, settings.confidence)
        if contrast.disagreement:
            guards.append(
                Guard(
                    kind=GuardKind.verdicts_disagree,
                    severity=Severity.warning,
                    metric=contrast.metric,
                    provider=contrast.provider,
                    task_type=None if contrast.scope == EQUAL_WEIGHT else contrast.scope,
                    message=f"{contrast.provider} vs {contrast.reference}: {contrast.disagreement}",
                )
            )


def disagreement(contrast: Contrast, confidence: float) -> str | None:
    """One sentence when the interval and the p-value give different verdicts, else None."""
    interval = contrast.bootstrap
    if interval is None or interval.ci_low is None or interval.ci_high is None:
        return None
    alpha = 1 - confidence
    excludes = interval.ci_low > 0 or interval.ci_high < 0
    significant = contrast.p_value < alpha
    if excludes == significant:
        return None
    shown = (
        f"the {confidence:.0%} bootstrap interval [{interval.ci_low:+.3f}, "
        f"{interval.ci_high:+.3f}] {'excludes' if excludes else 'includes'} 0 "
        f"but p = {contrast.p_value:.3g}"
    )
    boot_se = (interval.ci_high - interval.ci_low) / (2 * 1.96)
    raw, est, se = interval.estimate, contrast.lmm_estimate, contrast.lmm_se
    if est is not None and raw is not None and abs(est - raw) > max(0.5 * boot_se, 0.01):
        why = (
            f"the model estimate ({est:+.3f}) differs from the raw difference ({raw:+.3f}) "
            "because missing scores make the two average over different questions"
        )
    elif se is not None and boot_se > 0 and se > 1.25 * boot_se:
        why = (
            f"the model's standard error ({se:.3f}) is {se / boot_se:.1f}x the bootstrap's: the "
            "model assumes one residual variance for every provider and task type in its fit, the "
            "paired bootstrap uses this pair's own question-by-question differences"
        )
    elif se is not None and boot_se > 0 and boot_se > 1.25 * se:
        why = (
            f"the bootstrap's spread ({boot_se:.3f}) is {boot_se / se:.1f}x the model's standard "
            f"error ({se:.3f}): skewed or bounded scores widen the percentile interval"
        )
    else:
        why = "both sit at the edge of the 5% level and differ only in approximation"
    return f"{shown}: {why}."


def attach_directions(models: list[MetricModel], guards: list[Guard]) -> None:
    """Direction from the raw score difference; a model estimate of the other sign is flagged."""
    for model in models:
        for contrast in model.contrasts:
            raw = contrast.bootstrap.estimate if contrast.bootstrap else None
            contrast.raw_difference = raw
            contrast.direction = _direction(raw)
            est = contrast.lmm_estimate
            if contrast.tested and raw and est and abs(raw) > 1e-9 and np.sign(raw) != np.sign(est):
                guards.append(
                    Guard(
                        kind=GuardKind.direction_disagrees,
                        severity=Severity.warning,
                        metric=contrast.metric,
                        provider=contrast.provider,
                        task_type=None if contrast.scope == EQUAL_WEIGHT else contrast.scope,
                        message=(
                            f"{contrast.provider} vs {contrast.reference} on {contrast.metric} "
                            f"({contrast.scope}): the raw difference ({raw:+.3f}) and the model "
                            f"estimate ({est:+.3f}) disagree in sign (missing scores make the two "
                            f"average over different questions); the direction follows the raw "
                            "scores"
                        ),
                    )
                )


def _direction(raw: float | None) -> str | None:
    if raw is None:
        return None
    if abs(raw) < 1e-12:
        return "equal"
    return "higher" if raw > 0 else "lower"


def coverage_guards(boot: Bootstrap, names: list[str]) -> list[Guard]:
    """A provider missing a task type, and providers scored on different dimension sets."""
    guards: list[Guard] = []
    all_tasks = sorted({t for (_, t) in boot.strata}, key=TASK_TYPES.index)
    dims = boot.dimensions()
    own_dims = {}
    for i, name in enumerate(names):
        have = [t for t in all_tasks if any(boot.has(m, t, i) for m in boot.metrics)]
        lacking = [t for t in all_tasks if t not in have]
        if lacking and have:
            guards.append(
                Guard(
                    kind=GuardKind.missing_task_type,
                    severity=Severity.warning,
                    provider=name,
                    message=(
                        f"{name} has no scores for {', '.join(lacking)}: its equal-weight scores "
                        f"average over {', '.join(have)} only, and each comparison with it uses "
                        "the task types both providers have"
                    ),
                )
            )
        own_dims[name] = {d for d in dims if any(boot.has(d, t, i) for t in all_tasks)}
    if len({frozenset(v) for v in own_dims.values()}) > 1:
        union = set().union(*own_dims.values())
        parts = [
            f"{n} lacks {', '.join(sorted(union - have))}"
            for n, have in own_dims.items()
            if union - have
        ]
        guards.append(
            Guard(
                kind=GuardKind.different_dimensions,
                severity=Severity.warning,
                metric=OVERALL,
                message=(
                    "providers are scored on different dimension sets (" + "; ".join(parts) + "): "
                    "each Overall averages the provider's own dimensions, so Overall scores are "
                    "not like for like; the Overall differences use the dimensions both have"
                ),
            )
        )
    return guards


def apply_correction(models: list[MetricModel], correction: Correction) -> None:
    """Adjust p-values across metrics, separately for each provider and scope; the extension's
    research metrics form families of their own, so they never move a paper metric's p-value."""
    families: dict[tuple[str, str, str, bool], list[Contrast]] = {}
    for model in models:
        for contrast in model.contrasts:
            if contrast.tested and contrast.p_value is not None:
                extension = contrast.metric in RESEARCH_METRICS
                key = (contrast.provider, contrast.reference, contrast.scope, extension)
                families.setdefault(key, []).append(contrast)
    for family in families.values():
        adjusted = adjust_p([c.p_value for c in family], correction)
        for contrast, p in zip(family, adjusted, strict=True):
            contrast.p_adjusted = float(p)
            contrast.significance = stars(p)


def adjust_p(p_values: list[float], correction: Correction) -> list[float]:
    if correction == Correction.none or len(p_values) <= 1:
        return list(p_values)
    from statsmodels.stats.multitest import multipletests

    method = {"holm": "holm", "bh": "fdr_bh"}[correction.value]
    return list(multipletests(p_values, method=method)[1])


def stars(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def unpaired_guards(per_question: pd.DataFrame, names: list[str]) -> list[Guard]:
    """Warn when providers were scored on different questions (then only partly paired)."""
    guards: list[Guard] = []
    if len(names) < 2:
        return guards
    for task_type, cell in per_question.groupby("task_type", sort=False):
        sets = {p: set(q) for p, q in cell.groupby("provider")["question_id"]}
        union = set().union(*sets.values())
        for name in names:
            missing = len(union - sets.get(name, set()))
            if missing:
                guards.append(
                    Guard(
                        kind=GuardKind.unpaired_questions,
                        severity=Severity.warning,
                        provider=name,
                        task_type=str(task_type),
                        message=(
                            f"{name} has no score at all for {missing} of the {len(union)} "
                            f"{task_type} questions that other providers have; its means use "
                            f"fewer questions, so differences are only partly paired"
                        ),
                    )
                )
    return guards


# ----------------------------------------------------------------------------------------------
# Headline, scenarios, caveats
# ----------------------------------------------------------------------------------------------


def headline(
    names: list[str], metrics: list[str], scores: list[ScoreCell], models: list[MetricModel]
) -> list[HeadlineRow]:
    by_key = {(c.provider, c.metric): c for c in scores if c.scope == EQUAL_WEIGHT}
    contrasts = {
        (c.provider, c.metric): c
        for m in models
        for c in m.contrasts
        if c.scope == EQUAL_WEIGHT and c.reference == names[0]
    }
    rows = []
    for i, name in enumerate(names):
        row = HeadlineRow(provider=name, is_reference=i == 0)
        for metric in metrics:
            cell = by_key.get((name, metric))
            if cell is None:
                continue
            contrast = contrasts.get((name, metric))
            setattr(
                row,
                metric,
                HeadlineCell(
                    score=cell.score.estimate,
                    ci_low=cell.score.ci_low,
                    ci_high=cell.score.ci_high,
                    difference=cell.difference.estimate if cell.difference else None,
                    p_value=contrast.p_value if contrast else None,
                    p_adjusted=contrast.p_adjusted if contrast else None,
                    significance=(
                        contrast.significance if contrast and contrast.distinguishable else ""
                    ),
                    tested=contrast.tested if contrast else None,
                    distinguishable=contrast.distinguishable if contrast else None,
                    mdd=contrast.mdd if contrast else None,
                ),
            )
        rows.append(row)
    return rows


GAPS = (("golden", "world"), ("world", "none"))
"""(minuend, subtrahend) research modes: golden - world is what retrieval costs the agent (the
reasoning ceiling over the world's tools); world - none what the tools add over memorisation."""
GAP_CELLS = (
    (OVERALL, EQUAL_WEIGHT),
    ("accuracy", "obligations"),
    (RESEARCH_ACCURACY, "entity_performance"),
    (RESEARCH_ACCURACY, "business_brief"),
    (RESEARCH_ACCURACY, EQUAL_WEIGHT),
)


def research_gaps(
    providers: list[ProviderData],
    names: list[str],
    boot: Bootstrap,
    models: list[MetricModel],
    settings: Settings,
) -> list[ResearchGap]:
    """golden - world and world - none for each harness and model compared in those modes (the
    first run of each mode), from the same paired bootstrap and tests as every contrast."""
    infos = [_info(providers, n) for n in names]
    by_agent: dict[tuple[str | None, str | None], dict[str, int]] = {}
    for index, info in enumerate(infos):
        modes = by_agent.setdefault((info.harness, info.model), {})
        modes.setdefault(info.research or "", index)
    gaps = []
    for (harness, model), modes in by_agent.items():
        for high, low in GAPS:
            if high not in modes or low not in modes:
                continue
            i, j = modes[low], modes[high]
            for metric, scope in GAP_CELLS:
                found = boot.difference(metric, scope, i, j)
                if found is None:
                    continue
                lows, highs = percentile_interval(found[1][:, None], settings.confidence)
                p, distinguishable = _pair_p(models, metric, scope, names[i], names[j])
                gaps.append(
                    ResearchGap(
                        harness=harness,
                        model=model,
                        gap=f"{high} - {low}",
                        minuend=names[j],
                        subtrahend=names[i],
                        metric=metric,
                        scope=scope,
                        difference=Interval(
                            estimate=finite_or_none(found[0]),
                            ci_low=finite_or_none(lows[0]),
                            ci_high=finite_or_none(highs[0]),
                        ),
                        p_value=p,
                        significance=stars(p) if distinguishable is not False else "",
                    )
                )
    return gaps


def _pair_p(
    models: list[MetricModel], metric: str, scope: str, a: str, b: str
) -> tuple[float | None, bool | None]:
    """The (corrected) p-value of the a-b contrast of a metric and scope (two-sided: either
    order), None when it was not tested; and whether it is outside its MDE (no stars if not)."""
    for model in models:
        if model.metric != metric:
            continue
        for contrast in model.contrasts:
            if contrast.scope == scope and {contrast.provider, contrast.reference} == {a, b}:
                if not contrast.tested:
                    return None, None
                p = contrast.p_adjusted if contrast.p_adjusted is not None else contrast.p_value
                return p, contrast.distinguishable
    return None, None


def scenario_accuracy(
    combined: Combined,
    names: list[str],
    settings: Settings,
    clusters: dict[str, str] | None = None,
) -> list[ScenarioCell]:
    """Obligations accuracy per scenario, with paired cluster-bootstrap intervals."""
    acc = combined.per_question[
        (combined.per_question["metric"] == "accuracy")
        & (combined.per_question["task_type"] == "obligations")
    ]
    if acc.empty or not combined.scenarios:
        return []
    acc = acc.assign(scenario=acc["question_id"].map(combined.scenarios).fillna("unknown"))
    cells = []
    for index, (scenario, cell) in enumerate(sorted(acc.groupby("scenario"), key=lambda x: x[0])):
        wide = cell.pivot(index="provider", columns="question_id", values="score")
        values = wide.reindex(index=names).to_numpy(dtype=float)
        rng = np.random.default_rng([settings.seed, 1000 + index])
        codes = cluster_codes([(clusters or {}).get(q, q) for q in wide.columns])
        g = int(codes.max()) + 1
        counts = index_counts(draw_indices(rng, g, settings.bootstrap), g)[:, codes]
        result = stratum_from_counts(values, counts)
        low, high = percentile_interval(result.resampled, settings.confidence)
        for i, name in enumerate(names):
            if result.n[i]:
                if result.n[i] < MIN_SCENARIO_INTERVAL:
                    low[i] = high[i] = math.nan
                cells.append(
                    ScenarioCell(
                        provider=name,
                        scenario=str(scenario),
                        n=int(result.n[i]),
                        accuracy=Interval(
                            estimate=finite_or_none(result.point[i]),
                            ci_low=finite_or_none(low[i]),
                            ci_high=finite_or_none(high[i]),
                        ),
                    )
                )
    return cells


def caveats(
    providers: list[ProviderData], names: list[str], settings: Settings, combined: Combined
) -> list[str]:
    notes: list[str] = []
    for provider in providers:
        notes.extend(provider.caveats)
    if len(names) == 1:
        notes.append(
            f"Only one provider ({names[0]}): the report shows its scores with intervals, but no "
            "comparison or significance test is possible. Add a second run to compare."
        )
    unscored = sorted(
        set(combined.scores.loc[combined.scores["status"] == "needs_llm", "metric"])
        - set(combined.per_question["metric"])
    )
    if unscored:
        notes.append(
            f"No scores at all for {', '.join(unscored)}: the judge left them unscored "
            "(needs an LLM judge). They are absent from every table, not zero."
        )
    if len(names) > 1 and settings.correction == Correction.none:
        notes.append(
            "No multiple-comparison correction was applied across the metrics (as in the paper): "
            "with 9 metrics, comparing two identical agents shows p < 0.05 on at least one metric "
            "far more often than 5% of the time. Use --correction holm or bh for a stricter "
            "reading."
        )
    elif len(names) > 1:
        notes.append(f"p-values are corrected across metrics with {settings.correction.value}.")
    if settings.latency_budget:
        budget = ", ".join(f"{k} {v:g} s" for k, v in settings.latency_budget.items())
        slow = int(combined.trajectories["over_budget"].sum())
        notes.append(
            f"LATENCY BUDGET APPLIED ({budget}): {slow} answer(s) slower than the budget were "
            "re-scored as failures (0 on every metric). These scores are not the run's own scores."
        )
        ran_under = combined.trajectories.groupby("task_type")["timeout_s"].min()
        for task_type, limit in settings.latency_budget.items():
            run_limit = ran_under.get(task_type)
            if run_limit is not None and math.isfinite(run_limit) and limit > run_limit:
                notes.append(
                    f"The {task_type} budget ({limit:g} s) is longer than the budget the runs used "
                    f"({run_limit:g} s): answers cut by the run's own timeout stay as they were."
                )
    trials = max(p.info.trials for p in providers)
    if trials > 1:
        notes.append(
            f"Repeated trials (up to {trials} per question): each question's scores are averaged "
            "over its trials before the models and intervals, so the question stays the unit."
        )
    notes.append(
        "Missing scores (judge errors, needs-LLM, not applicable, failed runs) are left out, never "
        "counted as 0; their counts are in the missing-scores table."
    )
    return notes
