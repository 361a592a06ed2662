"""``--harness openai``: the OpenAI Responses API (``client.responses.create``), as in the paper.

Two ways to give the model the ERP (``--harness-opt mcp_mode=...``):

- ``local`` (default): the harness lists the MCP tools, offers them as function tools, runs each
  call through the recording :class:`ErpClient` and continues with ``previous_response_id`` (or the
  full input with ``stateless=true``) until a final message, the tool-call cap or the deadline.
  Works with a loopback ERP and any Responses-compatible server (``--base-url``,
  ``OPENAI_BASE_URL``).
- ``hosted``: one request with a native ``{"type": "mcp"}`` tool pointing at ``--erp-public-url``;
  the provider runs the loop and the harness records the ``mcp_call`` items it reports.

``reasoning: {effort}`` is sent only with ``--reasoning-effort`` (not every model takes it); the
tool-call cap is the run's (``--max-tool-calls``). Every output item is recorded in the draft as
it arrives: function and MCP calls (arguments,
output, structured error), web searches (query and sources), message text and its URL citations (as
sources), reasoning and token usage with cost. Replies stream by default: a timeout keeps the text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from harnesses._erp_client import ErpClient, ToolSpec, shared_tls_context
from harnesses._preflight import read_context_window
from harnesses._pricing import Price, estimate_cost, parse_price
from harnesses._protocol import (
    CONVERSATION_NOTE,
    AgentEnvironment,
    AgentOutcome,
    AgentTask,
    HarnessOptions,
    McpEndpoint,
    ProviderError,
    ProviderUnavailableError,
    TrajectoryDraft,
    is_refused_access,
    is_transient,
    is_unreachable,
    replayed_turns,
    retry_delay,
    retry_window_s,
)
from harnesses._registry import HarnessLoadError, harness
from harnesses._toolbox import WORLD_LABEL, WORLD_PREFIX, McpToolbox, catalogue_key
from harnesses._wire import (
    DONE,
    answer_cut,
    arguments_text,
    check_event_stream,
    check_event_type,
    is_timeout,
    local_call_id,
    read_arguments,
    request_timeout,
    responses_event_types,
    server_sent_events,
    stalled,
)
from ledgerbench_core.dataset import TaskType
from ledgerbench_core.trajectory import Message, Usage

DEFAULT_MODEL = "gpt-5.2"
SERVER_LABEL = "erp"
RETRY_MARGIN_S = 0.5
"""No retry wait may end closer than this to the deadline."""

OPENAI_OPTIONS = {
    "web_search": "offer the built-in web_search tool (default true)",
    "mcp_mode": "local (default) or hosted",
    "stateless": "resend the full input instead of previous_response_id (default false)",
    "stream": "stream replies so a timeout keeps partial text (default true)",
    "price_per_mtok": "INPUT,CACHED_INPUT,OUTPUT dollars per million tokens (default: price table)",
    "max_output_tokens": "cap on output tokens per response (default: provider default)",
    "context_window": "the model's context in tokens, for the pre-flight when the server does not "
    "say it (llama.cpp, vLLM and Ollama do)",
}

CAP_REACHED_MESSAGE = (
    "Tool-call limit of {cap} reached: no more tool calls will run. "
    "Answer now from the results you already have and say what you could not check."
)


class MissingApiKeyError(HarnessLoadError):
    """The provider's API key is not set; the message names the variable and the offline harness."""


class HarnessConfigError(HarnessLoadError):
    """A ``--harness-opt`` value or setting the harness cannot work with."""


LLM_EXTRA_HINT = "pip install 'ledgerbench[llm]'"
"""Installs the model SDKs (openai, anthropic, dspy), an extra: the offline demo needs none."""


class MissingSdkError(HarnessLoadError):
    """The provider SDK a harness needs is not installed."""


def require_sdk(module: str, harness_name: str) -> None:
    """:class:`MissingSdkError` with the install command when ``module`` cannot be imported."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingSdkError(
            f"--harness {harness_name} needs the {module} package, an optional extra: install "
            f"it with {LLM_EXTRA_HINT} (or make test), or use --harness scripted to run offline"
        )


def missing_key_problem(variable: str, harness_name: str) -> str | None:
    """The one-line fix when ``variable`` holds no key, else None."""
    if os.environ.get(variable, "").strip():
        return None
    return (
        f"--harness {harness_name} needs an API key: set {variable} "
        f"(for a local server any value works), or use --harness scripted to run offline"
    )


def require_env_key(variable: str, harness_name: str) -> str:
    """The key in ``variable``, or :class:`MissingApiKeyError` with a one-line fix."""
    if (problem := missing_key_problem(variable, harness_name)) is not None:
        raise MissingApiKeyError(problem)
    return os.environ[variable].strip()


RETIRED_OPTIONS = {
    "max_tool_calls": "the tool-call cap is the run's, one for every harness: use --max-tool-calls",
}
"""Harness options that are gone, with what replaces them."""


def check_known_options(options: HarnessOptions, known: dict[str, str], harness_name: str) -> None:
    for key in sorted(set(options.extra) & set(RETIRED_OPTIONS)):
        raise HarnessConfigError(
            f"--harness {harness_name}: --harness-opt {key}: {RETIRED_OPTIONS[key]}"
        )
    unknown = sorted(set(options.extra) - set(known))
    if unknown:
        raise HarnessConfigError(
            f"--harness {harness_name}: unknown --harness-opt {', '.join(unknown)}; "
            f"known options: {', '.join(sorted(known))}"
        )


def read_options(read: Any, harness_name: str) -> Any:
    """Run ``read()``; a ``ValueError`` from ``get_bool``/``get_int`` becomes a config error."""
    try:
        return read()
    except HarnessLoadError:
        raise
    except ValueError as error:
        raise HarnessConfigError(f"--harness {harness_name}: {error}") from None


@dataclass(frozen=True)
class OpenAISettings:
    model: str
    reasoning_effort: str | None
    """Sent as ``reasoning.effort`` only when the user asked for one (not every model takes it)."""
    web_search: bool
    mcp_mode: str
    stateless: bool
    stream: bool
    base_url: str | None
    price: Price | None
    max_output_tokens: int | None
    context_window: int | None = None

    @classmethod
    def from_options(cls, options: HarnessOptions) -> OpenAISettings:
        check_known_options(options, OPENAI_OPTIONS, "openai")
        return read_options(lambda: cls._read(options), "openai")

    @classmethod
    def _read(cls, options: HarnessOptions) -> OpenAISettings:
        mode = options.extra.get("mcp_mode", "local")
        if mode not in {"local", "hosted"}:
            raise ValueError(f"--harness-opt mcp_mode={mode}: expected local or hosted")
        price_text = options.extra.get("price_per_mtok")
        max_output = options.get_int("max_output_tokens", 0)
        return cls(
            model=options.model or DEFAULT_MODEL,
            reasoning_effort=options.reasoning_effort,
            web_search=options.get_bool("web_search", True),
            mcp_mode=mode,
            stateless=options.get_bool("stateless", False),
            stream=options.get_bool("stream", True),
            base_url=options.base_url or os.environ.get("OPENAI_BASE_URL") or None,
            price=parse_price(price_text) if price_text else None,
            max_output_tokens=max_output or None,
            context_window=read_context_window(options),
        )


def function_tool(spec: ToolSpec) -> dict[str, Any]:
    """An MCP tool as a Responses function tool (not strict: MCP schemas have optional fields)."""
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.input_schema,
        "strict": False,
    }


def hosted_mcp_tool(
    public_url: str, allowed_tools: list[str], headers: dict[str, str]
) -> dict[str, Any]:
    """The native MCP tool entry: the provider calls ``public_url`` itself."""
    entry: dict[str, Any] = {
        "type": "mcp",
        "server_label": SERVER_LABEL,
        "server_url": public_url,
        "require_approval": "never",
        "allowed_tools": allowed_tools,
    }
    if headers:
        entry["headers"] = headers
    return entry


def responses_usage(usage: Any) -> Usage | None:
    """The reply's usage; None when it reported none (unknown, not 0)."""
    if usage is None:
        return None
    input_details = getattr(usage, "input_tokens_details", None)
    output_details = getattr(usage, "output_tokens_details", None)
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        reasoning_tokens=getattr(output_details, "reasoning_tokens", 0) or 0,
        cached_input_tokens=getattr(input_details, "cached_tokens", 0) or 0,
    )


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Tool-call arguments from the model (JSON text or an object): (dict, None) or (None, what
    is wrong); see :func:`harnesses._wire.read_arguments`."""
    return read_arguments(raw)


def retry_after_s(error: BaseException) -> float | None:
    """The provider's ``retry-after-ms`` / ``retry-after`` header of an SDK error, in seconds."""
    headers = getattr(getattr(error, "response", None), "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return float(value) * scale
            except ValueError:
                return None
    return None


@dataclass
class CallTiming:
    """One model call as the transcript records it: when it started and how often it was retried."""

    started_s: float
    retries: int = 0


async def retrying(
    make_call: Any,
    task: AgentTask,
    draft: TrajectoryDraft,
    timing: CallTiming | None = None,
    *,
    model: str | None = None,
) -> Any:
    """``make_call()``, retried on transient provider failures (429, 5xx, timeouts, a stalled
    provider) in the budget.

    The SDK clients retry nothing (``max_retries=0``). A provider that cannot be used at all
    (connection refused, DNS, 401/403, exhausted quota) fails at once; transient failures are
    retried with the provider's Retry-After or the runner's backoff for at most
    :func:`retry_window_s` of the budget, and never past :data:`RETRY_MARGIN_S` before the
    deadline. Then :class:`ProviderUnavailableError` ends the question as an infrastructure
    failure (the provider failed, not the agent). Every failed attempt gets its own model event
    (error and HTTP status) and a line in ``draft.extra["provider_errors"]``, and
    ``draft.provider_failure`` says the provider is failing until an attempt succeeds.
    """
    attempt = 0
    first_failure: float | None = None
    while True:
        attempt += 1
        started = draft.elapsed()
        if timing is not None:
            timing.started_s = started
        try:
            result = await make_call()
        except Exception as error:
            status = getattr(error, "status_code", None)
            label = type(error).__name__ + (f" {status}" if status else "")
            draft.add_model_event(
                started,
                duration_s=draft.elapsed() - started,
                retries=attempt - 1,
                error=f"{label}: {' '.join(str(error).split())[:300]}",
                status_code=status if isinstance(status, int) else None,
                model=model,
            )
            if is_unreachable(error) or is_refused_access(error):
                draft.extra.setdefault("provider_errors", []).append(label)
                raise ProviderUnavailableError(f"{label}: {str(error)[:300]}") from error
            if not is_transient(error):
                raise
            draft.extra.setdefault("provider_errors", []).append(label)
            draft.provider_failure = f"{label} on {attempt} attempt(s): {str(error)[:200]}"
            first_failure = first_failure or time.monotonic()
            wait = retry_after_s(error)
            wait = retry_delay(attempt, error) if wait is None else min(wait, 60.0)
            spent = time.monotonic() - first_failure
            window_closes = first_failure + retry_window_s(task.timeout_s)
            resume_at = time.monotonic() + wait
            if resume_at > task.deadline - RETRY_MARGIN_S or resume_at > window_closes:
                raise ProviderUnavailableError(
                    f"{label} on {attempt} attempt(s) over {spent:.1f} s, "
                    f"retry window closed: {str(error)[:300]}"
                ) from error
            if timing is not None:
                timing.retries += 1
            draft.excluded_s += wait  # a retry wait is not the agent's working time
            await asyncio.sleep(wait)
        else:
            draft.provider_failure = None
            return result


async def recorded_call(
    make_call: Any,
    task: AgentTask,
    draft: TrajectoryDraft,
    model: str | None,
    partial: Any = None,
) -> tuple[Any, CallTiming]:
    """:func:`retrying`, timed. Failed attempts get their model events there; a call cut off by
    the deadline gets one here, pointing at ``partial()`` (the assistant turn streamed so far,
    when there is one). The caller records the event of a call that answered, with
    :func:`record_model_event`."""
    timing = CallTiming(draft.elapsed())
    try:
        return await retrying(make_call, task, draft, timing, model=model), timing
    except asyncio.CancelledError:
        draft.add_model_event(
            timing.started_s,
            duration_s=None,
            retries=timing.retries,
            error="cut off by the deadline",
            model=model,
            output=partial() if partial is not None else None,
        )
        raise


def record_model_event(
    draft: TrajectoryDraft,
    timing: CallTiming,
    *,
    model: str | None,
    usage: Usage | None = None,
    request_id: str | None = None,
    output: Any = None,
    error: BaseException | str | None = None,
    finish_reason: str | None = None,
    usage_unknown: bool = False,
) -> None:
    if isinstance(error, BaseException):
        error = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
    draft.add_model_event(
        timing.started_s,
        duration_s=draft.elapsed() - timing.started_s,
        usage=usage,
        finish_reason=finish_reason,
        usage_unknown=usage_unknown,
        retries=timing.retries,
        error=error,
        request_id=request_id,
        model=model,
        output=output,
    )


def _dump(value: Any) -> Any:
    return (
        value.model_dump(mode="json", exclude_none=True) if hasattr(value, "model_dump") else value
    )


WARM_RESPONSE = {
    "id": "resp_warm",
    "object": "response",
    "created_at": 0,
    "model": "warm-up",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_warm",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 1,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2,
    },
}


def warm_up_offline(exercise: Any, answer: Any) -> None:
    """Run ``await exercise(http_client)`` once against an in-memory transport, in a thread.

    The SDKs import modules and build pydantic validators lazily on the first request (seconds on
    a busy machine). Paying that when the harness is created keeps it out of the first questions'
    time budgets. ``answer(request) -> httpx2.Response`` plays the server; nothing leaves the
    process. Any failure is ignored: warming up is an optimisation only.
    """
    import threading

    import httpx2

    async def main() -> None:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(answer)) as http_client:
            await exercise(http_client)

    def target() -> None:
        try:
            asyncio.run(main())
        except Exception:  # an optimisation must never break harness creation
            return

    thread = threading.Thread(target=target, name="sdk-warm-up", daemon=True)
    thread.start()
    thread.join(timeout=30)


FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


async def stream_response(
    client: Any, request: dict[str, Any], timeout: Any, on_text: Any, *, stall: float | None = None
) -> Any:
    """``responses.create`` streamed; ``on_text(text_so_far)`` as deltas arrive; the final Response.

    The events are read as raw server-sent events: the SDK's typed stream validates every event
    (each carrying the echoed tool list) and costs several ms of CPU per turn. Only the final
    response is built into SDK objects, with the same lenient ``construct`` the SDK uses for
    non-streamed replies. Protocol violations (not an event stream, non-JSON data, an unknown event
    type, no final event) are :class:`ProviderError`; with ``stall`` (the read timeout in
    ``timeout``) a silent provider is a :class:`ProviderStalledError`.
    """
    from openai.types.responses import Response

    streamed = ""
    final = None
    phase = "headers"
    try:
        async with client.responses.with_streaming_response.create(
            stream=True, extra_body=request, timeout=timeout
        ) as raw:
            phase = "stream"
            request_id = raw.headers.get("x-request-id")
            if not raw.headers.get("content-type", "").startswith("text/event-stream"):
                head = (await raw.read())[:400].decode("utf-8", "replace")
                check_event_stream(raw.status_code, raw.headers, head)
            known = responses_event_types()
            async for event in server_sent_events(raw.iter_lines()):
                if event is DONE:
                    continue
                kind = event.get("type")
                check_event_type(kind, known, "Responses API")
                if kind == "response.output_text.delta":
                    streamed += event.get("delta", "")
                    on_text(streamed)
                elif kind in FINAL_EVENTS:
                    final = event.get("response")
                elif kind == "error":
                    raise ProviderError(f"stream error: {event.get('message', event)}")
    except Exception as error:
        if stall is not None and is_timeout(error):
            raise stalled(phase, stall) from error
        raise
    if not isinstance(final, dict):
        raise ProviderError("the response stream ended without a final response")
    response = Response.construct(**final)
    response._request_id = request_id  # as the SDK sets it on non-streamed replies
    return response


def warm_up_responses_api() -> None:
    """Exercise ``responses.create`` (plain and streamed) offline, see :func:`warm_up_offline`."""
    import httpx2
    from openai import AsyncOpenAI

    completed = {"type": "response.completed", "sequence_number": 0, "response": WARM_RESPONSE}
    stream_body = f"event: response.completed\ndata: {json.dumps(completed)}\n\n"

    def answer(request: Any) -> Any:
        if b'"stream"' in request.content:
            headers = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=headers, content=stream_body.encode())
        return httpx2.Response(200, json=WARM_RESPONSE)

    async def exercise(http_client: Any) -> None:
        client = AsyncOpenAI(
            api_key="warm-up", base_url="http://warm-up.invalid/v1", http_client=http_client
        )
        await client.responses.create(extra_body={"model": "warm-up", "input": "hi"})
        await stream_response(client, {"model": "warm-up"}, 30.0, lambda text: None)

    warm_up_offline(exercise, answer)


async def erp_call(
    erp: ErpClient, name: str, arguments: dict[str, Any], draft: TrajectoryDraft
) -> Any:
    """``erp.call``; a call cut off by the deadline is recorded by the client as cancelled."""
    return await erp.call(name, arguments, draft)


class ToolCatalogue:
    """The ERP's tool list, fetched once per harness: a run talks to one server, and listing
    costs a round trip and schema work on every question otherwise."""

    def __init__(self) -> None:
        self._specs: dict[str, list[ToolSpec]] = {}

    async def get(self, erp: ErpClient, url: str) -> list[ToolSpec]:
        if url not in self._specs:
            self._specs[url] = await erp.list_tools()
        return self._specs[url]


@dataclass
class _Turn:
    """What one response asked for and said."""

    response: Any
    function_calls: list[Any] = field(default_factory=list)
    text: str = ""
    mcp_calls: int = 0


@harness("openai", options=OPENAI_OPTIONS)
class OpenAIResponsesHarness:
    """The OpenAI Responses API with the ERP as local function tools or a hosted MCP server."""

    name = "openai"
    conversational = True
    """Conversations: the earlier turns are replayed as input messages on each agent turn."""

    @staticmethod
    def credentials_problem(options: HarnessOptions) -> str | None:
        return missing_key_problem("OPENAI_API_KEY", "openai")

    def __init__(self, options: HarnessOptions) -> None:
        self.settings = OpenAISettings.from_options(options)
        self.model: str | None = self.settings.model
        require_sdk("openai", "openai")
        self._api_key = require_env_key("OPENAI_API_KEY", "openai")
        self.tools = ToolCatalogue()
        warm_up_responses_api()

    def new_client(self) -> Any:
        """An SDK client for one question. A client's connection pool is bound to the event loop
        it was made on, and each question runs on a loop of its own; with the process's shared
        TLS context a client costs about 0.3 ms (30 ms with a context of its own)."""
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient

        return AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.settings.base_url,
            max_retries=0,
            http_client=DefaultAsyncHttpxClient(verify=shared_tls_context()),
        )

    async def aclose(self) -> None:
        return None

    async def model_endpoint(self, env: AgentEnvironment) -> Any:
        """What the pre-flight checks (``harnesses._preflight``): the instructions and the
        function tools as the first request sends them (local mode; hosted mode sends no tool
        schemas of its own, the provider lists them)."""
        from harnesses._preflight import OPENAI_BASE_URL, ModelEndpoint

        tools: list[dict[str, Any]] = []
        if self.settings.mcp_mode == "local":
            async with McpToolbox(env, erp_label=SERVER_LABEL) as erp:
                specs = await self.tools.get(erp, catalogue_key(env))
            tools = [function_tool(spec) for spec in specs]
        return ModelEndpoint(
            wire="responses",
            base_url=self.settings.base_url or OPENAI_BASE_URL,
            model=self.settings.model,
            api_key=self._api_key,
            prompt=f"{env.instructions}\n{json.dumps(tools, separators=(',', ':'))}",
            tool_count=len(tools),
            context_window=self.settings.context_window,
            harness="openai",
            streamed=self.settings.stream,
        )

    async def run(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        settings = self.settings
        draft.extra.update(
            mcp_mode=settings.mcp_mode,
            reasoning_effort=settings.reasoning_effort,
            max_tool_calls=task.limits.tool_call_cap,
            web_search=settings.web_search,
            response_ids=[],
        )
        client = self.new_client()
        loop = _ResponsesLoop(self, task, env, draft, client)
        try:
            if settings.mcp_mode == "hosted":
                return await loop.run_hosted()
            return await loop.run_local()
        except asyncio.CancelledError:
            draft.extra["cancelled_during"] = loop.phase
            raise
        finally:
            with contextlib.suppress(Exception):
                await client.close()


class _ResponsesLoop:
    """One question's conversation with the Responses API."""

    def __init__(
        self,
        owner: OpenAIResponsesHarness,
        task: AgentTask,
        env: AgentEnvironment,
        draft: TrajectoryDraft,
        client: Any,
    ) -> None:
        self.owner = owner
        self.client = client
        self.settings = owner.settings
        self.task = task
        self.env = env
        self.draft = draft
        self.phase = "start"
        self.tool_calls_run = 0
        limits = task.limits
        self.max_tool_calls = limits.tool_call_cap
        """The run's one tool-call cap (``--max-tool-calls``)."""
        self.max_turns = limits.max_turns
        self.streaming: Message | None = None
        """The assistant turn of the response being streamed (its text so far), until recorded."""

    # --- modes -------------------------------------------------------------------------------

    async def run_local(self) -> AgentOutcome:
        self.phase = "mcp_list_tools"
        async with McpToolbox(self.env, erp_label=SERVER_LABEL) as erp:
            specs = await self.owner.tools.get(erp, catalogue_key(self.env))
            known = {spec.name for spec in specs}
            tools = [function_tool(spec) for spec in specs] + self._web_tools()
            user_input = self._conversation_input()
            self.draft.add_message("user", self.task.query)
            history: list[dict[str, Any]] = list(user_input)
            request = self._request(tools, user_input)
            while True:
                if self.task.limits.exceeded(self.draft) is not None:
                    # over --max-tokens/--max-cost-usd: no further turn (the runner records why)
                    return AgentOutcome(answer=self.draft.answer)
                turn = await self._respond(request)
                if not turn.function_calls:
                    capped = bool(self.draft.extra.get("tool_call_cap_reached"))
                    return AgentOutcome(answer=self.draft.answer, max_turns_reached=capped)
                if self.max_turns is not None and self.draft.turns >= self.max_turns:
                    # --max-turns, as the Claude CLI counts it: the last allowed turn still
                    # wants tools, so the agent stops here
                    self.draft.extra["turn_cap_reached"] = True
                    return AgentOutcome(answer=self.draft.answer, max_turns_reached=True)
                outputs, capped = await self._run_calls(erp, known, turn.function_calls)
                if capped and request.get("tool_choice") == "none":
                    return AgentOutcome(answer=self.draft.answer, max_turns_reached=True)
                next_input = self._next_input(history, turn, outputs)
                request = self._request(tools, next_input, previous=turn.response.id)
                if capped:
                    request["tool_choice"] = "none"
                    self.draft.extra["tool_call_cap_reached"] = True

    async def run_hosted(self) -> AgentOutcome:
        public_url = self.env.erp.public_url
        if not public_url:
            raise HarnessConfigError(
                "--harness-opt mcp_mode=hosted needs --erp-public-url: a URL of the ERP MCP "
                "server that the provider can reach (a loopback ERP works only with mcp_mode=local)"
            )
        self.phase = "mcp_list_tools"
        async with ErpClient(self.env.erp, server_label=SERVER_LABEL) as erp:
            specs = await self.owner.tools.get(erp, self.env.erp.url)
        allowed = sorted(s.name for s in specs if s.read_only and self.env.offers(s.name))
        entries = [hosted_mcp_tool(public_url, allowed, self.env.erp.headers())]
        if self.env.world is not None:
            entries.append(await self._hosted_world_entry(self.env.world))
        request = self._request([*entries, *self._web_tools()], self._conversation_input())
        self.draft.add_message("user", self.task.query)
        turn = await self._respond(request)
        capped = not turn.text and turn.mcp_calls >= self.max_tool_calls
        return AgentOutcome(answer=self.draft.answer, max_turns_reached=capped)

    # --- requests ----------------------------------------------------------------------------

    def _conversation_input(self) -> list[dict[str, Any]]:
        """The question, after a conversation's earlier turns (operations items) when there are
        any; the first message of a conversation carries the conversation note."""
        query = self.task.query
        if self.task.task_type is TaskType.operations and not self.task.history:
            query = f"{query}\n\n{CONVERSATION_NOTE}"
        earlier = [{"role": role, "content": text} for role, text in replayed_turns(self.task)]
        return [*earlier, {"role": "user", "content": query}]

    async def _hosted_world_entry(self, world: McpEndpoint) -> dict[str, Any]:
        """The research world as a second hosted MCP server (``server_label`` ``world``)."""
        if not world.public_url:
            raise HarnessConfigError(
                "--harness-opt mcp_mode=hosted with --research world needs --world-public-url: "
                "a URL of the research world's MCP server the provider can reach (or use "
                "mcp_mode=local)"
            )
        async with ErpClient(world, server_label=WORLD_LABEL) as client:
            specs = await self.owner.tools.get(client, world.url)
        allowed = sorted(
            s.name for s in specs if s.read_only and self.env.offers(WORLD_PREFIX + s.name)
        )
        entry = hosted_mcp_tool(world.public_url, allowed, world.headers())
        return {**entry, "server_label": WORLD_LABEL}

    def _web_tools(self) -> list[dict[str, Any]]:
        """The hosted ``web_search`` tool: only with ``--research web``."""
        return [{"type": "web_search"}] if self.settings.web_search and self.env.web_allowed else []

    def _request(
        self, tools: list[dict[str, Any]], items: list[dict[str, Any]], previous: str | None = None
    ) -> dict[str, Any]:
        settings = self.settings
        request: dict[str, Any] = {
            "model": settings.model,
            "instructions": self.env.instructions,
            "input": items,
            "tools": tools,
            "max_tool_calls": self.max_tool_calls,
            "parallel_tool_calls": True,
        }
        if settings.reasoning_effort:  # only when asked: not every model takes the option
            request["reasoning"] = {"effort": settings.reasoning_effort}
        if settings.max_output_tokens:
            request["max_output_tokens"] = settings.max_output_tokens
        if previous and not settings.stateless:
            request["previous_response_id"] = previous
        if settings.stateless:
            request["store"] = False
        return request

    def _next_input(
        self, history: list[dict[str, Any]], turn: _Turn, outputs: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        if not self.settings.stateless:
            return outputs
        # Without server state, replay everything; reasoning items are dropped (they would need
        # encrypted content, which not every compatible server supports).
        history += [_dump(item) for item in turn.response.output if item.type != "reasoning"]
        history += outputs
        return list(history)

    async def _respond(self, request: dict[str, Any]) -> _Turn:
        self.phase = "model"
        self.streaming = None
        response, timing = await recorded_call(
            lambda: self._create(request),
            self.task,
            self.draft,
            self.settings.model,
            partial=lambda: self.streaming,
        )
        self.draft.turns += 1
        return self._record_response(response, timing)

    async def _create(self, request: dict[str, Any]) -> Any:
        client = self.client
        # The body goes as ``extra_body``: it is plain JSON already, and the SDK's typed-parameter
        # transform walks every tool schema on every request (about 100 ms per turn, measured).
        if not self.settings.stream:  # no stall bound: a slow model sends no byte before its end
            timeout = max(1.0, self.task.remaining() + 1.0)
            return await client.responses.create(extra_body=request, timeout=timeout)
        return await stream_response(
            client,
            request,
            request_timeout(self.task),
            self._on_text,
            stall=self.task.stall_bound(),
        )

    def _on_text(self, text: str) -> None:
        """Streamed text: the answer so far, and the assistant turn it belongs to."""
        self.draft.set_answer(text)
        if self.streaming is None:
            self.streaming = self.draft.add_message("assistant", text)
        else:
            self.streaming.content = text

    # --- recording ---------------------------------------------------------------------------

    def _record_response(self, response: Any, timing: CallTiming) -> _Turn:
        draft = self.draft
        if not isinstance(getattr(response, "output", None), list):
            raise ProviderError(f"the reply is not a Responses API response: {response!r:.160}")
        draft.extra["response_ids"].append(response.id)
        draft.extra["served_model"] = response.model
        usage = responses_usage(getattr(response, "usage", None))
        cost = None
        if usage is not None:
            cost = estimate_cost(response.model or self.settings.model, usage, self.settings.price)
        draft.add_usage(usage, cost)
        finish = response_finish(response)
        event = {
            "model": response.model or self.settings.model,
            "usage": usage,
            "usage_unknown": usage is None,
            "request_id": getattr(response, "_request_id", None),
            "finish_reason": finish,
        }
        if response.status == "failed":
            error = getattr(response, "error", None)
            failure = ProviderError(f"response failed: {getattr(error, 'message', error)}")
            record_model_event(draft, timing, error=failure, **event)
            raise failure
        if response.status == "incomplete":
            draft.extra["incomplete_reason"] = finish
        draft.answer_cut = answer_cut(finish)
        # The turn goes into the transcript before its items, so hosted MCP calls attach to it.
        message = self.streaming or draft.add_message("assistant")
        self.streaming = None
        message.content = _output_text(response)
        message.reasoning = _reasoning_summary(response)
        record_model_event(draft, timing, output=message, **event)
        turn = _Turn(response=response)
        for item in response.output:
            self._record_item(item, turn)
        if turn.text:
            draft.set_answer(turn.text)
        return turn

    def _record_item(self, item: Any, turn: _Turn) -> None:
        kind = getattr(item, "type", None)
        if kind == "function_call":
            if not getattr(item, "call_id", None):  # ids made locally, unique
                item.call_id = local_call_id()
            if not isinstance(getattr(item, "arguments", None), str):  # an object: as JSON text
                item.arguments = arguments_text(getattr(item, "arguments", None))
            turn.function_calls.append(item)
        elif kind == "message":
            turn.text = self._record_message(item, turn.text)
        elif kind == "mcp_call":
            turn.mcp_calls += 1
            self._record_mcp_call(item)
        elif kind == "web_search_call":
            self._record_web_search(item)
        elif kind == "reasoning":
            self.draft.extra["reasoning_items"] = self.draft.extra.get("reasoning_items", 0) + 1
        elif kind == "mcp_list_tools":
            self.draft.extra["mcp_list_tools"] = [tool.name for tool in item.tools]
        else:
            self.draft.extra.setdefault("other_items", []).append(kind)

    def _record_message(self, item: Any, text_so_far: str) -> str:
        parts = []
        for content in item.content:
            if content.type == "output_text":
                parts.append(content.text)
                for note in content.annotations or []:
                    if note.type == "url_citation":
                        self.draft.add_source(note.url, title=note.title)
            elif content.type == "refusal":
                parts.append(content.refusal)
        text = "".join(parts)
        return f"{text_so_far}\n\n{text}" if text_so_far else text

    def _record_mcp_call(self, item: Any) -> None:
        arguments, problem = parse_arguments(item.arguments)
        error = _dump(item.error) if item.error is not None else None
        output = item.output if error is None else json.dumps({"error": error})
        self.draft.add_tool_call(
            item.name,
            arguments if problem is None else {"_raw_arguments": item.arguments},
            output or "",
            is_error=error is not None,
            server=item.server_label,
        )

    def _record_web_search(self, item: Any) -> None:
        action = item.action
        arguments = _dump(action)
        urls = [source.url for source in getattr(action, "sources", None) or []]
        single = getattr(action, "url", None)
        if single:
            urls.append(single)
        for url in urls:
            self.draft.add_source(url)
        arguments.pop("sources", None)
        self.draft.add_tool_call(
            "web_search",
            arguments,
            json.dumps({"status": item.status, "sources": urls}),
            is_error=item.status == "failed",
            server="web",
        )

    # --- tool execution ----------------------------------------------------------------------

    async def _run_calls(
        self, erp: ErpClient, known: set[str], calls: list[Any]
    ) -> tuple[list[dict[str, Any]], bool]:
        """Run the calls (in parallel) within the cap; outputs in call order and whether capped."""
        self.phase = "tools"
        allowance = max(0, self.max_tool_calls - self.tool_calls_run)
        allowed, refused = calls[:allowance], calls[allowance:]
        self.tool_calls_run += len(allowed)
        results = await asyncio.gather(*(self._run_call(erp, known, call) for call in allowed))
        message = CAP_REACHED_MESSAGE.format(cap=self.max_tool_calls)
        results += [message] * len(refused)
        outputs = [
            {"type": "function_call_output", "call_id": call.call_id, "output": text}
            for call, text in zip(calls, results, strict=True)
        ]
        capped = bool(refused)  # at the cap exactly, the model may still answer on its own
        if capped:
            self.draft.note_tool_call_cap(self.max_tool_calls, len(refused))
        return outputs, capped

    async def _run_call(self, erp: ErpClient, known: set[str], call: Any) -> str:
        arguments, problem = parse_arguments(call.arguments)
        if problem is None and call.name not in known:
            problem = f"unknown tool {call.name!r}; available tools: {', '.join(sorted(known))}"
        if problem is not None:
            text = f"Error: {problem}. Call the tool again with corrected arguments."
            recorded = arguments if arguments is not None else {"_raw_arguments": call.arguments}
            self.draft.add_tool_call(call.name, recorded, text, is_error=True, server=SERVER_LABEL)
            return text
        result = await erp_call(erp, call.name, arguments, self.draft)
        return f"Error: {result.text}" if result.is_error else result.text


class _Attributes:
    """A dict's keys as attributes (a field the SDK's lenient constructor left a dict)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.__dict__.update(data)


def response_finish(response: Any) -> str | None:
    """The Responses API's finish: ``completed``, or why the response is incomplete
    (``max_output_tokens``, ``content_filter``), or another status as the server sent it."""
    status = getattr(response, "status", None)
    if status == "incomplete":
        details = getattr(response, "incomplete_details", None)
        reason = (
            details.get("reason") if isinstance(details, dict) else getattr(details, "reason", None)
        )
        return str(reason or "incomplete")
    return None if status is None else str(status)


def _output_text(response: Any) -> str:
    """The text of every message item of a response (what :meth:`_record_message` joins)."""
    parts = []
    for item in response.output:
        if item.type == "message":
            for content in item.content:
                if content.type == "output_text":
                    parts.append(content.text)
                elif content.type == "refusal":
                    parts.append(content.refusal)
    return "\n\n".join(part for part in parts if part)


def _reasoning_summary(response: Any) -> str | None:
    """The reasoning summaries a response carries (only when the request asked for them)."""
    texts = [
        getattr(part, "text", "")
        for item in response.output
        if item.type == "reasoning"
        for part in getattr(item, "summary", None) or []
    ]
    joined = "\n\n".join(text for text in texts if text)
    return joined or None
