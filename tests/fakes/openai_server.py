"""A local OpenAI-compatible HTTP server driven by a scripted "model", for harness tests, benches.

It speaks the real wire formats the OpenAI SDK uses:

- ``POST /v1/responses`` (Responses API): ``function_call``, ``mcp_call``, ``mcp_list_tools``,
  ``web_search_call``, ``reasoning`` and ``message`` output items with ``url_citation`` annotations,
  ``usage`` with cached and reasoning token details, ``previous_response_id`` state, and streaming
  (``stream: true`` -> server-sent events ending in ``response.completed``).
- ``POST /v1/chat/completions`` (Chat Completions): assistant messages with ``tool_calls``, usage,
  and streaming (``chat.completion.chunk`` deltas, a usage chunk with ``stream_options``,
  ``data: [DONE]``).
- ``GET`` of any path registered in ``pages`` (for URL-fetch tools).

Like the real service it rejects (HTTP 400) function tools without ``parameters`` or ``strict``, an
unknown ``previous_response_id``, a function call left without its ``function_call_output`` and a
chat tool call without its ``tool`` message. A missing or wrong bearer key gets 401.

A :class:`Turn` may also break the protocol (``fault``): ``hang`` (accept the request and send
nothing, not even headers), ``truncate`` (end a stream before its final event, or cut a JSON body),
``non_json`` (a 200 whose body is an HTML page) or ``unknown_event`` (a stream event type the API
does not have); ``trickle_s`` streams a reply slowly (a live model, never silent longer than that).
``quirks`` and ``finish_reason`` send the shapes real servers send (arguments as objects, tool calls
without ``index`` or ``id``, no usage, an empty reply, any finish reason: :data:`QUIRKS`).

Like a real server it also answers what a client asks before the first question (the pre-flight,
``harnesses._preflight``), each as the server named by :class:`ServerTraits` does: ``GET
/v1/models`` (with vLLM's ``max_model_len`` or llama.cpp's ``meta.n_ctx``), llama.cpp's ``GET
/props`` and ``POST /tokenize``, vLLM's ``POST /tokenize``, Ollama's ``POST /api/show``; a wire the
server does not speak (``wires``) and any unknown route are a 404; a model it does not serve is
that server's 404; a prompt over ``context_tokens`` is that server's HTTP 400 (llama.cpp's
``exceed_context_size_error``, vLLM's and OpenAI's "maximum context length"; Ollama truncates
silently, as it does). The fake's tokenizer is :func:`fake_tokens` (4 characters a token), the
same in ``/tokenize`` and in the context check. ``prefill_tokens_per_s`` makes the server read a
prompt at that rate before its first byte (a CPU server), and llama.cpp reports ``timings``. A
one-line request with no tools and an output cap of 16 tokens or fewer (the pre-flight's probe)
is answered ``OK`` (streamed when it asks to be) without taking a turn of the script, and is kept
in ``server.preflight`` with the other pre-flight requests, not in ``server.requests``. A server
that reports no usage at all (``reports_usage=False``) leaves it out of every reply, the probe's
included.

The model is a script: a list of :class:`Turn` (played in order) or a callable
``(ModelRequest) -> Turn`` that can read the tool outputs it was sent and chain on them. Every
request is kept in ``server.requests`` for assertions on the exact bodies.

    with serve_openai([Turn(tool_calls=[Call("search", {"q": "x"})]), Turn(text="done")]) as fake:
        client = AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes._sockets import hang_up


@dataclass
class Call:
    """A tool call the model makes; ``arguments`` given as a string go raw (maybe malformed)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None


@dataclass
class McpCall:
    """A hosted MCP call the provider ran itself (Responses ``mcp_call`` item)."""

    name: str
    arguments: dict[str, Any]
    output: str | None = None
    error: dict[str, Any] | None = None
    server_label: str = "erp"


@dataclass
class WebSearch:
    """A built-in web search the provider ran (Responses ``web_search_call`` item)."""

    query: str
    sources: list[str] = field(default_factory=list)


@dataclass
class Turn:
    """One model reply. ``status`` other than 200 makes the request fail with that HTTP status."""

    text: str | None = None
    tool_calls: list[Call] = field(default_factory=list)
    citations: list[tuple[str, str]] = field(default_factory=list)
    """(url, title) pairs attached to ``text`` as ``url_citation`` annotations."""
    mcp_calls: list[McpCall] = field(default_factory=list)
    web_searches: list[WebSearch] = field(default_factory=list)
    reasoning_tokens: int = 0
    reasoning_summary: str | None = None
    """Responses: a reasoning item with this summary text; chat: ``reasoning_content``."""
    input_tokens: int = 100
    output_tokens: int = 20
    cached_tokens: int = 0
    delay_s: float = 0.0
    """Sleep before answering (a slow model)."""
    stall_after_text_s: float = 0.0
    """When streaming, sleep after the message text was sent (a half-finished reply)."""
    status: int = 200
    error_message: str = "scripted failure"
    retry_after_ms: int | None = 20
    incomplete_reason: str | None = None
    fault: str | None = None
    """Break the protocol: ``hang``, ``truncate``, ``non_json`` or ``unknown_event``."""
    trickle_s: float = 0.0
    """When streaming, wait this long before every event and send text a word at a time."""
    finish_reason: str | None = None
    """The finish reason sent instead of the natural one: chat ``finish_reason`` (``length``,
    ``content_filter``, any string); Responses ``incomplete_details.reason`` (the response is
    then ``incomplete``)."""
    quirks: frozenset[str] = frozenset()
    """Shapes real servers send (:data:`QUIRKS`)."""


FAULTS = frozenset({"hang", "truncate", "non_json", "unknown_event"})
QUIRKS = frozenset(
    {"arguments_object", "no_index", "same_index", "no_id", "no_usage", "no_choices"}
    | {"content_parts"}
)
"""``arguments_object``: tool-call arguments as a JSON object, not JSON text (llama.cpp, Ollama);
``no_index``: streamed tool-call pieces without ``index``; ``same_index``: ``index: 0`` on every
streamed call (each with its own id); ``no_id``: tool calls without an id;
``no_usage``: no usage object (nor usage chunk); ``content_parts``: chat message content as a list
of text parts (not streamed); ``no_choices``: an empty reply (chat
``choices: []``, Responses ``output: []``)."""
NON_JSON_BODY = b"<html><body><h1>502 Bad Gateway</h1></body></html>"


@dataclass
class ModelRequest:
    """What the scripted model sees of a request."""

    api: str
    """``responses`` or ``chat``."""
    index: int
    """0-based number of model requests so far (all APIs)."""
    body: dict[str, Any]
    tool_outputs: list[str]
    """Outputs sent back in this request (``function_call_output`` items / ``tool`` messages)."""


Script = Sequence[Turn] | Callable[[ModelRequest], Turn]

FLAVORS = ("openai", "llama.cpp", "vllm", "ollama")
PROBE_OUTPUT_CAP = 16


@dataclass(frozen=True)
class ServerTraits:
    """Which server the fake is, as far as a client can tell before the first question."""

    flavor: str = "openai"
    """``openai``, ``llama.cpp``, ``vllm`` or ``ollama``: how it reports models and context and
    words its errors."""
    models: tuple[str, ...] = ()
    """The model names ``GET /v1/models`` lists (empty: an empty list, and any name is served)."""
    context_tokens: int | None = None
    """The context of the served model; a longer prompt is refused as the flavor does."""
    wires: frozenset[str] = frozenset({"responses", "chat"})
    """The APIs it speaks; the others are a 404 like any unknown route."""
    prefill_tokens_per_s: float | None = None
    """Read a prompt at this many tokens a second before the first byte (a CPU server)."""
    reports_usage: bool = True
    """False: no reply carries usage, streamed or not, the probe's included (every turn gets the
    ``no_usage`` quirk)."""

    def __post_init__(self) -> None:
        if self.flavor not in FLAVORS:
            raise ValueError(f"unknown flavor {self.flavor!r}; choose from {FLAVORS}")


def fake_tokens(text: str) -> int:
    """The fake's tokenizer: a token every 4 characters."""
    return max(1, -(-len(text) // 4))


def prompt_tokens(body: dict[str, Any]) -> int:
    """A request's prompt tokens (instructions, input or messages, tools) by :func:`fake_tokens`."""
    parts = [body.get("instructions") or "", body.get("messages") or body.get("input") or ""]
    parts.append(body.get("tools") or "")
    return fake_tokens("".join(p if isinstance(p, str) else json.dumps(p) for p in parts))


def is_probe(body: dict[str, Any]) -> bool:
    """A one-line request without tools capped at a few output tokens: the pre-flight's probe."""
    cap = (
        body.get("max_tokens") or body.get("max_completion_tokens") or body.get("max_output_tokens")
    )
    return not body.get("tools") and isinstance(cap, int) and cap <= PROBE_OUTPUT_CAP


def overflow_error(flavor: str, tokens: int, context: int) -> dict[str, Any]:
    """The HTTP 400 body each server sends for a prompt over the context."""
    if flavor == "llama.cpp":
        message = (
            f"request ({tokens} tokens) exceeds the available context size ({context} tokens), "
            "try increasing it"
        )
        error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
        return {"error": error | {"n_prompt_tokens": tokens, "n_ctx": context}}
    if flavor == "vllm":
        message = (
            f"This model's maximum context length is {context} tokens. However, you requested "
            f"{tokens} tokens ({tokens} in the messages, 0 in the completion). Please reduce the "
            "length of the messages or completion."
        )
        return {"object": "error", "message": message, "type": "BadRequestError", "code": 400}
    message = (
        f"This model's maximum context length is {context} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages."
    )
    error = {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}
    return {"error": error | {"param": "messages"}}


def unknown_model_error(flavor: str, model: str) -> dict[str, Any]:
    """The HTTP 404 body each server sends for a model it does not serve."""
    if flavor == "vllm":
        message = f"The model `{model}` does not exist."
        return {"object": "error", "message": message, "type": "NotFoundError", "code": 404}
    if flavor == "ollama":
        return {"error": {"message": f'model "{model}" not found, try pulling it first'}}
    message = f"The model `{model}` does not exist or you do not have access to it."
    kind = {"type": "invalid_request_error", "code": "model_not_found"}
    return {"error": {"message": message} | kind}


def not_found_body(flavor: str, path: str) -> dict[str, Any]:
    """The 404 each server sends for a route it does not have."""
    if flavor == "llama.cpp":
        return {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}
    if flavor == "vllm":
        return {"detail": "Not Found"}
    if flavor == "ollama":
        return {"error": "404 page not found"}
    return {"error": {"message": f"Invalid URL ({path})", "type": "invalid_request_error"}}


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    status: int = 0


@dataclass
class FakeOpenAIServer:
    """A running fake: ``base_url`` for the SDK (ends in ``/v1``) and everything it received."""

    script: Script
    base_url: str = ""
    api_key: str | None = "test-key"
    """Bearer key to require; None accepts any request."""
    pages: dict[str, tuple[str, str]] = field(default_factory=dict)
    """GET path (query string ignored) -> (content type, body)."""
    requests: list[RecordedRequest] = field(default_factory=list)
    traits: ServerTraits = field(default_factory=ServerTraits)
    preflight: list[RecordedRequest] = field(default_factory=list)
    """The requests a client makes before the first question (see the module doc)."""
    responses: dict[str, dict[str, Any]] = field(default_factory=dict)
    closing: threading.Event = field(default_factory=threading.Event)
    """Set when the server shuts down: hangs and trickles end."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _counter: Iterator[int] = field(default_factory=itertools.count)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def model_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.status == 200]

    def next_turn(self, api: str, body: dict[str, Any], tool_outputs: list[str]) -> Turn:
        with self._lock:
            index = next(self._counter)
        if callable(self.script):
            return self.script(ModelRequest(api, index, body, tool_outputs))
        if index >= len(self.script):
            return Turn(text=f"(script exhausted after {len(self.script)} turns)")
        return self.script[index]

    def new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_{next(self._ids):06d}"


class BadRequest(Exception):
    pass


DONE: dict[str, Any] = {}
"""Marker for the ``data: [DONE]`` line that ends a chat-completions stream."""


def _check_function_tools(tools: list[dict[str, Any]]) -> None:
    for tool in tools:
        if tool.get("type") == "function":
            for key in ("name", "parameters", "strict"):
                if key not in tool:
                    raise BadRequest(f"Missing required parameter: 'tools[].{key}'.")


def _responses_tool_outputs(state: FakeOpenAIServer, body: dict[str, Any]) -> list[str]:
    items = body.get("input")
    items = items if isinstance(items, list) else []
    outputs = {i.get("call_id"): i for i in items if i.get("type") == "function_call_output"}
    pending: list[str] = []
    previous_id = body.get("previous_response_id")
    if previous_id:
        previous = state.responses.get(previous_id)
        if previous is None:
            raise BadRequest(f"Previous response with id '{previous_id}' not found.")
        pending += [o.get("call_id") for o in previous["output"] if o["type"] == "function_call"]
    pending += [i.get("call_id") for i in items if i.get("type") == "function_call"]
    pending = [call_id for call_id in pending if call_id]  # a call sent without an id: unmatched
    for call_id in pending:
        if call_id not in outputs:
            raise BadRequest(f"No tool output found for function call {call_id}.")
    return [str(outputs[c].get("output", "")) for c in outputs]


def _usage_responses(turn: Turn) -> dict[str, Any] | None:
    if "no_usage" in turn.quirks:
        return None
    return {
        "input_tokens": turn.input_tokens,
        "input_tokens_details": {"cached_tokens": turn.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": turn.output_tokens + turn.reasoning_tokens,
        "output_tokens_details": {"reasoning_tokens": turn.reasoning_tokens},
        "total_tokens": turn.input_tokens + turn.output_tokens + turn.reasoning_tokens,
    }


def _arguments_text(call: Call) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _arguments(call: Call, turn: Turn) -> Any:
    """The arguments as the wire carries them: JSON text, or the object itself."""
    if "arguments_object" in turn.quirks and isinstance(call.arguments, dict):
        return call.arguments
    return _arguments_text(call)


def _call_id(state: FakeOpenAIServer, call: Call, turn: Turn) -> str | None:
    if "no_id" in turn.quirks:
        return None
    return call.call_id or state.new_id("call")


def _responses_output(state: FakeOpenAIServer, turn: Turn) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = []
    if "no_choices" in turn.quirks:
        return output
    if turn.reasoning_tokens or turn.reasoning_summary:
        summary = [{"type": "summary_text", "text": turn.reasoning_summary}]
        output.append(
            {
                "id": state.new_id("rs"),
                "type": "reasoning",
                "summary": summary if turn.reasoning_summary else [],
            }
        )
    for search in turn.web_searches:
        action = {
            "type": "search",
            "query": search.query,
            "sources": [{"type": "url", "url": url} for url in search.sources],
        }
        output.append(
            {
                "id": state.new_id("ws"),
                "type": "web_search_call",
                "status": "completed",
                "action": action,
            }
        )
    for mcp in turn.mcp_calls:
        output.append(
            {
                "id": state.new_id("mcp"),
                "type": "mcp_call",
                "server_label": mcp.server_label,
                "name": mcp.name,
                "arguments": json.dumps(mcp.arguments),
                "output": mcp.output,
                "error": mcp.error,
                "status": "failed" if mcp.error else "completed",
            }
        )
    if turn.text is not None:
        annotations = []
        for url, title in turn.citations:
            start = max(0, turn.text.find(title))
            annotations.append(
                {
                    "type": "url_citation",
                    "url": url,
                    "title": title,
                    "start_index": start,
                    "end_index": start + len(title),
                }
            )
        content = [{"type": "output_text", "text": turn.text, "annotations": annotations}]
        output.append(
            {
                "id": state.new_id("msg"),
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        )
    for call in turn.tool_calls:
        item = {
            "id": state.new_id("fc"),
            "type": "function_call",
            "call_id": _call_id(state, call, turn),
            "name": call.name,
            "arguments": _arguments(call, turn),
            "status": "completed",
        }
        output.append({k: v for k, v in item.items() if v is not None})
    return output


def responses_body(state: FakeOpenAIServer, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
    incomplete = turn.incomplete_reason or turn.finish_reason
    response = {
        "id": state.new_id("resp"),
        "object": "response",
        "created_at": time.time(),
        "model": body.get("model", "fake-model"),
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "output": _responses_output(state, turn),
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "previous_response_id": body.get("previous_response_id"),
        "max_tool_calls": body.get("max_tool_calls"),
        "reasoning": body.get("reasoning"),
        "usage": _usage_responses(turn),
    }
    with state._lock:
        state.responses[response["id"]] = response
    return response


def responses_events(
    response: dict[str, Any], stall_after_text_s: float = 0.0, fault: str | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events of a streamed response, in the order the real service sends them
    (``fault``: ``unknown_event`` adds an event type the API does not have, ``truncate`` stops
    before the final event)."""
    shell = dict(response, status="in_progress", output=[], usage=None)
    yield "response.created", {"response": shell}
    if fault == "unknown_event":
        yield "response.surprise_event", {"detail": "not in the API"}
    for index, item in enumerate(response["output"]):
        added = dict(item, status="in_progress")
        if item["type"] == "message":
            added["content"] = []
        yield "response.output_item.added", {"output_index": index, "item": added}
        if item["type"] == "message":
            for part in item["content"]:
                words = part["text"].split(" ")
                for position, word in enumerate(words):
                    delta = word if position == 0 else " " + word
                    yield (
                        "response.output_text.delta",
                        {
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": 0,
                            "delta": delta,
                            "logprobs": [],
                        },
                    )
            if stall_after_text_s:
                time.sleep(stall_after_text_s)
            if fault == "truncate":
                return
        yield "response.output_item.done", {"output_index": index, "item": item}
    if fault == "truncate":
        return
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    yield final, {"response": response}


def _chat_tool_outputs(body: dict[str, Any]) -> list[str]:
    messages = body.get("messages") or []
    for position, message in enumerate(messages):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            following = messages[position + 1 :]
            replied = {m.get("tool_call_id") for m in following if m.get("role") == "tool"}
            for call in message["tool_calls"]:
                if call.get("id") not in replied:
                    raise BadRequest(
                        "An assistant message with 'tool_calls' must be followed by tool messages "
                        f"responding to each 'tool_call_id'. Missing: {call.get('id')}"
                    )
    tail = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        tail.append(str(message.get("content", "")))
    return list(reversed(tail))


def chat_body(state: FakeOpenAIServer, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
    tool_calls = []
    for call in turn.tool_calls:
        entry = {
            "id": _call_id(state, call, turn),
            "type": "function",
            "function": {"name": call.name, "arguments": _arguments(call, turn)},
        }
        tool_calls.append({k: v for k, v in entry.items() if v is not None})
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if "content_parts" in turn.quirks and turn.text is not None:
        message["content"] = [{"type": "text", "text": turn.text}]
    if turn.reasoning_summary:
        message["reasoning_content"] = turn.reasoning_summary  # as vLLM and DeepSeek send it
    if tool_calls:
        message["tool_calls"] = tool_calls
    finish = turn.finish_reason or ("tool_calls" if tool_calls else "stop")
    choices = [{"index": 0, "message": message, "finish_reason": finish}]
    chat = {
        "id": state.new_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "choices": [] if "no_choices" in turn.quirks else choices,
        "usage": {
            "prompt_tokens": turn.input_tokens,
            "completion_tokens": turn.output_tokens + turn.reasoning_tokens,
            "total_tokens": turn.input_tokens + turn.output_tokens + turn.reasoning_tokens,
            "prompt_tokens_details": {"cached_tokens": turn.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": turn.reasoning_tokens},
        },
    }
    if "no_usage" in turn.quirks:
        del chat["usage"]
    return chat


def chat_events(
    chat: dict[str, Any],
    fault: str | None = None,
    stall_after_text_s: float = 0.0,
    quirks: frozenset[str] = frozenset(),
) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed chat completion (text a word at a
    time, each tool call in two argument pieces, or whole when its arguments are an object, then
    the finish reason and the usage chunk; ``quirks`` as in :data:`QUIRKS`)."""
    base = {k: chat[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    if not chat["choices"]:  # an empty reply: no choice at all, then the usage
        yield dict(base, choices=[])
        if "usage" in chat:
            yield dict(base, choices=[], usage=chat["usage"])
        return
    choice = chat["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    yield chunk({"role": "assistant", "content": ""})
    if fault == "unknown_event":
        yield dict(base, object="chat.completion.surprise", detail="not in the API")
    if message.get("reasoning_content"):
        yield chunk({"reasoning_content": message["reasoning_content"]})
    text = message.get("content") or ""
    if isinstance(text, list):  # parts are a whole-reply shape: streamed, the text goes as usual
        text = "".join(part["text"] for part in text)
    words = text.split(" ")
    for position, word in enumerate(words if text else []):
        yield chunk({"content": word if position == 0 else " " + word})
    if stall_after_text_s:
        time.sleep(stall_after_text_s)
    if fault == "truncate":
        return
    for number, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        position = {} if "no_index" in quirks else {"index": number}
        if "same_index" in quirks:
            position = {"index": 0}
        head = {**position, "id": call.get("id"), "type": "function"}
        if head["id"] is None:
            del head["id"]
        if isinstance(arguments, dict):  # an object is sent whole
            head["function"] = {"name": call["function"]["name"], "arguments": arguments}
            yield chunk({"tool_calls": [head]})
            continue
        half = len(arguments) // 2
        head["function"] = {"name": call["function"]["name"], "arguments": arguments[:half]}
        yield chunk({"tool_calls": [head]})
        yield chunk({"tool_calls": [{**position, "function": {"arguments": arguments[half:]}}]})
    yield chunk({}, choice["finish_reason"])
    if "usage" in chat:
        yield dict(base, choices=[], usage=chat["usage"])


def _handler_for(state: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        _fault: str | None = None
        _trickle_s = 0.0
        disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            record = RecordedRequest("GET", self.path, dict(self.headers.items()), None)
            path = self.path.split("?")[0].rstrip("/")
            if path not in state.pages and (path.endswith("/models") or path == "/props"):
                with state._lock:
                    state.preflight.append(record)
                if not self._authorised():
                    record.status = 401
                    return
                record.status, payload = server_facts(state, path)
                self._send_json(record.status, payload)
                return
            with state._lock:
                state.requests.append(record)
            page = state.pages.get(self.path.split("?")[0])
            if page is None:
                record.status = 404
                self._send_json(404, {"error": {"message": f"no page {self.path}"}})
                return
            record.status = 200
            self._send_bytes(200, page[0], page[1].encode())

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = None
            record = RecordedRequest("POST", self.path, dict(self.headers.items()), body)
            path = self.path.split("?")[0].rstrip("/")
            if path in ("/tokenize", "/api/show"):
                with state._lock:
                    state.preflight.append(record)
                record.status, payload = server_facts(state, path, body)
                self._send_json(record.status, payload)
                return
            probe = isinstance(body, dict) and is_probe(body)
            with state._lock:
                (state.preflight if probe else state.requests).append(record)
            self._fault, self._trickle_s = None, 0.0  # one handler serves a kept-alive connection
            status, payload, headers, stream = self._answer(body)
            record.status = status
            fault = self._fault
            if fault == "hang":
                hang_up(self.connection, state.closing)
                self.close_connection = True
            elif fault == "non_json":
                self._send_bytes(200, "text/html", NON_JSON_BODY, headers)
            elif stream is not None:
                self._send_events(stream, headers)
            elif fault == "truncate" and status == 200:
                data = json.dumps(payload).encode()
                self._send_bytes(200, "application/json", data[: len(data) // 2], headers)
            else:
                self._send_json(status, payload, headers)

        def _authorised(self) -> bool:
            expected = f"Bearer {state.api_key}"
            if state.api_key is not None and self.headers.get("authorization") != expected:
                error = {"message": "Incorrect API key provided.", "code": "invalid_api_key"}
                self._send_json(401, {"error": error})
                return False
            return True

        def _answer(self, body: Any) -> tuple[int, Any, dict[str, str], Any]:
            expected = f"Bearer {state.api_key}"
            if state.api_key is not None and self.headers.get("authorization") != expected:
                error = {"message": "Incorrect API key provided.", "code": "invalid_api_key"}
                return 401, {"error": error}, {}, None
            if not isinstance(body, dict):
                return 400, {"error": {"message": "We could not parse the JSON body."}}, {}, None
            path = self.path.split("?")[0].rstrip("/")
            traits = state.traits
            wire = "responses" if path.endswith("/responses") else "chat"
            if not path.endswith(("/responses", "/chat/completions")) or wire not in traits.wires:
                return 404, not_found_body(traits.flavor, f"POST {self.path}"), {}, None
            refusal = refused(traits, body)
            if refusal is not None:
                return refusal[0], refusal[1], {}, None
            if traits.prefill_tokens_per_s:
                state.closing.wait(prompt_tokens(body) / traits.prefill_tokens_per_s)
            if is_probe(body):
                turn = Turn(text="OK", input_tokens=prompt_tokens(body), output_tokens=1)
                return self._probe_answer(body, wire, with_usage(traits, turn))
            try:
                if path.endswith("/responses"):
                    _check_function_tools(body.get("tools") or [])
                    outputs = _responses_tool_outputs(state, body)
                    api = "responses"
                elif path.endswith("/chat/completions"):
                    outputs = _chat_tool_outputs(body)
                    api = "chat"
                else:
                    return 404, {"error": {"message": f"Invalid URL (POST {self.path})"}}, {}, None
            except BadRequest as error:
                return (
                    400,
                    {"error": {"message": str(error), "type": "invalid_request_error"}},
                    {},
                    None,
                )
            turn = with_usage(traits, state.next_turn(api, body, outputs))
            if turn.fault is not None and turn.fault not in FAULTS:
                raise ValueError(f"unknown fault {turn.fault!r}; choose from {sorted(FAULTS)}")
            if not turn.quirks <= QUIRKS:
                raise ValueError(f"unknown quirks {sorted(turn.quirks - QUIRKS)}")
            self._fault = turn.fault
            self._trickle_s = turn.trickle_s
            if turn.fault == "hang":
                return 200, None, {}, None
            if turn.delay_s:
                state.closing.wait(turn.delay_s)
            if turn.status != 200:
                headers = {}
                if turn.retry_after_ms is not None:
                    headers["retry-after-ms"] = str(turn.retry_after_ms)
                error = {"message": turn.error_message, "type": "server_error", "code": None}
                return turn.status, {"error": error}, headers, None
            request_id = {"x-request-id": state.new_id("req")}
            if api == "responses":
                payload = responses_body(state, body, turn)
                if body.get("stream"):
                    events = responses_events(payload, turn.stall_after_text_s, turn.fault)
                    return 200, None, request_id, events
                return 200, payload, request_id, None
            payload = chat_body(state, body, turn)
            if body.get("stream"):
                return 200, None, request_id, chat_stream(body, payload, turn)
            return 200, payload, request_id, None

        def _probe_answer(
            self, body: dict[str, Any], wire: str, turn: Turn
        ) -> tuple[int, Any, dict[str, str], Any]:
            """The pre-flight's probe answered ``OK``, streamed when it asks to be."""
            if wire == "responses":
                payload = responses_body(state, body, turn)
                if body.get("stream"):
                    return 200, None, {}, responses_events(payload)
            else:
                payload = chat_body(state, body, turn)
                if body.get("stream"):
                    return 200, None, {}, chat_stream(body, payload, turn)
            return 200, with_timings(state.traits, body, payload), {}, None

        def _send_json(
            self, status: int, payload: Any, headers: dict[str, str] | None = None
        ) -> None:
            self._send_bytes(status, "application/json", json.dumps(payload).encode(), headers)

        def _send_bytes(
            self, status: int, content_type: str, data: bytes, headers: dict[str, str] | None = None
        ) -> None:
            try:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (a cancelled slow request)

        def _send_events(
            self, events: Iterator[tuple[str, dict[str, Any]]], headers: dict[str, str]
        ) -> None:
            """Server-sent events over a kept-alive connection, chunked like the real service."""
            self.send_response(200)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            trickle = self._trickle_s
            try:
                for number, (kind, data) in enumerate(events):
                    if trickle and state.closing.wait(trickle):
                        raise BrokenPipeError("the server is closing")
                    if data is DONE:
                        self._chunk(b"data: [DONE]\n\n")
                    elif kind is None:  # chat completions: data lines only
                        self._chunk(f"data: {json.dumps(data)}\n\n".encode())
                    else:
                        payload = dict(data, type=kind, sequence_number=number)
                        self._chunk(f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode())
                self._chunk(b"")
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def refused(traits: ServerTraits, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The error a real server of this flavor answers a request with, if any: a model it does not
    serve (llama.cpp serves its one model under any name), a prompt over its context."""
    model = str(body.get("model") or "")
    if traits.models and model not in traits.models and traits.flavor != "llama.cpp":
        return 404, unknown_model_error(traits.flavor, model)
    tokens = prompt_tokens(body)
    if traits.context_tokens and tokens >= traits.context_tokens and traits.flavor != "ollama":
        return 400, overflow_error(traits.flavor, tokens, traits.context_tokens)
    return None


def with_usage(traits: ServerTraits, turn: Turn) -> Turn:
    """``turn`` as the server sends it: without usage when the server reports none."""
    if traits.reports_usage:
        return turn
    return dataclasses.replace(turn, quirks=turn.quirks | {"no_usage"})


def chat_stream(
    body: dict[str, Any], payload: dict[str, Any], turn: Turn
) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """The chunks of a streamed chat reply, the usage chunk only when the request asked for it
    (``stream_options.include_usage``), then ``[DONE]`` (none after a fault)."""
    asked = (body.get("stream_options") or {}).get("include_usage")
    chunks = (
        (None, chunk)
        for chunk in chat_events(payload, turn.fault, turn.stall_after_text_s, turn.quirks)
        if asked or "usage" not in chunk
    )
    return itertools.chain(chunks, [] if turn.fault else [(None, DONE)])


def with_timings(traits: ServerTraits, body: dict[str, Any], payload: dict[str, Any]) -> Any:
    """llama.cpp adds its prefill and decode speed to every completion."""
    if traits.flavor != "llama.cpp":
        return payload
    tokens = prompt_tokens(body)
    rate = traits.prefill_tokens_per_s or 5000.0
    timings = {"prompt_n": tokens, "prompt_ms": 1000.0 * tokens / rate, "prompt_per_second": rate}
    return payload | {"timings": timings | {"predicted_n": 1, "predicted_per_second": 50.0}}


def server_facts(
    state: FakeOpenAIServer, path: str, body: Any = None
) -> tuple[int, dict[str, Any]]:
    """What ``GET /v1/models``, ``GET /props``, ``POST /tokenize`` and ``POST /api/show`` answer,
    as the flavor's server does (a route it does not have is its 404)."""
    traits = state.traits
    flavor, context = traits.flavor, traits.context_tokens
    if path.endswith("/models"):
        listed = [model_entry(traits, name) for name in traits.models]
        return 200, {"object": "list", "data": listed}
    if path == "/props" and flavor == "llama.cpp":
        settings = {"n_ctx": context or 4096, "params": {"temperature": 0.8, "n_predict": -1}}
        alias = traits.models[0] if traits.models else "model.gguf"
        return 200, {
            "default_generation_settings": settings,
            "total_slots": 1,
            "model_alias": alias,
            "model_path": f"/models/{alias}",
        }
    if path == "/tokenize" and flavor in ("llama.cpp", "vllm") and isinstance(body, dict):
        text = str(body.get("content") if flavor == "llama.cpp" else body.get("prompt") or "")
        tokens = list(range(fake_tokens(text)))
        if flavor == "llama.cpp":
            return 200, {"tokens": tokens}
        return 200, {"count": len(tokens), "max_model_len": context, "tokens": tokens}
    if path == "/api/show" and flavor == "ollama" and isinstance(body, dict):
        if traits.models and body.get("model") not in traits.models:
            return 404, {"error": f"model '{body.get('model')}' not found"}
        show: dict[str, Any] = {"model_info": {"llama.context_length": 131072}, "details": {}}
        if context:
            show["parameters"] = f"num_ctx                        {context}"
        return 200, show
    return 404, not_found_body(flavor, path)


def model_entry(traits: ServerTraits, name: str) -> dict[str, Any]:
    """One ``GET /v1/models`` entry, with what the flavor adds."""
    entry: dict[str, Any] = {"id": name, "object": "model", "created": 0, "owned_by": "fake"}
    if traits.flavor == "vllm":
        entry |= {"owned_by": "vllm", "root": name, "max_model_len": traits.context_tokens}
    elif traits.flavor == "llama.cpp":
        meta = {"n_ctx": traits.context_tokens or 4096, "n_ctx_train": 8192, "n_vocab": 49152}
        entry |= {"owned_by": "llamacpp", "aliases": [], "meta": meta}
    return entry


@contextmanager
def serve_openai(
    script: Script,
    *,
    api_key: str | None = "test-key",
    pages: dict[str, tuple[str, str]] | None = None,
    traits: ServerTraits | None = None,
) -> Iterator[FakeOpenAIServer]:
    """Run a fake on a free loopback port for the duration of the ``with`` block."""
    state = FakeOpenAIServer(
        script=script, api_key=api_key, pages=dict(pages or {}), traits=traits or ServerTraits()
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(state))
    server.daemon_threads = True
    server.block_on_close = False
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, name="fake-openai", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.closing.set()
        server.shutdown()
        server.server_close()
