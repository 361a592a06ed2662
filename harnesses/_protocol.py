"""The harness protocol: what an agent gets, what it writes as it works, and what it returns.

The runner owns the clock. It calls ``await harness.run(task, env, draft)`` inside the question's
wall-clock budget and cancels it at the deadline. A harness writes its progress into the
:class:`TrajectoryDraft` as it goes (tool calls, partial answer, usage), so whatever it did before a
timeout or crash is kept. It returns an :class:`AgentOutcome` when it finishes on its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ledgerbench_core._trial import TRIAL_HEADER
from ledgerbench_core.dataset import TaskType
from ledgerbench_core.trajectory import (
    Message,
    MessageToolCall,
    ModelEvent,
    Source,
    TerminationReason,
    ToolCall,
    ToolEvent,
    Usage,
)

DEFAULT_MAX_TOOL_CALLS = 60
"""The run's tool-call cap per question when ``--max-tool-calls`` is not given: one cap, applied
the same way by every harness (calls past it are not run; the record says how many)."""
DEFAULT_OUTPUT_LIMIT = 20_000
"""Tool outputs longer than this many characters are truncated in the record (hash kept)."""


@dataclass(frozen=True)
class SampleLimits:
    """Limits on one question besides its time budget (``--max-turns``, ``--max-tool-calls``,
    ``--max-tokens``, ``--max-cost-usd``). The runner enforces them from what the harness reports
    in its draft (turns, tool calls, usage, cost) and stops the question when one is exceeded;
    harnesses with a cap of their own apply the tighter of the two, so they can end gracefully."""

    max_turns: int | None = None
    max_tool_calls: int | None = None
    max_tokens: int | None = None
    """Input plus output tokens over every model call of the question."""
    max_cost_usd: float | None = None

    def exceeded(self, draft: TrajectoryDraft) -> tuple[TerminationReason, str] | None:
        """The limit ``draft`` went over, with one line saying how, or None."""
        turns, calls = draft.turns, len(draft.tool_calls)
        tokens = draft.usage.input_tokens + draft.usage.output_tokens
        cost = draft.cost_usd or 0.0
        if self.max_turns is not None and turns > self.max_turns:
            return (
                TerminationReason.max_turns,
                f"{turns} model turns, over --max-turns {self.max_turns}",
            )
        if self.max_tool_calls is not None and calls > self.max_tool_calls:
            return (
                TerminationReason.max_turns,
                f"{calls} tool calls, over --max-tool-calls {self.max_tool_calls}",
            )
        if self.max_tokens is not None and tokens > self.max_tokens:
            return (
                TerminationReason.token_limit,
                f"{tokens} tokens, over --max-tokens {self.max_tokens}",
            )
        if self.max_cost_usd is not None and cost > self.max_cost_usd:
            return (
                TerminationReason.cost_limit,
                f"USD {cost:.4f}, over --max-cost-usd {self.max_cost_usd:g}",
            )
        return None

    def unenforceable(self, draft: TrajectoryDraft) -> str | None:
        """One line when a limit cannot be kept: ``--max-tokens`` against a server whose replies
        report no token usage (the count is unknown, so the limit would silently never act)."""
        if self.max_tokens is None or not draft.usage_unreported:
            return None
        return (
            f"--max-tokens {self.max_tokens} cannot be enforced: the model server reports no "
            "token usage; run without --max-tokens or use a server that reports usage"
        )

    @property
    def active(self) -> bool:
        return any(v is not None for v in dataclasses.astuple(self))

    @property
    def tool_call_cap(self) -> int:
        """The question's tool-call cap: ``--max-tool-calls`` or :data:`DEFAULT_MAX_TOOL_CALLS`."""
        return self.max_tool_calls if self.max_tool_calls is not None else DEFAULT_MAX_TOOL_CALLS

    def cap(self, own: int, limit: int | None, reserve: int = 0) -> int:
        """A harness's own cap ``own`` tightened to ``limit`` (less ``reserve``, e.g. a final turn
        the harness keeps for its answer), never below 0."""
        return own if limit is None else max(0, min(own, limit - reserve))


@dataclass(frozen=True)
class ChatTurn:
    """One earlier message of a conversation (operations items)."""

    role: str
    """``user`` (the simulated user) or ``agent`` (what the harness said)."""
    content: str


CONVERSATION_NOTE = (
    "This is a conversation with a person, not a one-off question. If the request leaves out "
    "something you need to answer it exactly (a period, a legal entity, an invoice number, which "
    "customer), ask for it and wait for the reply instead of guessing. Tell an outside party "
    "(a customer or a vendor) only what concerns their own documents: never internal data such "
    "as credit limits, approvers or collections agents."
)
"""What model harnesses add to the user's first message in a conversation (operations items)."""


def replayed_turns(task: AgentTask) -> list[tuple[str, str]]:
    """A conversation's earlier turns as (``user`` | ``assistant``, text) chat messages, the
    conversation note added to the user's first message; [] for one-shot questions."""
    turns = [("assistant" if t.role == "agent" else "user", t.content) for t in task.history]
    if turns and turns[0][0] == "user":
        turns[0] = ("user", f"{turns[0][1]}\n\n{CONVERSATION_NOTE}")
    return turns


@dataclass(frozen=True)
class AgentTask:
    """What the agent may see of a question: never the ground truth."""

    question_id: str
    trial: int
    query: str
    task_type: TaskType
    timeout_s: float
    deadline: float
    """``time.monotonic()`` value at which the runner stops the agent."""
    stall_timeout_s: float | None = None
    """How long the provider may stay silent (no response headers, or no stream event) before it
    counts as hung; None: :func:`stall_timeout_s` of the budget. Set by the runner."""
    limits: SampleLimits = SampleLimits()
    """The run's sample limits (turns, tool calls, tokens, cost); set by the runner."""
    history: tuple[ChatTurn, ...] = ()
    """Conversations (operations items, harnesses with ``conversational = True``): the earlier
    turns, oldest first; ``query`` is the user's latest message. Empty for one-shot questions."""

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def stall_bound(self) -> float:
        """Seconds of provider silence after which a request counts as hung (never past the
        deadline)."""
        return self.stall_timeout_s or stall_timeout_s(self.timeout_s)


@dataclass(frozen=True)
class ErpEndpoint:
    """How to reach an MCP server of the run: the ERP's, or the research world's (the same
    shape; :data:`McpEndpoint` names it so)."""

    url: str
    """Streamable-HTTP endpoint, e.g. ``http://127.0.0.1:8765/mcp``."""
    token: str | None = None
    """Bearer token; a secret: never written to any file."""
    public_url: str | None = None
    """URL reachable by a remote provider (OpenAI hosted MCP), when different from ``url``."""
    stdio_command: tuple[str, ...] | None = None
    """Command that serves the same ERP over stdio, for harnesses that prefer to spawn it."""
    trial: str | None = None
    """The (question, trial) this endpoint is handed to, sent as the ``X-LedgerBench-Trial``
    header: the server keys its seeded fault draws and audit entries by it, so a faulty run
    replays the same faults on the same calls however questions interleave. Set by the runner."""

    def headers(self) -> dict[str, str]:
        """HTTP headers for every request to the ERP: the bearer token and the trial key."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if self.trial:
            headers[TRIAL_HEADER] = self.trial
        return headers


McpEndpoint = ErpEndpoint


@dataclass(frozen=True)
class AgentEnvironment:
    erp: ErpEndpoint
    instructions: str
    """System instructions shared by every general-purpose harness."""
    work_dir: str
    """A folder inside the run directory the harness may write to (scratch, configs)."""
    world: McpEndpoint | None = None
    """The research world's MCP server (search, fetch, company, prices), when the run has
    research questions and ``research`` is ``world``; None otherwise."""
    research: str = "world"
    """Where public-company research goes (``--research``): ``world`` (the ``world`` endpoint),
    ``web`` (the harness's live web tools), ``none`` (no research tools) or ``golden`` (the
    item's gold documents are in the question's prompt; no research tools)."""
    tools: tuple[str, ...] | None = None
    """The MCP tools the agent may be offered (``--tools``), by the names a model sees (ERP tools
    by their name, world tools as ``world__<tool>``); None: every tool the servers offer."""
    withheld_tools: tuple[str, ...] = ()
    """The tools the servers offer that ``tools`` leaves out (for harnesses that must deny them
    by name, as the Claude CLI does)."""

    def offers(self, name: str) -> bool:
        """Whether the run lets the agent see the MCP tool ``name`` (a model-facing name)."""
        return self.tools is None or name in self.tools

    @property
    def web_allowed(self) -> bool:
        """Whether the harness may offer its live web tools (``--research web`` only)."""
        return self.research == "web"

    @property
    def instructions_hash(self) -> str:
        return hashlib.sha256(self.instructions.encode()).hexdigest()[:16]

    def for_trial(self, trial: str) -> AgentEnvironment:
        """This environment for one (question, trial): its ERP and world requests carry
        ``trial``."""
        world = dataclasses.replace(self.world, trial=trial) if self.world else None
        return dataclasses.replace(
            self, erp=dataclasses.replace(self.erp, trial=trial), world=world
        )


@dataclass(frozen=True)
class HarnessOptions:
    """Options shared by every harness; harness-specific ones go in ``extra`` (--harness-opt)."""

    model: str | None = None
    reasoning_effort: str | None = None
    base_url: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def get_bool(self, key: str, default: bool) -> bool:
        value = self.extra.get(key)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise ValueError(f"--harness-opt {key}={value}: expected true or false")

    def get_int(self, key: str, default: int) -> int:
        value = self.extra.get(key)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"--harness-opt {key}={value}: expected an integer") from None


RESEARCH_TOOLS = frozenset({"search", "fetch"})


def research_documents(name: str, server: str | None, output: str) -> list[str]:
    """The document links a research-world ``search`` returned or a ``fetch`` read, from its
    output (the world server's JSON); [] for any other call. MCP clients name tools
    ``mcp__world__search`` (Claude) or ``world__search``; harnesses record ``server="world"``."""
    parts = name.split("__")
    if parts[-1] not in RESEARCH_TOOLS or not (server == "world" or "world" in parts[:-1]):
        return []
    try:
        data = json.loads(output)
    except (json.JSONDecodeError, TypeError):
        return []
    if isinstance(data, dict) and set(data) == {"result"}:
        data = data["result"]
    if not isinstance(data, dict):
        return []
    if parts[-1] == "fetch":
        return [data["url"]] if isinstance(data.get("url"), str) else []
    results = data.get("results")
    if not isinstance(results, list):
        return []
    return [r["url"] for r in results if isinstance(r, dict) and isinstance(r.get("url"), str)]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class TrajectoryDraft:
    """Mutable record of a question in progress. Harnesses append to it; the runner finalises it."""

    started_monotonic: float = field(default_factory=time.monotonic)
    answer: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    turns: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    output_limit: int = DEFAULT_OUTPUT_LIMIT
    messages: list[Message] = field(default_factory=list)
    events: list[ModelEvent | ToolEvent] = field(default_factory=list)
    excluded_s: float = 0.0
    """Seconds that are not the agent's working time (process start-up, retry waits)."""
    model: str | None = None
    """The model the provider reported, when the harness learns it (recorded as the model)."""
    provider_failure: str | None = None
    """Set by a harness while the provider keeps failing (retries), cleared when it answers: a
    question stopped at its deadline in that state with no answer is an infrastructure failure
    (``provider_unavailable``), not a time limit of the agent."""
    usage_unreported: int = 0
    """Model replies that reported no token usage: the question's usage is then unknown."""
    answer_cut: str | None = None
    """Why the last model reply is not a finished one (:func:`harnesses._wire.answer_cut`), or
    None: a cut final answer ends the question as ``answer_cut``."""
    limits: SampleLimits | None = None
    """The sample limits the runner enforces on this question (None: none is watched)."""

    def elapsed(self) -> float:
        return time.monotonic() - self.started_monotonic

    def add_message(self, role: str, content: str = "", *, reasoning: str | None = None) -> Message:
        """Append a conversation turn; tool calls added after an assistant turn attach to it."""
        message = Message(role=role, content=content, reasoning=reasoning, started_s=self.elapsed())
        self.messages.append(message)
        return message

    def add_model_event(
        self,
        started_s: float,
        *,
        duration_s: float | None,
        usage: Usage | None = None,
        retries: int = 0,
        error: str | None = None,
        status_code: int | None = None,
        request_id: str | None = None,
        model: str | None = None,
        output: Message | None = None,
        finish_reason: str | None = None,
        usage_unknown: bool = False,
    ) -> ModelEvent:
        """Record one model call; ``output`` is the assistant turn it produced (from
        :meth:`add_message`), when there is one; ``usage_unknown`` for a reply that reported no
        usage (its event's usage is None, not 0)."""
        index = next((n for n, m in enumerate(self.messages) if m is output), None)
        event = ModelEvent(
            started_s=round(started_s, 4),
            duration_s=None if duration_s is None else round(duration_s, 4),
            usage=None if usage_unknown else usage or Usage(),
            finish_reason=finish_reason,
            retries=retries,
            error=error,
            status_code=status_code,
            request_id=request_id,
            model=model,
            message_index=index,
        )
        self.events.append(event)
        return event

    def set_answer(self, text: str) -> None:
        """Record the answer so far (a partial answer survives a timeout)."""
        self.answer = text

    def add_usage(self, usage: Usage | None, cost_usd: float | None = None) -> None:
        """Add one reply's usage; None: the reply reported none (the total becomes unknown)."""
        if usage is None:
            self.usage_unreported += 1
            return
        self.usage = self.usage.add(usage)
        if cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost_usd

    def recorded_usage(self) -> Usage | None:
        """The question's usage for the record: None (unknown) when a reply reported none."""
        return None if self.usage_unreported else self.usage

    def recorded_cost(self, model_free: bool = False) -> float | None:
        """The question's cost for the record. None (unknown) when a reply reported no usage or
        no price was known; 0.0, a known cost, for a harness that declares it makes no model
        calls (:func:`is_model_free`) and recorded none. A model-free harness that recorded a
        model call contradicts its declaration: its cost stays what it reported."""
        if self.usage_unreported:
            return None
        if model_free and self.cost_usd is None:
            calls = any(isinstance(event, ModelEvent) for event in self.events)
            return None if calls else 0.0
        return self.cost_usd

    async def hold_past_limit(self) -> None:
        """Called before a tool call starts: once the question went over a sample limit the
        runner enforces, wait here (the runner stops the question within its check interval)
        instead of starting another call. The record then ends at the call that went over,
        whatever the timing, so a seeded run replays the same calls on any machine or executor;
        without the hold, whether one more call started (or was cut off in flight) depended on
        when the runner's check came."""
        if self.limits is not None and self.limits.exceeded(self) is not None:
            await asyncio.Event().wait()

    def note_tool_call_cap(self, cap: int, dropped: int) -> None:
        """Calls the model asked for past the run's tool-call cap, not run (cumulative)."""
        note = self.extra.setdefault("tool_call_cap", {"cap": cap, "dropped": 0})
        note["dropped"] += dropped

    def add_source(self, url: str, title: str | None = None, text: str | None = None) -> None:
        if any(existing.url == url for existing in self.sources):
            return
        clipped = text[: self.output_limit] if text else text
        self.sources.append(Source(url=url, title=title, text=clipped))

    def add_tool_call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        output: str,
        *,
        is_error: bool = False,
        server: str | None = None,
        started_s: float | None = None,
        duration_s: float | None = None,
        cancelled: bool = False,
    ) -> ToolCall:
        """Record a tool call; ``cancelled`` for one the deadline cut off (its duration None)."""
        call = ToolCall(
            name=name,
            arguments=arguments or {},
            output=output[: self.output_limit],
            output_sha256=_sha256(output),
            output_size=len(output),
            truncated=len(output) > self.output_limit,
            is_error=is_error,
            server=server,
            started_s=started_s,
            duration_s=None if cancelled else duration_s,
            cancelled=cancelled,
            documents=[] if is_error else research_documents(name, server, output),
        )
        self.tool_calls.append(call)
        self._note_tool_call(len(self.tool_calls) - 1, call)
        return call

    def _note_tool_call(self, index: int, call: ToolCall) -> None:
        """Tie a new tool call into the conversation and the event list."""
        if self.messages and self.messages[-1].role == "assistant":
            self.messages[-1].tool_calls.append(MessageToolCall(index=index))
        elif self.messages and self.messages[-1].role == "tool":
            # the assistant turn of these tool calls: never one before a later user turn
            # (a conversation's next agent turn)
            owner = next((m for m in reversed(self.messages) if m.role != "tool"), None)
            if owner is not None and owner.role == "assistant":
                owner.tool_calls.append(MessageToolCall(index=index))
        self.messages.append(Message(role="tool", tool_call_index=index, started_s=call.started_s))
        self.events.append(
            ToolEvent(
                tool_call_index=index,
                started_s=call.started_s,
                duration_s=call.duration_s,
                error=call.is_error,
            )
        )


@dataclass(frozen=True)
class AgentOutcome:
    """How a harness that finished on its own ended."""

    answer: str
    """Text the model wrote; never text the harness composed (that goes to ``draft.extra``)."""
    max_turns_reached: bool = False
    deadline_reached: bool = False
    """The harness stopped early because the deadline was near: recorded as ``timeout``."""


@runtime_checkable
class Harness(Protocol):
    """An agent under test. ``name`` is its registry name; ``model`` what it records as model.

    Optional class attributes a harness may declare: ``conversational = True`` (it takes part in
    conversations) and ``model_free = True`` (it never calls a model, so each answer's cost is a
    known 0.0 rather than unknown; :func:`is_model_free`)."""

    name: str
    model: str | None

    async def run(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome: ...

    async def aclose(self) -> None: ...


def is_model_free(harness: object) -> bool:
    """Whether ``harness`` declares (``model_free = True``) that it makes no model calls: its
    records then carry cost 0.0, known, instead of None. Never guessed from a missing model."""
    return getattr(harness, "model_free", False) is True


# --------------------------------------------------------------------------------------------------
# Transient failures (added by the runner issue): harnesses raise or detect them, the runner retries
# --------------------------------------------------------------------------------------------------

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
_TRANSIENT_CLASS_NAMES = frozenset(
    {
        "RateLimitError",
        "APIConnectionError",
        "APITimeoutError",
        "InternalServerError",
        "ServiceUnavailableError",
        "OverloadedError",
        "ConnectError",
        "ConnectTimeout",
        "ReadError",
        "ReadTimeout",
        "RemoteProtocolError",
        "WriteError",
    }
)


class TransientError(Exception):
    """A failure worth retrying: rate limit, 5xx, connection reset.

    Raise it from a harness (``raise TransientError("429 from provider") from error``) and the
    runner retries the question with backoff while its budget lasts. ``retry_after`` (seconds) is
    honoured when the provider gave one.
    """

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` is a transient failure (TransientError, 429/5xx, connection resets).

    Recognises the openai/anthropic/httpx error classes by name and status code, so harnesses need
    not wrap every SDK exception themselves.
    """
    if isinstance(error, TransientError):
        return True
    if isinstance(error, ConnectionError | TimeoutError):
        return True
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(status, int) and status in _TRANSIENT_STATUS:
        return True
    return any(cls.__name__ in _TRANSIENT_CLASS_NAMES for cls in type(error).__mro__)


def retry_delay(attempt: int, error: BaseException | None = None, *, base: float = 0.5) -> float:
    """Backoff before retry number ``attempt`` (1-based): exponential from ``base``, capped at 8 s,
    or the provider's ``retry_after`` when it is given."""
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, int | float) and retry_after >= 0:
        return float(retry_after)
    return min(base * (2 ** (attempt - 1)), 8.0)


async def call_with_retries(
    call: Any, *, deadline: float, max_attempts: int = 4, base_delay: float = 0.5
) -> Any:
    """Await ``call()`` (a zero-argument coroutine function), retrying transient failures with
    backoff while the retry can still start before ``deadline`` (a ``time.monotonic()`` value).

    For harnesses that want to retry one API request rather than the whole question.
    """
    import asyncio

    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except Exception as error:
            if not is_transient(error) or attempt >= max_attempts:
                raise
            delay = retry_delay(attempt, error, base=base_delay)
            if time.monotonic() + delay >= deadline:
                raise
            await asyncio.sleep(delay)


# --------------------------------------------------------------------------------------------------
# Failure classes: why a question failed, in the closed set of termination reasons
# --------------------------------------------------------------------------------------------------


class ProviderUnavailableError(RuntimeError):
    """The model provider could not be used: refused connection, DNS, auth, quota, or 429/5xx
    until the retry window closed. An infrastructure failure (never judged)."""

    termination_reason = TerminationReason.provider_unavailable


class ProviderError(RuntimeError):
    """The provider answered, but with an error or output the harness cannot use."""

    termination_reason = TerminationReason.provider_error


class ErpUnavailableError(RuntimeError):
    """The ERP MCP server could not be reached (down, refused, wrong token) when the agent began."""

    termination_reason = TerminationReason.erp_unavailable


class WorldUnavailableError(ErpUnavailableError):
    """The research world's MCP server could not be reached when the agent began."""

    termination_reason = TerminationReason.world_unavailable


_UNREACHABLE_CLASS_NAMES = frozenset({"ConnectError", "ConnectionRefusedError", "gaierror"})
_AUTH_CLASS_NAMES = frozenset({"AuthenticationError", "PermissionDeniedError"})
_PROVIDER_ERROR_CLASS_NAMES = frozenset(
    {
        "BadRequestError",
        "NotFoundError",
        "UnprocessableEntityError",
        "ConflictError",
        "APIResponseValidationError",
        "APIStatusError",
        "JSONDecodeError",
    }
)


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and its causes / contexts, nearest first (bounded)."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(seen) < 8 and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def status_code_of(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def is_unreachable(error: BaseException) -> bool:
    """The provider cannot be reached at all: connection refused, DNS failure (not a timeout)."""
    for link in _chain(error):
        names = {cls.__name__ for cls in type(link).__mro__}
        if names & _UNREACHABLE_CLASS_NAMES:
            return True
    return False


def is_refused_access(error: BaseException) -> bool:
    """Auth failure (401/403) or an exhausted quota: retrying cannot help."""
    status = status_code_of(error)
    if status in (401, 403):
        return True
    if any(cls.__name__ in _AUTH_CLASS_NAMES for cls in type(error).__mro__):
        return True
    text = str(error).lower()
    return "insufficient_quota" in text or "quota exceeded" in text


def termination_reason_of(error: BaseException) -> TerminationReason:
    """The closed-set reason for a question that ended with ``error`` (after any retries).

    Exceptions may carry their own ``termination_reason`` (the classes above); otherwise SDK
    errors are recognised by status code and class name. Whatever is left is our (or the
    plug-in's) code failing: ``harness_error``.
    """
    own = getattr(error, "termination_reason", None)
    if isinstance(own, TerminationReason):
        return own
    if is_unreachable(error) or is_refused_access(error) or is_transient(error):
        return TerminationReason.provider_unavailable
    status = status_code_of(error)
    if status is not None and 400 <= status < 500:
        return TerminationReason.provider_error
    if any(cls.__name__ in _PROVIDER_ERROR_CLASS_NAMES for cls in type(error).__mro__):
        return TerminationReason.provider_error
    return TerminationReason.harness_error


class ProviderStalledError(TransientError):
    """The provider accepted the request and then went silent: no response headers, or no stream
    event, for the stall bound (:meth:`AgentTask.stall_bound`). Transient: retried while the retry
    window lasts; when it closes the question ends as ``provider_unavailable``, an infrastructure
    failure, never the agent's time limit. A model that streams slowly is never stalled."""

    termination_reason = TerminationReason.provider_unavailable


def stall_timeout_s(budget_s: float) -> float:
    """The default stall bound: a quarter of the budget, at least 1 s and at most 15 s. A live
    provider sends response headers at once for a streamed request and then one event after
    another; silence that long is a hung connection, not a slow model."""
    return min(15.0, max(1.0, 0.25 * budget_s))


def retry_window_s(budget_s: float) -> float:
    """How long a question may keep retrying a failing provider: a quarter of its budget, at
    least 2 s and at most 30 s, so a dead provider never eats most of the budget."""
    return min(30.0, max(2.0, 0.25 * budget_s))
