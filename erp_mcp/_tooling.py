"""The tool registry: each tool is a pydantic input model, a pydantic output model and a function.

``@erp_tool("finance", InputModel)`` registers ``fn(runtime, params) -> OutputModel``. The server
turns each into a FastMCP tool whose flat arguments are the input model's fields (so the input
schema is the model's, with its field docstrings as descriptions) and whose output schema is the
output model's.

Every input model is hardened once (``bounded_model``): each string, number, date and list gets a
bound in the schema when the model gave none, NUL characters are refused, and parameters without a
docstring get the shared description of their name. Results go through ``fit_budget``, so no
result exceeds ``RESULT_BUDGET`` characters.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import copy
import datetime as dt
import functools
import inspect
import logging
import re
import sys
import threading
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from annotated_types import Ge, Gt, Le, Lt, MaxLen
from fastmcp.exceptions import ToolError
from fastmcp.tools import ToolResult
from mcp.types import TextContent
from pydantic import AfterValidator, AllowInfNan, BaseModel, Field, ValidationError, create_model
from pydantic_core import to_json

from erp_mcp._cursors import encode_cursor, tool_scope

logger = logging.getLogger("erp_mcp")

RESULT_BUDGET = 100_000
"""Most characters of a tool result's JSON text (about 25k tokens: Claude Code's default cap)."""
_TRIM_TARGET = 95_000
MIN_DATE = dt.date(1900, 1, 1)
MAX_DATE = dt.date(2100, 12, 31)
MAX_TEXT = 100
"""Default longest string argument (ids, codes, names); a model may set its own."""
MAX_LIST = 50
MAX_INT = 1_000_000_000
MAX_NUMBER = 1e15


class ClientError(ToolError):
    """A bad call: the arguments or the records they name are wrong (logged at debug level)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level=logging.DEBUG)


class InternalError(ToolError):
    """The server failed on a valid call; the message says so without internals (the cause was
    logged once, as one line, where it happened)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level=logging.DEBUG)


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    return value


Text = Annotated[str, MaxLen(MAX_TEXT), AfterValidator(_no_nul)]
ErpDate = Annotated[
    dt.date,
    Ge(MIN_DATE),
    Le(MAX_DATE),
    Field(json_schema_extra={"formatMinimum": str(MIN_DATE), "formatMaximum": str(MAX_DATE)}),
]

SHARED_DESCRIPTIONS = {
    "legal_entity": "Company code; omit for all.",
    "account": "Account id or exact name.",
    "party_type": "AR or AP.",
    "date_from": "On or after.",
    "date_to": "On or before.",
    "due_from": "Due on or after.",
    "due_to": "Due on or before.",
    "opened_from": "Opened on or after.",
    "opened_to": "Opened on or before.",
    "as_of": "Default: the ERP's today.",
    "status": "Only this status.",
    "kind": "Which rows.",
    "owner_agent_id": "Owning collections agent (list_reference_data collections_agents).",
    "case_id": "Collections case id.",
    "sequence": "Collection letter sequence id.",
    "category": "activity, task or any.",
    "activity_type": "Only this activity type.",
    "order_type": "sales, return or any.",
    "approver": "Approver's user id.",
    "po_number": "Purchase order number.",
    "method_of_payment": "Method of payment code (list_reference_data methods_of_payment).",
    "limit": "Most rows to return.",
    "journal_id": "Payment journal id (list_payment_journals).",
    "descending": "true: descending; false: ascending.",
}
"""Descriptions of parameters whose model gives none (the same meaning in every tool)."""


Toolset = Literal["finance", "generic", "research", "bench"]
TOOLSETS = ("finance", "generic", "all")


@dataclass(frozen=True)
class ToolDef:
    name: str
    toolset: Toolset
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    fn: Callable[[Any, Any], BaseModel]
    """``fn(runtime, params)``: the runtime is whatever the server's holder opens."""
    description: str
    service: str = "the ERP"
    """What answers the tool, as error messages name it ("the ERP", "the research world")."""
    lookup: bool = False
    """Answers from a handful of rows found by key (one record, a name search, server facts):
    served on the request threads. Every other tool scans, sums or ranks, and runs on the
    server's bounded pool of scan threads (``ScanThreads``)."""


class ToolRegistry:
    """The tools of one MCP server, registered by decorator in the modules it names.

    Each server (the ERP, the research world) has its own registry, so the serving machinery
    (argument gate, faults, audit, budget, record pages) is shared while the tool lists stay apart.
    Importing ``modules`` (in their order) registers the tools; nothing is imported before the
    first call of :meth:`tools`."""

    def __init__(self, modules: tuple[str, ...], service: str = "the ERP") -> None:
        self.modules = modules
        self.service = service
        self._tools: dict[str, ToolDef] = {}

    def tool(self, toolset: Toolset, input_model: type[BaseModel], *, lookup: bool = False):
        """Register ``fn(runtime, params)`` as an MCP tool named after the function; ``lookup``
        for tools that read a few rows by key (see ``ToolDef.lookup``)."""

        def decorator(fn: Callable[[Any, Any], BaseModel]):
            output_model = get_type_hints(fn)["return"]
            # One paragraph per blank-line block: docstring line breaks are layout, not meaning.
            description = re.sub(r"(?<!\n)\n(?!\n)", " ", inspect.cleandoc(fn.__doc__ or ""))
            self._tools[fn.__name__] = ToolDef(
                fn.__name__,
                toolset,
                input_model,
                output_model,
                fn,
                description,
                self.service,
                lookup,
            )
            return fn

        return decorator

    def add(self, tool: ToolDef) -> None:
        """Serve a tool another registry defined (the no-op ``ping`` floor, for instance)."""
        self._tools[tool.name] = tool

    def tools(self) -> list[ToolDef]:
        """Every registered tool, in the order of the modules that define them."""
        import importlib

        for module in self.modules:
            importlib.import_module(module)
        order = {name: i for i, name in enumerate(self.modules)}
        return sorted(self._tools.values(), key=lambda t: order.get(t.fn.__module__, 99))

    def select(self, toolset: str, *, include_bench: bool = False) -> list[ToolDef]:
        """The tools of ``toolset`` ("all": every non-bench tool), plus bench tools if asked."""
        chosen = []
        for tool in self.tools():
            if tool.toolset == "bench":
                if include_bench:
                    chosen.append(tool)
            elif toolset == "all" or tool.toolset == toolset:
                chosen.append(tool)
        return chosen


ERP_TOOLS = ToolRegistry(
    tuple(
        f"erp_mcp.{name}"
        for name in (
            "_tools_parties",
            "_tools_ledger",
            "_tools_rankings",
            "_tools_orders",
            "_tools_collections",
            "_tools_generic",
        )
    )
)
"""The ERP server's tools."""

erp_tool = ERP_TOOLS.tool


def registered_tools() -> list[ToolDef]:
    return ERP_TOOLS.tools()


def tools_for(toolset: str, *, include_bench: bool = False) -> list[ToolDef]:
    if toolset not in TOOLSETS:
        raise ValueError(f"unknown toolset {toolset!r}; choose one of {', '.join(TOOLSETS)}")
    return ERP_TOOLS.select(toolset, include_bench=include_bench)


def validation_message(error: ValidationError) -> str:
    """One line naming each bad field and what is allowed, never echoing the input.

    Union members (``value`` may be text, number, boolean or list) are folded into one entry per
    field, keeping the most specific message."""
    by_field: dict[str, list[str]] = {}
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(_short(str(p), 40) for p in item["loc"] if _is_field_part(p))
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown argument (see the tool's input schema)"
        by_field.setdefault(where or "arguments", []).append(message)
    parts = []
    for where, messages in list(by_field.items())[:5]:
        specific = [m for m in messages if not m.startswith("Input should be a valid")]
        parts.append(f"{where}: {_short((specific or messages)[0], 200)}")
    return "invalid arguments: " + "; ".join(parts)


def _is_field_part(part: Any) -> bool:
    """Field names and list indexes, not the union-member tags pydantic adds to a location."""
    if isinstance(part, int):
        return True
    return not any(ch in part for ch in "[]-") and part not in _TYPE_TAGS


_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "list", "date", "none", "dict"})


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_arguments(tool: ToolDef, arguments: dict[str, Any]) -> BaseModel:
    """The validated input model, or a ClientError naming the bad fields."""
    try:
        return bounded_model(tool.input_model).model_validate(arguments)
    except ValidationError as error:
        raise ClientError(validation_message(error)) from None
    except Exception as error:
        logger.error("argument check of %s failed: %s: %s", tool.name, type(error).__name__,
                     _short(str(error), 200))  # fmt: skip
        raise InternalError(f"internal error checking the arguments of {tool.name}") from None


# -- hardening of input models ---------------------------------------------------------------------


@cache
def bounded_model(model: type[BaseModel]) -> type[BaseModel]:
    """A subclass of ``model`` where every field has bounds and a description (see module doc)."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        kinds = {type(m) for m in info.metadata}
        hardened = copy.copy(info)
        hardened.annotation = _bounded_type(info.annotation, kinds)
        if not info.description and name in SHARED_DESCRIPTIONS:
            hardened.description = SHARED_DESCRIPTIONS[name]
        fields[name] = (hardened.annotation, hardened)
    return create_model(
        model.__name__,
        __base__=model,
        __module__=model.__module__,
        __doc__=model.__doc__,
        # every field is redeclared with its description: no docstrings to look for (this class
        # has no source of its own; see erp_mcp._field_docs)
        __cls_kwargs__={"use_attribute_docstrings": False},
        **fields,
    )


def _bounded_type(annotation: Any, field_kinds: frozenset | set = frozenset()) -> Any:
    """``annotation`` with default bounds; ``field_kinds`` are constraints the field already has."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return Union[tuple(_bounded_type(a, field_kinds) for a in get_args(annotation))]  # noqa: UP007
    if origin is Literal or origin is typing.Annotated:
        return annotation
    if annotation is type(None) or annotation is bool:
        return annotation
    if origin is list:
        (item,) = get_args(annotation)
        bounded = list[_bounded_type(item)]
        return bounded if MaxLen in field_kinds else Annotated[bounded, MaxLen(MAX_LIST)]
    if annotation is str:
        return Text if MaxLen not in field_kinds else Annotated[str, AfterValidator(_no_nul)]
    if annotation is dt.date:
        return ErpDate
    if annotation in (int, float):
        limit = MAX_INT if annotation is int else MAX_NUMBER
        bounds: list[Any] = [] if field_kinds & {Le, Lt} else [Le(limit)]
        bounds += [] if field_kinds & {Ge, Gt} else [Ge(-limit)]
        if annotation is float:
            bounds.append(AllowInfNan(False))
        return Annotated[annotation, *bounds] if bounds else annotation
    return annotation


def as_callable(tool: ToolDef, holder: Any, scans: ScanThreads | None = None) -> Callable[..., Any]:
    """A function with the (bounded) input model's fields as keyword parameters, for FastMCP.

    Client errors pass through as they are; any other failure is logged as one line (no traceback
    rendering on the event loop: this runs in a worker thread) and becomes an InternalError.
    With ``scans``, a tool that is not a lookup runs on those threads (a coroutine function)."""
    params = []
    for name, info in bounded_model(tool.input_model).model_fields.items():
        default = inspect.Parameter.empty if info.is_required() else info.get_default()
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=default,
                annotation=Annotated[info.annotation, info],
            )
        )

    def call(**kwargs: Any) -> BaseModel:
        params_model = check_arguments(tool, kwargs)
        with tool_scope(tool.name):  # cursors made and read here belong to this tool
            try:
                result = tool.fn(holder.get(), params_model)
            except ClientError:
                raise
            except ToolError as error:
                raise ClientError(str(error)) from None
            except Exception as error:
                first_line = (str(error).splitlines() or [""])[0]
                logger.error("internal error in tool %s: %s: %s", tool.name,
                             type(error).__name__, _short(first_line, 300))  # fmt: skip
                raise InternalError(
                    f"internal error in {tool.name}: {tool.service} could not answer this call "
                    "(logged on the server); the arguments were valid, retrying will not help"
                ) from None
            return served_result(*_fitted(result, params_model))

    served: Callable[..., Any] = call
    if scans is not None and not tool.lookup:

        async def served(**kwargs: Any) -> BaseModel:
            return await scans.run(functools.partial(call, **kwargs))

    served.__name__ = tool.name
    served.__doc__ = None  # the server passes tool.description: FastMCP parses no docstring
    served.__signature__ = inspect.Signature(params, return_annotation=tool.output_model)
    served.__annotations__ = {p.name: p.annotation for p in params} | {"return": tool.output_model}
    return served


class ScanThreads:
    """The threads that run a server's scanning tools (aggregates, rankings, filtered lists), at
    the server's own CPU priority.

    A bounded pool: however many sessions ask for heavy aggregates at once, at most ``threads``
    run and the request threads stay free for lookups. What keeps a lookup fast beside them is
    that a scan spends its time in the database, which runs without the interpreter lock (SQLite
    and psycopg release it while a statement runs; the aggregates group, sum and rank there and
    return few rows), not a lower priority: threads at a lower ``nice`` lost the CPU to every
    other process on a busy machine, and one preempted while holding the interpreter lock stalled
    the whole server (``bench/bench_aggregates.py --busy 4`` measures both). Threads start on
    first use."""

    def __init__(self, threads: int = 4) -> None:
        self.threads = threads
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    async def run(self, fn: Callable[[], Any]) -> Any:
        context = contextvars.copy_context()  # cursor scope and logging context, as anyio does
        return await asyncio.get_running_loop().run_in_executor(self._executor(), context.run, fn)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _executor(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    self.threads, thread_name_prefix="erp-scan"
                )
            return self._pool


SWITCH_INTERVAL_S = 0.0005
"""How long a thread may hold the interpreter while another waits for it (Python's default is
5 ms)."""


def hand_the_interpreter_over_often() -> None:
    """Make a thread building a large result in Python hand the GIL over every 0.5 ms, not every
    5 ms. A lookup's answer needs the event loop several times (read the request, run the tool,
    write the answer), and each time the loop waited up to a switch interval behind a busy scan
    thread: beside ``get_aging {}`` at 100x another session's ``erp_info`` p99 was 28-32 ms with
    5 ms, 18-20 ms with 0.5 ms (quiet: 7-10 ms)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


# -- the result budget -----------------------------------------------------------------------------


def served_result(result: BaseModel, text: str) -> ToolResult:
    """The MCP result of a tool's output model and its JSON ``text``: that text as the content
    and the same values as the structured content, what FastMCP would build on the event loop.

    Built here, in the tool's thread: serializing a large result three times on the loop held up
    every other session's call meanwhile. Constructed without ``ToolResult.__init__``, which
    would serialize the structured content to JSON and parse it back once more: the model's
    ``model_dump(mode="json")`` already holds exactly the values of ``text``."""
    return ToolResult.model_construct(
        content=[TextContent(type="text", text=text)],
        structured_content=result.model_dump(mode="json"),
        meta=None,
        is_error=False,
    )


def fit_budget(result: BaseModel, args: BaseModel) -> BaseModel:
    """``result``, cut to at most ``RESULT_BUDGET`` characters of JSON (see ``_fitted``)."""
    return _fitted(result, args)[0]


def _fitted(result: BaseModel, args: BaseModel) -> tuple[BaseModel, str]:
    """``result``, cut to at most ``RESULT_BUDGET`` characters of JSON, and that JSON.

    Lists are cut, largest first (``items`` of a page before any other), until the result fits: a
    list keeps its first rows; a page then says ``truncated`` with a ``next_cursor`` right after
    the last row kept, other results set their ``truncated`` flag. A result with several long
    lists (a worklist's customers and activities) has each cut in turn."""
    text = result.model_dump_json()
    size = len(text)
    fields = type(result).model_fields
    done: set[str] = set()
    while size > RESULT_BUDGET:
        name = _largest_list(result, done)
        if name is None:
            break
        done.add(name)
        rows = getattr(result, name)
        row_sizes = [len(to_json(row)) + 1 for row in rows]
        keep, room = 0, _TRIM_TARGET - (size - sum(row_sizes))
        while keep < len(rows) and room - row_sizes[keep] >= 0:
            room -= row_sizes[keep]
            keep += 1
        updates: dict[str, Any] = {name: rows[:keep]}
        if "truncated" in fields:
            updates["truncated"] = True
        if name == "items" and "next_cursor" in fields:
            updates["next_cursor"] = encode_cursor(args, getattr(result, "offset", 0) + keep)
            updates["has_more"] = True
            if "returned" in fields:
                updates["returned"] = keep
        result = result.model_copy(update=updates)
        text = result.model_dump_json()
        size = len(text)
    return result, text


def _largest_list(result: BaseModel, done: set[str]) -> str | None:
    """The list field to cut next: ``items`` first, else the longest in JSON not cut yet."""
    if "items" not in done and isinstance(getattr(result, "items", None), list):
        return "items"
    sizes = {
        name: len(to_json(value))
        for name in type(result).model_fields
        if name not in done and isinstance(value := getattr(result, name), list) and value
    }
    return max(sizes, key=sizes.__getitem__) if sizes else None
