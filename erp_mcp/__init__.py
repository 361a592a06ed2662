"""ERP MCP server: read-only finance tools over the synthetic ERP, with citable record URLs."""

from erp_mcp._cli import main, tool_catalog
from erp_mcp._middleware import TRANSIENT_PREFIX, FaultConfig
from erp_mcp._pages import read_record_pages
from erp_mcp._server import INSTRUCTIONS, build_server, http_app
from erp_mcp._tooling import RESULT_BUDGET, TOOLSETS

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
