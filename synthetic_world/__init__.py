"""Synthetic research world: the public companies, filings, news and market data around the ERP.

Facts first: a seeded ledger of figures, events and prices for a universe of companies (most of
them the ERP's customers and vendors), then every document rendered from those facts, indexed for
BM25 search, with one snapshot hash. Questions with computed keys and gold documents come from
the same ledger; an MCP server (search, fetch, company, prices) serves the world to agents.
"""

from synthetic_world._documents import LINK_BASE, SOURCE_TYPES
from synthetic_world._generate import GENERATOR_VERSION, WorldError, WorldReport, generate_world
from synthetic_world._runtime import WorldUnavailable
from synthetic_world._server import INSTRUCTIONS, build_world_server
from synthetic_world._tools import WORLD_TOOLS, parse_doc_link

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
]
