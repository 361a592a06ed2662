"""Tool-call middleware: argument checks, fault injection for experiments and the JSONL audit log.

Order on the way in: audit (outermost, sees every outcome) -> argument gate (refuses bad calls with
a one-line error naming the field, before anything else runs) -> faults (only valid calls to real
tools get injected latency or failures) -> the tool.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from fastmcp.exceptions import NotFoundError, ToolError
from fastmcp.server.dependencies import get_http_request
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.utilities.json_schema import dereference_refs
from pydantic import Field, field_validator

from erp_mcp._conventions import STATED_ONCE
from erp_mcp._records import StrictModel
from erp_mcp._tooling import ClientError, InternalError, ToolDef, check_arguments
from ledgerbench_core._trial import TRIAL_HEADER

TRANSIENT_PREFIX = "TRANSIENT ERROR"
MAX_AUDIT_ARGUMENTS = 4000
"""Characters of a call's arguments kept in the audit log (hostile calls can send megabytes)."""
MAX_LATENCY_MS = 600_000.0
"""Ten minutes: more is a typo, and an infinite delay would hang every call."""
MAX_TRIAL_CHARS = 200
"""Characters of a trial header kept (it keys fault draws and is written to the audit log)."""
MAX_TRACKED_CALLS = 65_536
"""Distinct (trial, tool, arguments) whose occurrence counts the fault draws remember, least
recently used forgotten first: a question makes tens of calls, so only a call repeated after
this many other distinct calls would see its count start again."""


class FaultConfig(StrictModel):
    """Injected latency and failures, to measure how agents cope with a slow or flaky ERP."""

    latency_ms: float = Field(0.0, ge=0, le=MAX_LATENCY_MS, allow_inf_nan=False)
    """Added to every valid tool call."""
    jitter_ms: float = Field(0.0, ge=0, le=MAX_LATENCY_MS, allow_inf_nan=False)
    """Extra latency drawn uniformly from [0, jitter_ms]."""
    error_rate: float = Field(0.0, ge=0, le=1, allow_inf_nan=False)
    """Share of valid tool calls that fail with a transient error instead of running."""
    seed: int = 0
    """Seed of the fault draws, so a run's faults can be replayed (see :class:`FaultDraws`)."""

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


_KEYWORDS_OF_TYPE = {
    "string": {"format", "minLength", "maxLength", "pattern"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "array": {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"},
    "object": {"properties", "required", "additionalProperties", "patternProperties",
               "minProperties", "maxProperties", "propertyNames"},
}  # fmt: skip
_KEYWORDS_OF_TYPE["number"] = _KEYWORDS_OF_TYPE["integer"]
_ANNOTATIONS = {"title", "description", "default", "examples"}
"""Keywords that validate nothing: a branch's own give way to the field's."""


def plain_nullables(schema: Any) -> Any:
    """``schema`` with each ``anyOf: [{"type": T, ...}, {"type": "null"}]`` (pydantic's
    ``X | None``) written ``"type": [T, "null"]`` with the branch's keywords beside it: the same
    values validate (those keywords apply to values of type T only), and a client validating a
    result (the official SDKs do, on every call) descends one schema instead of two. With the
    Python SDK's jsonschema that was about a third of validating a long page."""
    if isinstance(schema, list):
        return [plain_nullables(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: plain_nullables(value) for key, value in schema.items()}
    branches = schema.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches):
        return schema
    (other,) = [b for b in branches if b != {"type": "null"}]
    kind = other.get("type") if isinstance(other, dict) else None
    if not isinstance(kind, str):
        return schema
    typed = {key: value for key, value in other.items() if key not in _ANNOTATIONS}
    if not set(typed) <= {"type"} | _KEYWORDS_OF_TYPE.get(kind, set()) or set(typed) & set(schema):
        return schema
    notes = {key: value for key, value in other.items() if key in _ANNOTATIONS}
    kept = {key: value for key, value in schema.items() if key != "anyOf"}
    return notes | kept | typed | {"type": [kind, "null"]}  # the field's own notes win


_BOUND_KEYWORDS = frozenset({
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "minItems", "maxItems", "formatMinimum", "formatMaximum",
})  # fmt: skip
"""Bounds the server enforces (``bounded_model``: every argument has them, refused with a
one-line message naming the field): a model needs few of them, and the descriptions state those
in words ("at most 500"), so the schemas a model reads leave the keywords out."""


def lean_input_schema(schema: Any) -> Any:
    """An input schema as a model reads it: no ``null`` among an argument's types or values (an
    optional argument is left out; the server takes null as left out, and the instructions say
    so), no ``default: null``, no ``additionalProperties: false`` (the server names an unknown
    argument), no bound keywords (:data:`_BOUND_KEYWORDS`) and no description the argument
    conventions state once (``erp_mcp._conventions``). The server's validation is the bounded
    input model's, unchanged: it refuses what the full schema would, with a message naming the
    field and the bound."""
    lean = _nullable_enums(plain_nullables(_lean(schema)))
    properties = lean.get("properties") if isinstance(lean, dict) else None
    if isinstance(properties, dict):
        lean["properties"] = {name: _argument(name, prop) for name, prop in properties.items()}
    return lean


def _argument(name: str, prop: Any) -> Any:
    """One top-level argument without ``null`` in its types and enum, and without the
    description the conventions state for its name."""
    if not isinstance(prop, dict):
        return prop
    prop = dict(prop)
    kinds = prop.get("type")
    if isinstance(kinds, list) and "null" in kinds and len(kinds) == 2:
        (prop["type"],) = [kind for kind in kinds if kind != "null"]
        if isinstance(prop.get("enum"), list):
            prop["enum"] = [value for value in prop["enum"] if value is not None]
    if prop.get("description") == STATED_ONCE.get(name):
        del prop["description"]
    return prop


def _nullable_enums(schema: Any) -> Any:
    """``anyOf: [{"enum": [...], "type": T}, {"type": "null"}]`` as ``"type": [T, "null"]`` with
    null among the values: the same values validate."""
    if isinstance(schema, list):
        return [_nullable_enums(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: _nullable_enums(value) for key, value in schema.items()}
    branches = schema.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches):
        return schema
    (other,) = [b for b in branches if b != {"type": "null"}]
    if not (isinstance(other, dict) and set(other) == {"enum", "type"}):
        return schema
    if not isinstance(other["type"], str) or set(schema) & set(other):
        return schema
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    return rest | {"type": [other["type"], "null"], "enum": [*other["enum"], None]}


def _lean(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_lean(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    lean = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            lean[key] = {name: _lean(prop) for name, prop in value.items()}
        elif key == "description" and isinstance(value, str):
            lean[key] = " ".join(value.split())  # docstring line breaks are layout
        elif not _redundant(key, value):
            lean[key] = _lean(value)
    return lean


def _redundant(key: str, value: Any) -> bool:
    """A keyword that tells a model nothing it needs: a null default, a closed object, a title,
    a bound (see :func:`lean_input_schema`)."""
    if key == "default" and (value is None or value is False or value == "any"):  # no filter
        return True
    if key == "const" and value is None:
        return True
    if key == "additionalProperties" and value is False:
        return True
    return key == "title" or key in _BOUND_KEYWORDS


class InlinedSchemas(Middleware):
    """Tool schemas with every ``$ref`` inlined (some clients cannot follow them) and output
    schemas with plain nullable types (:func:`plain_nullables`), computed once per tool instead
    of on every ``tools/list``: every agent session lists the tools, and inlining all of them
    each time was the largest cost of opening a session."""

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
            if output := updates.get("output_schema", tool.output_schema):
                updates["output_schema"] = plain_nullables(output)
            updates["parameters"] = lean_input_schema(updates.get("parameters", tool.parameters))
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


def current_trial() -> str:
    """The caller's trial key (the ``X-LedgerBench-Trial`` header), or "" without one (stdio,
    clients that do not send it)."""
    try:
        request = get_http_request()
    except RuntimeError:
        return ""
    return (request.headers.get(TRIAL_HEADER) or "")[:MAX_TRIAL_CHARS]


@dataclass(frozen=True)
class FaultDraw:
    fail: bool
    delay_ms: float
    occurrence: int
    """0 for the first time this trial made this exact call, 1 for its first repeat, ..."""


_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
"""Arguments as canonical JSON (one encoder for every call: building one per call costs more than
the encoding)."""


def _unit(digest: bytes) -> float:
    """Eight bytes as a float uniform in [0, 1) (53 bits, like ``random.random``)."""
    return (int.from_bytes(digest, "big") >> 11) * 2.0**-53


def _without_cursor_signature(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the draw keys them: a cursor by its payload (where the call goes on)
    without its signature, which each server process makes with a key of its own. The same
    call then draws the same fault on every server of the run (a Ray worker's and the
    driver's alike)."""
    cursor = arguments.get("cursor") if arguments else None
    if not isinstance(cursor, str) or "." not in cursor:
        return arguments
    return {**arguments, "cursor": cursor.rsplit(".", 1)[0]}


class FaultDraws:
    """Fault draws keyed by the call, not by the order calls arrive in.

    A draw is a pure function of (seed, trial key, tool, canonical JSON of the arguments,
    occurrence k of that same call within that trial): the k-th repeat of a call (a retry) gets a
    fresh draw, and the same call at the same k always gets the same one, however concurrent
    questions interleave. Without a trial key the draws are still reproducible for the set of
    calls, but which session meets the k-th occurrence of a shared call depends on timing.
    """

    def __init__(self, config: FaultConfig) -> None:
        self.config = config
        self.random = bool(config.error_rate or config.jitter_ms)
        """Whether there is anything to draw (a fixed latency alone needs no draw)."""
        self._seed = str(config.seed).encode() + b"\x1f"
        self._occurrences: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def draw(self, trial: str, tool: str, arguments: dict[str, Any]) -> FaultDraw:
        arguments = _without_cursor_signature(arguments)
        canonical = _CANONICAL_JSON.encode(arguments) if arguments else "{}"
        call = hashlib.blake2b(
            "\x1f".join((trial, tool, canonical)).encode("utf-8", "surrogatepass"),
            digest_size=16,
        ).digest()
        occurrence = self._next_occurrence(call)
        key = self._seed + call + occurrence.to_bytes(8, "big")
        bits = hashlib.blake2b(key, digest_size=16).digest()
        config = self.config
        return FaultDraw(
            fail=_unit(bits[:8]) < config.error_rate,
            delay_ms=config.latency_ms + _unit(bits[8:]) * config.jitter_ms,
            occurrence=occurrence,
        )

    def _next_occurrence(self, call: bytes) -> int:
        with self._lock:
            occurrence = self._occurrences.pop(call, 0)
            self._occurrences[call] = occurrence + 1
            if len(self._occurrences) > MAX_TRACKED_CALLS:
                self._occurrences.popitem(last=False)
        return occurrence


class FaultMiddleware(Middleware):
    """Seeded faults, drawn only for valid calls to known tools (the gate ran before)."""

    def __init__(self, config: FaultConfig, tools: dict[str, ToolDef]) -> None:
        self._draws = FaultDraws(config)
        self._tools = tools

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        tool = _tool_name(context)
        if tool not in self._tools:
            return await call_next(context)
        if self._draws.random:
            draw = self._draws.draw(current_trial(), tool, _arguments(context))
        else:  # a fixed latency only: nothing to draw
            draw = FaultDraw(fail=False, delay_ms=self._draws.config.latency_ms, occurrence=0)
        if draw.delay_ms > 0:
            await anyio.sleep(draw.delay_ms / 1000)
        if draw.fail:
            raise InjectedFault(
                f"{TRANSIENT_PREFIX} (injected fault, occurrence {draw.occurrence + 1} of this "
                f"call): {self._tools[tool].service} is temporarily unavailable. The request was "
                "not processed; "
                "retrying the same call may succeed."
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
    """Appends one JSON line per tool call: time, session, trial key (the question and trial that
    made the call, when the client sent the trial header), tool, arguments, duration, result size,
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
            "trial": current_trial() or None,
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
