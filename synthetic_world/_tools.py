"""The research tools: world_info, search, fetch, company and prices (all read-only).

Each tool is a pydantic input model, a pydantic output model and a function, registered in
:data:`WORLD_TOOLS` and served by the ERP server's shared machinery (bounded arguments, one-line
errors, faults, audit log, result budget)."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field

from erp_mcp._paging import PageArgs, PageInfo, cursor_offset, page_info
from erp_mcp._records import StrictModel
from erp_mcp._tooling import ClientError, ToolRegistry
from synthetic_world._documents import SOURCE_TYPES
from synthetic_world._runtime import CompanyRow, WorldRuntime
from synthetic_world._search import SearchEngine

WORLD_TOOLS = ToolRegistry(("synthetic_world._tools",), service="the research world")
"""The world server's tools."""
research_tool = WORLD_TOOLS.tool

MAX_K = 10
SourceType = Literal[
    "annual_report",
    "quarterly_report",
    "earnings_release",
    "news",
    "analyst_note",
    "funding_announcement",
    "company_profile",
    "data_vendor",
]
assert set(SourceType.__args__) == set(SOURCE_TYPES)

# -- world_info -----------------------------------------------------------------------------------


class WorldInfoArgs(StrictModel):
    pass


class WorldInfo(StrictModel):
    """Facts about the research world the server serves."""

    today: dt.date
    """The world's frozen today: nothing is published after it; "latest" means latest by then."""
    world_id: str
    """The id every document link of this world carries."""
    snapshot_hash: str
    """Hash of the world's facts, documents and index: a dataset built on another world does not
    match it."""
    first_publication: dt.date
    """The earliest document's date."""
    companies: int
    documents: int
    source_types: list[str]
    link_pattern: str
    """The form of every document link, e.g. https://world.ledgerbench.test/{world_id}/docs/{id}."""


@research_tool("research", WorldInfoArgs, lookup=True)
def world_info(rt: WorldRuntime, args: WorldInfoArgs) -> WorldInfo:
    """The research world's today, id, snapshot hash, size, document kinds and link form. Call
    it first: questions without a date mean the world's today."""
    (documents,) = rt.connection().execute("SELECT count(*) FROM document").fetchone()
    return WorldInfo(
        today=rt.today,
        world_id=rt.world_id,
        snapshot_hash=rt.snapshot_hash,
        first_publication=rt.first_day,
        companies=len(rt.companies.rows),
        documents=documents,
        source_types=list(SOURCE_TYPES),
        link_pattern=f"{rt.link_base}/{rt.world_id}/docs/{{doc_id}}",
    )


# -- search --------------------------------------------------------------------------------------


class SearchArgs(StrictModel):
    query: str = Field(min_length=1, max_length=300)
    """Words to look for, e.g. "Lynch Hardware fiscal 2025 revenue" (BM25 ranking; all words
    first, then any of the rarer ones)."""
    k: int = Field(5, ge=1, le=MAX_K)
    """At most 10."""
    company: str | None = Field(None, max_length=100)
    """Only documents about this company: a name (misspellings resolve), ticker or company id."""
    source_type: SourceType | None = None
    """Only this kind of document."""
    published_after: dt.date | None = None
    """Only documents published on or after this date (YYYY-MM-DD)."""
    published_before: dt.date | None = None
    """Only documents published on or before this date (YYYY-MM-DD), e.g. a question's as-of
    date."""


class CompanyRef(StrictModel):
    company_id: str
    name: str


class SearchResult(StrictModel):
    url: str
    """The document's link: pass it to fetch, and cite it."""
    title: str
    source: str
    """Who published it."""
    source_type: str
    published_at: dt.date
    companies: list[CompanyRef]
    """The companies it covers, the main one first."""
    snippet: str
    """The passage that best matches the query (about 32 words)."""
    score: float
    """BM25 score (higher is better)."""


class SearchResults(StrictModel):
    query: str
    company: CompanyRef | None
    """The company the ``company`` filter resolved to."""
    results: list[SearchResult]


@research_tool("research", SearchArgs, lookup=True)
def search(rt: WorldRuntime, args: SearchArgs) -> SearchResults:
    """Search the world's filings, earnings releases, news, analyst notes, funding
    announcements, company profiles and data-vendor tables. Returns up to k documents with url,
    title, source, date and a snippet; fetch a url for the whole document."""
    _check_dates(rt, args.published_after, args.published_before)
    company = resolve_company(rt, args.company) if args.company else None
    engine = _engine(rt)
    hits = engine.search(
        args.query,
        args.k,
        company_id=company.company_id if company else None,
        source_type=args.source_type,
        published_after=args.published_after.isoformat() if args.published_after else None,
        published_before=args.published_before.isoformat() if args.published_before else None,
    )
    return SearchResults(
        query=args.query,
        company=CompanyRef(company_id=company.company_id, name=company.name) if company else None,
        results=[
            SearchResult(
                url=rt.url(hit.doc_id),
                title=hit.title,
                source=hit.source,
                source_type=hit.source_type,
                published_at=dt.date.fromisoformat(hit.published_at),
                companies=_refs(rt, hit.companies),
                snippet=hit.snippet,
                score=hit.score,
            )
            for hit in hits
        ],
    )


def _engine(rt: WorldRuntime) -> SearchEngine:
    local = rt._local
    engine = getattr(local, "engine", None)
    if engine is None or engine.conn is not rt.connection():
        (documents,) = rt.connection().execute("SELECT count(*) FROM document").fetchone()
        engine = SearchEngine(rt.connection(), documents)
        local.engine = engine
    return engine


def _refs(rt: WorldRuntime, companies: str) -> list[CompanyRef]:
    refs = []
    for cid in companies.split():
        row = rt.companies.by_id.get(cid)
        if row is not None:
            refs.append(CompanyRef(company_id=cid, name=row.name))
    return refs


def _check_dates(
    rt: WorldRuntime,
    after: dt.date | None,
    before: dt.date | None,
    names: tuple[str, str] = ("published_after", "published_before"),
    *,
    floor: bool = False,
) -> None:
    """Dates inside the world: none after its today (and, with ``floor``, none more than a year
    before its first document)."""
    for name, day in zip(names, (after, before), strict=True):
        if day is not None and day > rt.today:
            raise ClientError(
                f"{name} {day} is after the world's today ({rt.today}): nothing is published "
                f"after it; give a date up to {rt.today} or omit {name}"
            )
        if floor and day is not None and day < rt.first_day - dt.timedelta(days=366):
            raise ClientError(
                f"{name} {day} is before the world begins (its first document is from "
                f"{rt.first_day}); give a later date or omit {name}"
            )
    if after and before and after > before:
        raise ClientError(f"{names[0]} ({after}) is after {names[1]} ({before})")


def resolve_company(rt: WorldRuntime, text: str) -> CompanyRow:
    """The one company ``text`` names, or a ClientError with the closest matches."""
    matches = rt.companies.resolve(text, limit=5)
    if matches and (matches[0][2] != "fuzzy" or matches[0][1] >= 88):
        best = matches[0]
        ties = [m for m in matches[1:] if m[1] == best[1] and m[2] == best[2]]
        if not ties:
            return best[0]
    hint = (
        "closest matches: "
        + "; ".join(f"{r.name} ({r.ticker or r.company_id})" for r, _, _ in matches)
        if matches
        else "use the company tool to look a name up"
    )
    raise ClientError(f"no single company matches {text!r}; {hint}")


# -- fetch ---------------------------------------------------------------------------------------


class FetchArgs(StrictModel):
    url: str = Field(min_length=1, max_length=300)
    """A document link from search (https://world.ledgerbench.test/{world_id}/docs/{doc_id}),
    its path, or the bare document id."""


class Document(StrictModel):
    url: str
    doc_id: str
    title: str
    source: str
    source_type: str
    published_at: dt.date
    companies: list[CompanyRef]
    content: str
    """The whole document as markdown (tables as markdown tables)."""


_DOC_PATH = re.compile(r"^/?(?:(?P<world>w[0-9a-f]{10})/)?docs/(?P<doc>d[0-9a-f]{12})/?$")
_BARE_ID = re.compile(r"^d[0-9a-f]{12}$")


def parse_doc_link(text: str) -> tuple[str | None, str] | None:
    """``(world_id or None, doc_id)`` of a document link, path or bare id; None if not one."""
    text = text.strip()
    if _BARE_ID.match(text):
        return None, text
    try:  # a link, or a path: the query and fragment never name the document
        path = urlsplit(text).path
    except ValueError:  # e.g. an unclosed IPv6 host, "http://[::1/x"
        return None
    match = _DOC_PATH.match(path)
    return (match["world"], match["doc"]) if match else None


@research_tool("research", FetchArgs, lookup=True)
def fetch(rt: WorldRuntime, args: FetchArgs) -> Document:
    """Read one document of the world (a url from search) as markdown with its source, date and
    companies."""
    parsed = parse_doc_link(args.url)
    if parsed is None:
        raise ClientError(
            f"{args.url!r} is not a document link of this world; pass a url from search, like "
            f"{rt.url('d0123456789ab')}"
        )
    world, doc_id = parsed
    if world is not None and world != rt.world_id:
        raise ClientError(
            f"{args.url!r} belongs to research world {world}, but this server serves world "
            f"{rt.world_id}; search this world for the document you need"
        )
    row = (
        rt.connection()
        .execute(
            "SELECT doc_id, title, source, source_type, published_at, companies, body "
            "FROM document WHERE doc_id = ?",
            (doc_id,),
        )
        .fetchone()
    )
    if row is None:
        raise ClientError(f"no document {doc_id} in research world {rt.world_id}")
    return Document(
        url=rt.url(row[0]),
        doc_id=row[0],
        title=row[1],
        source=row[2],
        source_type=row[3],
        published_at=dt.date.fromisoformat(row[4]),
        companies=_refs(rt, row[5]),
        content=row[6],
    )


# -- company -------------------------------------------------------------------------------------


class CompanyArgs(StrictModel):
    name_or_ticker: str = Field(min_length=1, max_length=100)
    """A company name (partial names and misspellings work), ticker or company id."""


class ErpAccountRef(StrictModel):
    legal_entity: str
    party_type: str
    """customer or vendor: how the company appears in the ERP."""
    account: str
    """The ERP account id, for the ERP server's tools."""


class CompanyProfile(StrictModel):
    company_id: str
    name: str
    listed: bool
    ticker: str | None
    exchange: str | None
    industry: str
    sector: str
    headquarters: str
    reporting_currency: str
    fiscal_year_end_month: int
    """12 = the fiscal year is the calendar year; 6 = FY2025 runs July 2024 to June 2025."""
    founded_year: int
    chief_executive: str
    """At the world's today."""
    lines_of_business: list[str]
    peers: list[CompanyRef]
    erp_accounts: list[ErpAccountRef]
    """This company's accounts in the ERP (empty when it is neither customer nor vendor)."""
    match: str
    """How the name matched: company_id, ticker, name or fuzzy."""
    score: float


class CompanyMatches(StrictModel):
    query: str
    matches: list[CompanyProfile]
    """Best first; several when the name is ambiguous (check ticker, country and industry)."""


@research_tool("research", CompanyArgs, lookup=True)
def company(rt: WorldRuntime, args: CompanyArgs) -> CompanyMatches:
    """Resolve a company name (misspellings included), ticker or id to profiles: ticker,
    industry, headquarters, fiscal year end, chief executive, peers and its ERP account ids."""
    matches = rt.companies.resolve(args.name_or_ticker, limit=5)
    if not matches:
        raise ClientError(
            f"no company in this world resembles {args.name_or_ticker!r}; try a shorter part of "
            "the name, or search"
        )
    return CompanyMatches(query=args.name_or_ticker, matches=[_profile(rt, *m) for m in matches])


def _profile(rt: WorldRuntime, row: CompanyRow, score: float, how: str) -> CompanyProfile:
    from synthetic_world._render import _country

    return CompanyProfile(
        company_id=row.company_id,
        name=row.name,
        listed=row.listed,
        ticker=row.ticker,
        exchange=row.exchange,
        industry=row.industry,
        sector=row.sector,
        headquarters=f"{row.city}, {_country(row.country)}",
        reporting_currency=row.currency,
        fiscal_year_end_month=row.fiscal_year_end_month,
        founded_year=row.founded_year,
        chief_executive=row.ceo,
        lines_of_business=list(row.segments),
        peers=_refs(rt, " ".join(row.peers)),
        erp_accounts=[
            ErpAccountRef(legal_entity=le, party_type=kind, account=account)
            for le, kind, account in row.erp_accounts
        ],
        match=how,
        score=score,
    )


# -- prices --------------------------------------------------------------------------------------


class PriceArgs(PageArgs):
    ticker: str = Field(min_length=1, max_length=12)
    """A listed company's ticker (the company tool gives it)."""
    start: dt.date
    """First day (YYYY-MM-DD)."""
    end: dt.date
    """Last day (YYYY-MM-DD), at most the world's today."""


class PriceRow(StrictModel):
    date: dt.date
    close: float
    """Closing price in the reporting currency."""
    shares_outstanding: float | None
    """Millions of shares, as last reported by that day."""
    market_cap: float | None
    """Close x shares outstanding, millions of the reporting currency."""


class Prices(PageInfo):
    ticker: str
    company: CompanyRef
    currency: str
    items: list[PriceRow]
    """Trading days in the range, oldest first (no rows for weekends)."""
    sources: list[str]
    """Links of the filings that reported the share counts these rows use (cite them)."""


@research_tool("research", PriceArgs, lookup=True)
def prices(rt: WorldRuntime, args: PriceArgs) -> Prices:
    """Daily closing prices, shares outstanding and market capitalisation of a listed company
    between two dates (paged: page_size rows, next_cursor for more)."""
    ticker = args.ticker.strip().upper().removeprefix("$")
    row = rt.companies.by_ticker.get(ticker)
    if row is None:
        guess = rt.companies.resolve(args.ticker, limit=3)
        hint = "; ".join(f"{r.name} ({r.ticker or 'not listed'})" for r, _, _ in guess)
        raise ClientError(
            f"no listed company has the ticker {args.ticker!r}"
            + (f"; closest: {hint}" if hint else "; the company tool gives tickers")
        )
    _check_dates(rt, args.start, args.end, ("start", "end"), floor=True)
    conn = rt.connection()
    (total,) = conn.execute(
        "SELECT count(*) FROM price WHERE ticker = ? AND date BETWEEN ? AND ?",
        (ticker, args.start.isoformat(), args.end.isoformat()),
    ).fetchone()
    offset = cursor_offset(args)
    rows = conn.execute(
        "SELECT date, close FROM price WHERE ticker = ? AND date BETWEEN ? AND ? ORDER BY date "
        "LIMIT ? OFFSET ?",
        (ticker, args.start.isoformat(), args.end.isoformat(), args.page_size, offset),
    ).fetchall()
    items, sources = [], {}
    for day, close in rows:
        reported = rt.shares_on(ticker, day)
        shares = reported[0] if reported else None
        if reported:
            sources.setdefault(reported[1], None)
        value = float(close)
        items.append(
            PriceRow(
                date=dt.date.fromisoformat(day),
                close=value,
                shares_outstanding=shares,
                market_cap=round(value * shares, 1) if shares is not None else None,
            )
        )
    info = page_info(args, offset, len(items), total)
    return Prices(
        **info.model_dump(),
        ticker=ticker,
        company=CompanyRef(company_id=row.company_id, name=row.name),
        currency=row.currency,
        items=items,
        sources=list(sources),
    )


def read_documents(
    path: Path, doc_ids: Iterable[str], link_base: str | None = None
) -> tuple[dict[str, str], dict[str, Document]]:
    """The documents ``doc_ids`` of the world file ``path`` as ``fetch`` returns them (links on
    ``link_base``), read straight from the file: copies that outlive the server. Returns the
    world's meta (``world_id``, ``snapshot_hash``, ...) and {doc_id: document}; unknown ids are
    left out. Raises :class:`WorldUnavailable` when the file is not a readable world."""
    rt = WorldRuntime.open(Path(path), link_base)
    try:
        found = {}
        for doc_id in doc_ids:
            with contextlib.suppress(ClientError):
                found[doc_id] = fetch(rt, FetchArgs(url=doc_id))
        return dict(rt.meta), found
    finally:
        rt.close()
