"""The tool-schema cache: tools built from the file equal FastMCP's own; a stale file is ignored."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fastmcp import FastMCP

from erp_mcp._serving import READ_ONLY
from erp_mcp._tool_cache import CACHE_DIR_ENV, ToolSchemaCache, code_key
from erp_mcp._tooling import ERP_TOOLS, ToolDef, ToolRegistry, as_callable
from synthetic_world._tools import WORLD_TOOLS

pytestmark = pytest.mark.timeout(120)


def _all_tools() -> list[ToolDef]:
    return ERP_TOOLS.select("all", include_bench=True) + WORLD_TOOLS.select("all")


def _as_fastmcp_registers(tools: list[ToolDef]) -> dict[str, dict]:
    """Each tool as ``FastMCP.tool`` registers it (the way servers were built before the cache)."""
    server = FastMCP("reference", dereference_schemas=False)  # as assemble_server builds it
    for tool in tools:
        server.tool(
            as_callable(tool, None), name=tool.name, description=tool.description,
            annotations=READ_ONLY,
        )  # fmt: skip
    listed = asyncio.run(server.list_tools())
    return {t.name: _comparable(t) for t in listed}


def _comparable(tool) -> dict:
    return tool.model_dump(exclude={"fn"}) | {"return_type": tool.return_type}


def _built(cache: ToolSchemaCache, tools: list[ToolDef]) -> dict[str, dict]:
    return {t.name: _comparable(cache.tool(as_callable(t, None), t, READ_ONLY)) for t in tools}


def test_tools_from_the_file_equal_fastmcps_own(tmp_path: Path) -> None:
    tools = _all_tools()
    expected = _as_fastmcp_registers(tools)
    cold = ToolSchemaCache(tmp_path / "schemas.json", code_key(tools))
    assert _built(cold, tools) == expected
    assert cold.derived == len(tools)
    cold.save()
    warm = ToolSchemaCache(tmp_path / "schemas.json", code_key(tools))
    assert set(warm.schemas) == {t.name for t in tools}
    assert _built(warm, tools) == expected
    assert warm.derived == 0  # every tool came from the file


def _catalogue(cache_dir: Path) -> bytes:
    command = [sys.executable, "-m", "erp_mcp", "tools", "--json"]
    env = {**os.environ, CACHE_DIR_ENV: str(cache_dir)}
    return subprocess.run(command, env=env, capture_output=True, check=True).stdout


def test_the_catalogue_is_byte_identical_with_and_without_the_file(tmp_path: Path) -> None:
    cold = _catalogue(tmp_path)
    written = tmp_path / "tool-schemas-ledgerbench-erp.json"
    stored = written.stat().st_mtime_ns, written.read_bytes()
    assert _catalogue(tmp_path) == cold  # now read from the file
    assert (written.stat().st_mtime_ns, written.read_bytes()) == stored  # nothing derived again
    written.unlink()
    (tmp_path / "elsewhere").mkdir()
    assert _catalogue(tmp_path / "elsewhere") == cold


def test_a_file_of_other_code_or_unreadable_is_ignored_and_rewritten(tmp_path: Path) -> None:
    tools = ERP_TOOLS.select("finance")[:3]
    path = tmp_path / "schemas.json"
    key = code_key(tools)
    wrong = {"parameters": {"type": "object", "properties": {}}, "output_schema": None}
    other_code = json.dumps({"key": "other", "tools": {t.name: wrong for t in tools}})
    for stale in (other_code, "{not json"):
        path.write_text(stale)
        cache = ToolSchemaCache(path, key)
        assert cache.schemas == {}
        built = _built(cache, tools)
        assert all(b["parameters"] != wrong["parameters"] for b in built.values())
        cache.save()
        assert json.loads(path.read_text())["key"] == key


def test_the_key_changes_with_the_tools_code(tmp_path: Path, monkeypatch) -> None:
    package = tmp_path / "cachedtools"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(
        textwrap.dedent('''
        from pydantic import BaseModel
        from erp_mcp._tooling import ToolRegistry
        REGISTRY = ToolRegistry(("cachedtools.tools",))
        class Args(BaseModel):
            n: int = 1
        class Out(BaseModel):
            n: int
        @REGISTRY.tool("finance", Args)
        def double(runtime, args: Args) -> Out:
            """Twice n."""
            return Out(n=2 * args.n)
        ''')
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    registry: ToolRegistry = importlib.import_module("cachedtools.tools").REGISTRY
    tools = registry.select("all")
    before = code_key(tools)
    assert code_key(tools) == before
    (package / "helpers.py").write_text("LIMIT = 3\n")
    assert code_key(tools) != before


def test_a_tool_of_a_single_file_module_or_of_no_module_found(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "onefiletools.py").write_text(
        textwrap.dedent('''
        from pydantic import BaseModel
        from erp_mcp._tooling import ToolRegistry
        REGISTRY = ToolRegistry(("onefiletools",))
        class Args(BaseModel):
            n: int = 1
        @REGISTRY.tool("finance", Args)
        def echo(runtime, args: Args) -> Args:
            """n back."""
            return args
        ''')
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    (tool,) = importlib.import_module("onefiletools").REGISTRY.select("all")
    before = code_key([tool])
    assert before is not None
    with (tmp_path / "onefiletools.py").open("a") as source:
        source.write("# changed\n")
    assert code_key([tool]) != before
    unfound = dataclasses.replace(tool, fn=_in_a_module_not_found(tool.fn))
    assert code_key([unfound]) is None  # its code cannot be hashed: nothing is cached
    cache = ToolSchemaCache(tmp_path / "schemas.json", None)
    cache.tool(as_callable(tool, None), tool, READ_ONLY)
    cache.save()
    assert not (tmp_path / "schemas.json").exists()


def _in_a_module_not_found(fn):
    """``fn`` as if defined where no source can be found (as a script's ``__main__``)."""

    def copy(runtime, args):
        return fn(runtime, args)

    copy.__module__ = "no_module_of_this_name"
    return copy


def test_collection_pauses_for_the_start_and_resumes_frozen() -> None:
    script = textwrap.dedent("""
        import gc
        from ledgerbench_core._startup import pause_collection, resume_collection
        resume_collection()  # not paused: nothing happens
        assert gc.isenabled() and gc.get_freeze_count() == 0
        pause_collection()
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]
        resume_collection()
        assert gc.isenabled() and gc.get_freeze_count() >= 1000
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
