"""Tool-call middleware: argument checks, fault injection for experiments and the JSONL audit log.

Order on the way in: audit (outermost, sees every outcome) -> argument gate (refuses bad calls with
a one-line error naming the field, before anything else runs) -> faults (only valid calls to real
tools get injected latency or failures) -> the tool.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import random
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from fastmcp.exceptions import NotFoundError, ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.utilities.json_schema import dereference_refs
from pydantic import Field, field_validator

from erp_mcp._records import StrictModel
from erp_mcp._tooling import ClientError, InternalError, ToolDef, check_arguments

TRANSIENT_PREFIX = "TRANSIENT ERROR"
MAX_AUDIT_ARGUMENTS = 4000
"""Characters of a call's arguments kept in the audit log (hostile calls can send megabytes)."""
MAX_LATENCY_MS = 600_000.0
"""Ten minutes: more is a typo, and an infinite delay would hang every call."""


class FaultConfig(StrictModel):
    """Injected latency and failures, to measure how agents cope with a slow or flaky ERP."""

    latency_ms: float = Field(0.0, ge=0, le=MAX_LATENCY_MS, allow_inf_nan=False)
    """Added to every valid tool call."""
    jitter_ms: float = Field(0.0, ge=0, le=MAX_LATENCY_MS, allow_inf_nan=False)
    """Extra latency drawn uniformly from [0, jitter_ms]."""
    error_rate: float = Field(0.0, ge=0, le=1, allow_inf_nan=False)
    """Share of valid tool calls that fail with a transient error instead of running."""
    seed: int = 0
    """Seed of the fault draws, so a run's faults can be replayed."""

    @field_validator("latency_ms", "jitter_ms", "error_rate")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @property
    def active(self) -> bool:
        return bool(self.latency_ms or self.jitter_ms or self.error_rate)


def _tool_name(context: MiddlewareContext) -> str | None:
    return getattr(context.message, "name", None)


def _arguments(context: MiddlewareContext) -> dict[str, Any]:
    return getattr(context.message, "arguments", None) or {}


class InlinedSchemas(Middleware):
    """Tool schemas with every ``$ref`` inlined (some clients cannot follow them), computed once
    per tool instead of on every ``tools/list``: every agent session lists the tools, and inlining
    all of them each time was the largest cost of opening a session."""

    def __init__(self) -> None:
        self._inlined: dict[tuple[str, int], tuple[Any, Any]] = {}

    async def on_list_tools(self, context: MiddlewareContext, call_next):
        return [self._inline(tool) for tool in await call_next(context)]

    def _inline(self, tool: Any) -> Any:
        key = (tool.name, id(tool))
        cached = self._inlined.get(key)
        if cached is None or cached[0] is not tool:
            updates = {
                field: dereference_refs(schema)
                for field in ("parameters", "output_schema")
                if (schema := getattr(tool, field)) and "$ref" in json.dumps(schema)
            }
            cached = (tool, tool.model_copy(update=updates) if updates else tool)
            self._inlined[key] = cached
        return cached[1]


class ArgumentGate(Middleware):
    """Validates arguments against the bounded input model before anything else runs, so a bad
    call gets one line naming the field (never FastMCP's multi-line dump echoing the input)."""

    def __init__(self, tools: dict[str, ToolDef]) -> None:
        self._tools = tools

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        tool = self._tools.get(_tool_name(context) or "")
        if tool is not None:
            check_arguments(tool, _arguments(context))
        return await call_next(context)


class FaultMiddleware(Middleware):
    """Seeded faults, drawn only for valid calls to known tools (the gate ran before)."""

    def __init__(self, config: FaultConfig, tools: dict[str, ToolDef]) -> None:
        self._config = config
        self._tools = tools
        self._rng = random.Random(config.seed)
        self._lock = threading.Lock()
        self._calls = 0

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        if _tool_name(context) not in self._tools:
            return await call_next(context)
        with self._lock:
            self._calls += 1
            call_number = self._calls
            delay = self._config.latency_ms + self._rng.uniform(0, self._config.jitter_ms)
            fail = self._rng.random() < self._config.error_rate
        if delay > 0:
            await anyio.sleep(delay / 1000)
        if fail:
            raise InjectedFault(
                f"{TRANSIENT_PREFIX} (injected fault, call {call_number}): the ERP is temporarily "
                "unavailable. The request was not processed; retrying the same call may succeed."
            )
        return await call_next(context)


class InjectedFault(ToolError):
    """A failure injected on purpose (``--error-rate``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level=logging.DEBUG)


def _session_id(context: MiddlewareContext) -> str | None:
    try:
        return context.fastmcp_context.session_id if context.fastmcp_context else None
    except RuntimeError:
        return None


def error_kind(error: BaseException) -> str:
    """client (bad arguments, unknown records or tools), fault (injected) or internal."""
    if isinstance(error, InjectedFault):
        return "fault"
    if isinstance(error, ClientError | NotFoundError):
        return "client"
    if isinstance(error, InternalError):
        return "internal"
    # FastMCP's own argument validation and unknown-tool errors are the client's.
    if type(error).__name__ in {"ValidationError", "NotFoundError"}:
        return "client"
    return "internal"


class AuditMiddleware(Middleware):
    """Appends one JSON line per tool call: time, session, tool, arguments, duration, result size,
    error and its kind (client, fault or internal)."""

    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        started = time.perf_counter()
        arguments = _arguments(context)
        if len(text := json.dumps(arguments, default=str)) > MAX_AUDIT_ARGUMENTS:
            arguments = {"_truncated": text[:MAX_AUDIT_ARGUMENTS]}
        entry: dict[str, Any] = {
            "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
            "session_id": _session_id(context),
            "tool": (_tool_name(context) or "")[:100],
            "arguments": arguments,
        }
        try:
            result = await call_next(context)
        except Exception as error:
            kind = error_kind(error)
            text = str(error) if kind != "internal" or isinstance(error, InternalError) else ""
            self._write(entry, started, error=text or f"internal error ({type(error).__name__})",
                        kind=kind, size=0)  # fmt: skip
            raise
        self._write(entry, started, error=None, kind=None, size=_result_size(result))
        return result

    def _write(
        self, entry: dict, started: float, *, error: str | None, kind: str | None, size: int
    ) -> None:
        entry["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        entry["result_chars"] = size
        entry["error"] = error
        entry["error_kind"] = kind
        line = json.dumps(entry, default=str, sort_keys=False)
        with self._lock, self._path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _result_size(result: Any) -> int:
    size = 0
    for block in getattr(result, "content", None) or []:
        size += len(getattr(block, "text", "") or "")
    return size
