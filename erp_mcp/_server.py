"""``build_server``: the FastMCP server over one ERP database."""

from __future__ import annotations

from pathlib import Path

from fastmcp import FastMCP

from erp_mcp._conventions import ARGUMENT_CONVENTIONS
from erp_mcp._middleware import FaultConfig
from erp_mcp._pages import make_page_endpoint
from erp_mcp._resources import register_resources
from erp_mcp._runtime import RuntimeHolder
from erp_mcp._serving import assemble_server, configure_logging, http_app, server_version
from erp_mcp._tooling import tools_for
from synthetic_erp._db import ErpDatabaseError, normalize_url, sqlite_path

__all__ = ["INSTRUCTIONS", "SERVER_NAME", "build_server", "http_app", "server_version"]

SERVER_NAME = "ledgerbench-erp"

INSTRUCTIONS = f"""\
Read-only access to a company's ERP (accounts receivable and payable). Every tool is read-only.
- The ERP has its own frozen today: call erp_info for it and for the legal entities (company codes).
  Questions without a date mean the ERP's today.
- Resolve customer and vendor names with search_parties (handles partial names and misspellings);
  when the same name exists in several legal entities, say so or use the one the question names.
- Every record in a result has a `url`: cite those links for the facts you report. An erp:// link
  is an MCP resource (resources/read); an http link opens the record page.
- Results stay under about 100,000 characters: a list that would be longer comes back with
  truncated=true and a next_cursor; pass it as cursor (same filters) for the rest.
- Amounts: *_cur in the transaction currency, *_acct in the legal entity's accounting currency.
- An error starting with TRANSIENT ERROR is temporary: retry the same call.
- {ARGUMENT_CONVENTIONS}
"""


def build_server(
    db_url: str,
    *,
    toolset: str = "all",
    public_url: str | None = None,
    faults: FaultConfig | None = None,
    audit_log: Path | None = None,
    token: str | None = None,
    include_bench_tools: bool = False,
    check_database: bool = True,
) -> FastMCP:
    """A FastMCP server exposing the ERP at ``db_url`` read-only.

    The engine opens in the server lifespan. ``toolset`` is finance, generic or all. ``public_url``
    is the base of record links (default http://127.0.0.1:8765; ``"erp://"`` makes them MCP
    resource URIs, for stdio). ``token`` enables bearer auth on HTTP (MCP endpoint and record
    pages). ``include_bench_tools`` adds the no-op ``ping`` tool. Raises ``ErpDatabaseError``
    (message says how to generate the ERP) when a SQLite file is missing."""
    tools = tools_for(toolset, include_bench=include_bench_tools)
    db_url = normalize_url(db_url)
    path = sqlite_path(db_url)
    if check_database and path is not None and not path.exists():
        raise ErpDatabaseError(
            f"ERP database {path} does not exist; create it with: "
            f"python -m synthetic_erp generate --db sqlite:///{path}"
        )
    configure_logging()
    holder = RuntimeHolder(db_url, public_url)
    mcp = assemble_server(
        name=SERVER_NAME,
        instructions=INSTRUCTIONS,
        tools=tools,
        holder=holder,
        lifespan_key="erp",
        faults=faults,
        audit_log=audit_log,
        token=token,
    )
    register_resources(mcp, holder)
    page = make_page_endpoint(holder, token)
    mcp.custom_route("/erp/{legal_entity}/{entity_set}/{key}", methods=["GET"])(page)
    mcp.custom_route("/erp/{rest:path}", methods=["GET"])(page)
    return mcp
