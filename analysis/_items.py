"""Which items carry the signal: per-item diagnostics and per-task-type signal-to-noise.

Per item: each agent's pass rate over its trials (obligations: accuracy at least the pass
threshold; research items keyed on a world: research accuracy), the item's discrimination (the
point-biserial correlation between the agents' pass rates on it and their Overall, with 3+
agents; and, with 2+ agents, the upper-lower index D: the pass rate of the better-ranked half of
the agents minus that of the worse-ranked half, which two agents can give), whether every
agent solved it or none did, and the scripted and ``nothing`` baselines' pass rates when those runs
are among the compared ones (left out of the agents unless every run is a baseline). Per task
type: signal-to-noise, the spread of the agents' mean scores
over the spread of one agent's mean score between trials.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis._data import INCLUDED, TASK_TYPES
from analysis._ops import PASS_METRICS
from analysis._schema import ItemDiagnostic, ProviderInfo, SignalNoise

BASELINE_HARNESSES = ("scripted", "nothing")
"""Harnesses whose per-item scores are shown beside every item (the no-LLM baselines)."""


def item_diagnostics(
    scores: pd.DataFrame,
    providers: list[ProviderInfo],
    overall: dict[str, float],
    threshold: float,
) -> list[ItemDiagnostic]:
    """One row per item with a verdict (obligations, keyed research items)."""
    rates = _pass_rates(scores, threshold)
    if rates.empty:
        return []
    names = [p.name for p in providers]
    agents = [n for n in names if _harness(providers, n) not in BASELINE_HARNESSES] or names
    baselines = {
        h: next((p.name for p in providers if p.harness == h), None) for h in BASELINE_HARNESSES
    }
    wide = rates.pivot_table(
        index=["task_type", "question_id"], columns="provider", values="rate", aggfunc="first"
    )
    out = []
    for (task_type, qid), row in wide.iterrows():
        per_agent = {n: float(row[n]) for n in agents if n in row and not math.isnan(row[n])}
        values = list(per_agent.values())
        out.append(
            ItemDiagnostic(
                question_id=str(qid),
                task_type=str(task_type),
                pass_rate=per_agent,
                discrimination=_point_biserial(per_agent, overall),
                discrimination_index=upper_lower_index(per_agent, overall),
                always_solved=bool(values) and min(values) >= 1.0,
                never_solved=bool(values) and max(values) <= 0.0,
                scripted=_baseline(row, baselines["scripted"]),
                nothing=_baseline(row, baselines["nothing"]),
            )
        )
    order = {t: i for i, t in enumerate(TASK_TYPES)}
    out.sort(key=lambda d: (order.get(d.task_type, 9), d.question_id))
    return out


def _harness(providers: list[ProviderInfo], name: str) -> str | None:
    return next((p.harness for p in providers if p.name == name), None)


def _baseline(row: pd.Series, name: str | None) -> float | None:
    if name is None or name not in row or math.isnan(row[name]):
        return None
    return float(row[name])


def _pass_rates(scores: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """provider, task_type, question_id, rate: share of scored trials that pass."""
    wanted = scores["task_type"].map(PASS_METRICS) == scores["metric"]
    cell = scores[wanted & scores["status"].isin(INCLUDED)]
    return (
        cell.assign(passed=(cell["score"] >= threshold - 1e-9).astype(float))
        .groupby(["provider", "task_type", "question_id"], sort=False)["passed"]
        .mean()
        .rename("rate")
        .reset_index()
    )


def _point_biserial(per_agent: dict[str, float], overall: dict[str, float]) -> float | None:
    """Correlation across agents of the item's pass rate with the agent's Overall; None with
    fewer than 3 agents or no spread in either."""
    pairs = [(v, overall[n]) for n, v in per_agent.items() if n in overall]
    if len(pairs) < 3:
        return None
    item, total = np.array(pairs).T
    if np.ptp(item) == 0 or np.ptp(total) == 0:
        return None
    return float(np.corrcoef(item, total)[0, 1])


def upper_lower_index(per_agent: dict[str, float], overall: dict[str, float]) -> float | None:
    """Kelley's upper-lower discrimination index D: the mean pass rate of the agents in the upper
    half by Overall minus that of the lower half (with an odd number, the middle agent is in
    neither). None with fewer than 2 agents, or when the halves cannot be told apart (the lowest
    Overall of the upper half equals the highest of the lower). With two agents D is the better
    agent's pass rate minus the worse one's: a correlation over two agents would only be +-1."""
    ranked = sorted(
        ((overall[n], v) for n, v in per_agent.items() if n in overall), key=lambda p: p[0]
    )
    half = len(ranked) // 2
    if half < 1:
        return None
    lower, upper = ranked[:half], ranked[-half:]
    if upper[0][0] <= lower[-1][0]:
        return None
    return float(np.mean([v for _, v in upper]) - np.mean([v for _, v in lower]))


def signal_to_noise(scores: pd.DataFrame, names: list[str]) -> list[SignalNoise]:
    """Per task type: SD across agents of their mean score (the judge's per-answer mean) over the
    mean across agents of the SD of their per-trial mean score. Noise needs 2+ trials."""
    answers = scores[(scores["metric"] == "answer_mean") & scores["status"].isin(INCLUDED)]
    out = []
    for task_type in [t for t in TASK_TYPES if t in set(answers["task_type"])]:
        cell = answers[(answers["task_type"] == task_type) & answers["provider"].isin(names)]
        means = cell.groupby("provider")["score"].mean()
        per_trial = cell.groupby(["provider", "trial"])["score"].mean()
        trial_sd = per_trial.groupby(level=0).std(ddof=1).dropna()
        signal = float(means.std(ddof=1)) if len(means) > 1 else None
        noise = float(trial_sd.mean()) if len(trial_sd) else None
        ratio = signal / noise if signal is not None and noise else None
        out.append(
            SignalNoise(
                task_type=task_type,
                agents=len(means),
                signal=signal,
                noise=noise,
                ratio=ratio,
            )
        )
    return out
