"""One (question, trial) under its wall-clock budget: attempts, retries, and the record."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import time
from dataclasses import dataclass
from typing import Any

from harnesses._instructions import instructions_hash
from harnesses._protocol import (
    AgentEnvironment,
    AgentTask,
    Harness,
    TrajectoryDraft,
    is_transient,
    retry_delay,
)
from harnesses._redact import one_line
from harnesses._run_config import RunConfig
from harnesses.records import (
    ErrorInfo,
    Status,
    Termination,
    TerminationReason,
    TrajectoryRecord,
)
from ledgerbench.dataset import Question


@dataclass
class _Attempt:
    status: Status
    answer: str
    error: ErrorInfo | None = None

    def termination(self) -> Termination:
        if self.status is Status.ok:
            return Termination.of(TerminationReason.completed)
        if self.status is Status.timeout:
            return Termination.of(TerminationReason.time_limit)
        if self.status is Status.max_turns:
            return Termination.of(TerminationReason.max_turns)
        if self.error is not None and self.error.class_ == "EmptyAnswer":
            return Termination.of(TerminationReason.empty_answer)
        return Termination.of(TerminationReason.harness_error)


class QuestionRunner:
    """Runs one (question, trial) under its budget and turns the draft into a record."""

    def __init__(self, harness: Harness, env: AgentEnvironment, config: RunConfig) -> None:
        self.harness = harness
        self.env = env
        self.config = config
        self.harness_name = getattr(harness, "name", None) or config.harness
        self.model = getattr(harness, "model", None) or config.model

    async def run(self, question: Question, trial: int) -> TrajectoryRecord:
        budget = self.config.budget_for(question)
        started_at = dt.datetime.now(dt.UTC)
        start = time.monotonic()
        draft = TrajectoryDraft(started_monotonic=start, output_limit=self.config.output_limit)
        task = AgentTask(
            question_id=question.id,
            trial=trial,
            query=question.query,
            task_type=question.task_type,
            timeout_s=budget,
            deadline=start + budget,
        )
        outcome = await self._attempts(task, draft)
        return self._record(question, trial, budget, started_at, draft, outcome)

    async def _attempts(self, task: AgentTask, draft: TrajectoryDraft) -> _Attempt:
        attempt = 0
        while True:
            attempt += 1
            if attempt > 1:
                draft.extra["attempts"] = attempt
            result, error = await self._one_attempt(task, draft)
            if result is not None:
                return result
            assert error is not None
            delay = retry_delay(attempt, error)
            retryable = is_transient(error) and attempt <= self.config.retries
            if retryable and time.monotonic() + delay < task.deadline:
                draft.extra.setdefault("retried_errors", []).append(
                    f"{type(error).__name__}: {one_line(str(error))[:300]}"
                )
                await asyncio.sleep(delay)
                continue
            return _Attempt(
                Status.error,
                draft.answer,
                ErrorInfo(**{"class": type(error).__name__, "message": _error_message(error)}),
            )

    async def _one_attempt(
        self, task: AgentTask, draft: TrajectoryDraft
    ) -> tuple[_Attempt | None, BaseException | None]:
        remaining = task.deadline - time.monotonic()
        if remaining <= 0:
            return _Attempt(Status.timeout, draft.answer), None
        agent = asyncio.create_task(self.harness.run(task, self.env, draft))
        try:
            done, _ = await asyncio.wait({agent}, timeout=remaining)
        except asyncio.CancelledError:
            await self._stop(agent)
            raise
        if not done:
            await self._stop(agent)
            return _Attempt(Status.timeout, draft.answer), None
        if agent.cancelled():
            return None, asyncio.CancelledError("the harness task was cancelled")
        error = agent.exception()
        if error is not None:
            return None, error
        outcome = agent.result()
        answer = (getattr(outcome, "answer", None) or draft.answer or "").strip()
        if getattr(outcome, "max_turns_reached", False):
            return _Attempt(Status.max_turns, answer), None
        if not answer:
            empty = ErrorInfo(
                **{"class": "EmptyAnswer", "message": "the harness finished without an answer"}
            )
            return _Attempt(Status.error, "", empty), None
        return _Attempt(Status.ok, answer), None

    async def _stop(self, agent: asyncio.Task) -> None:
        """Cancel the harness and give it a moment to clean up (subprocesses, connections)."""
        agent.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait({agent}, timeout=self.config.cancel_grace_s)
        if agent.done() and not agent.cancelled():
            agent.exception()  # retrieved, so asyncio does not log "never retrieved"

    def _record(
        self,
        question: Question,
        trial: int,
        budget: float,
        started_at: dt.datetime,
        draft: TrajectoryDraft,
        outcome: _Attempt,
    ) -> TrajectoryRecord:
        latency = draft.elapsed()
        return TrajectoryRecord(
            question_id=question.id,
            trial=trial,
            task_type=question.task_type,
            harness=self.harness_name,
            model=self.model,
            answer=outcome.answer,
            status=outcome.status,
            termination=outcome.termination(),
            error=outcome.error,
            latency_s=round(latency, 4),
            timeout_s=budget,
            tool_calls=list(draft.tool_calls),
            sources=list(draft.sources),
            usage=draft.usage,
            cost_usd=draft.cost_usd,
            turns=draft.turns,
            started_at=started_at,
            finished_at=started_at + dt.timedelta(seconds=latency),
            extra=_jsonable(dict(draft.extra)),
            input=question.query,
            system_prompt_hash=instructions_hash(self.env.instructions),
            messages=list(draft.messages),
            events=list(draft.events),
            working_time_s=round(max(0.0, latency - draft.excluded_s), 4),
        )


def _error_message(error: BaseException) -> str:
    message = one_line(str(error)) or repr(error)
    return message[:2000]


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))
