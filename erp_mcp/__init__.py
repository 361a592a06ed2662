"""ERP MCP server: read-only finance tools over the synthetic ERP, with citable record URLs."""

from typing import Any

_EXPORTS = {
    "INSTRUCTIONS": "erp_mcp._server",
    "RESULT_BUDGET": "erp_mcp._tooling",
    "TOOLSETS": "erp_mcp._tooling",
    "TRANSIENT_PREFIX": "erp_mcp._middleware",
    "FaultConfig": "erp_mcp._middleware",
    "build_server": "erp_mcp._server",
    "http_app": "erp_mcp._server",
    "main": "erp_mcp._cli",
    "read_record_pages": "erp_mcp._pages",
    "tool_catalog": "erp_mcp._cli",
}


def __getattr__(name: str) -> Any:
    """Exports load on first use: a submodule import (the shared serving flags, say) never pulls
    in the MCP server machinery (seconds of start-up)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'erp_mcp' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)


__all__ = [
    "INSTRUCTIONS",
    "RESULT_BUDGET",
    "TOOLSETS",
    "TRANSIENT_PREFIX",
    "FaultConfig",
    "build_server",
    "http_app",
    "main",
    "read_record_pages",
    "tool_catalog",
]
