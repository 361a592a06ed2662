"""Incremental reader of the Claude CLI's ``--output-format stream-json`` events.

Each line the CLI prints is fed to :meth:`StreamParser.feed_line` the moment it arrives, and the
parser writes what it learns straight into the question's :class:`TrajectoryDraft`: the answer so
far, each tool call when its result comes back, token usage, turns. A timeout therefore keeps
everything up to the last line read. Event shapes (CLI 2.1, ``--verbose``, optionally
``--include-partial-messages``):

- ``system/init``: ``model``, ``tools``, ``mcp_servers: [{name, status}]``, ``permissionMode``;
  ``system/api_retry``: the CLI retrying an overloaded or failing API call (kept in
  ``draft.extra["api_retries"]``; ``draft.provider_failure`` says the provider is failing until
  an assistant message arrives). The model of ``system/init`` becomes ``draft.model``.
- ``stream_event``: raw Messages-API stream events (``message_start``, ``content_block_delta`` ...),
  only with ``--include-partial-messages``; they carry text as it is typed and per-message usage.
- ``assistant``: one event per finished content block (text, thinking, tool_use); blocks of one API
  message share ``message.id``.
- ``user``: ``tool_result`` blocks (``is_error`` when the tool failed or was denied) plus
  ``tool_use_result``, the CLI's structured copy of the output.
- ``result``: ``subtype`` (``success``, ``error_max_turns``, ``error_during_execution`` ...),
  ``is_error``, ``num_turns``, ``usage``, ``total_cost_usd``, ``duration_ms``,
  ``permission_denials``.

``draft.turns`` is the CLI's ``num_turns`` once the result arrives (the count ``--max-turns`` caps),
before that the number of assistant API messages so far. ``draft.usage.input_tokens`` counts every
prompt token (fresh, cache writes, cache reads); ``cached_input_tokens`` is the cache-read part.
Tool calls are listed in the order the model issued them, even when parallel calls finish out of
order.

Events with a non-null ``parent_tool_use_id`` come from a sub-agent: their tool calls are recorded
(and listed in ``draft.extra["subagent_tool_calls"]``), their text (the CLI 2.1 emits the
sub-agent's prompt; its own replies reach the parent as the Agent tool's result) goes to
``draft.extra["subagent_messages"]`` and never into the answer.
"""

from __future__ import annotations

import bisect
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from harnesses._pricing import estimate_cost
from harnesses._protocol import TrajectoryDraft
from harnesses._wire import answer_cut
from ledgerbench_core.trajectory import Usage

WEB_TOOLS = frozenset({"WebSearch", "WebFetch"})
UNFINISHED_TOOL_OUTPUT = "(no result: the run ended before the tool returned)"
SYNTHETIC_MODEL = "<synthetic>"
"""``message.model`` of the assistant messages the CLI writes itself (e.g. "API Error: 500 ...")."""
_DENIAL = re.compile(r"^Permission to use (\S+) has been denied")
_SUBAGENT_TEXT_LIMIT = 4000
_MALFORMED_SAMPLE_LIMIT = 5


def tool_server(name: str) -> str | None:
    """``erp`` for ``mcp__erp__x``, ``web`` for WebSearch/WebFetch, else None (a built-in)."""
    if name.startswith("mcp__"):
        return name.split("__")[1] or None
    if name in WEB_TOOLS:
        return "web"
    return None


def _content_text(content: Any) -> str:
    """Text of a tool_result ``content`` (a string or a list of blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type"):
                    parts.append(f"[{block['type']} block]")
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return json.dumps(content, default=str)


def _usage_from(raw: dict[str, Any] | None) -> Usage:
    """Anthropic usage -> our :class:`Usage`. ``input_tokens`` counts every prompt token (fresh,
    cache writes and cache reads); ``cached_input_tokens`` is the cache-read part of it."""
    raw = raw or {}
    fresh = int(raw.get("input_tokens") or 0)
    cache_write = int(raw.get("cache_creation_input_tokens") or 0)
    cache_read = int(raw.get("cache_read_input_tokens") or 0)
    return Usage(
        input_tokens=fresh + cache_write + cache_read,
        output_tokens=int(raw.get("output_tokens") or 0),
        cached_input_tokens=cache_read,
    )


@dataclass
class _Message:
    """One top-level assistant API message being assembled."""

    id: str
    event_texts: list[str] = field(default_factory=list)
    """Complete text blocks from ``assistant`` events."""
    stream_texts: list[str] = field(default_factory=list)
    """Text blocks from stream deltas (possibly still being typed), in block order."""
    stream_block_kinds: dict[int, str] = field(default_factory=dict)
    input_usage: dict[str, Any] = field(default_factory=dict)
    output_tokens: int = 0
    thinking: list[str] = field(default_factory=list)
    transcript: Any = None
    """The ``Message`` of this turn in the draft's conversation."""
    stop_reason: str | None = None
    """The API message's stop reason (``end_turn``, ``tool_use``, ``max_tokens`` ...)."""
    usage_reported: bool = True
    """False when the API's ``message_start`` carried no usage (the CLI then counts 0)."""
    event: Any = None
    """The ``ModelEvent`` of the API call that produced this turn."""

    def text(self) -> str:
        blocks = self.event_texts + self.stream_texts[len(self.event_texts) :]
        return "".join(blocks)


@dataclass
class _PendingCall:
    sequence: int
    """Order in which the model issued the call (parallel calls may finish in any order)."""
    name: str
    arguments: dict[str, Any]
    started_s: float
    clock: float
    parent_tool_use_id: str | None


class StreamParser:
    """Feeds stream-json lines into ``draft`` as they arrive.

    After the run: :attr:`init` and :attr:`result` hold those events (or None), :attr:`answer` the
    final assistant message. Call :meth:`finish` once the stream ends (normally or not) to record
    tool calls that never got a result.
    """

    def __init__(
        self,
        draft: TrajectoryDraft,
        *,
        stall_s: float | None = None,
        tool_call_cap: int | None = None,
    ) -> None:
        self.draft = draft
        self.stall_s = stall_s
        self.tool_call_cap = tool_call_cap
        """The run's tool-call cap: calls issued past it are not recorded (the CLI is stopped)."""
        self.dropped_calls = 0
        """Tool calls the model issued past the cap."""
        """The CLI's request timeout (``API_TIMEOUT_MS``), to name a retry without a status."""
        self.streaming = False
        """A top-level API message is streaming (started, not stopped): the provider owes events."""
        self._awaiting = False
        """An API request is out and no message of it has started yet."""
        self._abandoned = False
        """The last message's stream was abandoned: its event already says that attempt failed."""
        self.init: dict[str, Any] | None = None
        self.result: dict[str, Any] | None = None
        self.malformed_lines = 0
        self.events = 0
        self._messages: dict[str, _Message] = {}
        self._order: list[str] = []
        self._current_stream_id: str | None = None
        self._pending: dict[str, _PendingCall] = {}
        self._unnamed: list[str] = []
        """Keys of pending calls that came without an id, oldest first."""
        self._issued = 0
        self._recorded_sequences: list[int] = []
        self._subagent_calls: dict[int, str] = {}
        self._denials: list[dict[str, Any]] = []
        self._spawned_s = draft.elapsed()
        self._call_started_s = self._spawned_s
        """When the next API call began: at init, then when the CLI sent tool results back."""
        self._retries_since_call = 0
        self.retries = 0
        self.has_model_output = False
        """Whether any message came from the model (not the CLI's synthetic error messages)."""
        self.api_error: dict[str, Any] | None = None
        """The CLI's synthetic message after an API call failed for good (status, text)."""
        self.reply_cut: str | None = None
        """The CLI gave up on a reply cut at the output cap (``max_tokens``) or refused
        (``refusal``): its synthetic message says so; the model's text so far is the answer."""
        """``system/api_retry`` events so far (the CLI retrying a failing API call)."""
        self.first_retry: float | None = None
        """``time.monotonic()`` of the first retry event."""

    # --- public ----------------------------------------------------------------------------------

    @property
    def cap_passed(self) -> bool:
        """The model issued more tool calls than the cap allows."""
        return self.dropped_calls > 0

    @property
    def calls_pending(self) -> bool:
        """Tool calls under the cap still wait for their results."""
        return bool(self._pending)

    @property
    def answer(self) -> str:
        """The final assistant message so far: the last top-level message that has text."""
        for message_id in reversed(self._order):
            text = self._messages[message_id].text()
            if text.strip():
                return text
        return ""

    def feed_line(self, line: str | bytes) -> dict[str, Any] | None:
        """Parse one line; returns the event, or None for a blank or malformed line (counted)."""
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        line = line.strip()
        if not line:
            return None
        try:
            event = json.loads(line)
        except ValueError:
            self._malformed(line)
            return None
        if not isinstance(event, dict):
            self._malformed(line)
            return None
        self.events += 1
        try:
            self._dispatch(event)
        except (TypeError, AttributeError, KeyError, ValueError):
            # a well-formed line with an unexpected shape: count it, keep the run going
            self._malformed(line)
        return event

    def finish(self, cut: str | None = None) -> None:
        """Record tool calls still waiting for a result (e.g. at a timeout) as unfinished errors,
        and an API call still open when the run ended (``cut`` says why) as a failed model call."""
        for tool_use_id in list(self._pending):
            self._complete_call(tool_use_id, UNFINISHED_TOOL_OUTPUT, is_error=True)
        if cut is not None and self.streaming and self._current_stream_id in self._messages:
            event = self._messages[self._current_stream_id].event
            if event is not None:
                event.error, event.duration_s = cut, None
        elif cut is not None and self._awaiting:
            self.draft.add_model_event(
                self._call_started_s,
                duration_s=None,
                retries=self._retries_since_call,
                error=cut,
                model=self.draft.extra.get("cli_model"),
            )
        self.streaming = self._awaiting = False
        self.draft.extra["stream_events"] = self.events

    def erp_status(self, server: str) -> str | None:
        """The status ``system/init`` reported for MCP server ``server`` (None before init)."""
        if self.init is None:
            return None
        for entry in self.init.get("mcp_servers") or []:
            if isinstance(entry, dict) and entry.get("name") == server:
                return str(entry.get("status"))
        return "missing"

    # --- dispatch --------------------------------------------------------------------------------

    def _malformed(self, line: str) -> None:
        self.malformed_lines += 1
        self.draft.extra["malformed_lines"] = self.malformed_lines
        samples = self.draft.extra.setdefault("malformed_samples", [])
        if len(samples) < _MALFORMED_SAMPLE_LIMIT:
            samples.append(line[:200])

    def _dispatch(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "system":
            self._on_system(event)
        elif kind == "stream_event":
            self._on_stream_event(event)
        elif kind == "assistant":
            self._on_assistant(event)
        elif kind == "user":
            self._on_user(event)
        elif kind == "result":
            self._on_result(event)

    def _on_system(self, event: dict[str, Any]) -> None:
        if event.get("subtype") == "api_retry":
            self._on_retry(event)
            return
        if event.get("subtype") == "status" and event.get("status") == "requesting":
            self._call_started_s = self.draft.elapsed()
            self._awaiting = True
            return
        if event.get("subtype") != "init":
            return
        if self.init is None:  # the CLI's start-up (node, MCP connections) is not working time
            now = self.draft.elapsed()
            self.draft.excluded_s += max(0.0, now - self._spawned_s)
            self._call_started_s = now
            self._awaiting = True
        self.init = event
        extra = self.draft.extra
        extra["cli_version"] = event.get("claude_code_version")
        extra["cli_model"] = event.get("model")
        if self.draft.model is None and event.get("model"):
            self.draft.model = str(event["model"])
        extra["session_id"] = event.get("session_id")
        extra["permission_mode"] = event.get("permissionMode")
        extra["tools_offered"] = list(event.get("tools") or [])
        extra["mcp_servers"] = list(event.get("mcp_servers") or [])

    def _on_retry(self, event: dict[str, Any]) -> None:
        """The CLI retries a failed API call: that attempt is a failed model call."""
        retry = {key: event.get(key) for key in ("attempt", "error_status", "error")}
        retry["delay_ms"] = round(float(event.get("retry_delay_ms") or 0), 1)
        self.draft.extra.setdefault("api_retries", []).append(retry)
        self.draft.excluded_s += retry["delay_ms"] / 1000  # waiting is not working
        self.retries += 1
        self.first_retry = self.first_retry or time.monotonic()
        status = retry.get("error_status")
        if status:
            what = f"API HTTP {status} ({retry.get('error') or 'no detail'})"
        else:  # no status: the request timed out (API_TIMEOUT_MS) or the connection broke
            timeout = f"no response headers within {self.stall_s:g} s, " if self.stall_s else ""
            what = f"API request failed without a status ({timeout}or a broken connection)"
        self.draft.provider_failure = f"{what}, {self.retries} retr" + (
            "y" if self.retries == 1 else "ies"
        )
        now = self.draft.elapsed()
        started = self._call_started_s
        if self.streaming and self._current_stream_id in self._messages:  # died mid-stream
            failed = self._messages[self._current_stream_id].event
            if failed is not None and failed.error is None:
                failed.error = f"stream abandoned: {what}"
            self.streaming = False
        elif self._abandoned:  # that attempt's event already says so
            self._abandoned = False
        else:
            self.draft.add_model_event(
                started,
                duration_s=max(0.0, now - started),
                retries=self._retries_since_call,
                error=what,
                status_code=status if isinstance(status, int) else None,
                model=self.draft.extra.get("cli_model"),
            )
        self._retries_since_call += 1
        self._call_started_s = now + retry["delay_ms"] / 1000
        self._awaiting = True

    def _message(self, message_id: str) -> _Message:
        message = self._messages.get(message_id)
        if message is None:
            message = self._messages[message_id] = _Message(message_id)
            self._order.append(message_id)
            self.draft.turns = len(self._order)
            self._open_turn(message)
        return message

    def _open_turn(self, message: _Message) -> None:
        """A new API message: a turn in the conversation and the model call that produced it."""
        draft = self.draft
        message.transcript = draft.add_message("assistant")
        started = self._call_started_s
        message.event = draft.add_model_event(
            started,
            duration_s=draft.elapsed() - started,
            retries=self._retries_since_call,
            request_id=message.id if not message.id.startswith(("stream-", "event-")) else None,
            model=self.draft.extra.get("cli_model"),
            output=message.transcript,
        )
        self._retries_since_call = 0

    def _refresh_turn(self, message: _Message) -> None:
        """Bring the turn's text, reasoning, usage and duration up to date."""
        if message.transcript is None:
            return
        message.transcript.content = message.text()
        message.transcript.reasoning = "\n\n".join(message.thinking) or None
        raw = {**message.input_usage, "output_tokens": message.output_tokens}
        message.event.usage = _usage_from(raw) if message.usage_reported else None
        message.event.duration_s = round(self.draft.elapsed() - message.event.started_s, 4)

    def _on_stream_event(self, event: dict[str, Any]) -> None:
        if event.get("parent_tool_use_id"):
            return  # sub-agent typing: its finished messages are kept from ``assistant`` events
        raw = event.get("event") or {}
        kind = raw.get("type")
        if kind == "message_start":
            self.draft.provider_failure = None  # the provider answers again
            self.has_model_output = True
            self.streaming, self._awaiting = True, False
            started = raw.get("message") or {}
            message = self._message(str(started.get("id") or f"stream-{len(self._order)}"))
            if not isinstance(started.get("usage"), dict) and message.usage_reported:
                message.usage_reported = False  # the server reports no usage: unknown, not 0
                self.draft.usage_unreported += 1
                if message.event is not None:
                    message.event.usage = None
            message.input_usage = dict(started.get("usage") or {})
            message.output_tokens = int(message.input_usage.get("output_tokens") or 0)
            self._current_stream_id = message.id
            self._update_usage()
            return
        message = self._messages.get(self._current_stream_id or "")
        if message is None:
            return
        if kind == "message_stop":
            self.streaming = False
            if event.get("abandoned_blocks") and message.event is not None:
                message.event.error = "stream abandoned by the CLI (the reply was incomplete)"
                self._abandoned = True
            return
        if kind == "content_block_start":
            block = raw.get("content_block") or {}
            message.stream_block_kinds[int(raw.get("index", 0))] = str(block.get("type"))
            if block.get("type") == "text":
                message.stream_texts.append(str(block.get("text") or ""))
        elif kind == "content_block_delta":
            delta = raw.get("delta") or {}
            if delta.get("type") == "text_delta" and message.stream_texts:
                message.stream_texts[-1] += str(delta.get("text") or "")
                self._refresh_turn(message)
                self.draft.set_answer(self.answer)
        elif kind == "message_delta":
            stop_reason = (raw.get("delta") or {}).get("stop_reason")
            if stop_reason:
                self._note_stop(message, str(stop_reason))
            usage = raw.get("usage") or {}
            if "output_tokens" in usage:
                message.output_tokens = int(usage.get("output_tokens") or 0)
                self._update_usage()
                self._refresh_turn(message)

    def _on_assistant(self, event: dict[str, Any]) -> None:
        body = event.get("message") or {}
        if body.get("model") == SYNTHETIC_MODEL:
            self._on_api_error(event, body)
            return
        self.draft.provider_failure = None
        self.has_model_output = True
        parent = event.get("parent_tool_use_id")
        blocks = body.get("content") or []
        if parent:
            self._on_subagent(parent, blocks)
        else:
            message = self._message(str(body.get("id") or f"event-{len(self._order)}"))
            if body.get("stop_reason"):
                self._note_stop(message, str(body["stop_reason"]))
            if not message.input_usage and body.get("usage"):
                message.input_usage = dict(body["usage"])
                message.output_tokens = int(message.input_usage.get("output_tokens") or 0)
                self._update_usage()
            for block in blocks:
                if block.get("type") == "text":
                    message.event_texts.append(str(block.get("text") or ""))
                elif block.get("type") == "thinking" and block.get("thinking"):
                    message.thinking.append(str(block["thinking"]))
            self._refresh_turn(message)
            self.draft.set_answer(self.answer)
        for block in blocks:
            if block.get("type") == "tool_use":
                if self.tool_call_cap is not None and self._issued >= self.tool_call_cap:
                    self.dropped_calls += 1  # past the run's cap: not run, not recorded
                    self.draft.note_tool_call_cap(self.tool_call_cap, 1)
                    continue
                self._issued += 1
                self._pending[self._call_key(block.get("id"))] = _PendingCall(
                    sequence=self._issued,
                    name=str(block.get("name")),
                    arguments=dict(block.get("input") or {}),
                    started_s=self.draft.elapsed(),
                    clock=time.monotonic(),
                    parent_tool_use_id=parent,
                )

    def _call_key(self, tool_use_id: Any) -> str:
        """The key a call waits under: its id, or (a server that sent none) one of its own."""
        if tool_use_id:
            return str(tool_use_id)
        key = f"no-id-{self._issued}"
        self._unnamed.append(key)
        return key

    def _result_key(self, tool_use_id: Any) -> str:
        """The call a result belongs to: by id, or the oldest call that came without one."""
        if tool_use_id:
            return str(tool_use_id)
        return self._unnamed.pop(0) if self._unnamed else "no-id"

    def _note_stop(self, message: _Message, stop_reason: str) -> None:
        """The message's stop reason: on its model event, and (the latest message's) as the
        answer's finish (a reply cut at the output cap is not a finished answer)."""
        message.stop_reason = stop_reason
        if message.event is not None:
            message.event.finish_reason = stop_reason
        if self._order and self._order[-1] == message.id:
            self.draft.answer_cut = answer_cut(stop_reason)

    def _on_api_error(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        """The CLI's own message after an API call failed for good: not the model's words. The
        CLI words a reply cut at the output cap, or refused, the same way: that is the model's
        reply cut short (the answer so far stands, marked cut), not a provider failure."""
        cut = _cli_cut_reason(event, body)
        if cut is not None:
            self.reply_cut = cut
            self.draft.answer_cut = answer_cut(cut)
            self.draft.extra["cli_reply_cut"] = cut
            self._awaiting = self.streaming = False
            return
        text = " ".join(
            str(block.get("text") or "")
            for block in body.get("content") or []
            if isinstance(block, dict) and block.get("type") == "text"
        ).strip()
        status = event.get("api_error_status") or body.get("api_error_status")
        self.api_error = {"status": status, "message": text[:1000]}
        self.draft.extra["api_error"] = self.api_error
        detail = f"API HTTP {status}: {text}" if status else text or "API error"
        self.draft.provider_failure = detail[:500]
        now = self.draft.elapsed()
        self.draft.add_model_event(
            self._call_started_s,
            duration_s=max(0.0, now - self._call_started_s),
            retries=self._retries_since_call,
            error=detail[:500],
            status_code=status if isinstance(status, int) else None,
            model=self.draft.extra.get("cli_model"),
        )
        self._awaiting = self.streaming = False

    def _on_subagent(self, parent: str, blocks: list[Any], role: str = "assistant") -> None:
        texts = [
            str(block.get("text") or "")
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "text"
        ]
        if not any(text.strip() for text in texts):
            return
        self.draft.extra.setdefault("subagent_messages", []).append(
            {
                "parent_tool_use_id": parent,
                "role": role,
                "text": "".join(texts)[:_SUBAGENT_TEXT_LIMIT],
            }
        )

    def _on_user(self, event: dict[str, Any]) -> None:
        content = (event.get("message") or {}).get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            return
        if event.get("parent_tool_use_id"):
            self._on_subagent(str(event["parent_tool_use_id"]), content, role="user")
        structured = event.get("tool_use_result")
        if not event.get("parent_tool_use_id"):
            self._call_started_s = self.draft.elapsed()  # results go back: the next call begins
            self._awaiting = True
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            text = _content_text(block.get("content"))
            is_error = bool(block.get("is_error"))
            tool_use_id = self._result_key(block.get("tool_use_id"))
            call = self._complete_call(tool_use_id, text, is_error=is_error)
            if is_error and (denied := _DENIAL.match(text)):
                self._denials.append({"tool_name": denied.group(1), "tool_use_id": tool_use_id})
                self.draft.extra["permission_denials"] = list(self._denials)
                if call is not None:
                    self._show_refusal(call, text)
            if call is not None and not is_error and call.server == "web":
                self._record_sources(call.name, call.arguments, text, structured)

    def _show_refusal(self, call: Any, text: str) -> None:
        """A refused call never ran: its tool turn holds the CLI's refusal, as the model read
        it (a tool that ran leaves its turn empty; its output is in ``tool_calls``)."""
        index = next(i for i, recorded in enumerate(self.draft.tool_calls) if recorded is call)
        for message in reversed(self.draft.messages):
            if message.role == "tool" and message.tool_call_index == index:
                message.content = text[: self.draft.output_limit]
                return

    def _complete_call(self, tool_use_id: str, output: str, *, is_error: bool) -> Any:
        pending = self._pending.pop(tool_use_id, None)
        if pending is None:
            return None
        call = self.draft.add_tool_call(
            pending.name,
            pending.arguments,
            output,
            is_error=is_error,
            server=tool_server(pending.name),
            started_s=round(pending.started_s, 4),
            duration_s=round(time.monotonic() - pending.clock, 4),
        )
        # keep the record in the order the model issued the calls, not the order they finished
        position = bisect.bisect(self._recorded_sequences, pending.sequence)
        self._recorded_sequences.insert(position, pending.sequence)
        calls = self.draft.tool_calls
        calls.insert(position, calls.pop())
        if pending.parent_tool_use_id:
            self._subagent_calls[pending.sequence] = pending.parent_tool_use_id
        if self._subagent_calls:  # indexes shift as earlier-issued calls finish later
            self.draft.extra["subagent_tool_calls"] = [
                {"index": index, "parent_tool_use_id": self._subagent_calls[sequence]}
                for index, sequence in enumerate(self._recorded_sequences)
                if sequence in self._subagent_calls
            ]
        return call

    def _record_sources(
        self, name: str, arguments: dict[str, Any], text: str, structured: Any
    ) -> None:
        if name == "WebFetch" and isinstance(arguments.get("url"), str):
            self.draft.add_source(arguments["url"], text=text)
            return
        for url, title in _urls_in(structured):
            self.draft.add_source(url, title=title)

    def _update_usage(self) -> None:
        total = Usage()
        for message in self._messages.values():
            raw = {**message.input_usage, "output_tokens": message.output_tokens}
            total = total.add(_usage_from(raw))
        self.draft.usage = total
        if self.result is None:  # the CLI reports its cost at the end: estimate it as it goes
            model = self.draft.model or self.draft.extra.get("cli_model")
            estimate = estimate_cost(model, total) if model else None
            if estimate is not None:
                self.draft.cost_usd = estimate
                self.draft.extra["cost_estimated"] = True

    def _on_result(self, event: dict[str, Any]) -> None:
        self.result = event
        draft = self.draft
        if isinstance(event.get("usage"), dict):
            draft.usage = _usage_from(event["usage"])
        if isinstance(event.get("total_cost_usd"), int | float):
            draft.cost_usd = float(event["total_cost_usd"])
            draft.extra.pop("cost_estimated", None)
        if isinstance(event.get("num_turns"), int):
            draft.turns = event["num_turns"]
        extra = draft.extra
        extra["api_messages"] = len(self._order)
        for key in (
            "subtype",
            "is_error",
            "stop_reason",
            "terminal_reason",
            "duration_ms",
            "duration_api_ms",
            "num_turns",
            "api_error_status",
            "errors",
        ):
            if key in event:
                extra[f"result_{key}" if key in {"subtype", "is_error", "errors"} else key] = event[
                    key
                ]
        if isinstance(event.get("usage"), dict):
            extra["usage_raw"] = {
                k: v for k, v in event["usage"].items() if not isinstance(v, dict | list)
            }
        if event.get("modelUsage"):
            extra["model_usage"] = event["modelUsage"]
        if "permission_denials" in event:
            extra["permission_denials"] = list(event.get("permission_denials") or [])
        if event.get("is_error"):
            draft.set_answer(self.answer)  # an error result's text is the CLI's, not the model's
        else:
            draft.set_answer(self.answer or str(event.get("result") or ""))


def _cli_cut_reason(event: dict[str, Any], body: dict[str, Any]) -> str | None:
    """``max_tokens`` or ``refusal`` when the CLI's synthetic message reports a reply cut at the
    output cap (``error: max_output_tokens``) or refused (``stop_reason: refusal``)."""
    if event.get("error") == "max_output_tokens":
        return "max_tokens"
    if body.get("stop_reason") == "refusal":
        return "refusal"
    return None


def _urls_in(value: Any, depth: int = 0) -> list[tuple[str, str | None]]:
    """(url, title) pairs anywhere in a structured tool result (web search hits)."""
    found: list[tuple[str, str | None]] = []
    if depth > 6:
        return found
    if isinstance(value, dict):
        url = value.get("url")
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            title = value.get("title")
            found.append((url, title if isinstance(title, str) else None))
        for child in value.values():
            found += _urls_in(child, depth + 1)
    elif isinstance(value, list):
        for child in value:
            found += _urls_in(child, depth + 1)
    return found
