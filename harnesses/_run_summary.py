"""What a run did: counts by status and task type, latency, tools, tokens and cost."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from pydantic import Field

from harnesses._run_config import StrictModel
from harnesses._run_store import TRAJECTORIES_FILE, PreparedRun, read_trajectories
from ledgerbench_core.dataset import TaskType
from ledgerbench_core.trajectory import RunManifest, Status, TerminationReason, TrajectoryRecord

_ANSWERED = frozenset(
    {
        TerminationReason.completed,
        TerminationReason.user_done,
        TerminationReason.transfer,
        TerminationReason.out_of_scope,
    }
)


class TaskTypeSummary(StrictModel):
    task_type: str
    total: int
    answered: int
    """Finished on their own with an answer (termination ``completed``; for conversations, ended
    by the user: ``user_done``, ``transfer`` or ``out_of_scope``)."""
    empty_answers: int = 0
    """Finished on their own without an answer (an agent failure: judged, scores 0)."""
    infrastructure: int = 0
    """Infrastructure failures (provider, ERP, harness): not judged, shown apart."""
    timeouts: int
    max_turns: int
    errors: int
    latency_median_s: float | None
    latency_p90_s: float | None
    tool_calls: int
    """Total tool calls."""
    tool_calls_mean: float | None
    input_tokens: int
    """Summed over the records whose usage is known."""
    output_tokens: int
    reasoning_tokens: int
    usage_unknown: int = 0
    """Records whose provider reported no token usage (left out of the token sums)."""
    cost_usd: float | None
    """Sum of known costs; None when no record had a cost."""


class RunSummary(StrictModel):
    run_dir: Path
    run_id: str
    expected: int
    """(question, trial) pairs selected."""
    recorded: int
    """Records in the trajectory file now."""
    resumed: int
    """Records that were already there when this invocation started."""
    ran: int
    """Records this invocation wrote."""
    interrupted: bool
    by_status: dict[str, int]
    by_task_type: list[TaskTypeSummary]
    errors: dict[str, int] = Field(default_factory=dict)
    """Error class -> count."""
    by_termination: dict[str, int] = Field(default_factory=dict)
    """Termination reason -> count."""
    infrastructure_failures: int = 0
    """Records that ended in an infrastructure failure (not judged, out of every denominator)."""
    stopped: str | None = None
    """Why the circuit breaker stopped the run (with the command to resume), if it did."""
    kept: bool = True
    """False when this start created the run directory and removed it again: nothing was
    recorded (a run folder exists only once a record is in it)."""


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return round(ordered[index], 3)


def summarize_records(records: list[TrajectoryRecord]) -> list[TaskTypeSummary]:
    rows = []
    for task_type in [t.value for t in TaskType]:
        group = [r for r in records if r.task_type == task_type]
        if not group:
            continue
        latencies = [r.latency_s for r in group]
        costs = [r.cost_usd for r in group if r.cost_usd is not None]
        calls = sum(len(r.tool_calls) for r in group)
        rows.append(
            TaskTypeSummary(
                task_type=task_type,
                total=len(group),
                answered=sum(r.termination.reason in _ANSWERED for r in group),
                empty_answers=sum(
                    r.termination.reason == TerminationReason.empty_answer for r in group
                ),
                infrastructure=sum(r.infrastructure_failure for r in group),
                timeouts=sum(r.status == Status.timeout for r in group),
                max_turns=sum(r.status == Status.max_turns for r in group),
                errors=sum(r.status == Status.error for r in group),
                latency_median_s=round(statistics.median(latencies), 3),
                latency_p90_s=_percentile(latencies, 0.9),
                tool_calls=calls,
                tool_calls_mean=round(calls / len(group), 2),
                input_tokens=sum(r.usage.input_tokens for r in group if r.usage),
                output_tokens=sum(r.usage.output_tokens for r in group if r.usage),
                reasoning_tokens=sum(r.usage.reasoning_tokens for r in group if r.usage),
                usage_unknown=sum(r.usage is None for r in group),
                cost_usd=round(sum(costs), 6) if costs else None,
            )
        )
    return rows


def summary_table(summary: RunSummary) -> Any:
    """A rich Table of the summary by task type."""
    from rich.table import Table

    title = f"{summary.run_dir}  ({summary.recorded}/{summary.expected} recorded"
    title += ", interrupted)" if summary.interrupted else ")"
    table = Table(title=title)
    for header in (
        "task type",
        "answered",
        "empty",
        "timeout",
        "max turns",
        "infra failure",
        "p50 s",
        "p90 s",
        "tools/q",
        "tokens in/out",
        "cost $",
    ):
        table.add_column(header, justify="left" if header == "task type" else "right")
    for row in summary.by_task_type:
        table.add_row(
            row.task_type,
            f"{row.answered}/{row.total}",
            str(row.empty_answers),
            str(row.timeouts),
            str(row.max_turns),
            str(row.infrastructure),
            _fmt(row.latency_median_s),
            _fmt(row.latency_p90_s),
            _fmt(row.tool_calls_mean),
            _tokens(row),
            "-" if row.cost_usd is None else f"{row.cost_usd:.4f}",
        )
    return table


def _tokens(row: TaskTypeSummary) -> str:
    """Tokens in/out; ``unknown`` for records whose provider reported no usage."""
    if row.usage_unknown == row.total:
        return "unknown"
    known = f"{row.input_tokens:,}/{row.output_tokens:,}"
    return known + (f" (+{row.usage_unknown} unknown)" if row.usage_unknown else "")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def build_run_summary(
    prepared: PreparedRun, manifest: RunManifest, ran: list[TrajectoryRecord], interrupted: bool
) -> RunSummary:
    selected = {(q.id, t) for q, t in prepared.pairs}
    retried = [r for r in ran if r.previous_attempts]
    records = [
        r
        for r in read_trajectories(prepared.run_dir / TRAJECTORIES_FILE)
        if (r.question_id, r.trial) in selected
    ]
    by_status: dict[str, int] = {}
    by_termination: dict[str, int] = {}
    errors: dict[str, int] = {}
    for record in records:
        by_status[record.status.value] = by_status.get(record.status.value, 0) + 1
        reason = record.termination.reason.value
        by_termination[reason] = by_termination.get(reason, 0) + 1
        if record.error is not None:
            errors[record.error.class_] = errors.get(record.error.class_, 0) + 1
    return RunSummary(
        run_dir=prepared.run_dir,
        run_id=manifest.run_id,
        expected=len(prepared.pairs),
        recorded=len(records),
        resumed=len(prepared.existing) - len(retried),
        ran=len(ran),
        interrupted=interrupted,
        by_status=by_status,
        by_task_type=summarize_records(records),
        errors=errors,
        by_termination=by_termination,
        infrastructure_failures=sum(r.infrastructure_failure for r in records),
    )
