"""Synthetic research world: the public companies, filings, news and market data around the ERP.

Facts first: a seeded ledger of figures, events and prices for a universe of companies (most of
them the ERP's customers and vendors), then every document rendered from those facts, indexed for
BM25 search, with one snapshot hash. Questions with computed keys and gold documents come from
the same ledger; an MCP server (search, fetch, company, prices) serves the world to agents.
"""

from typing import Any

_EXPORTS = {
    "GENERATOR_VERSION": "synthetic_world._generate",
    "INSTRUCTIONS": "synthetic_world._server",
    "LINK_BASE": "synthetic_world._documents",
    "SOURCE_TYPES": "synthetic_world._documents",
    "WORLD_TOOLS": "synthetic_world._tools",
    "WorldError": "synthetic_world._generate",
    "WorldReport": "synthetic_world._generate",
    "WorldUnavailable": "synthetic_world._runtime",
    "build_world_server": "synthetic_world._server",
    "generate_world": "synthetic_world._generate",
    "parse_doc_link": "synthetic_world._tools",
    "read_documents": "synthetic_world._tools",
}


def __getattr__(name: str) -> Any:
    """Exports load on first use: generating or drafting questions never imports the MCP server
    machinery (seconds of start-up)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'synthetic_world' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)


__all__ = [
    "GENERATOR_VERSION",
    "INSTRUCTIONS",
    "LINK_BASE",
    "SOURCE_TYPES",
    "WORLD_TOOLS",
    "WorldError",
    "WorldReport",
    "WorldUnavailable",
    "build_world_server",
    "generate_world",
    "parse_doc_link",
    "read_documents",
]
