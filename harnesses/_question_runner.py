"""One (question, trial) under its wall-clock budget: attempts, retries, and the record."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import time
from dataclasses import dataclass
from typing import Any

from harnesses._answer_cap import cap_detail, capped_answer
from harnesses._harness_loop import HarnessLoop
from harnesses._instructions import instructions_hash
from harnesses._preflight import ModelContextError, context_overflow
from harnesses._protocol import (
    AgentEnvironment,
    AgentTask,
    Harness,
    TrajectoryDraft,
    is_model_free,
    is_refused_access,
    is_transient,
    is_unreachable,
    retry_delay,
    retry_window_s,
    termination_reason_of,
)
from harnesses._redact import one_line
from harnesses._run_config import RunConfig
from ledgerbench_core._trial import trial_key
from ledgerbench_core.dataset import Question
from ledgerbench_core.trajectory import (
    ErrorInfo,
    Message,
    ModelEvent,
    Status,
    Termination,
    TerminationReason,
    TrajectoryRecord,
)

BLOCKED_PROBE_S = 0.05
"""A harness loop that does not run a callback this soon after its question was cancelled is
blocked (a synchronous call): its clean-up cannot run, so it is not waited for."""
LIMIT_CHECK_S = 0.05
"""How often the runner reads a question's draft against its sample limits."""
OVERRUN_GRACE_S = 1.0
"""A harness that returns later than budget + cancel grace + this is recorded as ``timeout``."""
UNENFORCEABLE_LIMIT = "UnenforceableLimit"
"""Error class of a question stopped because a sample limit cannot be kept (``--max-tokens``
against a server that reports no usage): the run stops at once with the same line."""


@dataclass
class _Attempt:
    reason: TerminationReason
    answer: str
    error: ErrorInfo | None = None
    detail: str | None = None

    @property
    def status(self) -> Status:
        return self.termination().status

    def termination(self) -> Termination:
        return Termination.of(self.reason, self.detail)


class QuestionRunner:
    """Runs one (question, trial) under its budget and turns the draft into a record.

    Every question runs on a :class:`HarnessLoop` of its own, a thread with its own event loop,
    built-in harnesses and plug-ins alike (a harness may opt out with ``shares_runner_loop =
    True``): a harness that blocks (a synchronous SDK, ``time.sleep``, a long computation) can
    neither stop the runner's clock nor hold up other questions, so verdicts do not depend on
    ``--concurrency``. The cost, measured by ``bench/bench_loops.py``, is within the noise of a
    question's own time (a thread, a loop, and an SDK client per question).
    """

    def __init__(
        self,
        harness: Harness,
        env: AgentEnvironment,
        config: RunConfig,
        *,
        stall_timeout: float | None = None,
    ) -> None:
        self.harness = harness
        self.env = env
        self.config = config
        self.stall_timeout = config.stall_timeout or stall_timeout
        """``--stall-timeout``, else the bound the pre-flight measured for the model server."""
        self.harness_name = getattr(harness, "name", None) or config.harness
        self.model = getattr(harness, "model", None) or config.model
        self.own_loops = not getattr(harness, "shares_runner_loop", False)
        """Each question runs on a loop (and thread) of its own."""

    async def aclose(self) -> None:
        """Close the harness (a plug-in on a loop of its own, that then stops)."""
        closer = getattr(self.harness, "aclose", None)
        if closer is None:
            return
        with contextlib.suppress(Exception):
            if not self.own_loops:
                await closer()
                return
            loop = HarnessLoop(f"{self.harness_name}-close")
            try:
                await asyncio.wait_for(loop.call(closer), timeout=5.0)
            finally:
                loop.close()

    async def run(self, question: Question, trial: int) -> TrajectoryRecord:
        if question.conversation is not None:
            from harnesses._conversation import run_conversation

            return await run_conversation(self, question, trial)
        budget = self.config.budget_for(question)
        started_at = dt.datetime.now(dt.UTC)
        start = time.monotonic()
        limits = self.config.sample_limits()
        draft = TrajectoryDraft(
            started_monotonic=start,
            output_limit=self.config.output_limit,
            limits=limits if limits.active else None,  # active limits are watched (_watch)
        )
        task = AgentTask(
            question_id=question.id,
            trial=trial,
            query=question.query,
            task_type=question.task_type,
            timeout_s=budget,
            deadline=start + budget,
            stall_timeout_s=self.stall_timeout,
            limits=limits,
        )
        env = self.env.for_trial(trial_key(question.id, trial))
        loop = HarnessLoop(f"{self.harness_name}-{question.id}") if self.own_loops else None
        try:
            outcome = await self._attempts(task, env, draft, loop)
        finally:
            if loop is not None:
                loop.close(timeout=0.0)  # a harness still blocked is abandoned (daemon thread)
        outcome = self._past_budget(outcome, draft, budget)
        return self._record(question, trial, budget, started_at, draft, outcome)

    def _past_budget(self, outcome: _Attempt, draft: TrajectoryDraft, budget: float) -> _Attempt:
        """A harness that finished well past its deadline (it blocked the clock) is not ``ok``."""
        overrun = draft.elapsed() - budget
        if (
            outcome.status is not Status.ok
            or overrun <= self.config.cancel_grace_s + OVERRUN_GRACE_S
        ):
            return outcome
        draft.extra["overran_budget_s"] = round(overrun, 3)
        detail = f"finished {overrun:.1f} s past its {budget:g} s budget"
        return _Attempt(TerminationReason.time_limit, outcome.answer, detail=detail)

    async def _attempts(
        self,
        task: AgentTask,
        env: AgentEnvironment,
        draft: TrajectoryDraft,
        loop: HarnessLoop | None = None,
    ) -> _Attempt:
        attempt = 0
        first_failure: float | None = None
        while True:
            attempt += 1
            if attempt > 1:
                draft.extra["attempts"] = attempt
            result, error = await self._one_attempt(task, env, draft, loop)
            if result is not None:
                return result
            assert error is not None
            if (overflow := context_overflow(error)) is not None:
                raise ModelContextError(overflow) from error
            first_failure = first_failure or time.monotonic()
            delay = retry_delay(attempt, error)
            retryable = (
                is_transient(error)
                and not is_unreachable(error)
                and not is_refused_access(error)
                and attempt <= self.config.retries
            )
            resume_at = time.monotonic() + delay
            window_closes = first_failure + retry_window_s(task.timeout_s)
            if retryable and resume_at < task.deadline and resume_at < window_closes:
                draft.extra.setdefault("retried_errors", []).append(
                    f"{type(error).__name__}: {one_line(str(error))[:300]}"
                )
                draft.excluded_s += delay
                await asyncio.sleep(delay)
                continue
            message = _error_message(error)
            return _Attempt(
                termination_reason_of(error),
                draft.answer,
                ErrorInfo(**{"class": type(error).__name__, "message": message}),
                detail=f"{type(error).__name__}: {message}"[:300],
            )

    def _start(
        self,
        task: AgentTask,
        env: AgentEnvironment,
        draft: TrajectoryDraft,
        loop: HarnessLoop | None,
    ) -> asyncio.Task:
        if loop is None:
            return asyncio.create_task(self.harness.run(task, env, draft))
        return asyncio.create_task(loop.call(lambda: self.harness.run(task, env, draft)))

    async def _one_attempt(
        self,
        task: AgentTask,
        env: AgentEnvironment,
        draft: TrajectoryDraft,
        loop: HarnessLoop | None = None,
    ) -> tuple[_Attempt | None, BaseException | None]:
        remaining = task.deadline - time.monotonic()
        if remaining <= 0:
            return _Attempt(TerminationReason.time_limit, draft.answer), None
        agent = self._start(task, env, draft, loop)
        try:
            done, over = await self._watch(agent, task, draft)
        except asyncio.CancelledError:
            await self._stop(agent, loop)
            raise
        if over is not None:  # a sample limit: the agent's resources, judged
            await self._stop(agent, loop)
            if over[0] is TerminationReason.provider_error:  # a limit the server cannot serve
                error = ErrorInfo(**{"class": UNENFORCEABLE_LIMIT, "message": over[1]})
                return _Attempt(over[0], draft.answer, error, detail=over[1]), None
            return _Attempt(over[0], draft.answer, detail=over[1]), None
        if not done:
            await self._stop(agent, loop)
            if draft.provider_failure and not draft.answer.strip():
                detail = f"the provider kept failing until the deadline: {draft.provider_failure}"
                error = ErrorInfo(**{"class": "ProviderUnavailable", "message": detail[:2000]})
                return _Attempt(TerminationReason.provider_unavailable, "", error, detail), None
            return _Attempt(TerminationReason.time_limit, draft.answer), None
        if agent.cancelled():
            return None, asyncio.CancelledError("the harness task was cancelled")
        error = agent.exception()
        if error is not None:
            return None, error
        outcome = agent.result()
        answer = (getattr(outcome, "answer", None) or draft.answer or "").strip()
        if (unenforceable := task.limits.unenforceable(draft)) is not None:
            error = ErrorInfo(**{"class": UNENFORCEABLE_LIMIT, "message": unenforceable})
            reason = TerminationReason.provider_error
            return _Attempt(reason, answer, error, detail=unenforceable), None
        if (over := task.limits.exceeded(draft)) is not None:  # went over, then finished
            return _Attempt(over[0], answer, detail=over[1]), None
        if getattr(outcome, "deadline_reached", False):
            return _Attempt(TerminationReason.time_limit, answer), None
        if getattr(outcome, "max_turns_reached", False):
            return _Attempt(TerminationReason.max_turns, answer, detail=_cap_detail(draft)), None
        if draft.answer_cut is not None:  # the provider cut the reply: judged as it stands
            return _Attempt(TerminationReason.answer_cut, answer, detail=draft.answer_cut), None
        if not answer:
            detail = "the agent finished without an answer"
            return _Attempt(TerminationReason.empty_answer, "", detail=detail), None
        return _Attempt(TerminationReason.completed, answer), None

    async def _watch(
        self, agent: asyncio.Task, task: AgentTask, draft: TrajectoryDraft
    ) -> tuple[bool, tuple[TerminationReason, str] | None]:
        """Wait for the harness until the deadline; with sample limits, check the draft every
        :data:`LIMIT_CHECK_S` and return the limit it went over. (done, exceeded limit)."""
        while True:
            remaining = task.deadline - time.monotonic()
            if remaining <= 0:
                return False, None
            wait = min(remaining, LIMIT_CHECK_S) if task.limits.active else remaining
            done, _ = await asyncio.wait({agent}, timeout=wait)
            if done:
                return True, None
            if (unenforceable := task.limits.unenforceable(draft)) is not None:
                return False, (TerminationReason.provider_error, unenforceable)
            if (over := task.limits.exceeded(draft)) is not None:
                return False, over

    async def _stop(self, agent: asyncio.Task, loop: HarnessLoop | None = None) -> None:
        """Cancel the harness and give it a moment to clean up (subprocesses, connections). A
        harness whose loop does not even answer (it blocks its thread) cannot clean up: it is
        abandoned at once instead of after the grace period."""
        agent.cancel()
        grace = self.config.cancel_grace_s
        with contextlib.suppress(asyncio.CancelledError, Exception):
            if loop is not None and grace > 0 and not await loop.responds(BLOCKED_PROBE_S):
                return
            await asyncio.wait({agent}, timeout=grace)
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
        messages, events = with_question_turn(draft, question.query)
        answer, messages, cap_note = capped_answer(outcome.answer, messages)
        extra = _jsonable(_with_usage_note(draft))
        termination = outcome.termination()
        if cap_note is not None:
            extra["answer_cap"] = cap_note
            detail = "; ".join(filter(None, [termination.detail, cap_detail(cap_note)]))
            termination = termination.model_copy(update={"detail": detail})
        return TrajectoryRecord(
            question_id=question.id,
            trial=trial,
            task_type=question.task_type,
            harness=self.harness_name,
            model=self.model or draft.model,
            answer=answer,
            status=outcome.status,
            termination=termination,
            error=outcome.error,
            latency_s=round(latency, 4),
            timeout_s=budget,
            tool_calls=list(draft.tool_calls),
            sources=list(draft.sources),
            usage=draft.recorded_usage(),
            cost_usd=draft.recorded_cost(model_free=is_model_free(self.harness)),
            turns=draft.turns,
            started_at=started_at,
            finished_at=started_at + dt.timedelta(seconds=latency),
            extra=extra,
            input=question.query,
            given_documents=list(question.gold_documents)
            if self.config.research == "golden"
            else [],
            system_prompt_hash=instructions_hash(self.env.instructions),
            messages=messages,
            events=events,
            working_time_s=round(max(0.0, latency - draft.excluded_s), 4),
        )


def with_question_turn(draft: TrajectoryDraft, query: str) -> tuple[list[Message], list[Any]]:
    """The draft's conversation with the question as its first turn when the harness did not
    write one (plug-ins, a harness that failed before it asked): every record has its question
    turn. Model events point at messages by position, so they shift with it."""
    messages, events = list(draft.messages), list(draft.events)
    if any(message.role == "user" for message in messages):
        return messages, events
    shifted = [
        event.model_copy(update={"message_index": event.message_index + 1})
        if isinstance(event, ModelEvent) and event.message_index is not None
        else event
        for event in events
    ]
    return [Message(role="user", content=query, started_s=0.0), *messages], shifted


def _cap_detail(draft: TrajectoryDraft) -> str | None:
    """What the run's tool-call cap did, when it stopped the agent."""
    note = draft.extra.get("tool_call_cap")
    if not isinstance(note, dict):
        return None
    return f"tool-call cap of {note['cap']} reached: {note['dropped']} further call(s) not run"


def _with_usage_note(draft: TrajectoryDraft) -> dict[str, Any]:
    """The draft's extra; with unknown usage, what the replies that did report it add up to."""
    extra = dict(draft.extra)
    if draft.usage_unreported:
        extra["usage_reported"] = draft.usage.model_dump()
        extra["replies_without_usage"] = draft.usage_unreported
    return extra


def _error_message(error: BaseException) -> str:
    message = one_line(str(error)) or repr(error)
    return message[:2000]


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))
