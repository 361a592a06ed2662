"""``--harness custom``: LedgerBench's own finance agent, a loop we own over any chat model.

The model speaks either the OpenAI Chat Completions wire format (any OpenAI-compatible server:
``--base-url``; ``--harness-opt api=openai``, the default) or the Anthropic Messages API
(``--harness-opt api=anthropic``). ERP tools come from the MCP server through the recording
:class:`ErpClient`; ``web=true`` adds web search and URL fetch tools (off by default: offline).

Finance practice, in the instructions and in the flow:

- the ERP's context (``erp_info``: today, legal entities) and the as-of date found in the question
  are put in front of the model before its first turn (the harness's own call: kept in
  ``extra["harness_tool_calls"]``, never counted as the model's); it is told to resolve the entity
  first, say which record it used and honour the as-of date and legal entity;
- every reply is read the same way over both wires (:mod:`harnesses._wire`): arguments as JSON
  text or an object, streamed calls without ``index`` or ``id`` kept apart (ids made locally), the
  finish reason on each model event, and a cut final reply ends the question as ``answer_cut``;
- the run's one tool-call cap (``--max-tool-calls``): calls past it are not run, the model is told
  so and asked for its answer;
- independent tool calls run in parallel (``asyncio.gather``);
- answers come first, then a table with ERP record links, dates on time-sensitive figures, and a
  plain statement of what could not be found;
- near the deadline (less than ``final_reserve_s`` left) or at the step cap, the model is asked for
  a final answer without tools; the record is then ``timeout`` (deadline) or ``max_turns`` (cap),
  and its answer is only what the model wrote. If even that call cannot finish, the agent composes
  a summary of the tool results gathered so far into ``extra["composed_answer"]`` for the reader;
  it is never the answer, so it is never judged as the model's.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any

from harnesses._erp_client import ToolSpec, shared_tls_context
from harnesses._openai import (
    CAP_REACHED_MESSAGE,
    ToolCatalogue,
    check_known_options,
    erp_call,
    missing_key_problem,
    parse_arguments,
    read_options,
    record_model_event,
    recorded_call,
    require_env_key,
    require_sdk,
    warm_up_offline,
)
from harnesses._preflight import (
    ANTHROPIC_BASE_URL,
    OPENAI_BASE_URL,
    ModelEndpoint,
    read_context_window,
)
from harnesses._pricing import Price, estimate_cost, parse_price
from harnesses._protocol import (
    CONVERSATION_NOTE,
    AgentEnvironment,
    AgentOutcome,
    AgentTask,
    HarnessOptions,
    ProviderError,
    TrajectoryDraft,
    replayed_turns,
)
from harnesses._registry import harness
from harnesses._toolbox import McpToolbox, catalogue_key
from harnesses._wire import (
    DONE,
    answer_cut,
    arguments_text,
    check_event_stream,
    check_event_type,
    is_timeout,
    local_call_id,
    messages_event_types,
    request_timeout,
    server_sent_events,
    stalled,
)
from ledgerbench_core.dataset import TaskType
from ledgerbench_core.trajectory import Message, Usage

CHAT_CHUNK_TYPES = frozenset({"chat.completion.chunk"})
"""The one object type a Chat Completions stream sends."""

DEFAULT_MODELS = {"openai": "gpt-5.2", "anthropic": "claude-sonnet-4-6"}
API_KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
SERVER_LABEL = "erp"
ANTHROPIC_WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
ERP_CONTEXT_TOOL = "erp_info"
MIN_FINAL_CALL_S = 1.0
"""Below this much time left, the final answer is composed locally instead of asked for."""
SAFETY_S = 0.3
"""Time kept back from the runner's deadline for writing the composed answer."""
FETCH_LIMIT = 8_000

CUSTOM_OPTIONS = {
    "api": "openai (Chat Completions, default) or anthropic (Messages API)",
    "max_steps": "model turns with tools before the agent must answer (default 12)",
    "web": "offer web_search / fetch_url tools (default false: offline)",
    "search_url": "JSON search endpoint (SearXNG ``/search``) for web_search with api=openai",
    "final_reserve_s": "seconds kept for the final answer (default 15% of the budget, 3 to 20 s)",
    "max_tokens": "output tokens per model turn (default: 4096 for anthropic, provider's)",
    "stream": "stream replies: a timeout keeps partial text, a silent provider is caught "
    "(default true)",
    "price_per_mtok": "INPUT,CACHED_INPUT,OUTPUT dollars per million tokens (default: price table)",
    "context_window": "the model's context in tokens, for the pre-flight when the server does not "
    "say it (llama.cpp, vLLM and Ollama do)",
}

FINANCE_PRACTICE = """\
Working method (finance practice):
1. Resolve the entity first. Before looking up balances or transactions, find the customer or vendor
   with the search tool: names may be misspelled, partial, or shared by several legal entities. In
   the answer, state which record you used (name, account id, legal entity). If two records fit
   equally, say so and show both.
2. Honour the as-of date and the legal entity the question gives: pass them to every tool that takes
   them (as_of, legal_entity). Without a date, use the ERP's today and say so.
3. Call independent tools together in one turn (for example customer details and aging at once).
4. Answer first: the direct answer in the first sentence. Then the detail; when two or more records
   are involved, a markdown table with one row per record and its ERP record link (the `url` field).
5. Anchor every time-sensitive figure to its date or period and give amounts with their currency.
6. Say plainly what you could not find or check. "None" or zero is a valid answer when the data
   shows it. Never invent figures or links: use only what the tools returned.
7. Time is limited. When asked for your final answer, give it at once with what you have.
"""

FINAL_PROMPT = (
    "Time or step budget is nearly used up. Write your final answer now, without calling tools: "
    "the direct answer first, the entity and record you used, a table with record links if there "
    "are two or more records, dates on figures, and what you could not check."
)

AS_OF_PATTERN = re.compile(
    r"\bas (?:of|at)\s+(?P<date>\d{4}-\d{2}-\d{2}"
    r"|[A-Z][a-z]+\.? \d{1,2},? \d{4}"
    r"|\d{1,2} [A-Z][a-z]+ \d{4})"
)
RECORD_URL_PATTERN = re.compile(r"(?:https?://[^\s\"'<>)\]]+/erp/|erp://)[^\s\"'<>)\],]+")
"""Record links in tool output: URLs, or MCP resource URIs when the server runs over stdio."""


def as_of_date(question: str) -> str | None:
    """The ISO date of an "as of <date>" phrase in the question, when there is one."""
    match = AS_OF_PATTERN.search(question)
    if not match:
        return None
    text = match.group("date").replace(".", "").replace(",", "")
    for pattern in ("%Y-%m-%d", "%B %d %Y", "%b %d %Y", "%d %B %Y", "%d %b %Y"):
        try:
            return dt.datetime.strptime(text, pattern).date().isoformat()
        except ValueError:
            continue
    return None


@dataclass(frozen=True)
class CustomSettings:
    api: str
    model: str
    reasoning_effort: str | None
    base_url: str | None
    max_steps: int
    web: bool
    search_url: str | None
    final_reserve_s: float | None
    max_tokens: int | None
    stream: bool
    price: Price | None
    context_window: int | None = None

    @classmethod
    def from_options(cls, options: HarnessOptions) -> CustomSettings:
        check_known_options(options, CUSTOM_OPTIONS, "custom")
        return read_options(lambda: cls._read(options), "custom")

    @classmethod
    def _read(cls, options: HarnessOptions) -> CustomSettings:
        api = options.extra.get("api", "openai")
        if api not in DEFAULT_MODELS:
            raise ValueError(f"--harness-opt api={api}: expected openai or anthropic")
        steps = options.get_int("max_steps", 12)
        if steps < 1:
            raise ValueError("--harness-opt max_steps must be 1 or more")
        reserve = options.extra.get("final_reserve_s")
        try:
            reserve_s = float(reserve) if reserve is not None else None
        except ValueError:
            raise ValueError(f"--harness-opt final_reserve_s={reserve}: expected seconds") from None
        price_text = options.extra.get("price_per_mtok")
        return cls(
            api=api,
            model=options.model or DEFAULT_MODELS[api],
            reasoning_effort=options.reasoning_effort,
            base_url=options.base_url,
            max_steps=steps,
            web=options.get_bool("web", False),
            search_url=options.extra.get("search_url"),
            final_reserve_s=reserve_s,
            max_tokens=options.get_int("max_tokens", 0) or None,
            stream=options.get_bool("stream", True),
            price=parse_price(price_text) if price_text else None,
            context_window=read_context_window(options),
        )

    def reserve_for(self, budget_s: float) -> float:
        if self.final_reserve_s is not None:
            return self.final_reserve_s
        return min(20.0, max(3.0, 0.15 * budget_s))


# --------------------------------------------------------------------------------------------------
# One model turn, whatever the wire format
# --------------------------------------------------------------------------------------------------


@dataclass
class CallContext:
    """What one model call needs besides the conversation."""

    draft: TrajectoryDraft
    task: AgentTask
    on_text: Any
    """``on_text(text_so_far)`` as a streamed reply's text arrives."""


@dataclass
class ToolRequest:
    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None
    problem: str | None = None


@dataclass
class ModelTurn:
    text: str
    requests: list[ToolRequest]
    usage: Usage | None
    """None when the reply reported no usage (unknown, not 0)."""
    model: str | None = None
    reasoning: str | None = None
    """Reasoning the provider returned (thinking blocks, ``reasoning_content``)."""
    request_id: str | None = None
    finish_reason: str | None = None
    """The reply's finish (stop) reason as the server sent it."""


class OpenAIChatConversation:
    """A conversation over Chat Completions (``client.chat.completions.create``)."""

    def __init__(self, client: Any, settings: CustomSettings, system: str, user: str) -> None:
        self.client = client
        self.settings = settings
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]

    def tool_entries(self, specs: list[ToolSpec]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.input_schema,
                },
            }
            for spec in specs
        ]

    async def complete(
        self, specs: list[ToolSpec], *, allow_tools: bool, call: CallContext
    ) -> ModelTurn:
        request: dict[str, Any] = {"model": self.settings.model, "messages": self.messages}
        if specs:
            request["tools"] = self.tool_entries(specs)
            if allow_tools:
                request["parallel_tool_calls"] = True
            else:
                request["tool_choice"] = "none"
        if self.settings.reasoning_effort:
            request["reasoning_effort"] = self.settings.reasoning_effort
        if self.settings.max_tokens:
            request["max_completion_tokens"] = self.settings.max_tokens
        if self.settings.stream:
            reply = await self._streamed(request, call)
        else:
            reply = await self._whole(request, call)
        requests = [_tool_request(c) for c in reply.tool_calls]
        assistant: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if requests:
            assistant["tool_calls"] = [
                {
                    "id": r.id,
                    "type": "function",
                    "function": {"name": r.name, "arguments": r.raw_arguments},
                }
                for r in requests
            ]
        self.messages.append(assistant)
        return ModelTurn(
            reply.text,
            requests,
            reply.usage,
            reply.model,
            reasoning=reply.reasoning or None,
            request_id=reply.request_id,
            finish_reason=reply.finish_reason,
        )

    async def _whole(self, request: dict[str, Any], call: CallContext) -> _ChatReply:
        """One non-streamed completion (``stream=false``: no stall bound, see the module doc)."""
        # Plain JSON goes as ``extra_body`` (it overrides the placeholder ``messages``): the SDK's
        # typed-parameter transform walks every tool schema on every request (slow, measured).
        response = await self.client.chat.completions.create(
            model=self.settings.model,
            messages=[],
            extra_body=request,
            timeout=max(1.0, call.task.remaining() + 1.0),
        )
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise ProviderError(f"the reply is not a chat completion: {str(response)[:160]!r}")
        reply = _ChatReply(
            usage=chat_usage(getattr(response, "usage", None)),
            model=getattr(response, "model", None),
            request_id=getattr(response, "_request_id", None),
        )
        if not choices:  # a well-formed reply with nothing in it: the model's empty answer
            return reply
        choice = choices[0]
        message = getattr(choice, "message", None)
        reply.finish_reason = _text_or_none(getattr(choice, "finish_reason", None))
        reasoning = getattr(message, "reasoning_content", None) or getattr(
            message, "reasoning", None
        )
        reply.text = _content_text(getattr(message, "content", None))
        reply.reasoning = reasoning if isinstance(reasoning, str) else ""
        for c in getattr(message, "tool_calls", None) or []:
            if getattr(c, "type", None) not in (None, "function"):
                continue
            function = getattr(c, "function", None)
            reply.tool_calls.append(
                {
                    "id": getattr(c, "id", None) or "",
                    "name": str(getattr(function, "name", None) or ""),
                    "arguments": getattr(function, "arguments", None),
                }
            )
        return reply

    async def _streamed(self, request: dict[str, Any], call: CallContext) -> _ChatReply:
        """One streamed completion, read as raw events: text reaches ``call.on_text`` as it
        comes; a silent provider is stalled, a broken stream a provider error."""
        body = {**request, "stream": True, "stream_options": {"include_usage": True}}
        bound = call.task.stall_bound()
        reply = _ChatReply()
        calls = _StreamedCalls()
        finished = False
        phase = "headers"
        try:
            async with self.client.chat.completions.with_streaming_response.create(
                model=self.settings.model,
                messages=[],
                extra_body=body,
                timeout=request_timeout(call.task),
            ) as raw:
                phase = "stream"
                reply.request_id = raw.headers.get("x-request-id")
                if not raw.headers.get("content-type", "").startswith("text/event-stream"):
                    head = (await raw.read())[:400].decode("utf-8", "replace")
                    check_event_stream(raw.status_code, raw.headers, head)
                async for chunk in server_sent_events(raw.iter_lines()):
                    if chunk is DONE:  # the stream's own end: complete, finish reason or not
                        finished = True
                        break
                    finished = _read_chunk(chunk, reply, calls, call.on_text) or finished
        except Exception as error:
            if is_timeout(error):
                raise stalled(phase, bound) from error
            raise
        if not finished:
            raise ProviderError("the chat stream ended before its finish reason")
        reply.tool_calls = calls.in_order()
        return reply

    def add_results(self, requests: list[ToolRequest], results: list[tuple[str, bool]]) -> None:
        for request, (text, _is_error) in zip(requests, results, strict=True):
            self.messages.append({"role": "tool", "tool_call_id": request.id, "content": text})

    def add_user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})


def chat_usage(usage: Any) -> Usage | None:
    """The reply's usage; None when it reported none (unknown, not 0)."""
    if usage is None:
        return None
    prompt = getattr(usage, "prompt_tokens_details", None)
    completion = getattr(usage, "completion_tokens_details", None)
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        reasoning_tokens=getattr(completion, "reasoning_tokens", 0) or 0,
        cached_input_tokens=getattr(prompt, "cached_tokens", 0) or 0,
    )


@dataclass
class _ChatReply:
    """A chat completion's assistant message, however it arrived."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """``{"id", "name", "arguments"}`` per function call, in order; arguments as the server sent
    them (JSON text or an object), the id maybe empty."""
    usage: Usage | None = None
    model: str | None = None
    request_id: str | None = None
    finish_reason: str | None = None


def _content_text(content: Any) -> str:
    """A chat message's text: a string, or (some servers) a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") if isinstance(part, dict) else None for part in content]
        return "".join(text for text in texts if isinstance(text, str))
    return ""


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _tool_request(call: dict[str, Any]) -> ToolRequest:
    """One call of a reply, read the same way however it arrived: arguments as text or object,
    a missing id made locally (unique)."""
    arguments, problem = parse_arguments(call["arguments"])
    raw = arguments_text(call["arguments"])
    return ToolRequest(call["id"] or local_call_id(), call["name"], raw, arguments, problem)


class _StreamedCalls:
    """Tool-call pieces of a chat stream put together. Servers that send ``index`` are followed
    (a new ``id`` under an index already used is a new call: servers that send ``index: 0`` for
    every call); without it, a piece with a new ``id`` or a ``name`` begins the next call and a
    piece with arguments only continues the last one (parallel calls never merge)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.by_index: dict[int, dict[str, Any]] = {}

    def add(self, piece: dict[str, Any]) -> None:
        function = piece.get("function") or {}
        slot = self._slot(piece, function)
        slot["id"] = slot["id"] or str(piece.get("id") or "")
        slot["name"] = slot["name"] or str(function.get("name") or "")
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # an object, sent whole (llama.cpp, Ollama)
            slot["arguments"] = arguments
        elif arguments is not None and not isinstance(slot["arguments"], dict):
            slot["arguments"] = (slot["arguments"] or "") + str(arguments)

    def _slot(self, piece: dict[str, Any], function: dict[str, Any]) -> dict[str, Any]:
        index = piece.get("index")
        piece_id = piece.get("id")
        if isinstance(index, int):
            known = self.by_index.get(index)
            if known is None or (piece_id and known["id"] and piece_id != known["id"]):
                self.by_index[index] = self._new()  # a new id under a used index: a new call
            return self.by_index[index]
        if piece_id:
            known = next((c for c in self.calls if c["id"] == piece_id), None)
            if known is not None:
                return known
            return self._new()
        if function.get("name") or not self.calls:
            return self._new()
        return self.calls[-1]

    def _new(self) -> dict[str, Any]:
        slot: dict[str, Any] = {"id": "", "name": "", "arguments": None}
        self.calls.append(slot)
        return slot

    def in_order(self) -> list[dict[str, Any]]:
        return list(self.calls)


def _read_chunk(
    chunk: dict[str, Any], reply: _ChatReply, calls: _StreamedCalls, on_text: Any
) -> bool:
    """Fold one ``chat.completion.chunk`` into ``reply``; True when it carries a finish reason."""
    if "error" in chunk:
        raise ProviderError(f"stream error: {' '.join(str(chunk['error']).split())[:300]}")
    check_event_type(chunk.get("object"), CHAT_CHUNK_TYPES, "chat completions")
    reply.model = chunk.get("model") or reply.model
    if isinstance(chunk.get("usage"), dict):
        reply.usage = chat_usage(_Attributes(chunk["usage"]))
    finished = False
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        if delta.get("content"):
            reply.text += str(delta["content"])
            on_text(reply.text)
        thought = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(thought, str):
            reply.reasoning += thought
        for piece in delta.get("tool_calls") or []:
            if isinstance(piece, dict):
                calls.add(piece)
        if choice.get("finish_reason"):
            reply.finish_reason = str(choice["finish_reason"])
            finished = True
    return finished


class _Attributes:
    """Dict keys as attributes (nested), so raw usage reads like the SDK's objects."""

    def __init__(self, data: dict[str, Any]) -> None:
        for key, value in data.items():
            setattr(self, key, _Attributes(value) if isinstance(value, dict) else value)


def chat_prompt_text(chat: Any, tools: list[dict[str, Any]]) -> str:
    """The first request's text before the question: the system prompt and the tools as JSON."""
    system = chat.system if isinstance(chat, AnthropicConversation) else chat.messages[0]["content"]
    return f"{system}\n{json.dumps(tools, separators=(',', ':'))}"


class AnthropicConversation:
    """A conversation over the Messages API (``client.messages.create`` / ``.stream``)."""

    def __init__(self, client: Any, settings: CustomSettings, system: str, user: str) -> None:
        self.client = client
        self.settings = settings
        self.system = system
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": user}]

    def tool_entries(self, specs: list[ToolSpec]) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = [
            {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}
            for spec in specs
            if spec.name != "web_search"
        ]
        if any(spec.name == "web_search" for spec in specs):
            entries.append(dict(ANTHROPIC_WEB_SEARCH))
        return entries

    async def complete(
        self, specs: list[ToolSpec], *, allow_tools: bool, call: CallContext
    ) -> ModelTurn:
        request: dict[str, Any] = {
            "model": self.settings.model,
            "system": self.system,
            "messages": self.messages,
            "max_tokens": self.settings.max_tokens or 4096,
        }
        if specs:
            request["tools"] = self.tool_entries(specs)
            if not allow_tools:
                request["tool_choice"] = {"type": "none"}
        # Plain JSON goes as ``extra_body`` (overriding the placeholder ``messages``), skipping the
        # SDK's slow typed-parameter transform of every tool schema.
        typed = {"model": request["model"], "max_tokens": request["max_tokens"], "messages": []}
        if self.settings.stream:
            message = await self._streamed(typed, request, call)
        else:
            timeout = max(1.0, call.task.remaining() + 1.0)
            message = await self.client.messages.create(
                **typed, extra_body=request, timeout=timeout
            )
            if not isinstance(getattr(message, "content", None), list):
                raise ProviderError(f"the reply is not a Messages API message: {message!r:.160}")
        return self._turn(message, call.draft)

    async def _streamed(
        self, typed: dict[str, Any], request: dict[str, Any], call: CallContext
    ) -> Any:
        """The reply, assembled from the raw stream events (text reaches ``call.on_text`` as it
        comes). A silent provider is stalled; a stream that is not an event stream, sends an event
        type the API does not have or ends before ``message_stop`` is a provider error.

        Tool inputs are parsed here rather than by the SDK, which raises on malformed JSON and
        loses the whole turn: a bad input becomes a tool call the model is told to correct."""
        from anthropic.types import Message
        from pydantic import ValidationError

        bound = call.task.stall_bound()
        builder = _StreamedMessage(call.on_text)
        phase = "headers"
        try:
            stream = await self.client.messages.create(
                **typed, extra_body=request, stream=True, timeout=request_timeout(call.task)
            )
            phase = "stream"
            response = getattr(stream, "response", None)
            if response is not None and not response.headers.get("content-type", "").startswith(
                "text/event-stream"
            ):
                head = (await response.aread())[:400].decode("utf-8", "replace")
                check_event_stream(response.status_code, response.headers, head)
            async for event in stream:
                builder.feed(event)
        except Exception as error:
            if is_timeout(error):
                raise stalled(phase, bound) from error
            raise
        if not builder.stopped:
            raise ProviderError(
                "the Messages stream ended before message_stop"
                + (" (no message_start)" if not builder.head else "")
            )
        self._raw_inputs = builder.invalid_inputs
        body = builder.message()
        # Read apart from the SDK's closed sets: an unknown stop reason is recorded, not fatal,
        # and a reply without usage has unknown usage, not a validation error.
        stop_reason = body.pop("stop_reason", None)
        usage = body.pop("usage", None)
        body["usage"] = {"input_tokens": 0, "output_tokens": 0}
        try:
            message = Message.model_validate(body)
        except ValidationError as error:
            raise ProviderError(
                f"the streamed message is malformed: {' '.join(str(error).split())[:300]}"
            ) from None
        message._request_id = response.headers.get("request-id") if response else None
        message._stop_reason = stop_reason
        message._usage = usage if builder.usage_reported else None
        return message

    def _turn(self, message: Any, draft: TrajectoryDraft) -> ModelTurn:
        texts: list[str] = []
        thoughts: list[str] = []
        requests: list[ToolRequest] = []
        content: list[dict[str, Any]] = []
        invalid = getattr(self, "_raw_inputs", {})
        self._raw_inputs: dict[str, str] = {}
        for block in message.content:
            kind = block.type
            if kind == "tool_use" and not getattr(block, "id", None):  # ids made locally, unique
                block.id = local_call_id()
            if kind == "text":
                texts.append(block.text)
                content.append({"type": "text", "text": block.text})
            elif kind == "tool_use" and block.id in invalid:
                raw = invalid[block.id]
                problem = "arguments are not valid JSON"
                requests.append(ToolRequest(block.id, block.name, raw, None, problem))
                entry = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
                content.append(entry)
            elif kind == "tool_use":
                arguments, problem = parse_arguments(block.input)
                raw = arguments_text(block.input)
                requests.append(ToolRequest(block.id, block.name, raw, arguments, problem))
                entry = {"type": "tool_use", "id": block.id, "name": block.name}
                content.append({**entry, "input": arguments or {}})
            elif kind == "thinking":
                thoughts.append(block.thinking)
                content.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
            else:
                content.append(block.model_dump(mode="json", exclude_none=True))
        record_server_blocks(message.content, draft)
        self.messages.append({"role": "assistant", "content": content})
        if hasattr(message, "_usage"):  # streamed: read apart from the SDK's model
            usage = _Attributes(message._usage) if message._usage else None
            stop_reason = message._stop_reason
        else:
            usage, stop_reason = getattr(message, "usage", None), message.stop_reason
        return ModelTurn(
            "".join(texts),
            requests,
            anthropic_usage(usage),
            message.model,
            reasoning="\n\n".join(t for t in thoughts if t) or None,
            request_id=getattr(message, "_request_id", None),
            finish_reason=_text_or_none(stop_reason),
        )

    def add_results(self, requests: list[ToolRequest], results: list[tuple[str, bool]]) -> None:
        blocks = [
            {"type": "tool_result", "tool_use_id": request.id, "content": text, "is_error": error}
            for request, (text, error) in zip(requests, results, strict=True)
        ]
        self.messages.append({"role": "user", "content": blocks})

    def add_user(self, text: str) -> None:
        """Add ``text`` as user content, joining the last user turn (roles must alternate)."""
        last = self.messages[-1]
        if last["role"] != "user":
            self.messages.append({"role": "user", "content": text})
            return
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        last["content"].append({"type": "text", "text": text})


class _StreamedMessage:
    """A Messages-API reply put together from its raw stream events."""

    def __init__(self, on_text: Any) -> None:
        self.on_text = on_text
        self.stopped = False
        """``message_stop`` arrived: the reply is complete."""
        self.head: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.invalid_inputs: dict[str, str] = {}
        """Tool-use id -> the raw input text that is not a JSON object."""
        self.text = ""
        self.usage_reported = False
        """``message_start`` or ``message_delta`` carried a usage object."""

    def feed(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        check_event_type(kind, messages_event_types(), "Messages API")
        if kind == "message_stop":
            self.stopped = True
        elif kind == "message_start":
            self.head = event.message.model_dump(mode="json", exclude_none=True)
            self.usage_reported = isinstance(self.head.get("usage"), dict)
        elif kind == "content_block_start":
            block = event.content_block.model_dump(mode="json", exclude_none=True)
            if block.get("type") == "tool_use" and not block.get("id"):  # made locally, unique
                block["id"] = local_call_id()
            self.blocks[event.index] = block
        elif kind == "content_block_delta":
            self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            self._close(event.index)
        elif kind == "message_delta":
            self.head.update(event.delta.model_dump(mode="json", exclude_none=True))
            if getattr(event, "usage", None) is not None:
                self.usage_reported = True
                usage = self.head.setdefault("usage", {})
                usage.update(event.usage.model_dump(mode="json", exclude_none=True))

    def _delta(self, index: int, delta: Any) -> None:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        if delta.type == "text_delta":
            block["text"] = block.get("text", "") + delta.text
            self.text += delta.text
            self.on_text(self.text)
        elif delta.type == "input_json_delta":
            self.json_parts.setdefault(index, []).append(delta.partial_json)
        elif delta.type == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.thinking
        elif delta.type == "signature_delta":
            block["signature"] = delta.signature
        elif delta.type == "citations_delta":
            citation = delta.citation.model_dump(mode="json", exclude_none=True)
            block.setdefault("citations", []).append(citation)

    def _close(self, index: int) -> None:
        block = self.blocks.get(index, {})
        if index not in self.json_parts:
            return
        raw = "".join(self.json_parts.pop(index))
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            block["input"] = parsed
        else:
            block["input"] = {}
            self.invalid_inputs[str(block.get("id"))] = raw

    def message(self) -> dict[str, Any]:
        for index in list(self.json_parts):  # a stream cut before content_block_stop
            self._close(index)
        content = [self.blocks[index] for index in sorted(self.blocks)]
        return {**self.head, "content": content}


def record_server_blocks(blocks: list[Any], draft: TrajectoryDraft) -> None:
    """Record Anthropic server-tool use (web search) as tool calls, and its results as sources."""
    requested = {b.id: b for b in blocks if b.type == "server_tool_use"}
    for block in blocks:
        if block.type != "web_search_tool_result":
            continue
        use = requested.pop(block.tool_use_id, None)
        results = block.content if isinstance(block.content, list) else []
        urls = [result.url for result in results if getattr(result, "url", None)]
        for result in results:
            if getattr(result, "url", None):
                draft.add_source(result.url, title=getattr(result, "title", None))
        error = (
            None if isinstance(block.content, list) else getattr(block.content, "error_code", "")
        )
        output = {"sources": urls} if error is None else {"error": error}
        draft.add_tool_call(
            use.name if use else "web_search",
            dict(use.input or {}) if use else {},
            json.dumps(output),
            is_error=error is not None,
            server="web",
        )
    for use in requested.values():  # a search the provider started but did not report back
        draft.add_tool_call(use.name, dict(use.input or {}), "", is_error=True, server="web")


def anthropic_usage(usage: Any) -> Usage | None:
    """The reply's usage; None when it reported none (unknown, not 0)."""
    if usage is None:
        return None
    cache_read = getattr(usage, "cache_read_input_tokens", None) or 0
    cache_write = getattr(usage, "cache_creation_input_tokens", None) or 0
    details = getattr(usage, "output_tokens_details", None)
    return Usage(
        input_tokens=(usage.input_tokens or 0) + cache_read + cache_write,
        output_tokens=usage.output_tokens or 0,
        reasoning_tokens=getattr(details, "thinking_tokens", 0) or 0,
        cached_input_tokens=cache_read,
    )


# --------------------------------------------------------------------------------------------------
# Web tools (only with web=true)
# --------------------------------------------------------------------------------------------------

FETCH_SPEC = ToolSpec(
    name="fetch_url",
    description="Fetch a web page (public-company research only) and return its text.",
    input_schema={
        "type": "object",
        "properties": {"url": {"type": "string", "description": "http(s) URL"}},
        "required": ["url"],
        "additionalProperties": False,
    },
    read_only=True,
)
SEARCH_SPEC = ToolSpec(
    name="web_search",
    description="Search the web (public-company research only); returns titles, URLs, snippets.",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    },
    read_only=True,
)


def html_text(html: str) -> tuple[str | None, str]:
    """(title, visible text) of an HTML page, roughly: enough for a model to read."""
    title_match = re.search(r"<title[^>]*>(.*?)</title>", html, re.I | re.S)
    title = re.sub(r"\s+", " ", title_match.group(1)).strip() if title_match else None
    body = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", html, flags=re.I | re.S)
    body = re.sub(r"<[^>]+>", " ", body)
    return title, re.sub(r"\s+", " ", body).strip()


class WebTools:
    """``fetch_url`` and (with a search endpoint) ``web_search``, recorded with their sources."""

    def __init__(self, settings: CustomSettings, *, enabled: bool = True) -> None:
        self.settings = settings
        self.enabled = enabled
        """False unless ``--research web``: the live web never mixes with the world."""

    def specs(self) -> list[ToolSpec]:
        if not (self.settings.web and self.enabled):
            return []
        has_search = self.settings.api == "anthropic" or bool(self.settings.search_url)
        return [FETCH_SPEC, SEARCH_SPEC] if has_search else [FETCH_SPEC]

    async def call(
        self, name: str, arguments: dict[str, Any], draft: TrajectoryDraft, timeout: float
    ) -> tuple[str, bool]:
        import httpx

        started = draft.elapsed()
        try:
            async with httpx.AsyncClient(timeout=timeout, follow_redirects=True) as client:
                if name == "fetch_url":
                    text, error = await self._fetch(client, str(arguments.get("url", "")), draft)
                else:
                    text, error = await self._search(client, str(arguments.get("query", "")), draft)
        except httpx.HTTPError as problem:
            text, error = f"{type(problem).__name__}: {problem}", True
        draft.add_tool_call(
            name,
            arguments,
            text,
            is_error=error,
            server="web",
            started_s=started,
            duration_s=draft.elapsed() - started,
        )
        return text[:FETCH_LIMIT], error

    async def _fetch(self, client: Any, url: str, draft: TrajectoryDraft) -> tuple[str, bool]:
        if not url.startswith(("http://", "https://")):
            return "Error: fetch_url needs an http(s) URL", True
        response = await client.get(url)
        if response.status_code >= 400:
            return f"Error: HTTP {response.status_code} from {url}", True
        content_type = response.headers.get("content-type", "")
        title, text = html_text(response.text) if "html" in content_type else (None, response.text)
        draft.add_source(str(response.url), title=title, text=text)
        return text, False

    async def _search(self, client: Any, query: str, draft: TrajectoryDraft) -> tuple[str, bool]:
        response = await client.get(self.settings.search_url, params={"q": query, "format": "json"})
        if response.status_code >= 400:
            return f"Error: HTTP {response.status_code} from the search endpoint", True
        results = [
            {"title": r.get("title"), "url": r.get("url"), "snippet": r.get("content")}
            for r in response.json().get("results", [])[:8]
        ]
        for result in results:
            if result["url"]:
                draft.add_source(result["url"], title=result["title"], text=result["snippet"])
        return json.dumps(results), False


# --------------------------------------------------------------------------------------------------
# SDK warm-up (see warm_up_offline)
# --------------------------------------------------------------------------------------------------

WARM_CHAT = {
    "id": "chatcmpl-warm",
    "object": "chat.completion",
    "created": 0,
    "model": "warm-up",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "ok"},
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
WARM_MESSAGE = {
    "id": "msg_warm",
    "type": "message",
    "role": "assistant",
    "model": "warm-up",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


def _anthropic_stream_body() -> bytes:
    start = dict(WARM_MESSAGE, content=[], stop_reason=None)
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "ok"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {k}\ndata: {json.dumps(v)}\n\n" for k, v in events).encode()


def warm_up_sdk(api: str) -> None:
    """Exercise the SDK calls this harness makes, offline, once (see ``warm_up_offline``)."""
    import httpx2

    def answer(request: Any) -> Any:
        if api == "openai":
            return httpx2.Response(200, json=WARM_CHAT)
        if b'"stream":true' in request.content.replace(b" ", b""):
            headers = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=headers, content=_anthropic_stream_body())
        return httpx2.Response(200, json=WARM_MESSAGE)

    async def exercise(http_client: Any) -> None:
        base_url = "http://warm-up.invalid"
        if api == "openai":
            from openai import AsyncOpenAI

            client = AsyncOpenAI(api_key="warm-up", base_url=base_url, http_client=http_client)
            await client.chat.completions.create(model="warm-up", messages=[], extra_body={})
            return
        from anthropic import AsyncAnthropic

        client = AsyncAnthropic(api_key="warm-up", base_url=base_url, http_client=http_client)
        typed = {"model": "warm-up", "max_tokens": 1, "messages": []}
        await client.messages.create(**typed)
        stream = await client.messages.create(**typed, stream=True)
        async for _ in stream:
            pass

    warm_up_offline(exercise, answer)


# --------------------------------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------------------------------


@harness("custom", options=CUSTOM_OPTIONS)
class FinanceAgentHarness:
    """Our model-agnostic finance agent (Chat Completions or Anthropic Messages)."""

    name = "custom"
    conversational = True
    """Conversations: the earlier turns are replayed as chat messages on each agent turn."""

    @staticmethod
    def credentials_problem(options: HarnessOptions) -> str | None:
        variable = API_KEY_VARIABLES.get(options.extra.get("api", "openai"))
        return None if variable is None else missing_key_problem(variable, "custom")

    def __init__(self, options: HarnessOptions) -> None:
        self.settings = CustomSettings.from_options(options)
        self.model: str | None = self.settings.model
        require_sdk(self.settings.api, "custom")
        self._api_key = require_env_key(API_KEY_VARIABLES[self.settings.api], "custom")
        self.tools = ToolCatalogue()
        warm_up_sdk(self.settings.api)

    def new_client(self) -> Any:
        """An SDK client for one question (see :meth:`OpenAIResponsesHarness.new_client`)."""
        verify = shared_tls_context()
        if self.settings.api == "anthropic":
            from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

            return AsyncAnthropic(
                api_key=self._api_key,
                base_url=self.settings.base_url,
                max_retries=0,
                http_client=DefaultAsyncHttpxClient(verify=verify),
            )
        from openai import AsyncOpenAI
        from openai import DefaultAsyncHttpxClient as OpenAIHttpClient

        return AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.settings.base_url,
            max_retries=0,
            http_client=OpenAIHttpClient(verify=verify),
        )

    async def aclose(self) -> None:
        return None

    async def model_endpoint(self, env: AgentEnvironment) -> ModelEndpoint:
        """What the pre-flight checks (``harnesses._preflight``): the first request's prompt
        before the question (system prompt and tool definitions, as this harness sends them)."""
        web_specs = WebTools(self.settings, enabled=env.web_allowed).specs()
        async with McpToolbox(env, erp_label=SERVER_LABEL) as erp:
            specs = await self.tools.get(erp, catalogue_key(env)) + web_specs
        chat = self.conversation(None, system_prompt(env, bool(web_specs)), "")
        tools = chat.tool_entries(specs)
        default_base = ANTHROPIC_BASE_URL if self.settings.api == "anthropic" else OPENAI_BASE_URL
        return ModelEndpoint(
            wire="messages" if self.settings.api == "anthropic" else "chat",
            base_url=self.settings.base_url or default_base,
            model=self.settings.model,
            api_key=self._api_key,
            prompt=chat_prompt_text(chat, tools),
            tool_count=len(tools),
            context_window=self.settings.context_window,
            harness="custom",
            streamed=self.settings.stream,
        )

    def conversation(
        self, client: Any, system: str, user: str, history: list[tuple[str, str]] = ()
    ) -> Any:
        """A chat on ``client``; ``history``: a conversation's earlier turns, replayed before
        ``user`` (the latest message)."""
        kind = AnthropicConversation if self.settings.api == "anthropic" else OpenAIChatConversation
        chat = kind(client, self.settings, system, user)
        earlier = [{"role": role, "content": text} for role, text in history]
        chat.messages[-1:-1] = earlier
        return chat

    async def run(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        settings = self.settings
        draft.extra.update(api=settings.api, max_steps=settings.max_steps, web=settings.web)
        agent = _FinanceAgent(self, task, env, draft)
        client = self.new_client()
        try:
            return await agent.run(client)
        except asyncio.CancelledError:
            draft.extra["cancelled_during"] = agent.phase
            if agent.gathered.found:  # for the reader; the answer stays the model's own text
                draft.extra["composed_answer"] = agent.compose_partial()
            raise
        finally:
            with contextlib.suppress(Exception):
                await client.close()


@dataclass
class _Gathered:
    """What the agent learned, for a composed partial answer."""

    found: list[tuple[str, str]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


class _FinanceAgent:
    def __init__(
        self,
        owner: FinanceAgentHarness,
        task: AgentTask,
        env: AgentEnvironment,
        draft: TrajectoryDraft,
    ) -> None:
        self.owner = owner
        self.settings = owner.settings
        self.task = task
        self.env = env
        self.draft = draft
        self.web = WebTools(owner.settings, enabled=env.web_allowed)
        self.reserve = owner.settings.reserve_for(task.timeout_s)
        limits = task.limits
        # The run's --max-turns keeps one turn for the final answer; --max-tool-calls caps calls.
        self.max_steps = limits.cap(owner.settings.max_steps, limits.max_turns, reserve=1)
        self.max_tool_calls = limits.tool_call_cap
        """The run's one tool-call cap (``--max-tool-calls``)."""
        self.phase = "start"
        self.tool_calls_run = 0
        self.last_allowance = 0
        """How many calls of the last turn the cap let run."""
        self.gathered = _Gathered()
        self.streaming: Message | None = None
        """The assistant turn being streamed (its text so far), until its call is recorded."""

    def on_text(self, text: str) -> None:
        """Streamed text: the answer so far, and the assistant turn it belongs to."""
        self.draft.set_answer(text)
        if self.streaming is None:
            self.streaming = self.draft.add_message("assistant", text)
        else:
            self.streaming.content = text

    def system_prompt(self) -> str:
        return system_prompt(self.env, bool(self.web.specs()))

    async def run(self, client: Any) -> AgentOutcome:
        self.phase = "mcp_list_tools"
        async with McpToolbox(self.env, erp_label=SERVER_LABEL) as erp:
            self.erp = erp
            erp_specs = await self.owner.tools.get(erp, catalogue_key(self.env))
            self.erp_names = {spec.name for spec in erp_specs}
            specs = erp_specs + self.web.specs()
            user = await self.opening_message(erp_specs)
            self.draft.add_message("user", user)
            history = replayed_turns(self.task)
            chat = self.owner.conversation(client, self.system_prompt(), user, history)
            return await self.loop(chat, specs)

    async def opening_message(self, specs: list[ToolSpec]) -> str:
        """The question plus what a finance analyst checks first: ERP today and the as-of date."""
        notes = [f"Time budget: about {self.task.timeout_s:.0f} seconds."]
        if self.task.task_type is TaskType.operations and not self.task.history:
            notes.append(CONVERSATION_NOTE)
        date = as_of_date(self.task.query)
        if date:
            notes.append(
                f"As-of date in the question: {date} (pass it as as_of where tools take it)."
            )
        if any(spec.name == ERP_CONTEXT_TOOL for spec in specs):
            self.phase = "erp_context"
            result = await self.harness_call(ERP_CONTEXT_TOOL)
            if not result.is_error:
                notes.append(f"ERP context ({ERP_CONTEXT_TOOL}): {result.text[:2000]}")
        return f"{self.task.query}\n\n" + "\n".join(notes)

    async def harness_call(self, name: str) -> Any:
        """A tool call the harness makes itself (not the model): kept in
        ``extra["harness_tool_calls"]``, never among the model's tool calls nor against its cap."""
        scratch = TrajectoryDraft(started_monotonic=self.draft.started_monotonic)
        try:
            return await erp_call(self.erp, name, {}, scratch)
        finally:
            made = self.draft.extra.setdefault("harness_tool_calls", [])
            made += [call.model_dump(mode="json", by_alias=True) for call in scratch.tool_calls]

    def time_for_step(self) -> float:
        return self.task.remaining() - self.reserve

    async def loop(self, chat: Any, specs: list[ToolSpec]) -> AgentOutcome:
        reason = "max_steps"
        for _ in range(self.max_steps):
            if self.task.limits.exceeded(self.draft) is not None:
                # over --max-tokens/--max-cost-usd: no further turn (the runner records why)
                return AgentOutcome(answer=self.draft.answer)
            budget = self.time_for_step()
            if budget <= 0:
                reason = "deadline_near"
                break
            try:
                turn = await asyncio.wait_for(self.model_turn(chat, specs, True), budget)
            except TimeoutError:
                reason = "deadline_near"
                break
            if not turn.requests:
                return AgentOutcome(answer=turn.text or self.draft.answer)
            results = await self.run_tools(turn.requests)
            chat.add_results(turn.requests, results)
            dropped = max(0, len(turn.requests) - self.last_allowance)
            if dropped:  # past the run's cap (at it exactly, the model may still answer)
                self.draft.note_tool_call_cap(self.max_tool_calls, dropped)
                reason = "max_tool_calls"
                break
        return await self.finish(chat, specs, reason)

    async def model_turn(self, chat: Any, specs: list[ToolSpec], allow_tools: bool) -> ModelTurn:
        self.phase = "model"
        self.streaming = None
        call = CallContext(draft=self.draft, task=self.task, on_text=self.on_text)
        turn, timing = await recorded_call(
            lambda: chat.complete(specs, allow_tools=allow_tools, call=call),
            self.task,
            self.draft,
            self.settings.model,
            partial=lambda: self.streaming,
        )
        message = self.streaming or self.draft.add_message("assistant")
        self.streaming = None
        message.content, message.reasoning = turn.text, turn.reasoning
        record_model_event(
            self.draft,
            timing,
            model=turn.model or self.settings.model,
            usage=turn.usage,
            request_id=turn.request_id,
            output=message,
            finish_reason=turn.finish_reason,
            usage_unknown=turn.usage is None,
        )
        self.draft.turns += 1
        self.draft.answer_cut = answer_cut(turn.finish_reason)
        model = turn.model or self.settings.model
        cost = None if turn.usage is None else estimate_cost(model, turn.usage, self.settings.price)
        self.draft.add_usage(turn.usage, cost)
        if turn.model:
            self.draft.extra["served_model"] = turn.model
        if turn.text:
            self.draft.set_answer(turn.text)
        return turn

    async def run_tools(self, requests: list[ToolRequest]) -> list[tuple[str, bool]]:
        """Run the calls in parallel within the cap and the time left before the final reserve."""
        self.phase = "tools"
        allowance = max(0, self.max_tool_calls - self.tool_calls_run)
        self.last_allowance = allowance
        self.tool_calls_run += min(allowance, len(requests))
        jobs = [asyncio.ensure_future(self.run_tool(request)) for request in requests[:allowance]]
        pending: set[asyncio.Future[Any]] = set()
        if jobs:
            _, pending = await asyncio.wait(jobs, timeout=max(0.0, self.time_for_step()))
        for job in pending:
            job.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        results = []
        for position, request in enumerate(requests):
            if position >= allowance:
                results.append((CAP_REACHED_MESSAGE.format(cap=self.max_tool_calls), True))
            elif jobs[position] not in pending:
                results.append(jobs[position].result())
            else:
                results.append(self.note_unfinished(request))
        return results

    def note_unfinished(self, request: ToolRequest) -> tuple[str, bool]:
        """A call cut off to keep time for the answer (``erp_call`` recorded it as cancelled)."""
        text = "Error: not finished before the time budget ran out."
        self.gathered.failed.append(f"{request.name}({_brief(request.arguments or {})}): timed out")
        return text, True

    async def run_tool(self, request: ToolRequest) -> tuple[str, bool]:
        known = self.erp_names | {spec.name for spec in self.web.specs()}
        if request.problem is None and request.name not in known:
            request.problem = f"unknown tool {request.name!r}"
        if request.problem is not None:
            return self.record_invalid(request)
        arguments = request.arguments or {}
        if request.name not in self.erp_names:
            timeout = max(1.0, self.time_for_step())
            return await self.web.call(request.name, arguments, self.draft, timeout)
        result = await erp_call(self.erp, request.name, arguments, self.draft)
        if result.is_error:
            self.gathered.failed.append(f"{request.name}({_brief(arguments)}): {result.text[:200]}")
            return f"Error: {result.text}", True
        self.gathered.found.append((f"{request.name}({_brief(arguments)})", result.text))
        return result.text, False

    def record_invalid(self, request: ToolRequest) -> tuple[str, bool]:
        text = f"Error: {request.problem}. Call the tool again with corrected arguments."
        recorded = request.arguments
        if recorded is None:
            recorded = {"_raw_arguments": request.raw_arguments}
        self.draft.add_tool_call(request.name, recorded, text, is_error=True, server=SERVER_LABEL)
        self.gathered.failed.append(f"{request.name}: {request.problem}")
        return text, True

    async def finish(self, chat: Any, specs: list[ToolSpec], reason: str) -> AgentOutcome:
        """Ask for a final answer without tools if there is time.

        Stopped by the deadline, the outcome is a timeout; by a cap, max turns. The answer is only
        ever text the model wrote: when the model cannot write one in time, the summary of the
        tool results the agent composes goes to ``extra["composed_answer"]``, not the answer.
        """
        self.phase = "final_answer"
        self.draft.extra["finished_by"] = reason
        capped = reason != "deadline_near"
        time_left = self.task.remaining() - SAFETY_S
        if time_left > MIN_FINAL_CALL_S:
            chat.add_user(FINAL_PROMPT)
            self.draft.add_message("user", FINAL_PROMPT)
            try:
                turn = await asyncio.wait_for(self.model_turn(chat, specs, False), time_left)
            except TimeoutError:
                turn = None
            if turn is not None and turn.text.strip():
                return AgentOutcome(
                    answer=turn.text, max_turns_reached=capped, deadline_reached=not capped
                )
        self.draft.extra["composed_answer"] = self.compose_partial()
        return AgentOutcome(
            answer=self.draft.answer, max_turns_reached=capped, deadline_reached=not capped
        )

    def compose_partial(self) -> str:
        """A partial answer from the tool results, when the model could not write one in time."""
        lines = [
            "Partial answer: the time budget ran out before the analysis was finished. "
            "What the ERP returned so far is below; figures have not been reconciled."
        ]
        model_text = self.draft.answer.strip()
        if model_text and not model_text.startswith("Partial answer"):
            lines += ["", "Analysis so far:", model_text]
        if self.gathered.found:
            lines += ["", "| Lookup | Result (excerpt) |", "|---|---|"]
            for label, text in self.gathered.found:
                excerpt = re.sub(r"\s+", " ", text)[:300].replace("|", "/")
                lines.append(f"| {label} | {excerpt} |")
            links = sorted(
                {url for _, text in self.gathered.found for url in RECORD_URL_PATTERN.findall(text)}
            )
            if links:
                lines += ["", "ERP records consulted:"] + [f"- <{url}>" for url in links[:20]]
        if self.gathered.failed:
            lines += ["", "Could not be checked:"] + [f"- {item}" for item in self.gathered.failed]
        if not self.gathered.found:
            lines += ["", "No ERP data was retrieved before the deadline; no figures can be given."]
        return "\n".join(lines)


def system_prompt(env: AgentEnvironment, has_web_tools: bool) -> str:
    """The system prompt of every question: the shared instructions and the finance practice."""
    if has_web_tools:
        web_note = ""
    elif env.world is not None:
        web_note = (
            "\nWeb tools are not available in this run: research public companies with the "
            "world__ tools.\n"
        )
    else:
        web_note = "\nWeb tools are not available in this run: use the ERP.\n"
    return f"{env.instructions}\n\n{FINANCE_PRACTICE}{web_note}"


def _brief(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in arguments.items())[:120]
