"""Operations (answer rates, latency, tool calls, tokens, cost), missing-score counts and trials."""

from __future__ import annotations

from math import comb
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis._data import ANSWER_MEAN, DIMENSIONS, INCLUDED, RESEARCH_ACCURACY, TASK_TYPES
from analysis._schema import (
    Distribution,
    FlipRate,
    InfraFailureCell,
    InfraFailures,
    MissingCount,
    OperationsCell,
    PassK,
    Settings,
    TrialStats,
)

if TYPE_CHECKING:
    from analysis._stats import Combined

MISSING_STATUSES = ("not_applicable", "needs_llm", "judge_error", "infra_error", "no_score_record")


def judged_pairs(scores: pd.DataFrame) -> set[tuple[str, str]]:
    """(metric, task_type) pairs the judge reported on: scored, or attempted and left unscored."""
    attempted = ("scored", "rescored", "needs_llm", "judge_error")
    rows = scores.loc[scores["status"].isin(attempted), ["metric", "task_type"]].drop_duplicates()
    return set(map(tuple, rows.to_numpy()))


def missing_counts(scores: pd.DataFrame, names: list[str]) -> list[MissingCount]:
    """Counts per provider, metric and task type, for every metric the judge reported on."""
    pairs = judged_pairs(scores)
    judged = (*DIMENSIONS, RESEARCH_ACCURACY, ANSWER_MEAN)
    metrics = [m for m in judged if any(m == metric for metric, _ in pairs)]
    counts = scores.groupby(["provider", "metric", "task_type", "status"]).size()
    out = []
    for name in names:
        for metric in metrics:
            for task_type in TASK_TYPES:
                if (metric, task_type) not in pairs:
                    continue

                def get(status: str, metric=metric, task_type=task_type, name=name) -> int:
                    return int(counts.get((name, metric, task_type, status), 0))

                out.append(
                    MissingCount(
                        provider=name,
                        metric=metric,
                        task_type=task_type,
                        scored=get("scored"),
                        rescored_as_failure=get("rescored"),
                        **{status: get(status) for status in MISSING_STATUSES},
                    )
                )
    return out


def trial_stats(scores: pd.DataFrame, names: list[str], metrics: list[str]) -> list[TrialStats]:
    """Per-question variance across trials, where questions have at least two scored trials."""
    included = scores[scores["status"].isin(INCLUDED)]
    grouped = included.groupby(["provider", "metric", "task_type", "question_id"])["score"]
    per_q = grouped.agg(["count", "var"]).reset_index()
    repeated = per_q[per_q["count"] >= 2]
    out = []
    for (provider, metric, task_type), cell in repeated.groupby(
        ["provider", "metric", "task_type"]
    ):
        if provider not in names or metric not in metrics:
            continue
        out.append(
            TrialStats(
                provider=provider,
                metric=metric,
                task_type=task_type,
                questions=len(cell),
                trials=int(cell["count"].max()),
                mean_variance=float(cell["var"].mean()),
                max_variance=float(cell["var"].max()),
            )
        )
    order = {n: i for i, n in enumerate(names)}
    return sorted(out, key=lambda t: (order[t.provider], metrics.index(t.metric), t.task_type))


PASS_METRICS = {
    "obligations": "accuracy",
    "entity_performance": RESEARCH_ACCURACY,
    "business_brief": RESEARCH_ACCURACY,
}
"""The verdict of an answer per task type: obligations accuracy, research items' keyed accuracy
(LedgerBench's extension; task types without a key have no pass/fail)."""


def _verdicts(scores: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """provider, task_type, question_id, count (scored trials), sum (passed trials)."""
    wanted = scores["task_type"].map(PASS_METRICS) == scores["metric"]
    cell = scores[wanted & scores["status"].isin(INCLUDED)]
    return (
        cell.assign(passed=cell["score"] >= threshold - 1e-9)
        .groupby(["provider", "task_type", "question_id"], sort=False)["passed"]
        .agg(["count", "sum"])
        .reset_index()
    )


def pass_k(scores: pd.DataFrame, names: list[str], threshold: float) -> list[PassK]:
    """pass^k per task type with a verdict: mean over questions of C(c, k) / C(n, k) (tau-bench)."""
    per_q = _verdicts(scores, threshold)
    if per_q.empty or per_q["count"].max() < 2:
        return []
    out = []
    for task_type in [t for t in TASK_TYPES if t in set(per_q["task_type"])]:
        for name in names:
            cell = per_q[(per_q["provider"] == name) & (per_q["task_type"] == task_type)]
            for k in range(1, int(cell["count"].max()) + 1 if len(cell) else 1):
                usable = cell[cell["count"] >= k]
                values = [
                    comb(int(c), k) / comb(int(n), k)
                    for n, c in usable[["count", "sum"]].to_numpy()
                ]
                out.append(
                    PassK(
                        provider=name,
                        k=k,
                        value=float(np.mean(values)) if values else None,
                        questions=len(values),
                        threshold=threshold,
                        task_type=task_type,
                        metric=PASS_METRICS[task_type],
                    )
                )
    return out


def flip_rates(scores: pd.DataFrame, names: list[str], threshold: float) -> list[FlipRate]:
    """Per provider and task type: the share of questions (with 2+ scored trials) whose verdict
    is not the same in every trial."""
    per_q = _verdicts(scores, threshold)
    per_q = per_q[per_q["count"] >= 2]
    out = []
    for task_type in [t for t in TASK_TYPES if t in set(per_q["task_type"])]:
        for name in names:
            cell = per_q[(per_q["provider"] == name) & (per_q["task_type"] == task_type)]
            if cell.empty:
                continue
            flipped = int(((cell["sum"] > 0) & (cell["sum"] < cell["count"])).sum())
            out.append(
                FlipRate(
                    provider=name,
                    task_type=task_type,
                    metric=PASS_METRICS[task_type],
                    questions=len(cell),
                    flipped=flipped,
                    rate=flipped / len(cell),
                )
            )
    return out


def distribution(values: pd.Series) -> Distribution:
    clean = values.astype(float).dropna()
    if clean.empty:
        return Distribution(n=0)
    return Distribution(
        n=len(clean),
        mean=float(clean.mean()),
        p50=float(clean.quantile(0.5)),
        p90=float(clean.quantile(0.9)),
        max=float(clean.max()),
    )


def operations(combined: Combined, names: list[str], settings: Settings) -> list[OperationsCell]:
    traj = combined.trajectories
    correct = _correct_keys(combined.scores, settings.pass_threshold)
    out = []
    for name in names:
        mine = traj[traj["provider"] == name]
        scopes = [t for t in TASK_TYPES if t in set(mine["task_type"])]
        for scope in [*scopes, "all"] if len(scopes) > 1 else scopes:
            cell = mine if scope == "all" else mine[mine["task_type"] == scope]
            out.append(_operations_cell(name, scope, cell, correct))
    return out


def _correct_keys(scores: pd.DataFrame, threshold: float) -> set[tuple[str, str, int]]:
    acc = scores[
        (scores["metric"] == "accuracy")
        & scores["status"].isin(INCLUDED)
        & (scores["score"] >= threshold - 1e-9)
    ]
    return set(zip(acc["provider"], acc["question_id"], acc["trial"], strict=True))


def _operations_cell(
    name: str, scope: str, cell: pd.DataFrame, correct: set[tuple[str, str, int]]
) -> OperationsCell:
    n = len(cell)
    status = cell["status"].value_counts()

    def rate(key: str) -> float | None:
        return float(status.get(key, 0)) / n if n else None

    costs = cell["cost_usd"].astype(float).dropna()
    tokens = cell["tokens"].astype(float).dropna()
    has_accuracy = scope in ("obligations", "all") and (cell["task_type"] == "obligations").any()
    n_correct = cost_per_correct = tokens_per_correct = None
    if has_accuracy:
        keys = zip(cell["provider"], cell["question_id"], cell["trial"], strict=True)
        n_correct = sum(1 for key in keys if key in correct)
        obligations = cell[cell["task_type"] == "obligations"]
        cost_per_correct = _per_correct(obligations["cost_usd"], n_correct)
        tokens_per_correct = _per_correct(obligations["tokens"], n_correct)
    return OperationsCell(
        provider=name,
        task_type=scope,
        trajectories=n,
        answered_rate=rate("ok"),
        timeout_rate=rate("timeout"),
        max_turns_rate=rate("max_turns"),
        answer_cut_rate=_share(cell, "termination", "answer_cut"),
        error_rate=rate("error"),
        latency_s=distribution(cell["latency_s"]),
        tool_calls=distribution(cell["tool_calls"]),
        tokens_per_question=float(tokens.mean()) if len(tokens) else None,
        cost_per_question=float(costs.mean()) if len(costs) else None,
        cost_known=len(costs),
        correct=n_correct,
        cost_per_correct=cost_per_correct,
        tokens_per_correct=tokens_per_correct,
        over_budget=int(cell["over_budget"].sum()) if "over_budget" in cell else 0,
    )


def _share(cell: pd.DataFrame, column: str, value: str) -> float | None:
    """Share of the cell's rows whose ``column`` is ``value`` (None without rows or column)."""
    if not len(cell) or column not in cell:
        return None
    return float((cell[column] == value).sum()) / len(cell)


def _per_correct(values: pd.Series, n_correct: int) -> float | None:
    """Total spent on obligations (where known) per correct answer; None if unknown."""
    known = values.astype(float).dropna()
    return float(known.sum()) / n_correct if n_correct and len(known) else None


def infra_failures(
    trajectories: pd.DataFrame, names: list[str], convention: InfraFailures
) -> list[InfraFailureCell]:
    """Infrastructure failures (status ``error``) per provider, task type and termination
    reason, with how many were left out of the score denominators."""
    failed = trajectories[trajectories["status"] == "error"]
    if failed.empty:
        return []
    reasons = (
        failed["termination"].fillna("error")
        if "termination" in failed
        else pd.Series("error", index=failed.index)
    )
    totals = trajectories.groupby(["provider", "task_type"]).size()
    counts = failed.assign(reason=reasons).groupby(["provider", "task_type", "reason"]).size()
    order = {n: i for i, n in enumerate(names)}
    out = [
        InfraFailureCell(
            provider=str(provider),
            task_type=str(task_type),
            reason=str(reason),
            count=int(count),
            trajectories=int(totals[(provider, task_type)]),
            excluded=int(count) if convention == InfraFailures.exclude else 0,
        )
        for (provider, task_type, reason), count in counts.items()
    ]
    task_order = {t: i for i, t in enumerate(TASK_TYPES)}
    return sorted(
        out, key=lambda c: (order.get(c.provider, 99), task_order.get(c.task_type, 9), c.reason)
    )
