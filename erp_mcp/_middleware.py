"""Tool-call middleware for experiments: fault injection and the JSONL audit log."""

from __future__ import annotations

import datetime as dt
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from pydantic import Field

from erp_mcp._records import StrictModel

TRANSIENT_PREFIX = "TRANSIENT ERROR"


class FaultConfig(StrictModel):
    """Injected latency and failures, to measure how agents cope with a slow or flaky ERP."""

    latency_ms: float = Field(0.0, ge=0)
    """Added to every tool call."""
    jitter_ms: float = Field(0.0, ge=0)
    """Extra latency drawn uniformly from [0, jitter_ms]."""
    error_rate: float = Field(0.0, ge=0, le=1)
    """Share of tool calls that fail with a transient error instead of running."""
    seed: int = 0
    """Seed of the fault draws, so a run's faults can be replayed."""

    @property
    def active(self) -> bool:
        return bool(self.latency_ms or self.jitter_ms or self.error_rate)


class FaultMiddleware(Middleware):
    def __init__(self, config: FaultConfig) -> None:
        self._config = config
        self._rng = random.Random(config.seed)
        self._lock = threading.Lock()
        self._calls = 0

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        with self._lock:
            self._calls += 1
            call_number = self._calls
            delay = self._config.latency_ms + self._rng.uniform(0, self._config.jitter_ms)
            fail = self._rng.random() < self._config.error_rate
        if delay > 0:
            await anyio.sleep(delay / 1000)
        if fail:
            raise ToolError(
                f"{TRANSIENT_PREFIX} (injected fault, call {call_number}): the ERP is temporarily "
                "unavailable. The request was not processed; retrying the same call may succeed."
            )
        return await call_next(context)


class AuditMiddleware(Middleware):
    """Appends one JSON line per tool call: time, tool, arguments, duration, result size, error."""

    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        started = time.perf_counter()
        message = context.message
        entry: dict[str, Any] = {
            "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
            "tool": getattr(message, "name", None),
            "arguments": getattr(message, "arguments", None) or {},
        }
        try:
            result = await call_next(context)
        except ToolError as error:
            self._write(entry, started, error=str(error), size=0)
            raise
        except Exception as error:
            self._write(entry, started, error=f"internal error ({type(error).__name__})", size=0)
            raise
        self._write(entry, started, error=None, size=_result_size(result))
        return result

    def _write(self, entry: dict, started: float, *, error: str | None, size: int) -> None:
        entry["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        entry["result_chars"] = size
        entry["error"] = error
        line = json.dumps(entry, default=str, sort_keys=False)
        with self._lock, self._path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _result_size(result: Any) -> int:
    size = 0
    for block in getattr(result, "content", None) or []:
        size += len(getattr(block, "text", "") or "")
    return size
