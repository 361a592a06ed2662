"""A tiny OpenAI-compatible chat-completions server for judge tests.

It speaks the real wire format (``POST /v1/chat/completions``, JSON in, JSON out, usage block) so
the real DSPy ``dspy.LM("openai/...", api_base=...)`` client drives it. Replies come from a callable
that sees the request body; every request is recorded for assertions on prompts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], str]


class FakeHTTPError(Exception):
    """Raised by a responder to answer with this HTTP status and OpenAI-style error body."""

    def __init__(self, status: int, message: str, error_type: str = "invalid_request_error"):
        super().__init__(message)
        self.status = status
        self.error_type = error_type


@dataclass
class FakeChatServer:
    """State of one running fake: the base URL for ``api_base`` and what it has received."""

    base_url: str
    responder: Responder
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every request but the pre-flight calls."""
    preflights: list[dict[str, Any]] = field(default_factory=list)
    """The judge's pre-flight calls (``judge._dspy_judge.PREFLIGHT_PROMPT``), answered "OK"."""
    prompt_tokens: int = 100
    completion_tokens: int = 20
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply_for(self, body: dict[str, Any]) -> dict[str, Any]:
        from judge._dspy_judge import PREFLIGHT_PROMPT

        messages = body.get("messages") or [{}]
        if PREFLIGHT_PROMPT in str(messages[-1].get("content", "")):
            with self.lock:  # the judge's one call before judging: answered, counted apart
                self.preflights.append(body)
            return self._payload(body, "OK")
        with self.lock:
            self.requests.append(body)
        return self._payload(body, self.responder(body))

    def _payload(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
                "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            },
        }


def _handler_for(state: FakeChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                payload = state.reply_for(body)
            except FakeHTTPError as exc:
                self._send(exc.status, {"error": {"message": str(exc), "type": exc.error_type}})
                return
            except Exception as exc:  # the responder decides to fail the request
                self._send(500, {"error": {"message": str(exc), "type": "server_error"}})
                return
            self._send(200, payload)

        def _send(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def serve_fake_chat(responder: Responder, port: int = 0, **usage: int) -> Iterator[FakeChatServer]:
    """Run the fake on a loopback port (a free one by default) for the ``with`` block."""
    state = FakeChatServer(base_url="", responder=responder, **usage)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(state))
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def chat_adapter_reply(fields: dict[str, Any]) -> str:
    """A reply in DSPy's ChatAdapter format: ``[[ ## name ## ]]`` sections, then ``completed``."""
    parts = []
    for name, value in fields.items():
        text = value if isinstance(value, str) else json.dumps(value)
        parts.append(f"[[ ## {name} ## ]]\n{text}")
    parts.append("[[ ## completed ## ]]")
    return "\n\n".join(parts)
