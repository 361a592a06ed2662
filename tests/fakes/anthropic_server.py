"""A local server speaking the Anthropic Messages API, driven by a scripted model.

It is protocol-faithful enough for the real clients used here: the Claude CLI (``x-api-key``,
``anthropic-version: 2023-06-01``, streaming ``POST /v1/messages?beta=true``, a ``role: "system"``
message, ``<system-reminder>`` blocks) and the ``anthropic`` 2.x SDK (``Authorization: Bearer``,
newer ``anthropic-version``, streaming or not). ``POST /v1/messages/count_tokens`` and ``GET
/v1/models`` are answered too; anything else gets an Anthropic-style 404 and is logged in
``unknown_requests``.

The model is a script of :class:`Reply` objects. The turn of a conversation is the number of
assistant messages in the request, so the server is stateless per conversation and any number of
conversations may run at once (one script serves them all)::

    model = ScriptedModel([
        Reply(text="Looking it up.", tool_uses=[ToolUse("mcp__erp__get_customer", {"id": "C1"})]),
        Reply(text="The balance is 12.00 USD."),
    ])
    with AnthropicFakeServer(model) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "k"}

A :class:`Reply` may stall (``stall_s``) before or in the middle of its stream, to test deadlines;
stalls end early when the server is closed or the client hangs up. It may also break the protocol
(``fault``): ``hang`` (accept the request, send nothing, not even headers), ``truncate`` (end the
stream before ``message_stop``), ``non_json`` (a 200 whose body is an HTML page) or
``unknown_event`` (an event type the Messages API does not have); and ``trickle_s`` streams it
slowly (a live model that types, never silent longer than that). Real servers' shapes: a reply
without usage (``omit_usage``), an empty one (``empty``), any ``stop_reason``, tool uses without
an id (``omit_id``) or with their input as JSON text (``input_as_text``, not streamed).
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.fakes._sockets import hang_up

MAIN_LOOP_MARKER = "mcp__"
"""A request whose tool list has a tool starting with this is the agent's main loop."""


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    """Tool-use id; generated (unique per request) when None."""
    raw_input: str | None = None
    """When streaming, sent verbatim as the input JSON instead of ``input`` (e.g. malformed)."""
    input_as_text: bool = False
    """Not streamed: ``input`` sent as JSON text instead of an object (as some proxies do)."""
    omit_id: bool = False
    """Send the block without an ``id`` (a server that leaves it out)."""


@dataclass(frozen=True)
class Reply:
    """One assistant message of the scripted model."""

    text: str = ""
    tool_uses: tuple[ToolUse, ...] | list[ToolUse] = ()
    thinking: str | None = None
    """When given, a ``thinking`` block precedes the text."""
    input_tokens: int | None = None
    """Reported input tokens; None = a size-based estimate of the request."""
    output_tokens: int | None = None
    """Reported output tokens; None = a size-based estimate of the reply."""
    cache_read_input_tokens: int = 0
    stall_s: float = 0.0
    """Seconds to stall (ends early when the server closes)."""
    stall_after_text: bool = False
    """Stall after streaming the text (a half-written message) instead of before the response."""
    http_error: tuple[int, str] | None = None
    """Answer with this HTTP status and Anthropic error type instead, e.g.
    ``(529, "overloaded_error")``."""
    stop_reason: str | None = None
    """Overrides the natural stop reason (``tool_use`` when tools are used, else ``end_turn``)."""
    fault: str | None = None
    """Break the protocol: ``hang``, ``truncate``, ``non_json`` or ``unknown_event``."""
    trickle_s: float = 0.0
    """When streaming, wait this long before every event and send text a few characters at a
    time: a slow model that is alive."""
    omit_usage: bool = False
    """Send no ``usage`` (neither in the message nor in ``message_delta``): a server that does
    not count tokens."""
    empty: bool = False
    """An empty reply: ``content: []`` (no text block at all)."""


FAULTS = frozenset({"hang", "truncate", "non_json", "unknown_event"})
NON_JSON_BODY = b"<html><body><h1>502 Bad Gateway</h1></body></html>"


Script = list[Reply] | Callable[[dict[str, Any], int], Reply]


DEFAULT_WEB_RESULTS = [
    ("https://example.com/contoso-annual-report-2025", "Contoso annual report 2025"),
    ("https://example.org/news/contoso-q3", "Contoso third-quarter results"),
]


def web_search_tool(body: dict[str, Any]) -> dict[str, Any] | None:
    """The server-side ``web_search_*`` tool a request offers (the CLI's WebSearch), if any."""
    for tool in body.get("tools") or []:
        if str(tool.get("type", "")).startswith("web_search"):
            return tool
    return None


def _estimate_tokens(payload: Any) -> int:
    return max(1, len(json.dumps(payload, default=str)) // 4)


def request_turn(body: dict[str, Any]) -> int:
    """The 0-based turn of a conversation: how many assistant messages the request carries."""
    return sum(1 for message in body.get("messages", []) if message.get("role") == "assistant")


def is_main_loop(body: dict[str, Any]) -> bool:
    """True for requests from the agent loop (they offer the MCP tools), not CLI side queries."""
    return any(
        str(tool.get("name", "")).startswith(MAIN_LOOP_MARKER) for tool in body.get("tools") or []
    )


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """All ``tool_result`` blocks the request carries, oldest first."""
    results = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            results += [block for block in content if block.get("type") == "tool_result"]
    return results


def tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


class ScriptedModel:
    """Plays ``script`` for main-loop requests and ``side_reply`` for anything else.

    ``script`` is a list (turn n gets item n; turns past the end get the last item) or a function
    ``(request_body, turn) -> Reply``. ``main_loop`` decides which requests are the agent's own
    (default: those offering MCP tools, or every request when ``all_requests_main`` is set).
    """

    def __init__(
        self,
        script: Script,
        *,
        side_reply: Reply | None = None,
        all_requests_main: bool = False,
        web_results: list[tuple[str, str]] | None = None,
    ) -> None:
        self._script = script
        self._side_reply = side_reply or Reply(text="OK")
        self._all_requests_main = all_requests_main
        self.web_results = web_results if web_results is not None else DEFAULT_WEB_RESULTS
        """(url, title) hits returned by the server-side ``web_search`` tool."""

    def reply(self, body: dict[str, Any]) -> tuple[Reply, bool]:
        """The reply to ``body`` and whether it came from the main script."""
        if web_search_tool(body) is not None:
            return Reply(text=f"Found {len(self.web_results)} results."), False
        if not (self._all_requests_main or is_main_loop(body)):
            return self._side_reply, False
        turn = request_turn(body)
        if callable(self._script):
            return self._script(body, turn), True
        if not self._script:
            return Reply(text=""), True
        return self._script[min(turn, len(self._script) - 1)], True


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    main_loop: bool = False
    received_at: float = field(default_factory=time.monotonic)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: AnthropicFakeServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls
    server: _HTTPServer
    _trickle_s = 0.0
    _piece_size = 40

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    @property
    def fake(self) -> AnthropicFakeServer:
        return self.server.fake

    def _read_body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _record(self, body: Any) -> RecordedRequest:
        parts = urlsplit(self.path)
        record = RecordedRequest(
            method=self.command,
            path=parts.path,
            query=parts.query,
            headers={key.lower(): value for key, value in self.headers.items()},
            body=body,
        )
        with self.fake.lock:
            self.fake.requests.append(record)
        return record

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        self.end_headers()
        self.wfile.write(data)

    def _send_raw(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, kind: str, message: str) -> None:
        self._send_json(status, {"type": "error", "error": {"type": kind, "message": message}})

    def _authorised(self, record: RecordedRequest) -> bool:
        key = record.headers.get("x-api-key")
        bearer = record.headers.get("authorization", "")
        if not key and bearer.lower().startswith("bearer "):
            key = bearer[7:].strip()
        if not key:
            self._send_error(401, "authentication_error", "x-api-key header is required")
            return False
        if self.fake.api_key is not None and key != self.fake.api_key:
            self._send_error(401, "authentication_error", "invalid x-api-key")
            return False
        return True

    def do_HEAD(self) -> None:
        self._record(None)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        record = self._record(None)
        if not self._authorised(record):
            return
        if record.path.rstrip("/") == "/v1/models":
            model = {
                "type": "model",
                "id": self.fake.model_id,
                "display_name": "Scripted fake model",
                "created_at": "2026-01-01T00:00:00Z",
            }
            self._send_json(
                200,
                {
                    "data": [model],
                    "has_more": False,
                    "first_id": model["id"],
                    "last_id": model["id"],
                },
            )
            return
        self._unknown(record)

    def do_POST(self) -> None:
        record = self._record(self._read_body())
        if not self._authorised(record):
            return
        path = record.path.rstrip("/")
        if path == "/v1/messages":
            self._messages(record)
        elif path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": _estimate_tokens(record.body)})
        else:
            self._unknown(record)

    def _unknown(self, record: RecordedRequest) -> None:
        with self.fake.lock:
            self.fake.unknown_requests.append(record)
        self._send_error(
            404, "not_found_error", f"{record.method} {record.path} is not served here"
        )

    def _messages(self, record: RecordedRequest) -> None:
        body = record.body
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._send_error(400, "invalid_request_error", "messages: field required")
            return
        try:
            reply, main = self.fake.model.reply(body)
        except Exception as error:  # a broken script: answer 400 (never retried) and keep the error
            with self.fake.lock:
                self.fake.script_errors.append(f"{type(error).__name__}: {error}")
            self._send_error(400, "invalid_request_error", f"scripted model failed: {error!r}")
            return
        record.main_loop = main
        if reply.fault is not None and reply.fault not in FAULTS:
            raise ValueError(f"unknown fault {reply.fault!r}; choose from {sorted(FAULTS)}")
        if reply.fault == "hang":
            self.fake.hang(self.connection)
            self.close_connection = True
            return
        if reply.fault == "non_json":
            self._send_raw(200, "text/html", NON_JSON_BODY)
            return
        if reply.http_error:
            status, kind = reply.http_error
            self._send_error(status, kind, f"scripted {kind}")
            return
        if reply.stall_s and not reply.stall_after_text and self.fake.stall(reply.stall_s):
            self.close_connection = True  # closing: hang up instead of answering
            return
        message = self.fake.build_message(body, reply)
        if body.get("stream"):
            self._stream(message, reply)
        elif reply.fault == "truncate":  # a body cut mid-JSON (its length says so)
            data = json.dumps(message).encode()
            self._send_raw(200, "application/json", data[: len(data) // 2])
        else:
            self._send_json(200, message)

    # --- streaming -----------------------------------------------------------------------------

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _event(self, kind: str, payload: dict[str, Any]) -> None:
        if self._trickle_s and self.fake.stall(self._trickle_s):
            raise BrokenPipeError("the server is closing")
        self._chunk(f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode())

    def _stream(self, message: dict[str, Any], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        self.end_headers()
        try:
            self._stream_events(message, reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _stream_events(self, message: dict[str, Any], reply: Reply) -> None:
        self._trickle_s = reply.trickle_s
        self._piece_size = 4 if reply.trickle_s else 40
        start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
        if "usage" in message:
            start["usage"] = {**message["usage"], "output_tokens": 1}
        self._event("message_start", {"type": "message_start", "message": start})
        self._event("ping", {"type": "ping"})
        if reply.fault == "unknown_event":
            self._event("surprise_event", {"type": "surprise_event", "detail": "not in the API"})
        for index, block in enumerate(message["content"]):
            stall = block["type"] == "text" and reply.stall_after_text and reply.stall_s > 0
            cut = block["type"] == "text" and reply.fault == "truncate"
            self._stream_block(index, block, stop=not (stall or cut))
            if stall:  # the text is typed but its block never closes: a half-written message
                self.fake.stall(reply.stall_s)
                self.close_connection = True
                return
            if cut:  # the body ends cleanly, but the message never did
                self._chunk(b"")
                return
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        }
        if "usage" in message:
            delta["usage"] = {"output_tokens": message["usage"]["output_tokens"]}
        self._event("message_delta", delta)
        self._event("message_stop", {"type": "message_stop"})
        self._chunk(b"")

    def _stream_block(self, index: int, block: dict[str, Any], *, stop: bool = True) -> None:
        kind = block["type"]
        if kind == "text":
            first = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": piece}
                for piece in _pieces(block["text"], self._piece_size)
            ]
        elif kind == "thinking":
            first = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": piece}
                for piece in _pieces(block["thinking"], self._piece_size)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "web_search_tool_result":
            first, deltas = block, []
        else:
            first = {**block, "input": {}}
            raw = self.fake.raw_inputs.get(block.get("id", ""))
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in _pieces(raw if raw is not None else json.dumps(block["input"]))
            ]
        self._event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": first},
        )
        for delta in deltas:
            self._event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        if stop:
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})


def _pieces(text: str, size: int = 40) -> Iterator[str]:
    if not text:
        return
    for start in range(0, len(text), size):
        yield text[start : start + size]


class AnthropicFakeServer:
    """The fake API on a free loopback port. Use as a context manager (or ``start``/``close``)."""

    def __init__(
        self,
        model: ScriptedModel | Script,
        *,
        api_key: str | None = None,
        model_id: str = "claude-sonnet-4-5",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.model = model if isinstance(model, ScriptedModel) else ScriptedModel(model)
        self.api_key = api_key
        """When set, requests with another key get 401."""
        self.model_id = model_id
        self.requests: list[RecordedRequest] = []
        self.unknown_requests: list[RecordedRequest] = []
        self.script_errors: list[str] = []
        """Exceptions raised by the script (each answered with HTTP 400)."""
        self.lock = threading.Lock()
        self._closing = threading.Event()
        self._ids = itertools.count(1)
        self.raw_inputs: dict[str, str] = {}
        """Tool-use id -> raw input JSON to stream (``ToolUse.raw_input``)."""
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def main_requests(self) -> list[RecordedRequest]:
        with self.lock:
            return [record for record in self.requests if record.main_loop]

    def start(self) -> AnthropicFakeServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, daemon=True, name="anthropic-fake"
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> AnthropicFakeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def stall(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True when the server is closing (the caller should give up)."""
        return self._closing.wait(seconds)

    def hang(self, connection: socket.socket) -> None:
        """Send nothing until the client hangs up or the server closes (a provider that accepted
        the connection and then went silent)."""
        hang_up(connection, self._closing)

    def _web_search_blocks(self, body: dict[str, Any], serial: int) -> list[dict[str, Any]]:
        prompt = (
            tool_result_text({"content": body["messages"][-1].get("content")})
            if isinstance(body["messages"][-1].get("content"), list)
            else str(body["messages"][-1].get("content"))
        )
        query = prompt.rsplit(":", 1)[-1].strip() or prompt
        use_id = f"srvtoolu_{serial:04d}"
        hits = [
            {
                "type": "web_search_result",
                "url": url,
                "title": title,
                "encrypted_content": "ZmFrZQ==",
                "page_age": None,
            }
            for url, title in self.model.web_results
        ]
        return [
            {
                "type": "server_tool_use",
                "id": use_id,
                "name": "web_search",
                "input": {"query": query},
            },
            {"type": "web_search_tool_result", "tool_use_id": use_id, "content": hits},
        ]

    def build_message(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        serial = next(self._ids)
        content: list[dict[str, Any]] = []
        if reply.thinking:
            content.append(
                {"type": "thinking", "thinking": reply.thinking, "signature": f"sig_{serial}"}
            )
        searched = web_search_tool(body) is not None
        if searched:
            content += self._web_search_blocks(body, serial)
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        streamed = bool(body.get("stream"))
        for number, use in enumerate(reply.tool_uses):
            block_id = use.id or f"toolu_{serial:04d}_{number}_{uuid.uuid4().hex[:8]}"
            if use.raw_input is not None:
                self.raw_inputs[block_id] = use.raw_input
            sent_input: Any = use.input
            if use.input_as_text and not streamed:
                sent_input = json.dumps(use.input)
            block = {"type": "tool_use", "id": block_id, "name": use.name, "input": sent_input}
            if use.omit_id:
                del block["id"]
            content.append(block)
        if not content and not reply.empty:
            content.append({"type": "text", "text": ""})
        stop = reply.stop_reason or ("tool_use" if reply.tool_uses else "end_turn")
        usage = {
            "input_tokens": reply.input_tokens
            if reply.input_tokens is not None
            else _estimate_tokens(body.get("messages")),
            "output_tokens": reply.output_tokens
            if reply.output_tokens is not None
            else _estimate_tokens(content),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": reply.cache_read_input_tokens,
        }
        if searched:
            usage["server_tool_use"] = {"web_search_requests": 1, "web_fetch_requests": 0}
        message = {
            "id": f"msg_fake{serial:06d}{uuid.uuid4().hex[:8]}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or self.model_id,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if reply.omit_usage:
            del message["usage"]
        return message
