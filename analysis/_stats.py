"""From loaded providers to the :class:`~analysis._schema.Stats` document (no I/O here)."""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis._bootstrap import StratumResult, bootstrap_stratum, equal_weight, percentile_interval
from analysis._data import INCLUDED, METRICS, TASK_TYPES, ProviderData, finite_or_none
from analysis._lmm import MetricInput, analyse_metric
from analysis._ops import missing_counts, operations, pass_k, trial_stats
from analysis._schema import (
    EQUAL_WEIGHT,
    Contrast,
    Correction,
    Guard,
    GuardKind,
    HeadlineCell,
    HeadlineRow,
    Interval,
    MetricModel,
    ProviderInfo,
    ScenarioCell,
    ScoreCell,
    Settings,
    Severity,
    Stats,
)

Progress = Callable[[str], None]


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

    ``combined`` (from :func:`combine` with the same budget) saves combining twice.
    """
    progress = progress or (lambda _step: None)
    names = [p.info.name for p in providers]
    if settings.reference not in names:
        raise ValueError(f"reference {settings.reference!r} is not one of {names}")
    names = [settings.reference, *[n for n in names if n != settings.reference]]
    combined = combined or combine(providers, settings.latency_budget)
    metrics = [m for m in METRICS if m in set(combined.per_question["metric"])]
    task_types = [t for t in TASK_TYPES if t in set(combined.trajectories["task_type"])]
    guards: list[Guard] = []
    timings: dict[str, float] = {}

    started = time.perf_counter()
    scores = bootstrap_scores(combined.per_question, names, metrics, settings)
    timings["bootstrap"] = time.perf_counter() - started
    progress("bootstrap")

    started = time.perf_counter()
    models = []
    for metric in metrics:
        models.append(fit_metric(combined.per_question, metric, names, settings, guards))
        progress(f"model {metric}")
    timings["lmm"] = time.perf_counter() - started

    started = time.perf_counter()
    attach_directions(models, scores, guards)
    apply_correction(models, settings.correction)
    guards.extend(unpaired_guards(combined.per_question, names))
    parts = {
        "headline": headline(names, metrics, scores, models),
        "missing": missing_counts(combined.scores, names),
        "trials": trial_stats(combined.scores, names, metrics),
        "pass_k": pass_k(combined.scores, names, settings.pass_threshold),
        "operations": operations(combined, names, settings),
        "scenarios": scenario_accuracy(combined, names, settings),
        "caveats": caveats(providers, names, settings, combined),
    }
    timings["other"] = time.perf_counter() - started
    return Stats(
        created_at=dt.datetime.now(dt.UTC),
        settings=settings,
        providers=[_info(providers, n) for n in names],
        metrics=metrics,
        task_types=task_types,
        scores=scores,
        models=models,
        guards=guards,
        timings_s=timings,
        **parts,
    )


def _info(providers: list[ProviderData], name: str) -> ProviderInfo:
    return next(p.info for p in providers if p.info.name == name)


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------


def combine(providers: list[ProviderData], budget: dict[str, float]) -> Combined:
    scores = pd.concat(
        [p.scores.assign(provider=p.info.name) for p in providers], ignore_index=True
    )
    trajectories = pd.concat(
        [p.trajectories.assign(provider=p.info.name) for p in providers], ignore_index=True
    )
    trajectories["over_budget"] = _over_budget(trajectories, budget)
    if budget:
        scores = rescore_over_budget(scores, trajectories)
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
# Bootstrap scores
# ----------------------------------------------------------------------------------------------


def metric_task_types(per_question: pd.DataFrame, metric: str) -> list[str]:
    present = set(per_question.loc[per_question["metric"] == metric, "task_type"])
    return [t for t in TASK_TYPES if t in present]


def score_matrix(
    per_question: pd.DataFrame, metric: str, task_type: str, names: list[str]
) -> np.ndarray:
    """``[P, n]`` per-question scores (NaN = missing), questions sorted by id."""
    cell = per_question[
        (per_question["metric"] == metric) & (per_question["task_type"] == task_type)
    ]
    wide = cell.pivot(index="provider", columns="question_id", values="score")
    wide = wide.reindex(index=names, columns=sorted(wide.columns))
    return wide.to_numpy(dtype=float)


def bootstrap_scores(
    per_question: pd.DataFrame, names: list[str], metrics: list[str], settings: Settings
) -> list[ScoreCell]:
    """Score and difference intervals per metric, for each task type and equal-weight."""
    cells: list[ScoreCell] = []
    for m_index, metric in enumerate(metrics):
        per_task = []
        for task_type in metric_task_types(per_question, metric):
            rng = np.random.default_rng([settings.seed, m_index, TASK_TYPES.index(task_type)])
            values = score_matrix(per_question, metric, task_type, names)
            result = bootstrap_stratum(values, rng, settings.bootstrap)
            per_task.append(result)
            cells.extend(score_cells(result, names, metric, task_type, settings.confidence))
        result = equal_weight(per_task)
        cells.extend(score_cells(result, names, metric, EQUAL_WEIGHT, settings.confidence))
    return cells


def score_cells(
    result: StratumResult, names: list[str], metric: str, scope: str, confidence: float
) -> list[ScoreCell]:
    low, high = percentile_interval(result.resampled, confidence)
    diffs = result.resampled - result.resampled[:, [0]]
    d_low, d_high = percentile_interval(diffs, confidence)
    cells = []
    for i, name in enumerate(names):
        difference = None
        if i > 0:
            difference = Interval(
                estimate=finite_or_none(result.point[i] - result.point[0]),
                ci_low=finite_or_none(d_low[i]),
                ci_high=finite_or_none(d_high[i]),
            )
        cells.append(
            ScoreCell(
                provider=name,
                metric=metric,
                scope=scope,
                n=int(result.n[i]),
                score=Interval(
                    estimate=finite_or_none(result.point[i]),
                    ci_low=finite_or_none(low[i]),
                    ci_high=finite_or_none(high[i]),
                ),
                difference=difference,
            )
        )
    return cells


# ----------------------------------------------------------------------------------------------
# Models, directions, corrections
# ----------------------------------------------------------------------------------------------


def fit_metric(
    per_question: pd.DataFrame,
    metric: str,
    names: list[str],
    settings: Settings,
    guards: list[Guard],
) -> MetricModel:
    data = per_question.loc[per_question["metric"] == metric]
    inp = MetricInput(
        metric=metric,
        data=data[["provider", "question_id", "task_type", "score"]],
        reference=settings.reference,
        providers=names,
        task_types=metric_task_types(per_question, metric),
        min_observations=settings.min_observations,
    )
    model, metric_guards = analyse_metric(inp)
    guards.extend(metric_guards)
    return model


def attach_directions(models: list[MetricModel], scores: list[ScoreCell], guards: list[Guard]):
    """Direction from the raw score difference; a model estimate of the other sign is flagged."""
    diffs = {
        (c.provider, c.metric, c.scope): c.difference.estimate
        for c in scores
        if c.difference is not None
    }
    for model in models:
        for contrast in model.contrasts:
            raw = diffs.get((contrast.provider, contrast.metric, contrast.scope))
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


def apply_correction(models: list[MetricModel], correction: Correction) -> None:
    """Adjust p-values across metrics, separately for each provider and scope."""
    families: dict[tuple[str, str], list[Contrast]] = {}
    for model in models:
        for contrast in model.contrasts:
            if contrast.tested and contrast.p_value is not None:
                families.setdefault((contrast.provider, contrast.scope), []).append(contrast)
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
        (c.provider, c.metric): c for m in models for c in m.contrasts if c.scope == EQUAL_WEIGHT
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
                    significance=contrast.significance if contrast else "",
                    tested=contrast.tested if contrast else None,
                ),
            )
        rows.append(row)
    return rows


def scenario_accuracy(
    combined: Combined, names: list[str], settings: Settings
) -> list[ScenarioCell]:
    """Obligations accuracy per scenario, with paired bootstrap intervals."""
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
        result = bootstrap_stratum(values, rng, settings.bootstrap)
        low, high = percentile_interval(result.resampled, settings.confidence)
        for i, name in enumerate(names):
            if result.n[i]:
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
