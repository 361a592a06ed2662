"""``build_world_server``: the research world over MCP, served by the ERP server's machinery."""

from __future__ import annotations

import html
from pathlib import Path

import anyio
from fastmcp import FastMCP
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from erp_mcp._middleware import FaultConfig
from erp_mcp._pages import guarded_page, not_found_page, raw_path, wants_json
from erp_mcp._serving import assemble_server, configure_logging
from erp_mcp._tooling import ClientError
from synthetic_world._runtime import WorldHolder, connect_read_only

SERVER_NAME = "ledgerbench-research"

INSTRUCTIONS = """\
Read-only access to a research world: public companies' filings, earnings releases, news, analyst
notes, funding announcements, company profiles, data-vendor tables and daily prices.
- The world has its own frozen today: call world_info. Nothing is published after it; "latest"
  means the latest published by the question's as-of date (published_before filters by date).
- Resolve company names with company (misspellings and near-duplicate names: check ticker,
  country and industry). It also gives a company's accounts in the ERP.
- search returns urls with snippets; fetch a url to read the whole document; cite the urls of
  the documents your figures come from.
- Fiscal years are named by the calendar year they end in; filings state millions, data vendors
  thousands; adjusted (non-GAAP) figures differ from GAAP ones; a newer annual report may restate
  the prior year.
- An error starting with TRANSIENT ERROR is temporary: retry the same call.
"""


def build_world_server(
    db_path: Path,
    *,
    link_base: str | None = None,
    faults: FaultConfig | None = None,
    audit_log: Path | None = None,
    token: str | None = None,
    include_bench_tools: bool = False,
    check_database: bool = True,
) -> FastMCP:
    """A FastMCP server over the world in the SQLite file ``db_path``.

    ``link_base`` is the base of document links (default https://world.ledgerbench.test, the same
    in every run). Raises ``WorldUnavailable`` (its message says how to generate the world) when
    the file is missing or not a world."""
    from erp_mcp._tooling import ERP_TOOLS
    from synthetic_world._tools import WORLD_TOOLS

    if check_database:
        connect_read_only(Path(db_path)).close()
    tools = WORLD_TOOLS.select("all")
    if include_bench_tools:
        tools += [t for t in ERP_TOOLS.select("all", include_bench=True) if t.toolset == "bench"]
    configure_logging("synthetic_world")
    holder = WorldHolder(Path(db_path), link_base)
    mcp = assemble_server(
        name=SERVER_NAME,
        instructions=INSTRUCTIONS,
        tools=tools,
        holder=holder,
        lifespan_key="world",
        faults=faults,
        audit_log=audit_log,
        token=token,
    )
    page = guarded_page(token, _document_page(holder), "python -m synthetic_world link")
    mcp.custom_route("/{world_id}/docs/{doc_id}", methods=["GET"])(page)
    return mcp


def _document_page(holder: WorldHolder):
    from synthetic_world._tools import FetchArgs, fetch

    async def document(request: Request) -> Response:
        path = raw_path(request)
        runtime = await anyio.to_thread.run_sync(holder.get)
        try:
            doc = await anyio.to_thread.run_sync(fetch, runtime, FetchArgs(url=path[:300]))
        except ClientError as error:
            return not_found_page(request, str(error))
        if wants_json(request):
            return JSONResponse(doc.model_dump(mode="json"))
        return HTMLResponse(render_document_html(doc.model_dump(mode="json")))

    return document


def render_document_html(doc: dict) -> str:
    """A document page: metadata and the markdown body, every character escaped (headings and
    tables kept as structure, nothing from the text is ever parsed as HTML)."""
    body = _markdown_html(doc["content"])
    companies = ", ".join(html.escape(c["name"]) for c in doc["companies"])
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(doc['title'])}</title><style>"
        "body{font-family:sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}td{text-align:right}"
        "td:first-child{text-align:left}.meta{color:#555}</style></head><body>"
        f"<p class='meta'>{html.escape(doc['source'])} · {html.escape(doc['source_type'])} · "
        f"published {html.escape(doc['published_at'])} · {companies}</p>{body}</body></html>"
    )


def _markdown_html(text: str) -> str:
    out: list[str] = []
    rows: list[list[str]] = []

    def flush() -> None:
        if rows:
            head, *rest = rows
            cells = "".join(f"<th>{html.escape(c)}</th>" for c in head)
            body = "".join(
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                for row in rest
            )
            out.append(f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>")
            rows.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if not all(set(c) <= set("-:") for c in cells):
                rows.append(cells)
            continue
        flush()
        if not stripped:
            continue
        level = len(stripped) - len(stripped.lstrip("#"))
        if 0 < level <= 4 and stripped[level : level + 1] == " ":
            out.append(f"<h{level}>{html.escape(stripped[level + 1 :])}</h{level}>")
        else:
            out.append(f"<p>{html.escape(stripped.strip('*'))}</p>")
    flush()
    return "".join(out)
