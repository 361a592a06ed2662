"""The tools' JSON schemas, kept on disk between starts and keyed by a hash of the code.

FastMCP derives each tool's input and output schema from its function with pydantic (a
``TypeAdapter`` of the signature, a JSON schema of the return model): about a fifth of a server's
start-up CPU, spent again on every start for the same answer. This module keeps those two schemas
per tool in one JSON file per server and builds the FastMCP tool from them, skipping that work.

The file is valid only for the code that made it: its key hashes every ``.py`` file of the packages
the tools come from (plus ``erp_mcp``, ``synthetic_erp`` and ``ledgerbench_core``) and the versions
of Python, pydantic, pydantic-core, FastMCP, mcp and annotated-types. Under any other key, or when
the file cannot be read, the schemas are derived as before and the file is rewritten (atomically:
parallel starts each write a whole file). A tool built from the file equals the one FastMCP
derives (tests/test_tool_cache.py).

Where: ``$LEDGERBENCH_CACHE_DIR``, else ``.ledgerbench/cache`` in a checkout, else
``~/.cache/ledgerbench``. A cache that cannot be written costs only the time.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from fastmcp.tools import Tool
from fastmcp.tools.function_tool import FunctionTool
from mcp.types import ToolAnnotations

from erp_mcp._tooling import ToolDef

CACHE_DIR_ENV = "LEDGERBENCH_CACHE_DIR"
FORMAT_VERSION = 1
"""Raise when the file's layout changes."""
ALWAYS_HASHED = ("erp_mcp", "synthetic_erp", "ledgerbench_core")
"""Packages every tool schema may depend on (the serving machinery, record types, shared
helpers)."""
SCHEMA_LIBRARIES = ("mcp", "annotated-types")
"""Installed libraries (besides pydantic and FastMCP) whose version is part of the key."""


def cache_dir() -> Path:
    """Where the schema files live (see the module doc)."""
    if configured := os.environ.get(CACHE_DIR_ENV):
        return Path(configured)
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").exists():
        return root / ".ledgerbench" / "cache"
    return Path.home() / ".cache" / "ledgerbench"


def code_key(tools: Iterable[ToolDef]) -> str | None:
    """A hash of everything the tools' schemas are derived from; None when some tool's code
    cannot be found (a tool defined in ``__main__``, say): then nothing is cached."""
    import fastmcp
    import pydantic
    import pydantic_core

    packages = set(ALWAYS_HASHED)
    for tool in tools:
        for obj in (tool.fn, tool.input_model, tool.output_model):
            packages.add(obj.__module__.split(".")[0])
    digest = hashlib.sha256()
    versions = (FORMAT_VERSION, sys.version, pydantic.VERSION, pydantic_core.__version__,
                fastmcp.__version__, *map(_installed, SCHEMA_LIBRARIES))  # fmt: skip
    digest.update(repr(versions).encode())
    for package in sorted(packages):
        root = _folder(package)
        if root is None:
            return None
        for path in _sources(root):
            digest.update(f"\0{path.relative_to(root.parent)}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _installed(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


def _folder(package: str) -> Path | None:
    """Where ``package``'s sources are (found, not imported): its folder, or the file of a
    top-level module."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):  # ValueError: a module without a spec (__main__)
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations:
        return Path(locations[0])
    return Path(spec.origin) if spec.origin and spec.origin.endswith(".py") else None


def _sources(folder: Path) -> list[Path]:
    if folder.is_file():
        return [folder]
    found = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [Path(top, name) for name in sorted(files) if name.endswith(".py")]
    return found


class ToolSchemaCache:
    """One server's schema file: :meth:`tool` builds each FastMCP tool, from the file when it
    holds the tool's schemas, else as FastMCP derives them; :meth:`save` writes what was
    derived."""

    def __init__(self, path: Path, key: str | None) -> None:
        self.path = path
        self.key = key
        self.schemas: dict[str, dict[str, Any]] = self._read()
        self.derived = 0

    @classmethod
    def for_server(cls, server_name: str, tools: list[ToolDef]) -> ToolSchemaCache:
        return cls(cache_dir() / f"tool-schemas-{server_name}.json", code_key(tools))

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.key is None:
            return {}
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(stored, dict) or stored.get("key") != self.key:
            return {}
        tools = stored.get("tools")
        return tools if isinstance(tools, dict) else {}

    def tool(
        self, fn: Callable[..., Any], tool: ToolDef, annotations: ToolAnnotations
    ) -> FunctionTool:
        """The FastMCP tool serving ``fn`` as ``tool``, as ``FastMCP.tool`` would register it."""
        cached = self.schemas.get(tool.name)
        if isinstance(cached, dict) and {"parameters", "output_schema"} <= cached.keys():
            return FunctionTool(
                fn=fn,
                return_type=tool.output_model,
                name=tool.name,
                description=tool.description,
                parameters=cached["parameters"],
                output_schema=cached["output_schema"],
                annotations=annotations,
                tags=set(),
                run_in_thread=True,
            )
        derived = Tool.from_function(
            fn, name=tool.name, description=tool.description, annotations=annotations, task=False
        )
        assert isinstance(derived, FunctionTool)
        self.schemas[tool.name] = {
            "parameters": derived.parameters,
            "output_schema": derived.output_schema,
        }
        self.derived += 1
        return derived

    def save(self) -> None:
        """Write the file if this start derived any schema (never fails: it is only a cache)."""
        if not self.derived or self.key is None:
            return
        # not sort_keys: a schema's key order is part of the catalogue
        text = json.dumps({"key": self.key, "tools": self.schemas})
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".part")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(temporary, self.path)
            except OSError:
                Path(temporary).unlink(missing_ok=True)
                raise
