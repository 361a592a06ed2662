"""Conversations (operations items) in the report: per provider and scenario kind, accuracy with
a bootstrap interval, the clarification rate, disclosure violations, turns used, the simulator
error rate and pass^k; and each provider against the reference, paired by question.

Read from the run directories (trajectories and the judge's score records, whose
``extra.conversation`` the rules judge writes), so every figure is a function of recorded files.
Conversations whose simulated user broke its scenario critically are counted (``simulator
errors``) and left out of every other figure.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

ALL_KINDS = "all"
MIN_PAIRED = 5
"""Questions in common below which the paired difference gets no interval and no p-value."""


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
    """Paired bootstrap (two-sided) p-value of that difference."""


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


def _bootstrap(values: np.ndarray, draws: int, rng: np.random.Generator) -> tuple[float, float]:
    if len(values) < 2:
        return float(values.mean()), float(values.mean())
    means = rng.choice(values, size=(draws, len(values)), replace=True).mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


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
    draws: int = 2000,
    seed: int = 0,
) -> list[ConversationCell]:
    """The cells of every (provider, kind) with conversations; ``runs`` pairs provider names
    with run directories (published result files have none and are skipped)."""
    rng = np.random.default_rng(seed)
    rows_by = {name: _rows(path, judge) for name, path in runs if path.is_dir()}
    cells = []
    for name, rows in rows_by.items():
        kinds = sorted({r["kind"] for r in rows})
        for kind in [*kinds, ALL_KINDS] if kinds else []:
            mine = [r for r in rows if kind in (ALL_KINDS, r["kind"])]
            ref = [r for r in rows_by.get(reference, []) if kind in (ALL_KINDS, r["kind"])]
            cells.append(_cell(name, kind, mine, ref if name != reference else [], draws, rng))
    return cells


def _cell(name, kind, rows, reference_rows, draws, rng) -> ConversationCell:
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
    accuracy = np.array([r["metrics"]["accuracy"] for r in scored])
    low, high = _bootstrap(accuracy, draws, rng)
    asked = [r["metrics"]["clarified"] for r in scored if r["metrics"]["clarified"] is not None]
    cell.accuracy, cell.accuracy_low, cell.accuracy_high = float(accuracy.mean()), low, high
    cell.clarification_rate = float(np.mean(asked)) if asked else None
    cell.violations = sum(bool(r["metrics"]["violations"]) for r in scored)
    cell.mean_turns = float(np.mean([r["metrics"]["agent_turns"] for r in scored]))
    cell.pass_k = _pass_k(scored)
    _paired(cell, scored, reference_rows, draws, rng)
    return cell


def _paired(cell, rows, reference_rows, draws, rng) -> None:
    """The difference to the reference on the questions both have, with a paired bootstrap."""
    scored_ref = [r for r in reference_rows if not r["simulator_error"] and r["metrics"]]
    mine, theirs = _per_question(rows), _per_question(scored_ref)
    common = sorted(set(mine) & set(theirs))
    if not common:
        return
    diffs = np.array([mine[q] - theirs[q] for q in common])
    cell.vs_reference = float(diffs.mean())
    if len(diffs) < MIN_PAIRED:
        return  # too few questions for an interval or a test
    means = rng.choice(diffs, size=(draws, len(diffs)), replace=True).mean(axis=1)
    cell.vs_low, cell.vs_high = float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))
    centred = means - diffs.mean()
    cell.p_value = float(min(1.0, (np.abs(centred) >= abs(diffs.mean())).mean() + 1 / draws))


def conversation_section(cells: list[ConversationCell], reference: str) -> list:
    """The report's blocks for conversations (none when there are no conversations)."""
    from analysis._report import Heading, Paragraph, Table, fmt, fmt_ci, fmt_p, fmt_signed_ci

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
                fmt_p(c.p_value) if c.p_value is not None else "-",
            ]
        )
    note = (
        "Accuracy: share of the keyed end facts stated over the conversation, 0 when the agent "
        "answered before asking every required clarification or disclosed what it must not "
        "(rules judge); 95% bootstrap intervals over conversations. Clarified: share of "
        "conversations in which every required clarification was asked before the first answer. "
        "Simulator errors: conversations whose simulated user broke its scenario (the reviewer's "
        "critical tags, or a reviewer model that could not review them), counted here and left "
        "out of every other figure; the rate counts conversations run again for their user "
        "(--retry-simulator-errors, shown as re-run) too. The difference to the "
        "reference is paired by question (paired bootstrap)."
    )
    return [
        Heading("Conversations (operations)"),
        Paragraph("Multi-turn AR/AP operations with a simulated user, per scenario kind."),
        Table(header, rows, note),
    ]
