"""ERP MCP server: read-only finance tools over the synthetic ERP, with citable record URLs."""

from erp_mcp._cli import main, tool_catalog
from erp_mcp._middleware import TRANSIENT_PREFIX, FaultConfig
from erp_mcp._server import INSTRUCTIONS, build_server
from erp_mcp._tooling import TOOLSETS

__all__ = [
    "INSTRUCTIONS",
    "TOOLSETS",
    "TRANSIENT_PREFIX",
    "FaultConfig",
    "build_server",
    "main",
    "tool_catalog",
]
