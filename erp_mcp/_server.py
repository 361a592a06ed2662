"""``build_server``: the FastMCP server over one ERP database."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import anyio
from fastmcp import FastMCP
from fastmcp.server.lifespan import lifespan
from mcp.types import ToolAnnotations

from erp_mcp._middleware import (
    ArgumentGate,
    AuditMiddleware,
    FaultConfig,
    FaultMiddleware,
    InlinedSchemas,
)
from erp_mcp._pages import make_page_endpoint
from erp_mcp._resources import register_resources
from erp_mcp._runtime import RuntimeHolder
from erp_mcp._security import HostOriginGuard
from erp_mcp._tooling import as_callable, tools_for
from synthetic_erp._db import ErpDatabaseError, normalize_url, sqlite_path

SERVER_NAME = "ledgerbench-erp"

INSTRUCTIONS = """\
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
"""


def server_version() -> str:
    """The LedgerBench version (reported as serverInfo.version)."""
    try:
        return metadata.version("ledgerbench")
    except metadata.PackageNotFoundError:
        return "0+unknown"


class _OneLineFormatter(logging.Formatter):
    """Exceptions as one line: rendering a traceback blocks the event loop for up to a second."""

    def formatException(self, exc_info) -> str:
        kind, value, _ = exc_info
        text = (str(value).splitlines() or [""])[0][:300]
        return f"  {kind.__name__ if kind else 'Exception'}: {text}"


def configure_logging() -> None:
    """Plain, cheap logging to stderr for the fastmcp and erp_mcp loggers (no rich tracebacks)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineFormatter("%(levelname)s %(name)s: %(message)s"))
    for name in ("fastmcp", "erp_mcp", "mcp"):
        log = logging.getLogger(name)
        for old in list(log.handlers):
            log.removeHandler(old)
        log.addHandler(handler)
        log.propagate = False
        if name == "erp_mcp" or log.level == logging.NOTSET:
            log.setLevel(logging.WARNING)


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

    @lifespan
    async def erp_lifespan(server):
        runtime = await anyio.to_thread.run_sync(holder.get)
        try:
            yield {"erp": runtime}
        finally:
            holder.close()

    by_name = {tool.name: tool for tool in tools}
    middleware: list = [InlinedSchemas()]
    if audit_log is not None:
        middleware.append(AuditMiddleware(audit_log))
    middleware.append(ArgumentGate(by_name))
    if faults is not None and faults.active:
        middleware.append(FaultMiddleware(faults, by_name))
    auth = None
    if token:
        from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

        auth = StaticTokenVerifier(tokens={token: {"client_id": "erp-client", "scopes": []}})
    mcp = FastMCP(
        SERVER_NAME,
        instructions=INSTRUCTIONS,
        version=server_version(),
        lifespan=erp_lifespan,
        mask_error_details=True,
        dereference_schemas=False,  # InlinedSchemas does it once per tool
        middleware=middleware,
        auth=auth,
    )
    read_only = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True,
                                openWorldHint=False)  # fmt: skip
    for tool in tools:
        mcp.tool(as_callable(tool, holder), name=tool.name, annotations=read_only)
    register_resources(mcp, holder)
    page = make_page_endpoint(holder, token)
    mcp.custom_route("/erp/{legal_entity}/{entity_set}/{key}", methods=["GET"])(page)
    mcp.custom_route("/erp/{rest:path}", methods=["GET"])(page)
    return mcp


def http_app(server: FastMCP, allowed_hosts: Iterable[str] = ()):
    """The ASGI app serving ``/mcp`` and the record pages behind the Host/Origin guard."""
    from starlette.middleware import Middleware

    guard = Middleware(HostOriginGuard, allowed_hosts=list(allowed_hosts))
    return server.http_app(path="/mcp", middleware=[guard])
