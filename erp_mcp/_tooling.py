"""The tool registry: each tool is a pydantic input model, a pydantic output model and a function.

``@erp_tool("finance", InputModel)`` registers ``fn(runtime, params) -> OutputModel``. The server
turns each into a FastMCP tool whose flat arguments are the input model's fields (so the input
schema is the model's, with its field docstrings as descriptions) and whose output schema is the
output model's.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_type_hints

from fastmcp.exceptions import ToolError
from pydantic import BaseModel, ValidationError

from erp_mcp._runtime import ErpRuntime, RuntimeHolder

Toolset = Literal["finance", "generic", "bench"]
TOOLSETS = ("finance", "generic", "all")


@dataclass(frozen=True)
class ToolDef:
    name: str
    toolset: Toolset
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    fn: Callable[[ErpRuntime, Any], BaseModel]
    description: str


_REGISTRY: dict[str, ToolDef] = {}


def erp_tool(toolset: Toolset, input_model: type[BaseModel]):
    """Register ``fn(runtime, params)`` as an MCP tool named after the function."""

    def decorator(fn: Callable[[ErpRuntime, Any], BaseModel]):
        output_model = get_type_hints(fn)["return"]
        # One paragraph per blank-line block: docstring line breaks are layout, not meaning.
        description = re.sub(r"(?<!\n)\n(?!\n)", " ", inspect.cleandoc(fn.__doc__ or ""))
        _REGISTRY[fn.__name__] = ToolDef(
            fn.__name__, toolset, input_model, output_model, fn, description
        )
        return fn

    return decorator


def registered_tools() -> list[ToolDef]:
    # Importing the tool modules registers their tools.
    from erp_mcp import (  # noqa: F401
        _tools_collections,
        _tools_generic,
        _tools_ledger,
        _tools_orders,
        _tools_parties,
    )

    order = {name: i for i, name in enumerate(_MODULE_ORDER)}
    tools = list(_REGISTRY.values())
    return sorted(tools, key=lambda t: order.get(t.fn.__module__.rsplit(".", 1)[-1], 99))


_MODULE_ORDER = (
    "_tools_parties",
    "_tools_ledger",
    "_tools_orders",
    "_tools_collections",
    "_tools_generic",
)


def tools_for(toolset: str, *, include_bench: bool = False) -> list[ToolDef]:
    if toolset not in TOOLSETS:
        raise ValueError(f"unknown toolset {toolset!r}; choose one of {', '.join(TOOLSETS)}")
    chosen = []
    for tool in registered_tools():
        if tool.toolset == "bench":
            if include_bench:
                chosen.append(tool)
        elif toolset == "all" or tool.toolset == toolset:
            chosen.append(tool)
    return chosen


def validation_message(error: ValidationError) -> str:
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        parts.append(f"{where}: {item['msg']}")
    return "invalid arguments: " + "; ".join(parts)


def as_callable(tool: ToolDef, holder: RuntimeHolder) -> Callable[..., BaseModel]:
    """A function with the input model's fields as keyword parameters, for FastMCP."""
    params = []
    for name, info in tool.input_model.model_fields.items():
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
        try:
            params_model = tool.input_model(**kwargs)
        except ValidationError as error:
            raise ToolError(validation_message(error)) from None
        return tool.fn(holder.get(), params_model)

    call.__name__ = tool.name
    call.__doc__ = tool.description
    call.__signature__ = inspect.Signature(params, return_annotation=tool.output_model)
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": tool.output_model}
    return call
