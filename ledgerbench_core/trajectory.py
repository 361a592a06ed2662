"""Run records: the trajectory line written per question and trial, and the run manifest.

``runs/NAME/trajectories.jsonl`` holds one :class:`TrajectoryRecord` per line;
``runs/NAME/manifest.json`` holds one :class:`RunManifest`. Both carry a format ``version``.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ledgerbench_core.dataset import TaskType

TRAJECTORY_FORMAT_VERSION = 3
"""4: ``conversation`` (operations items) and the conversation termination reasons. 3:
``usage`` None when the provider reported no token usage (it was recorded as 0 before), model
events' ``finish_reason``, the termination reason ``answer_cut``. 2: ``termination``,
``previous_attempts``, ``input``, ``messages``, ``events``, ``working_time_s``,
``system_prompt_hash``. Version-1 to -3 records still read (``termination`` derived from
``status`` for version 1)."""
MANIFEST_FORMAT_VERSION = 3
"""2: ``system_prompt`` stored once per run. 3: ``tools`` (the run's ``--tools``)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, populate_by_name=True)


class Status(StrEnum):
    """Why a question's run ended."""

    ok = "ok"
    """The agent produced its final answer within the budget."""
    timeout = "timeout"
    """The wall-clock budget ran out; ``answer`` holds what was produced so far."""
    max_turns = "max_turns"
    """The agent did not finish its answer: it hit a sample limit (its turn or tool-call cap, the
    run's token or cost limit) or the provider cut its reply (``termination`` says which)."""
    error = "error"
    """The harness or infrastructure failed; see ``error``. Never judged as an answer."""


class TerminationReason(StrEnum):
    """Why a question's run ended: a closed set. See :data:`INFRASTRUCTURE_REASONS`."""

    completed = "completed"
    """The agent finished on its own and gave an answer (right or wrong: it is judged)."""
    empty_answer = "empty_answer"
    """The agent finished on its own with no answer text: an agent failure, judged (scores 0).
    The same in every wire: a well-formed reply with neither text nor a tool call."""
    answer_cut = "answer_cut"
    """The reply that holds the answer was cut short by the provider: its output-token cap
    (finish reason ``length``/``max_tokens``), its content filter, or a finish reason the harness
    does not know; ``detail`` says which. Judged as it stands (an agent outcome, not ``ok``)."""
    time_limit = "time_limit"
    """The wall-clock budget ran out; any partial answer the model wrote is judged."""
    max_turns = "max_turns"
    """The agent hit its turn or tool-call cap (``--max-turns``, the harness's own turn cap, or
    the run's one tool-call cap ``--max-tool-calls``: ``extra["tool_call_cap"]`` says how many
    calls were not run); judged."""
    token_limit = "token_limit"
    """The question's model calls used more tokens (input + output) than ``--max-tokens``;
    judged."""
    cost_limit = "cost_limit"
    """The question's model calls cost more than ``--max-cost-usd``; judged."""
    provider_unavailable = "provider_unavailable"
    """The model provider could not be used at all: outage, refused connection, auth, quota."""
    provider_error = "provider_error"
    """The provider answered, but with errors or malformed output the harness could not use."""
    erp_unavailable = "erp_unavailable"
    """The ERP MCP server could not be reached or failed before the agent could work."""
    world_unavailable = "world_unavailable"
    """The research world's MCP server could not be reached when the agent began."""
    harness_error = "harness_error"
    """The harness itself (our code or a plug-in) raised."""
    worker_lost = "worker_lost"
    """The process or node running the question died (distributed executors)."""
    user_done = "user_done"
    """Conversations: the simulated user said it had what it needed (``###STOP###``); judged."""
    transfer = "transfer"
    """Conversations: the user was handed over to a human (``###TRANSFER###``); judged."""
    out_of_scope = "out_of_scope"
    """Conversations: the user could not go on from its scenario (``###OUT-OF-SCOPE###``);
    judged."""
    agent_gave_up = "agent_gave_up"
    """Conversations: the agent ended its turn with no message to the user; judged."""
    user_error = "user_error"
    """Conversations: the simulated user failed (an empty message, a user model that could not
    be reached): not the agent's doing, never scored, counted apart."""


INFRASTRUCTURE_REASONS = frozenset(
    {
        TerminationReason.provider_unavailable,
        TerminationReason.provider_error,
        TerminationReason.erp_unavailable,
        TerminationReason.world_unavailable,
        TerminationReason.harness_error,
        TerminationReason.worker_lost,
        TerminationReason.user_error,
    }
)
"""Reasons that say nothing about the agent: such records are not judged and are left out of every
score denominator; they are counted and shown apart."""

_STATUS_OF_REASON = {
    TerminationReason.completed: Status.ok,
    TerminationReason.empty_answer: Status.ok,
    TerminationReason.answer_cut: Status.max_turns,
    TerminationReason.time_limit: Status.timeout,
    TerminationReason.max_turns: Status.max_turns,
    TerminationReason.token_limit: Status.max_turns,
    TerminationReason.cost_limit: Status.max_turns,
    TerminationReason.user_done: Status.ok,
    TerminationReason.transfer: Status.ok,
    TerminationReason.out_of_scope: Status.ok,
    TerminationReason.agent_gave_up: Status.ok,
}


class Termination(_Strict):
    reason: TerminationReason
    """Why the run ended."""
    infrastructure: bool
    """True for failures outside the agent (never judged, out of every denominator)."""
    detail: str | None = None
    """One line on what happened, secrets removed (e.g. ``HTTP 503 from the provider x4``)."""

    @classmethod
    def of(cls, reason: TerminationReason, detail: str | None = None) -> Termination:
        return cls(reason=reason, infrastructure=reason in INFRASTRUCTURE_REASONS, detail=detail)

    @property
    def status(self) -> Status:
        """The coarse status that goes with this reason."""
        return _STATUS_OF_REASON.get(self.reason, Status.error)


def _termination_from_v1(record: dict[str, Any]) -> dict[str, Any]:
    status = record.get("status")
    reason = {
        "ok": TerminationReason.completed,
        "timeout": TerminationReason.time_limit,
        "max_turns": TerminationReason.max_turns,
    }.get(status)
    if reason is None:
        error = record.get("error") or {}
        is_dict = isinstance(error, dict)
        error_class = error.get("class") if is_dict else getattr(error, "class_", None)
        if error_class == "EmptyAnswer":
            reason = TerminationReason.empty_answer
        else:
            reason = TerminationReason.harness_error
    return Termination.of(reason, "derived from a version-1 record").model_dump()


class ErrorInfo(_Strict):
    class_: str = Field(alias="class", serialization_alias="class")
    """Exception class or error category, e.g. ``RateLimitError``."""
    message: str
    """What went wrong, with secrets removed."""


class ToolCall(_Strict):
    name: str
    """Tool name as the agent saw it (e.g. ``get_customer`` or ``mcp__erp__get_customer``)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments as the agent sent them."""
    output: str = ""
    """Tool output, truncated to the run's limit."""
    output_sha256: str = ""
    """SHA-256 of the full output, before truncation."""
    output_size: int = 0
    """Length of the full output in characters."""
    truncated: bool = False
    """Whether ``output`` was cut to the limit."""
    is_error: bool = False
    """The tool reported an error (the agent saw an error result)."""
    server: str | None = None
    """``erp``, ``web`` or another tool source, when known."""
    started_s: float | None = None
    """Offset from the question's start, seconds."""
    duration_s: float | None = None
    """Seconds the call took; None when the deadline cut it off."""
    cancelled: bool = False
    """The call was still running when the deadline (or a cancellation) cut it off."""
    documents: list[str] = Field(default_factory=list)
    """Research-world calls: the document links a ``search`` returned (best first), or the one a
    ``fetch`` read; empty for other tools."""


class Source(_Strict):
    url: str
    """Address of the page or record."""
    title: str | None = None
    text: str | None = None
    """Captured text, truncated."""


class Usage(_Strict):
    input_tokens: int = 0
    """Prompt tokens, cached ones included."""
    output_tokens: int = 0
    """Completion tokens, reasoning ones included."""
    reasoning_tokens: int = 0
    """Reasoning tokens (part of ``output_tokens``), when the provider reports them."""
    cached_input_tokens: int = 0
    """Prompt tokens served from the provider's cache (part of ``input_tokens``)."""

    def add(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
        )


class MessageToolCall(_Strict):
    index: int
    """Position of the call in the record's ``tool_calls`` (arguments, output, hash, size)."""


class Message(_Strict):
    """One turn of the conversation, in order."""

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    """Text of the turn: the question, the assistant's words, or (for ``tool``) empty: the result is
    ``tool_calls[tool_call_index].output``, capped like every tool output, with length and hash. A
    call the harness refused (it never ran) holds the refusal the model was sent."""
    reasoning: str | None = None
    """Reasoning summary, where the provider returns one."""
    tool_calls: list[MessageToolCall] = Field(default_factory=list)
    """Assistant turns: the tool calls this turn issued."""
    tool_call_index: int | None = None
    """Tool turns: which entry of ``tool_calls`` this is the result of."""
    started_s: float | None = None
    """Offset from the question's start, seconds."""


class ModelEvent(_Strict):
    """One request to the model (one turn)."""

    type: Literal["model"] = "model"
    started_s: float
    """Offset from the question's start, seconds."""
    duration_s: float | None = None
    """None when the deadline cut the call off."""
    usage: Usage | None = Field(default_factory=lambda: Usage())
    """Tokens of this call; None when the provider's reply reported no usage (unknown, not 0)."""
    finish_reason: str | None = None
    """Why the provider says the reply ended, as it sent it (``stop``, ``tool_calls``,
    ``end_turn``, ``length``, ``max_tokens``, ``content_filter`` ...); None when it sent none."""
    retries: int = 0
    """Retries of this request (transport or rate limit) before it answered or failed."""
    error: str | None = None
    """What went wrong with this call (it failed, stalled, was retried or cut off), else None."""
    status_code: int | None = None
    """The HTTP status of a failed call, when the provider sent one."""
    request_id: str | None = None
    """The provider's request id, when it sends one (the Claude CLI exposes none: there it is the
    API message id, ``msg_...``)."""
    model: str | None = None
    message_index: int | None = None
    """Position in ``messages`` of the assistant turn this call produced, when known (exports use
    it to show each call's input and output; without it calls pair with turns in order)."""


class ToolEvent(_Strict):
    """One tool call, timed."""

    type: Literal["tool"] = "tool"
    tool_call_index: int
    """Position in the record's ``tool_calls``."""
    started_s: float | None = None
    duration_s: float | None = None
    error: bool = False


Event = Annotated[ModelEvent | ToolEvent, Field(discriminator="type")]


class PreviousAttempt(_Strict):
    """An earlier run of the same (question, trial) that ended in an infrastructure failure and was
    re-run with ``--retry-errors``, or a conversation the reviewer of its simulated user excluded,
    re-run with ``--retry-simulator-errors``."""

    status: Status
    termination: Termination
    error: ErrorInfo | None = None
    answer: str = ""
    latency_s: float
    started_at: dt.datetime
    finished_at: dt.datetime
    tool_call_count: int = 0
    simulator_error: str | None = None
    """Set when the attempt was re-run for its simulated user (``--retry-simulator-errors``): the
    reviewer's tags, or why the reviewer model failed."""


UserTurnSeverity = Literal["critical_helped", "critical_hindered", "minor"]


class UserTurnTag(_Strict):
    """A simulated user's turn that broke its scenario, as the reviewer of the user found it."""

    turn: int
    """Index of the user turn in ``ConversationLog.turns``."""
    severity: UserTurnSeverity
    """``critical_helped`` (it made the task easier: volunteered what it should not know or
    revealed a slot unasked), ``critical_hindered`` (it made the task harder: invented a fact,
    stopped early, sent nothing) or ``minor``."""
    rule: str
    """Which rule it broke, e.g. ``volunteered_unknown``, ``invented_fact``, ``premature_stop``."""
    detail: str
    """One line on what was said."""
    by: str = "rules"
    """Who found it: ``rules`` (the rules reviewer) or the reviewer model (``--reviewer``)."""


class ConversationTurn(_Strict):
    """One message of a conversation with a simulated user."""

    role: Literal["user", "agent"]
    content: str
    started_s: float
    """Seconds from the start of the conversation."""
    duration_s: float
    """How long the turn took: the agent's working time, or the user's reply time."""
    tool_calls: int = 0
    """Agent turns: how many tool calls the agent made in it (``tool_calls`` in order)."""
    signal: Literal["done", "transfer", "out_of_scope"] | None = None
    """User turns: the closed stop signal it ended with, if any."""


class ConversationLog(_Strict):
    """An operations item's conversation: every turn, who played the user, and its review."""

    kind: str
    """The scenario kind (``Conversation.kind``)."""
    user: str
    """Who played the user: ``scripted`` (the deterministic offline user) or a model."""
    user_version: str
    """Pinned version of the user (the scripted user's rules version, or model + prompt hash)."""
    turns: list[ConversationTurn] = Field(default_factory=list)
    agent_time_s: float = 0.0
    """Seconds the agent's turns took (what the time budget covers)."""
    user_time_s: float = 0.0
    """Seconds the user's replies took (recorded apart; not in the budget)."""
    review: list[UserTurnTag] = Field(default_factory=list)
    """User turns that broke the scenario (the reviewer's tags)."""
    reviewer: str = ""
    """Who reviewed the user (``rules-N`` for the rules reviewer; ``rules-N+MODEL@prompt-HASH``
    with a reviewer model)."""
    review_error: str | None = None
    """Why the reviewer model gave no usable review: the user is not cleared, so the conversation
    is not scored (``--retry-simulator-errors`` runs it again)."""

    @property
    def critical_simulator_error(self) -> bool:
        """A user turn broke the scenario badly enough that the conversation is not scored."""
        return any(tag.severity != "minor" for tag in self.review)

    @property
    def excluded_by_review(self) -> bool:
        """The review leaves the conversation out of every score: a critical simulator error, or
        a reviewer model that could not review it."""
        return self.critical_simulator_error or self.review_error is not None


class TrajectoryRecord(_Strict):
    version: int = TRAJECTORY_FORMAT_VERSION
    """Format version of this record."""
    question_id: str
    """The dataset item's ``id``."""
    trial: int = 0
    """0-based repeat number (``--trials``)."""
    task_type: TaskType
    """obligations, entity_performance or business_brief."""
    harness: str
    """Registry name or plug-in path of the agent."""
    model: str | None = None
    """Model the harness used, as it reports it."""
    answer: str = ""
    """Final answer text; for ``timeout`` the partial answer produced before the deadline. Cut at
    100,000 characters (``extra["answer_cap"]`` then says so, with the whole answer's hash)."""
    status: Status
    """Coarse outcome: ok, timeout, max_turns or error; ``termination`` says why."""
    termination: Termination
    """Why the run ended, and whether that was an infrastructure failure (not judged)."""
    error: ErrorInfo | None = None
    """What failed, when ``status`` is ``error``."""
    latency_s: float
    """Wall-clock seconds from start to the recorded end."""
    timeout_s: float
    """The budget this question ran under."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Every tool call in the order issued, including calls cut off by the deadline."""
    sources: list[Source] = Field(default_factory=list)
    """Web pages and citations the agent captured."""
    usage: Usage | None = Field(default_factory=Usage)
    """Tokens summed over every model call of the question; None (unknown) when a reply reported
    no usage (``extra["usage_reported"]`` then holds the sum of the calls that did)."""
    cost_usd: float | None = None
    """Provider-reported or price-table cost; None when unknown."""
    turns: int = 0
    """Model turns (requests) the agent made."""
    started_at: dt.datetime
    """UTC time the question started."""
    finished_at: dt.datetime
    """UTC time the record was closed."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Harness-specific details (e.g. permission denials, sub-agent messages, response ids). Text
    the harness composed itself (never the model) goes here, never into ``answer``."""
    input: str | None = None
    """The question text exactly as sent to the agent."""
    given_documents: list[str] = Field(default_factory=list)
    """Research-world documents the runner put into the prompt (``--research golden``): the
    judge counts them as read."""
    system_prompt_hash: str | None = None
    """Hash of the system prompt; the prompt itself is stored once in the manifest."""
    messages: list[Message] = Field(default_factory=list)
    """The conversation: user, assistant and tool turns in order."""
    events: list[Event] = Field(default_factory=list)
    """One event per model call and per tool call."""
    working_time_s: float | None = None
    """Seconds the agent worked: ``latency_s`` less process start-up and retry waits."""
    previous_attempts: list[PreviousAttempt] = Field(default_factory=list)
    """Earlier infrastructure-failed attempts replaced by this one (``--retry-errors``)."""
    conversation: ConversationLog | None = None
    """Operations items: the whole conversation with the simulated user (user turns marked),
    per-turn timing and the review of the user's turns."""

    @model_validator(mode="before")
    @classmethod
    def _read_version_1(cls, data: Any) -> Any:
        if isinstance(data, dict) and "termination" not in data:
            data = {**data, "termination": _termination_from_v1(data)}
        return data

    @property
    def infrastructure_failure(self) -> bool:
        """Not judged, out of every denominator."""
        return self.termination.infrastructure


class ModelEndpointCheck(_Strict):
    """The pre-flight of a model endpoint (``harnesses._preflight``), before the first question:
    the server spoke the harness's wire, has the model, and the prompt fits its context."""

    base_url: str
    """The API base the harness talks to (credentials in it redacted)."""
    wire: Literal["responses", "chat", "messages"]
    """The wire the harness speaks: the Responses API, Chat Completions or the Messages API."""
    model: str
    server: str
    """What the server said it is: ``llama.cpp``, ``vllm``, ``ollama`` or ``unknown``."""
    served_models: list[str] = Field(default_factory=list)
    """The model names ``GET /models`` listed (empty: the server does not list them)."""
    context_tokens: int | None = None
    """The model's context in tokens (None: neither the server nor ``context_window`` says)."""
    context_source: str | None = None
    """Where ``context_tokens`` came from, e.g. ``GET /props n_ctx`` or ``context_window``."""
    prompt_tokens: int
    """Tokens of what the harness sends before the question (instructions plus tools)."""
    prompt_tokens_source: str
    """``server tokenizer`` (the server's ``/tokenize``) or ``estimate (4 characters a
    token)``."""
    tool_count: int
    usage_reported: bool | None = None
    """Whether the server's replies carry token usage, as the harness asks (streamed or not);
    checked with ``--max-tokens`` only (a run is refused without it), else None."""
    first_byte_s: float
    """Seconds from sending the probe (about 80 fresh tokens) to the first byte of the answer."""
    prefill_tokens_per_s: float | None = None
    """Prompt tokens the server reads a second: the lower of llama.cpp's ``timings`` and the
    probe's prompt tokens over its time to first byte."""
    stall_bound_s: float
    """The stall bound the run uses for this endpoint: ``--stall-timeout`` when given, else the
    default raised to cover the measured time to read the whole prompt (a slow prefill is slow,
    not silent)."""
    duration_s: float
    """How long the pre-flight took."""


class RunManifest(_Strict):
    version: int = MANIFEST_FORMAT_VERSION
    run_id: str
    command: list[str]
    """argv of the run, with secrets redacted."""
    config: dict[str, Any]
    """The full RunConfig (secrets redacted)."""
    config_fingerprint: str
    """Hash of everything that must match for a resume (dataset, selection, harness, budgets)."""
    harness: str
    model: str | None = None
    harness_options: dict[str, Any] = Field(default_factory=dict)
    timeouts: dict[str, float]
    dataset_path: str
    dataset_hash: str
    question_count: int
    erp_url: str | None = None
    """MCP endpoint the agent used."""
    erp_db_url: str | None = None
    """Database behind the ERP server, when the runner knows it (password redacted)."""
    erp_snapshot_hash: str | None = None
    """Snapshot hash of the ERP the run used (also when served by ``--erp-url``: read from
    ``erp_info``). The judge finds the database by it, or refuses."""
    world_url: str | None = None
    """MCP endpoint of the research world the run used (None: no research world)."""
    world_db: str | None = None
    """The world file the runner served."""
    world_id: str | None = None
    world_snapshot_hash: str | None = None
    """Snapshot hash of the research world the run used (from ``world_info`` when served by
    ``--world-url``); the judge finds the world by it."""
    tools: list[str] | None = None
    """The MCP tools the agent was offered (``--tools``, resolved against what the servers
    offer; world tools as ``world__<tool>``); None: every tool the servers offered."""
    system_prompt_hash: str
    system_prompt: str | None = None
    """The system instructions every question of the run was sent (stored once, not per record)."""
    package_versions: dict[str, str] = Field(default_factory=dict)
    git_revision: str | None = None
    started_at: dt.datetime
    finished_at: dt.datetime | None = None
    interrupted: bool = False
    fingerprint_parts: dict[str, Any] = Field(default_factory=dict)
    """The parts behind ``config_fingerprint`` (dataset hash, selection, harness settings, budgets,
    instructions hash, ERP snapshot), so a refused resume can say what changed."""
    resume_count: int = 0
    """How many times the run was resumed after its first start."""
    simulator_reruns: list[str] = Field(default_factory=list)
    """Conversations (``QUESTION#TRIAL``) run again because the reviewer excluded them
    (``--retry-simulator-errors``), over every start of the run."""
    model_endpoint: ModelEndpointCheck | None = None
    """What the pre-flight of the model server saw at this start (harnesses that talk to a model
    server over HTTP; None for the others)."""


__all__ = [
    "INFRASTRUCTURE_REASONS",
    "MANIFEST_FORMAT_VERSION",
    "TRAJECTORY_FORMAT_VERSION",
    "ConversationLog",
    "ConversationTurn",
    "ErrorInfo",
    "Event",
    "Message",
    "MessageToolCall",
    "ModelEndpointCheck",
    "ModelEvent",
    "PreviousAttempt",
    "RunManifest",
    "Source",
    "Status",
    "Termination",
    "TerminationReason",
    "ToolCall",
    "ToolEvent",
    "TrajectoryRecord",
    "Usage",
    "UserTurnSeverity",
    "UserTurnTag",
]
