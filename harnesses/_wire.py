"""Reading a provider's wire format strictly: what the harnesses that parse streams share.

- **Stall bound.** :func:`request_timeout` turns the question's stall bound
  (:meth:`AgentTask.stall_bound`) into an HTTP read timeout: it covers the wait for the response
  headers and every gap between two chunks of a stream, never the whole reply, so a model that
  streams slowly is never cut while one that went silent is. :func:`stalled` names which of the two
  it was (:class:`ProviderStalledError`: transient, then ``provider_unavailable``).
- **One reading of a reply** in every wire: tool-call arguments as JSON text or as an object
  (:func:`read_arguments`), calls without an id get a unique local one (:func:`local_call_id`),
  and a finish reason other than a normal end (output cap, content filter, unknown) says the answer
  was cut (:func:`answer_cut`). A well-formed reply with neither text nor a tool call is the
  model's empty answer (``empty_answer``) in every wire; a body that is not a reply at all is a
  protocol violation.
- **Protocol violations** are :class:`ProviderError` (``provider_error``, infrastructure): a body
  that is not an event stream, an event whose data is not a JSON object, an event type the API
  does not have (:func:`check_event_type`, against the closed set the installed SDK declares), a
  stream that ends before its final event.
"""

from __future__ import annotations

import functools
import json
import typing
import uuid
from collections.abc import AsyncIterator
from typing import Any

from harnesses._protocol import AgentTask, ProviderError, ProviderStalledError

DONE: dict[str, Any] = {}
"""Yielded by :func:`server_sent_events` for the ``data: [DONE]`` line (compare with ``is``)."""

_TIMEOUT_CLASS_NAMES = frozenset(
    {"APITimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout", "PoolTimeout"}
)


def request_timeout(task: AgentTask) -> Any:
    """An ``httpx2.Timeout`` for one streamed request: read (headers, and each gap between
    chunks) and connect bounded by the stall bound, the rest by the time left."""
    import httpx2

    total = max(1.0, task.remaining() + 1.0)
    stall = min(task.stall_bound(), total)
    return httpx2.Timeout(total, read=stall, connect=stall)


def is_timeout(error: BaseException) -> bool:
    """A transport timeout (the SDK's ``APITimeoutError`` or httpx's own, mid-stream)."""
    return any(cls.__name__ in _TIMEOUT_CLASS_NAMES for cls in type(error).__mro__)


def stalled(phase: str, bound: float) -> ProviderStalledError:
    """The error for a provider silent for ``bound`` seconds, before (``headers``) or during
    (``stream``) its reply."""
    if phase == "headers":
        what = f"no response headers within {bound:g} s"
    else:
        what = f"the response stream sent nothing for {bound:g} s"
    return ProviderStalledError(f"{what}: the provider accepted the request, then went silent")


def check_event_stream(status: int, headers: Any, body_head: str = "") -> None:
    """Refuse a streamed reply that is not ``text/event-stream`` (an HTML error page, a proxy)."""
    content_type = headers.get("content-type", "") if headers is not None else ""
    if content_type.split(";")[0].strip().lower() == "text/event-stream":
        return
    snippet = " ".join(body_head.split())[:160]
    raise ProviderError(
        f"the provider answered HTTP {status} with {content_type or 'no content type'} instead "
        f"of an event stream" + (f": {snippet}" if snippet else "")
    )


async def server_sent_events(lines: Any) -> AsyncIterator[dict[str, Any]]:
    """The ``data`` payloads of a server-sent event stream, each a JSON object; :data:`DONE` for
    ``[DONE]``. Data that is not a JSON object is a :class:`ProviderError`."""
    data: list[str] = []
    async for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
            continue
        if line or not data:
            continue
        payload, data = "\n".join(data), []
        yield _event(payload)
    if data:
        yield _event("\n".join(data))


def _event(payload: str) -> dict[str, Any]:
    if payload.strip() == "[DONE]":
        return DONE
    try:
        event = json.loads(payload)
    except json.JSONDecodeError:
        raise ProviderError(
            f"the stream sent an event that is not JSON: {payload[:120]!r}"
        ) from None
    if not isinstance(event, dict):
        raise ProviderError(f"the stream sent an event that is not an object: {payload[:120]!r}")
    return event


def _declared_types(annotation: Any) -> frozenset[str]:
    """The ``type`` literals of every pydantic model in a (nested, annotated) union."""
    found: set[str] = set()
    pending = [annotation]
    while pending:
        item = pending.pop()
        fields = getattr(item, "model_fields", None)
        if isinstance(fields, dict) and "type" in fields:
            found.update(
                a for a in typing.get_args(fields["type"].annotation) if isinstance(a, str)
            )
        else:
            pending.extend(typing.get_args(item))
    return frozenset(found)


@functools.cache
def responses_event_types() -> frozenset[str]:
    """Every Responses API stream event type the installed ``openai`` SDK declares."""
    from openai.types.responses import ResponseStreamEvent

    return _declared_types(ResponseStreamEvent)


@functools.cache
def messages_event_types() -> frozenset[str]:
    """Every Messages API stream event type the installed ``anthropic`` SDK declares, plus
    ``ping`` and ``error`` (which the SDK handles itself)."""
    from anthropic.types import RawMessageStreamEvent

    return _declared_types(RawMessageStreamEvent) | {"ping", "error"}


def check_event_type(kind: Any, known: frozenset[str], api: str) -> None:
    """An event type outside the API's closed set is a protocol violation (a version mismatch or
    a proxy rewriting the stream): the reply cannot be trusted to be complete."""
    if kind not in known:
        raise ProviderError(f"the {api} stream sent an unknown event type {kind!r}")


# --------------------------------------------------------------------------------------------------
# One reading of a model reply, whatever the wire (Responses, Chat Completions, Messages, the
# Claude CLI's stream)
# --------------------------------------------------------------------------------------------------

COMPLETE_FINISH = frozenset(
    {"stop", "tool_calls", "function_call", "end_turn", "tool_use", "stop_sequence", "completed"}
)
"""Finish reasons of a reply the model ended itself (every wire's words for it)."""
LENGTH_FINISH = frozenset(
    {"length", "max_tokens", "max_output_tokens", "model_context_window_exceeded"}
)
"""Finish reasons of a reply cut at the output-token cap (or the context's end)."""
FILTER_FINISH = frozenset({"content_filter", "refusal"})
"""Finish reasons of a reply the provider's filter stopped."""


def answer_cut(finish_reason: str | None) -> str | None:
    """One line on why a reply is not a finished one, or None when it is (or the server said
    nothing: a finish reason is optional in most wires)."""
    if finish_reason is None or finish_reason in COMPLETE_FINISH:
        return None
    if finish_reason in LENGTH_FINISH:
        return f"the reply was cut at the output-token cap (finish reason {finish_reason!r})"
    if finish_reason in FILTER_FINISH:
        return f"the provider's filter stopped the reply (finish reason {finish_reason!r})"
    return f"the reply ended with a finish reason the harness does not know ({finish_reason!r})"


def read_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Tool-call arguments however a server sends them: JSON text (the OpenAI wires), an object
    (llama.cpp, Ollama, the Messages API) or nothing. (dict, None) or (None, what is wrong)."""
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return None, f"arguments must be a JSON object, got {type(raw).__name__}"
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as error:
        return None, f"arguments are not valid JSON ({error.msg} at position {error.pos})"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def arguments_text(raw: Any) -> str:
    """The arguments as the JSON text a conversation sends back (an object is serialised)."""
    if raw is None:
        return "{}"
    return raw if isinstance(raw, str) else json.dumps(raw, default=str)


def local_call_id() -> str:
    """An id for a tool call the server sent without one: unique, so no two calls share one."""
    return f"call_local_{uuid.uuid4().hex[:16]}"
