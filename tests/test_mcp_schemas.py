"""Results and output schemas as served.

Output schemas: nullable fields written ``"type": [T, "null"]`` (one schema for a
validating client to descend, not an ``anyOf`` of two), accepting and refusing exactly the values
the generated schemas do.

Each tool's real result (lists cut to two rows) and variants of it (each value replaced by a null,
a number, a string, a list or an object; an extra key in each object) are validated against the
schema FastMCP generated from the output model and against the one clients are served: both must
agree on every variant, for every tool of the ERP and of the research world.

Results: built in the tool's thread (``served_result``), they are what FastMCP's own conversion
would have put on the wire.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.utilities.json_schema import dereference_refs
from jsonschema import Draft202012Validator

from erp_mcp import build_server
from erp_mcp._middleware import plain_nullables
from tests.mcp_budget import largest_arguments
from tests.world_fixtures import shared_folder, small_world

pytestmark = pytest.mark.timeout(300)

REPLACEMENTS: list[Any] = [None, 7, 2.5, "x", [], {}]


def _cut(value: Any) -> Any:
    if isinstance(value, list):
        return [_cut(v) for v in value[:2]]
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    return value


def _paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    out = copy.deepcopy(value)
    if not path:
        return new
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = new
    return out


def variants(result: dict) -> Iterator[Any]:
    """The result, and each of its values (and itself) replaced or given an extra key."""
    yield result
    for path in _paths(result):
        for new in REPLACEMENTS:
            yield _replaced(result, path, new)
        node = result
        for step in path:
            node = node[step]
        if isinstance(node, dict):
            yield _replaced(result, path, {**node, "unexpected": 1})


async def _served_and_generated(server, calls: dict[str, list[dict]]) -> list[tuple]:
    """Per tool: its name, generated and served output schemas and a real result (cut)."""
    out = []
    async with Client(server) as client:
        for tool in await client.list_tools():
            generated = dereference_refs((await server.get_tool(tool.name)).output_schema)
            result = None
            for args in [*calls.get(tool.name, []), {}]:
                called = await client.call_tool(tool.name, args, raise_on_error=False)
                if not called.is_error:
                    result = _cut(called.structured_content)
                    break
            out.append((tool.name, generated, tool.output_schema, result))
    return out


def check_schemas(tools: list[tuple]) -> int:
    checked = 0
    for name, generated, served, result in tools:
        Draft202012Validator.check_schema(served)
        assert '"type": "null"}' not in json.dumps(served), name  # no nullable anyOf left
        assert result is not None, f"{name}: no call gave a result to check"
        before, after = Draft202012Validator(generated), Draft202012Validator(served)
        for instance in variants(result):
            assert before.is_valid(instance) == after.is_valid(instance), (name, instance)
            checked += 1
    return checked


async def test_erp_output_schemas_are_plain_and_mean_the_same(erp_db_url: str) -> None:
    with sqlite3.connect(f"file:{erp_db_url.removeprefix('sqlite:///')}?mode=ro", uri=True) as sql:
        calls = largest_arguments(sql)
    tools = await _served_and_generated(build_server(erp_db_url, public_url="http://erp.test"),
                                        calls)  # fmt: skip
    assert len(tools) >= 25
    assert check_schemas(tools) > 1000


async def test_world_output_schemas_are_plain_and_mean_the_same(
    erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> None:
    from synthetic_world import build_world_server

    world: Path = small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))
    calls = {"search": [{"query": "revenue"}], "fetch": [], "company": [], "prices": []}
    tools = await _served_and_generated(build_world_server(world), calls)
    checked = [t for t in tools if t[3] is not None]
    assert {t[0] for t in checked} >= {"world_info", "search"}
    assert check_schemas(checked) > 100


def test_only_a_null_beside_one_type_is_rewritten() -> None:
    nullable_date = {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}],
                     "default": None, "title": "Due"}  # fmt: skip
    assert plain_nullables(nullable_date) == {
        "type": ["string", "null"], "format": "date", "default": None, "title": "Due"
    }  # fmt: skip
    nullable_list = {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]}
    assert plain_nullables(nullable_list) == {"type": ["array", "null"],
                                              "items": {"type": "integer"}}  # fmt: skip
    kept = [
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},  # no null
        {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},  # two types
        {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]},  # not a plain type
        {"anyOf": [{"type": "string", "const": "a"}, {"type": "null"}]},  # const: not typed
        {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}], "format": "x"},
    ]
    record = {"type": "object", "description": "A group record.", "properties": {}}
    assert plain_nullables({"anyOf": [record, {"type": "null"}], "description": "Its group."}) == {
        "type": ["object", "null"], "description": "Its group.", "properties": {}
    }  # fmt: skip
    for schema in kept:
        assert plain_nullables(schema) == schema


async def test_results_built_on_the_tools_thread_are_what_fastmcp_builds(erp_db_url: str) -> None:
    """``served_result`` builds the MCP result in the tool's thread, bypassing FastMCP's own
    conversion: for every tool's real result, both give the same wire result."""
    from erp_mcp._runtime import ErpRuntime
    from erp_mcp._tooling import _fitted, registered_tools, served_result

    with sqlite3.connect(f"file:{erp_db_url.removeprefix('sqlite:///')}?mode=ro", uri=True) as sql:
        calls = largest_arguments(sql)
    server = build_server(erp_db_url, public_url="http://erp.test")
    runtime = ErpRuntime.open(erp_db_url, "http://erp.test")
    compared = 0
    try:
        for tool in registered_tools():
            fastmcp_tool = await server.get_tool(tool.name)
            if fastmcp_tool is None:  # a bench-only tool this server leaves out
                continue
            for args in [*calls.get(tool.name, []), {}][:2]:
                try:
                    params = tool.input_model(**args)
                    model, text = _fitted(tool.fn(runtime, params), params)
                except Exception:  # arguments this tool refuses: nothing to compare
                    continue
                ours = served_result(model, text).to_mcp_result()
                theirs = fastmcp_tool.convert_result(model).to_mcp_result()
                assert ours == theirs, tool.name
                compared += 1
    finally:
        runtime.close()
    assert compared >= 40
