"""Conversations (operations items) in the report: per provider and scenario kind, accuracy with
a clustered t interval, the clarification rate, disclosure violations, turns used, the simulator
error rate and pass^k; and each provider against the reference, paired by question.

Intervals follow the report's one rule (docs/statistics.md, "Clustering"): a question's trials are
averaged first, and conversations of one template are correlated, so the template (``--cluster``)
is the independent unit: accuracy gets a t interval from the cluster-robust (CR1) standard error
with clusters - 1 df, the paired difference the same interval and a t test, the minimum
detectable effect beside it, and a difference inside it is "not distinguishable at this size".

Read from the run directories (trajectories and the judge's score records, whose
``extra.conversation`` the rules judge writes), so every figure is a function of recorded files.
Conversations whose simulated user broke its scenario critically are counted (``simulator
errors``) and left out of every other figure.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from analysis._minimum import too_few_paired
from ledgerbench_core._clustered import (
    cluster_codes,
    cluster_keys,
    combine_strata,
    minimum_detectable,
    stratum_variance,
    t_interval,
    t_p_value,
)

ALL_KINDS = "all"


class ConversationCell(BaseModel):
    """One provider on one scenario kind (or ``all``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    provider: str
    kind: str
    conversations: int
    """Scored conversations (simulator errors and infrastructure failures left out)."""
    accuracy: float | None = None
    accuracy_low: float | None = None
    accuracy_high: float | None = None
    clarification_rate: float | None = None
    """Share of conversations with required clarifications in which all were asked first."""
    violations: int = 0
    """Conversations in which the agent disclosed something it must not."""
    mean_turns: float | None = None
    """Agent turns per conversation."""
    simulator_errors: int = 0
    """Conversations left out because the simulated user broke its scenario."""
    simulator_error_rate: float | None = None
    """Simulator errors over every conversation played: those left out, and those run again
    (``--retry-simulator-errors``), over the conversations recorded plus the attempts run again."""
    simulator_reruns: int = 0
    """Conversations run again because the reviewer excluded an earlier attempt."""
    pass_k: dict[str, float] = {}
    """pass^k by k (1 up to the trials run)."""
    vs_reference: float | None = None
    """Accuracy difference to the reference provider on the same questions."""
    vs_low: float | None = None
    vs_high: float | None = None
    p_value: float | None = None
    """Two-sided p of that difference: its clustered t test (None below the minimum of paired
    questions)."""
    mde: float | None = None
    """Minimum detectable effect of that difference at 80% power (from its clustered SE)."""
    distinguishable: bool | None = None
    """False when the difference is inside its MDE: "not distinguishable at this size"."""
    clusters: int | None = None
    """Clusters (templates, or questions when not clustered) of the accuracy interval."""


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _rows(run_dir: Path, judge: str | None) -> list[dict]:
    """One row per conversation: question, trial, kind, and the judge's conversation metrics
    (None for a simulator error)."""
    trajectories = {
        (r["question_id"], r.get("trial", 0)): r
        for r in _read(run_dir / "trajectories.jsonl")
        if r.get("conversation")
    }
    if not trajectories:
        return []
    scores_dir = run_dir / "scores"
    files = [scores_dir / f"{judge}.jsonl"] if judge else sorted(scores_dir.glob("*.jsonl"))
    scores = {(s["question_id"], s.get("trial", 0)): s for f in files[:1] for s in _read(f)}
    rows = []
    for key, record in trajectories.items():
        score = scores.get(key) or {}
        extra = score.get("extra") or {}
        if record["termination"].get("infrastructure") and not extra.get("simulator_error"):
            continue
        rows.append(
            {
                "question": key[0],
                "trial": key[1],
                "kind": record["conversation"]["kind"],
                "simulator_error": bool(extra.get("simulator_error")),
                "reruns": sum(
                    bool(attempt.get("simulator_error"))
                    for attempt in record.get("previous_attempts") or []
                ),
                "metrics": extra.get("conversation"),
            }
        )
    return rows


@dataclass(frozen=True)
class Rule:
    """How the cells' intervals and tests are made (the report's settings)."""

    clusters: dict[str, str]
    """question_id -> cluster key (the question itself when not clustered)."""
    confidence: float = 0.95
    power: float = 0.8
    minimum: int = 5
    """Paired questions below which a difference is not tested (analysis/_minimum.py)."""


def clustered_mean(values: dict[str, float], rule: Rule) -> tuple[float, float, float, int]:
    """(mean, CR1 standard error, df, clusters) of per-question values; NaN se and df from
    fewer than 2 clusters."""
    questions = list(values)
    y = np.array([values[q] for q in questions])
    codes = cluster_codes([rule.clusters.get(q, q) for q in questions])
    part = stratum_variance((y - y.mean()) / len(y), np.ones(len(y), dtype=bool), codes)
    se, df = combine_strata([part])
    return float(y.mean()), se, df, part.clusters


def question_clusters(
    metadata: dict[str, dict[str, str]], questions: set[str], setting: str
) -> dict[str, str]:
    """question_id -> cluster key of the conversations' questions (:func:`cluster_keys`)."""
    _field, keys, _note = cluster_keys(sorted(questions), metadata, setting, "operations")
    return keys


def _pass_k(rows: list[dict]) -> dict[str, float]:
    from judge._conversation import PASS_THRESHOLD, pass_hat_k

    passes = [(r["question"], r["metrics"]["accuracy"] >= PASS_THRESHOLD) for r in rows]
    trials = max((r["trial"] for r in rows), default=0) + 1
    values = {str(k): pass_hat_k(passes, k) for k in range(1, trials + 1)}
    return {k: round(v, 4) for k, v in values.items() if v is not None}


def _per_question(rows: list[dict]) -> dict[str, float]:
    by_question: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        by_question[row["question"]].append(row["metrics"]["accuracy"])
    return {q: float(np.mean(v)) for q, v in by_question.items()}


def conversation_cells(
    runs: list[tuple[str, Path]],
    reference: str,
    judge: str | None,
    *,
    metadata: dict[str, dict[str, str]] | None = None,
    cluster: str = "auto",
    confidence: float = 0.95,
    power: float = 0.8,
    minimum: int = 5,
) -> list[ConversationCell]:
    """The cells of every (provider, kind) with conversations; ``runs`` pairs provider names
    with run directories (published result files have none and are skipped). ``metadata``
    (question_id -> the dataset item's scalar metadata) and ``cluster`` (``--cluster``) say what
    the questions are clustered by."""
    rows_by = {name: _rows(path, judge) for name, path in runs if path.is_dir()}
    questions = {r["question"] for rows in rows_by.values() for r in rows}
    rule = Rule(question_clusters(metadata or {}, questions, cluster), confidence, power, minimum)
    cells = []
    for name, rows in rows_by.items():
        kinds = sorted({r["kind"] for r in rows})
        for kind in [*kinds, ALL_KINDS] if kinds else []:
            mine = [r for r in rows if kind in (ALL_KINDS, r["kind"])]
            ref = [r for r in rows_by.get(reference, []) if kind in (ALL_KINDS, r["kind"])]
            pair = (reference, name)
            cells.append(_cell(name, kind, mine, ref if name != reference else [], rule, pair))
    return cells


def _cell(name, kind, rows, reference_rows, rule: Rule, pair) -> ConversationCell:
    errors = sum(r["simulator_error"] for r in rows)
    reruns = sum(r["reruns"] for r in rows)
    scored = [r for r in rows if not r["simulator_error"] and r["metrics"]]
    cell = ConversationCell(
        provider=name,
        kind=kind,
        conversations=len(scored),
        simulator_errors=errors,
        simulator_error_rate=(errors + reruns) / (len(rows) + reruns) if rows else None,
        simulator_reruns=reruns,
    )
    if not scored:
        return cell
    mean, se, df, cell.clusters = clustered_mean(_per_question(scored), rule)
    cell.accuracy = mean
    low, high = t_interval(mean, se, df, rule.confidence)
    if not math.isnan(low):
        cell.accuracy_low, cell.accuracy_high = max(low, 0.0), min(high, 1.0)
    asked = [r["metrics"]["clarified"] for r in scored if r["metrics"]["clarified"] is not None]
    cell.clarification_rate = float(np.mean(asked)) if asked else None
    cell.violations = sum(bool(r["metrics"]["violations"]) for r in scored)
    cell.mean_turns = float(np.mean([r["metrics"]["agent_turns"] for r in scored]))
    cell.pass_k = _pass_k(scored)
    _paired(cell, scored, reference_rows, rule, pair)
    return cell


def _paired(cell, rows, reference_rows, rule: Rule, pair: tuple[str, str]) -> None:
    """The difference to the reference on the questions both have: clustered t interval and
    test, MDE; below the one minimum of paired questions, the difference alone."""
    scored_ref = [r for r in reference_rows if not r["simulator_error"] and r["metrics"]]
    mine, theirs = _per_question(rows), _per_question(scored_ref)
    common = sorted(set(mine) & set(theirs))
    if not common:
        return
    diffs = {q: mine[q] - theirs[q] for q in common}
    estimate, se, df, _clusters = clustered_mean(diffs, rule)
    cell.vs_reference = estimate
    if too_few_paired({cell.kind: len(common)}, pair, "accuracy", rule.minimum):
        return
    low, high = t_interval(estimate, se, df, rule.confidence)
    if math.isnan(low):
        return  # fewer than 2 clusters: no interval, no test
    cell.vs_low, cell.vs_high = low, high
    cell.mde = minimum_detectable(se, df, rule.confidence, rule.power)
    if se > 0:
        cell.p_value = t_p_value(estimate, se, df)
        cell.distinguishable = abs(estimate) >= cell.mde
    else:  # every paired difference the same: nothing varies, nothing to test
        cell.distinguishable = estimate != 0


def _verdict(cell: ConversationCell) -> str:
    """The p column: the p-value, "n.d." inside the MDE, "-" untested."""
    from analysis._report import fmt_p

    if cell.p_value is None:
        return "-"
    return "n.d." if cell.distinguishable is False else fmt_p(cell.p_value)


def conversation_section(cells: list[ConversationCell], reference: str) -> list:
    """The report's blocks for conversations (none when there are no conversations)."""
    from analysis._report import Heading, Paragraph, Table, fmt, fmt_ci, fmt_signed_ci

    if not cells:
        return []
    header = [
        "Provider",
        "Kind",
        "n",
        "Accuracy",
        "Clarified",
        "Violations",
        "Turns",
        "Simulator errors",
        "pass^k",
        f"vs {reference}",
        "p",
    ]
    rows = []
    for c in cells:
        passes = ", ".join(f"^{k} {v:.2f}" for k, v in c.pass_k.items()) or "-"
        rate = "-" if c.simulator_error_rate is None else f"{100 * c.simulator_error_rate:.1f}%"
        rows.append(
            [
                c.provider,
                c.kind,
                str(c.conversations),
                fmt_ci(c.accuracy, c.accuracy_low, c.accuracy_high),
                fmt(c.clarification_rate),
                str(c.violations),
                fmt(c.mean_turns, 1),
                f"{c.simulator_errors} ({rate})"
                + (f", {c.simulator_reruns} re-run" if c.simulator_reruns else ""),
                passes,
                fmt_signed_ci(c.vs_reference, c.vs_low, c.vs_high)
                if c.vs_reference is not None
                else "-",
                _verdict(c),
            ]
        )
    note = (
        "Accuracy: share of the keyed end facts stated over the conversation, 0 when the agent "
        "answered before asking every required clarification or disclosed what it must not "
        "(rules judge), a question's trials averaged first; 95% t intervals from cluster-robust "
        "errors, conversations of one template being one cluster (clusters - 1 df). Clarified: "
        "share of "
        "conversations in which every required clarification was asked before the first answer. "
        "Simulator errors: conversations whose simulated user broke its scenario (the reviewer's "
        "critical tags, or a reviewer model that could not review them), counted here and left "
        "out of every other figure; the rate counts conversations run again for their user "
        "(--retry-simulator-errors, shown as re-run) too. The difference to the reference is "
        "paired by question, with the same clustered interval and a t test; inside its minimum "
        "detectable effect (80% power) it is 'not distinguishable at this size' (n.d.) and gets "
        "no p."
    )
    return [
        Heading("Conversations (operations)"),
        Paragraph("Multi-turn AR/AP operations with a simulated user, per scenario kind."),
        Table(header, rows, note),
    ]
