"""The scripted agent's research solvers: entity-performance and brief questions of the world.

Like the obligations solvers, they know the question generator's grammar (the phrasings of
``synthetic_world/question_kinds.yaml`` and the brief requests) and answer through the MCP tools
alone: the world's ``company``, ``search``, ``fetch`` and ``prices`` (documents parsed as they
come back) and, for ERP account references and the AR/AP of briefs, the ERP's tools. They never
read the world's database. Figures follow docs/conventions.md: the latest version published by the
question's date (a later annual report's restated prior-year column, the annual report over the
release's preliminary figure), GAAP unless adjusted, one-decimal percentages.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_EVEN, Decimal
from functools import cache
from typing import Any

from harnesses._erp_client import ErpClient
from harnesses._protocol import TrajectoryDraft
from harnesses.scripted._base import TOOL_RETRIES, ToolFailure
from harnesses.scripted._research_docs import LONG_DATE, Page, number, parse_long_date
from synthetic_world._calendar import fiscal_year_of
from synthetic_world._documents import CURRENCY_SIGNS
from synthetic_world._facts import ANNUAL_CASH_ROWS, BALANCE_ROWS, INCOME_ROWS, METRICS

SECTIONS = {
    "operations": INCOME_ROWS,
    "balance sheets": BALANCE_ROWS,
    "cash flows": ANNUAL_CASH_ROWS,
}
"""The annual-report section (its title's words) whose statement holds each metric's row."""
RELEASED = {
    "revenue": "Revenue",
    "operating_income": "GAAP operating income",
    "net_income": "net income",
}
METRIC_WORDS = {
    "revenue": "revenue",
    "net income": "net_income",
    "operating income": "operating_income",
    "gross profit": "gross_profit",
    "operating cash flow": "cash_from_operations",
    "total assets": "total_assets",
    "depreciation and amortization": "depreciation_amortization",
    "dividends paid": "dividends_paid",
    "share repurchases": "share_repurchases",
}


class NotFound(Exception):
    """What the question needs is not in the documents published by its date."""


# -- the grammar -----------------------------------------------------------------------------------

_FIELDS = {
    "company": r"(?P<company>.+?)",
    "metric": r"(?P<metric>[a-z ]+?)",
    "fiscal_year": r"(?P<fiscal_year>\d{4})",
    "as_of": rf"(?:, as of (?P<as_of>{LONG_DATE}))?",
    "peers": r"(?P<peers>.+?)",
    "peer": r"(?P<peer>.+?)",
    "product": r"(?P<product>.+?)",
    "segment": r"(?P<segment>.+?)",
    "region": r"(?P<region>.+?)",
    "date": rf"(?P<date>{LONG_DATE})",
    "prior_year": r"(?P<prior_year>\d{4})",
    "base_year": r"(?P<base_year>\d{4})",
    "measure": r"(?P<measure>[A-Za-z ]+?)",
    "first_year": r"(?P<first_year>\d{4})",
    "last_year": r"(?P<last_year>\d{4})",
    "quarter": r"(?P<quarter>the (?:first|second|third|fourth) quarter \(Q[1-4]\) of fiscal \d{4})",
}


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    from synthetic_world._briefs import AS_OF_REQUEST, BRIEF_REQUESTS
    from synthetic_world._questions import question_kinds

    _, _, kinds = question_kinds()
    out = []
    for kind in kinds:
        for phrasing in kind.phrasings:
            out.append((kind.kind, re.compile(f"^{_phrasing_regex(phrasing)}$")))
    before, _, after = AS_OF_REQUEST.partition("{day}")
    as_of = f"(?:{re.escape(before)}(?P<as_of>{LONG_DATE}){re.escape(after)})?"
    for brief, request in BRIEF_REQUESTS.items():
        head, _, tail = request.partition("{company}")
        regex = re.escape(head) + r"(?P<company>.+?)" + re.escape(tail) + as_of
        out.append((f"brief:{brief}", re.compile(f"^{regex}$")))
    return tuple(out)


def _phrasing_regex(phrasing: str) -> str:
    """A phrasing's pattern: each slot captured where it first appears, matched again after."""
    seen: set[str] = set()
    regex = []
    for part in re.split(r"(\{[a-z_]+\})", phrasing):
        if not part.startswith("{"):
            regex.append(re.escape(part))
            continue
        slot = part[1:-1]
        regex.append(f"(?P={slot})" if slot in seen else _FIELDS[slot])
        seen.add(slot)
    return "".join(regex)


def read_research(text: str) -> tuple[str, dict[str, str]] | None:
    """The question kind and its slots, when ``text`` is one of the world's phrasings."""
    for kind, pattern in _patterns():
        match = pattern.match(text.strip())
        if match:
            return kind, {k: v for k, v in match.groupdict().items() if v is not None}
    return None


# -- the tools -------------------------------------------------------------------------------------


@dataclass
class Company:
    company_id: str
    name: str
    ticker: str | None
    listed: bool
    currency: str
    peers: list[dict]
    erp_accounts: list[dict]
    lines_of_business: list[str]
    chief_executive: str
    headquarters: str
    industry: str = ""
    fiscal_year_end_month: int = 12


@dataclass
class Research:
    """The world and ERP clients of one question, with what was read so far."""

    world: ErpClient
    erp: ErpClient | None
    draft: TrajectoryDraft
    as_of: dt.date
    today: dt.date
    pages: dict[str, Page] = field(default_factory=dict)
    cited: list[str] = field(default_factory=list)

    async def call(self, client: ErpClient, tool: str, **arguments: Any) -> dict[str, Any]:
        clean = {
            k: (v.isoformat() if isinstance(v, dt.date) else v)
            for k, v in arguments.items()
            if v is not None
        }
        result = await client.call(tool, clean, self.draft)
        for attempt in range(1, TOOL_RETRIES + 1):
            if not (result.is_error and result.text.lstrip().startswith("TRANSIENT")):
                break
            await asyncio.sleep(0.2 * attempt)
            result = await client.call(tool, clean, self.draft)
        if result.is_error:
            raise ToolFailure(tool, result.text.strip() or "tool error")
        data = result.structured
        if isinstance(data, dict) and set(data) == {"result"}:
            data = data["result"]
        return data if isinstance(data, dict) else json.loads(result.text)

    async def company(self, reference: str) -> Company:
        """The company a question names: by ERP account, ticker or (misspelt) name."""
        erp_ref = re.match(r"^our (customer|vendor) (\S+) in ([A-Z]{4})$", reference)
        if erp_ref and self.erp is not None:
            kind, account, le = erp_ref.groups()
            data = await self.call(self.erp, f"get_{kind}", account=account, legal_entity=le)
            reference = data[kind]["name"]
        ticker = re.match(r"^the company with ticker ([A-Z]+)$", reference)
        if ticker:
            reference = ticker.group(1)
        data = await self.call(self.world, "company", name_or_ticker=reference)
        best = data["matches"][0]
        return Company(
            best["company_id"],
            best["name"],
            best["ticker"],
            best["listed"],
            best["reporting_currency"],
            best["peers"],
            best["erp_accounts"],
            best["lines_of_business"],
            best["chief_executive"],
            best["headquarters"],
            best.get("industry") or "",
            int(best.get("fiscal_year_end_month") or 12),
        )

    async def search(
        self,
        company: Company,
        query: str,
        source_type: str,
        k: int = 10,
        before: dt.date | None = None,
        after: dt.date | None = None,
    ) -> list[dict]:
        data = await self.call(
            self.world,
            "search",
            query=f"{company.name} {query}",
            k=k,
            company=company.company_id,
            source_type=source_type,
            published_after=after,
            published_before=before or self.as_of,
        )
        return data["results"]

    async def page(self, url: str) -> Page:
        if url not in self.pages:
            self.pages[url] = Page.from_fetch(await self.call(self.world, "fetch", url=url))
        return self.pages[url]

    def cite(self, page: Page) -> str:
        if page.url not in self.cited:
            self.cited.append(page.url)
        return page.url

    # -- filings ----------------------------------------------------------------------------------

    async def annual_pages(self, company: Company, fy: int, section: str) -> list[Page]:
        """The annual-report sections (``section`` in the title) of fiscal ``fy`` and ``fy + 1``
        published by the as-of date, newest first."""
        found = []
        for year in (fy + 1, fy):
            for hit in await self.search(
                company, f"annual report fiscal {year} {section}", "annual_report", k=5
            ):
                if hit["title"].endswith(f"fiscal {year}: {_section_title(section)}"):
                    found.append(await self.page(hit["url"]))
                    break
        return sorted(found, key=lambda p: p.published_at, reverse=True)

    async def annual(self, company: Company, metric: str, fy: int) -> tuple[Decimal, Page]:
        """The latest published figure of ``metric`` for fiscal ``fy``: the newest annual report
        stating it (a restated prior-year column wins), else the Q4 release's preliminary one."""
        section = next((s for s, rows in SECTIONS.items() if metric in rows), None)
        if metric == "employees":
            for page in await self.annual_pages(company, fy, "business overview"):
                match = page.find(r"Human capital: as of .*? we had ([\d,]+) employees")
                if match and f"Fiscal Year {fy}" in page.content.splitlines()[0]:
                    return Decimal(match.group(1).replace(",", "")), page
            raise NotFound(f"no fiscal {fy} headcount")
        if metric == "shares_outstanding":  # at the year end, in millions
            for page in await self.annual_pages(company, fy, "business overview"):
                match = page.find(r"Shares outstanding at .*?: ([\d,.]+) million\.")
                if match and f"Fiscal Year {fy}" in page.content.splitlines()[0]:
                    return Decimal(match.group(1).replace(",", "")), page
            raise NotFound(f"no fiscal {fy} year-end shares outstanding")
        for page in await self.annual_pages(company, fy, section or "operations"):
            statement = page.tables[0] if page.tables else None  # the year's statement
            if statement is None:
                continue
            cell = statement.cell(METRICS[metric], f"Fiscal {fy}")
            value = number(cell) if cell else None
            if value is not None:
                return value, page
        if metric in RELEASED:
            release = await self.release(company, f"fourth quarter and fiscal {fy}")
            if release is not None:
                value = _release_value(release, metric, f"fiscal {fy}")
                if value is not None:
                    return value, release
        if metric == "revenue":  # the next year's release compares with "a year earlier"
            later = await self.release(company, f"fourth quarter and fiscal {fy + 1}")
            paragraph = later.find(rf"Revenue for fiscal {fy + 1} was [^\n]*") if later else None
            earlier = paragraph and re.search(
                r"from (-?[$€£]-?[\d,]+\.\d) million a year earlier", paragraph.group(0)
            )
            if earlier:
                return number(earlier.group(1)), later
        raise NotFound(f"no fiscal {fy} {metric}")

    async def release(self, company: Company, period: str) -> Page | None:
        for hit in await self.search(company, f"reports results {period}", "earnings_release", k=5):
            if hit["title"] == f"{company.name} reports {period} results":
                return await self.page(hit["url"])
        return None

    async def releases(self, company: Company) -> list[dict]:
        """Earnings-release search hits by the as-of date, newest first."""
        # Releases come about every three months: the last 200 days hold the latest two or three.
        recent = self.as_of - dt.timedelta(days=200)
        hits = await self.search(company, "reports results", "earnings_release", after=recent)
        return sorted(hits, key=lambda h: h["published_at"], reverse=True)

    async def latest_fiscal_year(self, company: Company) -> int:
        """The latest fiscal year with results out by the as-of date (its fourth-quarter
        release)."""
        hits = await self.search(
            company, "reports results fourth quarter and fiscal", "earnings_release"
        )
        years = [
            int(m.group(1))
            for h in hits
            if (m := re.search(r"fourth quarter and fiscal (\d{4}) results", h["title"]))
        ]
        if not years:
            raise NotFound("no fiscal year reported yet")
        return max(years)

    async def member(
        self, company: Company, title: str, member: str, fy: int
    ) -> tuple[Decimal, Page]:
        for page in await self.annual_pages(company, fy, "revenue by segment"):
            table = page.table(title)
            cell = table.cell(member, f"Fiscal {fy}") if table else None
            if cell is not None and (value := number(cell)) is not None:
                return value, page
        raise NotFound(f"no fiscal {fy} figure for {member}")


def _section_title(section: str) -> str:
    return {
        "operations": "consolidated statements of operations",
        "balance sheets": "consolidated balance sheets",
        "cash flows": "consolidated statements of cash flows",
        "business overview": "business overview",
        "revenue by segment": "revenue by segment, product line and region",
    }[section]


def _release_value(page: Page, metric: str, period_words: str) -> Decimal | None:
    paragraph = re.search(rf"Revenue for {re.escape(period_words)} was [^\n]*", page.content)
    if paragraph is None:
        return None
    text = paragraph.group(0)
    pattern = {
        "revenue": r"^Revenue for [^$€£-]*?(-?[$€£]-?[\d,]+\.\d) million",
        "operating_income": r"GAAP operating income was (-?[$€£]-?[\d,]+\.\d) million",
        "net_income": r"net income was (-?[$€£]-?[\d,]+\.\d) million",
    }[metric]
    match = re.search(pattern, text)
    return number(match.group(1)) if match else None


def percent(numerator: Decimal, denominator: Decimal) -> Decimal:
    return (numerator / denominator * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)


def money(value: Decimal, currency: str) -> str:
    sign = "-" if value < 0 else ""
    return f"{sign}{CURRENCY_SIGNS[currency]}{abs(value):,.1f} million"


def link(text: str, page: Page) -> str:
    return f"[{text}]({page.url})"


# -- solvers ---------------------------------------------------------------------------------------

Solver = Callable[[Research, Company, dict[str, str]], Awaitable[str]]


async def _not_reported(r: Research, c: Company, s: dict[str, str], what: str, solver) -> str:
    """Fiscal year ``s["fiscal_year"]`` is not out by the as-of date: say so, with the asked
    measure for the latest fiscal year it is out for (``solver`` answers it for that year)."""
    fy = int(s["fiscal_year"])
    if s.get("strict"):
        raise NotFound(f"fiscal {fy} {what}")
    tail = ""
    try:
        latest = min(await r.latest_fiscal_year(c), fy - 1)
    except NotFound:
        latest = None
    for year in range(latest, latest - 4, -1) if latest is not None else ():
        try:
            found = await solver(r, c, {**s, "fiscal_year": str(year), "strict": "1"})
        except NotFound:
            continue
        tail = f" The latest fiscal year with its {what} reported is fiscal {year}: {found}"
        break
    return (
        f"{c.name} has not yet reported fiscal {fy} results as of {_day(r.as_of)}, so its "
        f"fiscal {fy} {what} is not yet reported.{tail}"
    )


def _day(day: dt.date) -> str:
    return f"{day:%B} {day.day}, {day.year}"


async def fy_metric(r: Research, c: Company, s: dict[str, str]) -> str:
    metric, fy = METRIC_WORDS[s["metric"]], int(s["fiscal_year"])
    try:
        value, page = await r.annual(c, metric, fy)
    except NotFound:
        return await _not_reported(r, c, s, s["metric"], fy_metric)
    r.cite(page)
    return (
        f"{c.name}'s fiscal {fy} {s['metric']} was **{money(value, c.currency)}** (GAAP), per "
        f"{link(page.title, page)}."
    )


async def latest_fy_metric(r: Research, c: Company, s: dict[str, str]) -> str:
    """The latest fiscal year for which the figure is out: a release gives revenue and income,
    the annual report (weeks later) the balance sheet and cash flows."""
    fy = await r.latest_fiscal_year(c)
    for year in (fy, fy - 1):
        try:
            await r.annual(c, METRIC_WORDS[s["metric"]], year)
        except NotFound:
            continue
        fy = year
        break
    return f"The latest fiscal year {c.name} has reported is fiscal {fy}. " + await fy_metric(
        r, c, {**s, "fiscal_year": str(fy)}
    )


async def operating_margin(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    try:
        revenue, page = await r.annual(c, "revenue", fy)
        income, page2 = await r.annual(c, "operating_income", fy)
    except NotFound:
        return await _not_reported(r, c, s, "operating margin", operating_margin)
    r.cite(page)
    r.cite(page2)
    return (
        f"{c.name}'s fiscal {fy} GAAP operating margin was **{percent(income, revenue)}%**: "
        f"operating income of {money(income, c.currency)} on revenue of "
        f"{money(revenue, c.currency)} ({link(page.title, page)})."
    )


async def adjusted_margin(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    release = await r.release(c, f"fourth quarter and fiscal {fy}")
    table = release.table("Reconciliation") if release else None
    cell = table.cell("Adjusted operating margin (non-GAAP)", f"Fiscal {fy}") if table else None
    if cell is None:
        return await _not_reported(r, c, s, "adjusted operating margin", adjusted_margin)
    adjusted = table.cell("Adjusted operating income (non-GAAP)", f"Fiscal {fy}")
    r.cite(release)
    return (
        f"{c.name}'s fiscal {fy} adjusted (non-GAAP) operating margin was **{cell}** "
        f"(adjusted operating income {money(number(adjusted), c.currency)}), per its earnings "
        f"release {link(release.title, release)}."
    )


async def free_cash_flow(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    try:
        cfo, page = await r.annual(c, "cash_from_operations", fy)
        capex, _ = await r.annual(c, "capital_expenditures", fy)
    except NotFound:
        return await _not_reported(r, c, s, "free cash flow", free_cash_flow)
    r.cite(page)
    return (
        f"{c.name}'s fiscal {fy} free cash flow was **{money(cfo - capex, c.currency)}**: "
        f"operating cash flow {money(cfo, c.currency)} minus capital expenditures "
        f"{money(capex, c.currency)} ({link(page.title, page)})."
    )


async def ebitda(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    try:
        income, page = await r.annual(c, "operating_income", fy)
        charge, flows = await r.annual(c, "depreciation_amortization", fy)
    except NotFound:
        return await _not_reported(r, c, s, "EBITDA", ebitda)
    r.cite(page)
    r.cite(flows)
    return (
        f"{c.name}'s fiscal {fy} EBITDA was **{money(income + charge, c.currency)}**: operating "
        f"income {money(income, c.currency)} ({link(page.title, page)}) plus depreciation and "
        f"amortization {money(charge, c.currency)} ({link(flows.title, flows)})."
    )


async def revenue_growth(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    try:
        current, page = await r.annual(c, "revenue", fy)
        prior, page2 = await r.annual(c, "revenue", fy - 1)
    except NotFound:
        return await _not_reported(r, c, s, "revenue growth", revenue_growth)
    r.cite(page)
    r.cite(page2)
    growth = percent(current - prior, prior)
    return (
        f"{c.name}'s revenue {'grew' if growth >= 0 else 'fell'} **{abs(growth)}%** year over "
        f"year in fiscal {fy}: {money(current, c.currency)} against "
        f"{money(prior, c.currency)} in fiscal {fy - 1} ({link(page.title, page)})."
    )


async def latest_quarter_revenue(r: Research, c: Company, s: dict[str, str]) -> str:
    hits = await r.releases(c)
    if not hits:
        raise NotFound("no earnings release")
    page = await r.page(hits[0]["url"])
    match = re.search(
        r"results for the (first|second|third|fourth) quarter(?: and)? (?:of )?"
        r"fiscal (\d{4})",
        page.content,
    )
    value = _release_value(page, "revenue", "the quarter")
    if match is None or value is None:
        raise NotFound("unreadable release")
    quarter = ("first", "second", "third", "fourth").index(match.group(1)) + 1
    r.cite(page)
    return (
        f"{c.name}'s most recent reported quarter as of {_day(r.as_of)} is Q{quarter} of "
        f"fiscal {match.group(2)} (FY{match.group(2)}-Q{quarter}): revenue of "
        f"**{money(value, c.currency)}** ({link(page.title, page)})."
    )


async def _quarter_value(r: Research, c: Company, metric: str, fy: int, q: int):
    """A quarter's cash-flow row: its quarterly report (Q1-Q3) or the fourth-quarter table of
    the annual report's cash flows (Q4)."""
    label = METRICS[metric]
    if q == 4:
        for page in await r.annual_pages(c, fy, "cash flows"):
            table = page.table("Fourth quarter")
            cell = table.cell(label, f"Q4 fiscal {fy}") if table else None
            if cell is not None and (value := number(cell)) is not None:
                return value, page
        raise NotFound(f"no Q4 fiscal {fy} {metric}")
    title = f"{c.name} quarterly report Q{q} fiscal {fy}"
    for hit in await r.search(c, f"quarterly report Q{q} fiscal {fy}", "quarterly_report", k=5):
        if hit["title"] == title:
            page = await r.page(hit["url"])
            table = page.table("Condensed Consolidated Cash Flows")
            cell = table.cell(label, f"Q{q} fiscal {fy}") if table else None
            if cell is not None and (value := number(cell)) is not None:
                return value, page
    raise NotFound(f"no Q{q} fiscal {fy} {metric}")


async def quarter_metric(r: Research, c: Company, s: dict[str, str]) -> str:
    """The quarter's figure, or "not yet reported" with the latest quarter that states it."""
    words, quarter = s["metric"], s["quarter"]
    metric = METRIC_WORDS[words]
    fy, q = int(quarter[-4:]), int(re.search(r"\(Q([1-4])\)", quarter).group(1))
    try:
        value, page = await _quarter_value(r, c, metric, fy, q)
    except NotFound:
        pass
    else:
        r.cite(page)
        return (
            f"{c.name}'s {words} in {quarter} (FY{fy}-Q{q}) were "
            f"**{money(value, c.currency)}**, per {link(page.title, page)}."
        )
    tail = ""
    for _ in range(8):  # back quarter by quarter to the latest one reported
        fy, q = (fy - 1, 4) if q == 1 else (fy, q - 1)
        try:
            value, page = await _quarter_value(r, c, metric, fy, q)
        except NotFound:
            continue
        r.cite(page)
        tail = (
            f" The latest quarter with its {words} reported is Q{q} of fiscal {fy} "
            f"(FY{fy}-Q{q}): **{money(value, c.currency)}** ({link(page.title, page)})."
        )
        break
    return f"{c.name} has not yet reported its {words} for {quarter} as of {_day(r.as_of)}.{tail}"


async def net_debt(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    try:
        debt, page = await r.annual(c, "total_debt", fy)
        cash, _ = await r.annual(c, "cash", fy)
    except NotFound:
        return await _not_reported(r, c, s, "net debt", net_debt)
    r.cite(page)
    return (
        f"{c.name}'s net debt at the end of fiscal {fy} was **{money(debt - cash, c.currency)}**"
        f": total debt {money(debt, c.currency)} less cash {money(cash, c.currency)} "
        f"({link(page.title, page)})."
    )


async def private_revenue(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    hits = await r.search(c, f"fiscal {fy} revenue reached", "news")
    announced = [h for h in hits if "revenue reached" in h["title"]]
    for hit in announced:
        if f"fiscal {fy} revenue" in hit["title"]:
            page = await r.page(hit["url"])
            match = page.find(r"was (-?[$€£][\d,]+\.\d) million")
            if match:
                r.cite(page)
                return (
                    f"{c.name} (privately held) reported fiscal {fy} revenue of "
                    f"**{money(number(match.group(1)), c.currency)}** "
                    f"({link(page.title, page)})."
                )
    missing = "not yet reported" if announced else "not disclosed"
    return (
        f"{c.name} is privately held and its fiscal {fy} revenue is **{missing}** as of "
        f"{_day(r.as_of)}: no filing, release or article states it."
    )


def _names(text: str) -> list[str]:
    parts = text.split(", ")
    last = parts.pop()
    return [*parts, *last.split(" and ")] if " and " in last else [*parts, last]


async def _peer_companies(r: Research, c: Company, text: str) -> list[Company]:
    return [await r.company(name) for name in _names(text)]


async def _latest_revenue(r: Research, c: Company) -> tuple[Decimal, int, Page]:
    fy = await r.latest_fiscal_year(c)
    value, page = await r.annual(c, "revenue", fy)
    return value, fy, page


async def peer_revenue_ranking(r: Research, c: Company, s: dict[str, str]) -> str:
    rows = []
    for company in [c, *await _peer_companies(r, c, s["peers"])]:
        value, fy, page = await _latest_revenue(r, company)
        r.cite(page)
        rows.append((value, company, fy, page))
    rows.sort(key=lambda row: -row[0])
    lines = "\n".join(
        f"| {i} | {company.name} | {money(value, company.currency)} | FY{fy} | "
        f"{link('source', page)} |"
        for i, (value, company, fy, page) in enumerate(rows, 1)
    )
    return (
        "Ranked by revenue in each company's latest reported fiscal year (as of "
        f"{_day(r.as_of)}):\n\n| Rank | Company | Revenue | Fiscal year | Source |\n"
        f"|---|---|---:|---|---|\n{lines}"
    )


async def _margin(r: Research, c: Company) -> tuple[Decimal, int, Page]:
    fy = await r.latest_fiscal_year(c)
    revenue, page = await r.annual(c, "revenue", fy)
    income, _ = await r.annual(c, "operating_income", fy)
    return percent(income, revenue), fy, page


async def peer_margin_comparison(r: Research, c: Company, s: dict[str, str]) -> str:
    other = await r.company(s["peer"])
    a, afy, apage = await _margin(r, c)
    b, bfy, bpage = await _margin(r, other)
    r.cite(apage)
    r.cite(bpage)
    higher = c if a > b else other
    return (
        f"**{higher.name}** had the higher GAAP operating margin: {c.name} {a}% in fiscal "
        f"{afy} ({link('source', apage)}) against {other.name} {b}% in fiscal {bfy} "
        f"({link('source', bpage)})."
    )


async def _growth(r: Research, c: Company) -> tuple[Decimal, int, Page]:
    fy = await r.latest_fiscal_year(c)
    current, page = await r.annual(c, "revenue", fy)
    prior, _ = await r.annual(c, "revenue", fy - 1)
    return percent(current - prior, prior), fy, page


async def peer_growth_comparison(r: Research, c: Company, s: dict[str, str]) -> str:
    other = await r.company(s["peer"])
    a, afy, apage = await _growth(r, c)
    b, bfy, bpage = await _growth(r, other)
    r.cite(apage)
    r.cite(bpage)
    verdict = "Yes" if a > b else "No"
    return (
        f"{verdict}: {c.name}'s revenue grew {a}% in fiscal {afy} ({link('source', apage)}), "
        f"against {b}% for {other.name} in fiscal {bfy} ({link('source', bpage)})."
    )


async def competitors(r: Research, c: Company, s: dict[str, str]) -> str:
    page = await _profile(r, c)
    match = page.find(r"Competitors: (.+)\.") if page else None
    if match is None:
        raise NotFound("no profile")
    r.cite(page)
    return f"{c.name}'s main competitors are {match.group(1)} ({link('company profile', page)})."


async def _profile(r: Research, c: Company) -> Page | None:
    """The company's profile page as it stood on the as-of date: its latest update by then."""
    hits = await r.search(c, "company profile", "company_profile", k=5)
    latest = max(hits, key=lambda h: h["published_at"], default=None)
    return await r.page(latest["url"]) if latest else None


async def _market_cap(r: Research, c: Company, day: dt.date) -> tuple[Decimal, str]:
    data = await r.call(
        r.world, "prices", ticker=c.ticker, start=day - dt.timedelta(days=10), end=day, page_size=50
    )
    rows = [row for row in data["items"] if row["date"] <= day.isoformat()]
    if not rows or rows[-1]["market_cap"] is None:
        raise NotFound("no price")
    r.cited += [link for link in data.get("sources", [])[-1:] if link not in r.cited]
    return Decimal(str(rows[-1]["market_cap"])), rows[-1]["date"]


async def market_cap(r: Research, c: Company, s: dict[str, str]) -> str:
    day = parse_long_date(s["date"])
    value, traded = await _market_cap(r, c, day)
    return (
        f"{c.name}'s market capitalisation at the close on {traded} was about "
        f"**{money(value, c.currency)}** (closing price x shares outstanding, from the world's "
        "price data)."
    )


async def market_cap_ranking(r: Research, c: Company, s: dict[str, str]) -> str:
    day = parse_long_date(s["date"])
    rows = []
    for company in [c, *await _peer_companies(r, c, s["peers"])]:
        value, traded = await _market_cap(r, company, day)
        rows.append((value, company, traded))
    rows.sort(key=lambda row: -row[0])
    lines = "\n".join(
        f"| {i} | {company.name} | {money(value, company.currency)} | {traded} |"
        for i, (value, company, traded) in enumerate(rows, 1)
    )
    return (
        f"Ranked by market capitalisation at the close on {s['date']}:\n\n"
        f"| Rank | Company | Market cap | Close of |\n|---|---|---:|---|\n{lines}"
    )


async def _share(r: Research, c: Company, s: dict[str, str], title: str, member: str, solver):
    fy = int(s["fiscal_year"])
    what = f"its {member} product line" if title == "Revenue by product line" else member
    try:
        part, page = await r.member(c, title, member, fy)
        revenue, _ = await r.annual(c, "revenue", fy)
    except NotFound:
        return await _not_reported(r, c, s, "revenue share", solver)
    r.cite(page)
    return (
        f"**{percent(part, revenue)}%** of {c.name}'s fiscal {fy} revenue came from {what}: "
        f"{money(part, c.currency)} of {money(revenue, c.currency)} "
        f"({link(page.title, page)})."
    )


async def product_share(r: Research, c: Company, s: dict[str, str]) -> str:
    return await _share(r, c, s, "Revenue by product line", s["product"], product_share)


async def regional_share(r: Research, c: Company, s: dict[str, str]) -> str:
    return await _share(r, c, s, "Revenue by region", s["region"], regional_share)


async def segment_revenue(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    try:
        value, page = await r.member(c, "Segment revenue", s["segment"], fy)
    except NotFound:
        return await _not_reported(r, c, s, "segment revenue", segment_revenue)
    r.cite(page)
    return (
        f"{c.name}'s {s['segment']} segment generated **{money(value, c.currency)}** of revenue"
        f" in fiscal {fy} (before intersegment eliminations; {link(page.title, page)})."
    )


async def largest_product_line(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    for page in await r.annual_pages(c, fy, "revenue by segment"):
        table = page.table("Revenue by product line")
        if table is None or table.column(f"Fiscal {fy}") is None:
            continue
        col = table.column(f"Fiscal {fy}")
        lines = [(number(row[col]), row[0]) for row in table.rows if row[0] != "Total revenue"]
        value, name = max(lines)
        r.cite(page)
        return (
            f"{c.name}'s largest product line in fiscal {fy} was **{name}**, with "
            f"{money(value, c.currency)} of revenue ({link(page.title, page)})."
        )
    return await _not_reported(r, c, s, "product-line revenue", largest_product_line)


async def _news(r: Research, c: Company, query: str, title_word: str) -> list[Page]:
    hits = [h for h in await r.search(c, query, "news") if title_word in h["title"]]
    hits.sort(key=lambda h: h["published_at"], reverse=True)
    return [await r.page(h["url"]) for h in hits]


async def latest_launch(r: Research, c: Company, s: dict[str, str]) -> str:
    pages = await _news(r, c, "launches", " launches ")
    if not pages:
        raise NotFound("no launch")
    page = pages[0]
    product = page.title.split(" launches ", 1)[1]
    r.cite(page)
    return (
        f"{c.name}'s most recent launch as of {_day(r.as_of)} is **{product}**, announced on "
        f"{_day(page.published_at)} ({link(page.title, page)})."
    )


async def _rounds(r: Research, c: Company) -> list[tuple[Page, dict[str, str]]]:
    hits = await r.search(c, "announces financing round", "funding_announcement")
    rounds = []
    for hit in sorted(hits, key=lambda h: h["published_at"]):
        page = await r.page(hit["url"])
        terms = {row[0]: row[1] for row in page.tables[0].rows} if page.tables else {}
        rounds.append((page, terms))
    if not rounds:
        raise NotFound("no funding round")
    return rounds


async def latest_funding_round(r: Research, c: Company, s: dict[str, str]) -> str:
    page, terms = (await _rounds(r, c))[-1]
    r.cite(page)
    return (
        f"{c.name}'s most recent funding round as of {_day(r.as_of)} was its {terms['Round']} "
        f"of **{terms['Amount raised']}**, announced on {_day(page.published_at)} and led by "
        f"**{terms['Lead investor']}**, at a post-money valuation of "
        f"**{terms['Post-money valuation']}** ({link(page.title, page)})."
    )


async def total_raised(r: Research, c: Company, s: dict[str, str]) -> str:
    rounds = await _rounds(r, c)
    total = sum((number(terms["Amount raised"]) for _, terms in rounds), Decimal(0))
    for page, _ in rounds:
        r.cite(page)
    listing = ", ".join(f"{terms['Round']} {terms['Amount raised']}" for _, terms in rounds)
    return (
        f"{c.name} has raised **{money(total, c.currency)}** across {len(rounds)} announced "
        f"rounds as of {_day(r.as_of)} ({listing}); talks the company denied are not "
        "counted."
    )


@dataclass
class Penalty:
    """A fine or a settlement as its news article states it."""

    page: Page
    regulator: str
    amount: str
    action: str

    @property
    def day(self) -> dt.date:
        return self.page.published_at


def _penalty(page: Page, c: Company) -> Penalty | None:
    name = re.escape(c.name)
    amount = r"([$€£][\d,.]+ (?:million|billion))"
    fine = re.search(rf"^(.+?) fined {name} {amount}", page.content, re.MULTILINE)
    if fine:
        regulator = fine.group(1).strip().removeprefix("The ").removeprefix("the ")
        return Penalty(page, regulator, fine.group(2), "fine")
    settled = re.search(
        rf"^{name} agreed to pay {amount} to settle an investigation by (?:the )?(.+?) into ",
        page.content,
        re.MULTILINE,
    )
    if settled:
        return Penalty(page, settled.group(2).strip(), settled.group(1), "settlement")
    return None


async def _penalties(
    r: Research, c: Company, after: dt.date | None = None, before: dt.date | None = None
) -> list[Penalty]:
    """Fines and settlements reported in the news between the days, oldest first (articles on
    investigations opened or closed without a penalty are not penalties)."""
    hits = await r.search(c, "fines settles regulator penalty", "news", after=after, before=before)
    found = []
    for hit in hits:
        if " fines " not in hit["title"] and " settles " not in hit["title"]:
            continue
        penalty = _penalty(await r.page(hit["url"]), c)
        if penalty is None:
            raise NotFound(f"unreadable penalty article {hit['url']}")
        found.append(penalty)
    return sorted(found, key=lambda p: (p.day, p.page.url))


async def regulatory_action(r: Research, c: Company, s: dict[str, str]) -> str:
    found = await _penalties(r, c)
    if not found:
        return (
            f"No: I found no regulatory fine or settlement against {c.name} as of "
            f"{_day(r.as_of)} in the world's filings and news."
        )
    last = found[-1]
    r.cite(last.page)
    verb = "settled with" if last.action == "settlement" else "was fined by"
    return (
        f"Yes: most recently, on {_day(last.day)}, {c.name} {verb} **{last.regulator}**, paying "
        f"**{last.amount}** ({link(last.page.title, last.page)})."
    )


# -- analyst items: one section per ask ------------------------------------------------------------


def _signed(value: Decimal) -> str:
    return f"{value:+}"


def _growth_of(new: Decimal, old: Decimal) -> Decimal:
    if old <= 0:
        raise NotFound("growth from a non-positive base")
    return percent(new - old, old)


async def growth_trend(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    years = (fy - 2, fy - 1, fy)
    figures = [await r.annual(c, "revenue", y) for y in years]
    for _, page in figures:
        r.cite(page)
    rows = "\n".join(
        f"| Fiscal {y} | {money(value, c.currency)} | {link('source', page)} |"
        for y, (value, page) in zip(years, figures, strict=True)
    )
    values = [value for value, _ in figures]
    yoy = [_growth_of(values[1], values[0]), _growth_of(values[2], values[1])]
    cagr = (((values[2] / values[0]).sqrt() - 1) * 100).quantize(
        Decimal("0.1"), rounding=ROUND_HALF_EVEN
    )
    direction = "growth accelerated" if yoy[1] > yoy[0] else "growth slowed"
    return (
        f"## {c.name}: revenue trajectory\n\n**1. Revenue (GAAP)**\n\n| Fiscal year | Revenue |"
        f" Source |\n|---|---:|---|\n{rows}\n\n**2. Year-over-year growth:** fiscal {fy - 1} "
        f"{yoy[0]}%; fiscal {fy} {yoy[1]}%.\n\n**3. Two-year CAGR** (fiscal {fy - 2} to fiscal "
        f"{fy}): {cagr}%.\n\n**4. Direction:** revenue {direction} in fiscal {fy} "
        f"({yoy[1]}% against {yoy[0]}%).\n\n**5. View (opinion):** the trend is one input; "
        "the decision also rests on margins and cash flow, which are not assessed here."
    )


async def margin_bridge(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    figures = {}
    for metric in ("revenue", "operating_income", "operating_expenses"):
        for y in (fy - 1, fy):
            value, page = await r.annual(c, metric, y)
            r.cite(page)
            figures[metric, y] = value
    margins = {
        y: percent(figures["operating_income", y], figures["revenue", y]) for y in (fy - 1, fy)
    }
    revenue_growth = _growth_of(figures["revenue", fy], figures["revenue", fy - 1])
    opex_growth = _growth_of(
        figures["operating_expenses", fy], figures["operating_expenses", fy - 1]
    )
    driver = (
        "operating expenses grew faster than revenue"
        if opex_growth > revenue_growth
        else "revenue grew faster than operating expenses"
    )
    return (
        f"## {c.name}: margin bridge, fiscal {fy - 1} to fiscal {fy}\n\n"
        f"**1. GAAP operating margin:** fiscal {fy - 1} {margins[fy - 1]}%; fiscal {fy} "
        f"{margins[fy]}%.\n\n**2. Growth in fiscal {fy}:** revenue {revenue_growth}% "
        f"({money(figures['revenue', fy - 1], c.currency)} to "
        f"{money(figures['revenue', fy], c.currency)}); operating expenses {opex_growth}% "
        f"({money(figures['operating_expenses', fy - 1], c.currency)} to "
        f"{money(figures['operating_expenses', fy], c.currency)}).\n\n**3. Driver:** {driver}."
        "\n\n**4. View (opinion):** not a keyed figure; weigh it with the cash-flow picture."
    )


async def leverage_liquidity(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    cash, page = await r.annual(c, "cash", fy)
    debt, _ = await r.annual(c, "total_debt", fy)
    income, page2 = await r.annual(c, "operating_income", fy)
    cash0, _ = await r.annual(c, "cash", fy - 1)
    debt0, _ = await r.annual(c, "total_debt", fy - 1)
    r.cite(page)
    r.cite(page2)
    net, net0 = debt - cash, debt0 - cash0
    multiple = (net / income).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    direction = "net debt rose" if net > net0 else "net debt fell"
    return (
        f"## {c.name}: leverage and liquidity at the end of fiscal {fy}\n\n"
        f"**1. Position:** cash and cash equivalents {money(cash, c.currency)}; total debt "
        f"{money(debt, c.currency)}; net debt {money(net, c.currency)}.\n\n"
        f"**2. Leverage:** fiscal {fy} operating income {money(income, c.currency)}; net debt / "
        f"operating income {multiple}x.\n\n**3. Trend:** net debt at the end of fiscal {fy - 1} "
        f"was {money(net0, c.currency)}, so {direction}.\n\n**4. View (opinion):** left to the "
        "credit committee."
    )


async def cash_runway(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    cash, page = await r.annual(c, "cash", fy)
    cfo, flows = await r.annual(c, "cash_from_operations", fy)
    capex, _ = await r.annual(c, "capital_expenditures", fy)
    cash0, _ = await r.annual(c, "cash", fy - 1)
    r.cite(page)
    r.cite(flows)
    fcf = cfo - capex
    runway = (cash / -fcf).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    direction = "cash rose" if cash > cash0 else "cash fell"
    return (
        f"## {c.name}: cash runway at the end of fiscal {fy}\n\n"
        f"**1. Cash:** cash and cash equivalents {money(cash, c.currency)}.\n\n"
        f"**2. Burn:** fiscal {fy} net cash from operating activities {money(cfo, c.currency)}; "
        f"capital expenditures {money(capex, c.currency)}; free cash flow "
        f"{money(fcf, c.currency)}.\n\n**3. Runway:** cash / annual burn = {runway}x "
        "(the multiple is the runway in years).\n\n"
        f"**4. Trend:** cash at the end of fiscal {fy - 1} was "
        f"{money(cash0, c.currency)}, so {direction}.\n\n**5. View (opinion):** left to the "
        "credit team."
    )


async def shareholder_returns(r: Research, c: Company, s: dict[str, str]) -> str:
    fy = int(s["fiscal_year"])
    cfo, flows = await r.annual(c, "cash_from_operations", fy)
    capex, _ = await r.annual(c, "capital_expenditures", fy)
    dividends, _ = await r.annual(c, "dividends_paid", fy)
    buybacks, _ = await r.annual(c, "share_repurchases", fy)
    net, page = await r.annual(c, "net_income", fy)
    depreciation, _ = await r.annual(c, "depreciation_amortization", fy)
    shares, overview = await r.annual(c, "shares_outstanding", fy)
    reinvestment = (capex / depreciation).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    cent = Decimal("0.01")
    eps = (net / shares).quantize(cent, rounding=ROUND_HALF_EVEN)
    dps = (dividends / shares).quantize(cent, rounding=ROUND_HALF_EVEN)
    sign = CURRENCY_SIGNS[c.currency]
    r.cite(flows)
    r.cite(page)
    r.cite(overview)
    fcf, returned = cfo - capex, dividends + buybacks
    cash_payout = (returned / fcf * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
    dividend_payout = (dividends / net * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
    coverage = (
        "free cash flow covered the returns"
        if returned < fcf
        else "the returns exceeded free cash flow"
    )
    return (
        f"## {c.name}: shareholder returns in fiscal {fy}\n\n"
        f"**1. Free cash flow:** net cash from operating activities {money(cfo, c.currency)}; "
        f"capital expenditures {money(capex, c.currency)}; free cash flow "
        f"{money(fcf, c.currency)}; depreciation and amortization "
        f"{money(depreciation, c.currency)}, so capital expenditures / depreciation = "
        f"{reinvestment}x.\n\n**2. Returns:** dividends paid "
        f"{money(dividends, c.currency)}; share repurchases {money(buybacks, c.currency)}; "
        f"total returned {money(returned, c.currency)}.\n\n**3. Payout:** cash returned / free "
        f"cash flow {cash_payout}%; dividend payout ratio (dividends / net income of "
        f"{money(net, c.currency)}) {dividend_payout}%.\n\n**4. Per share** (on the {shares} "
        f"million shares outstanding at the fiscal {fy} year end): earnings per share "
        f"{'-' if eps < 0 else ''}{sign}{abs(eps)}; dividends per share {sign}{dps}.\n\n"
        f"**5. Coverage:** {coverage}.\n\n"
        "**6. View (opinion):** left to the investment committee."
    )


async def regulatory_exposure(r: Research, c: Company, s: dict[str, str]) -> str:
    first, last = int(s["first_year"]), int(s["last_year"])
    found: list[Penalty] = []
    for year in range(first, last + 1):  # a search per year: at most MAX_K hits each
        start, end = dt.date(year, 1, 1), min(dt.date(year, 12, 31), r.as_of)
        found += [
            p
            for p in await _penalties(r, c, start - dt.timedelta(days=1), end)
            if p.day.year == year
        ]
    window = f"calendar {first}-{last}"
    if not found:
        return (
            f"## {c.name}: regulatory exposure, {window}\n\nNone: I found no regulatory fine "
            f"or settlement against {c.name} dated in {window}, so there is no penalty to "
            "total, no largest penalty to compare with operating income, and no trend. "
            "Investigations without a penalty and penalties outside the window do not count."
        )
    amounts = [number(p.amount) for p in found]
    for p in found:
        r.cite(p.page)
    listing = "; ".join(f"{_day(p.day)}: {p.action} of {p.amount} ({p.regulator})" for p in found)
    largest = max(range(len(found)), key=lambda i: amounts[i])
    fy = fiscal_year_of(c.fiscal_year_end_month, found[largest].day)
    income, page = await r.annual(c, "operating_income", fy)
    r.cite(page)
    yearly = {
        y: sum((a for p, a in zip(found, amounts, strict=True) if p.day.year == y), Decimal(0))
        for y in range(first, last + 1)
    }
    direction = "penalties rose" if yearly[last] > yearly[first] else "penalties fell"
    by_year = "; ".join(f"{y}: {money(v, c.currency)}" for y, v in yearly.items())
    return (
        f"## {c.name}: regulatory exposure, {window}\n\n"
        f"**1. Penalties:** {len(found)} fines or settlements, all imposed by "
        f"{found[0].regulator}: {listing}.\n\n"
        f"**2. Total:** {money(sum(amounts, Decimal(0)), c.currency)}.\n\n"
        f"**3. Largest:** {found[largest].amount} on {_day(found[largest].day)}, "
        f"{percent(amounts[largest], income)}% of fiscal {fy} GAAP operating income of "
        f"{money(income, c.currency)}.\n\n**4. Trend by year:** {by_year}; {direction} from "
        f"{first} to {last}.\n\n**5. View (opinion):** left to the legal team."
    )


async def peer_benchmark(r: Research, c: Company, s: dict[str, str]) -> str:
    measure = s["measure"]
    compute = _margin if measure.startswith("GAAP operating margin") else _growth
    rows = []
    for company in [c, *await _peer_companies(r, c, s["peers"])]:
        value, fy, page = await compute(r, company)
        r.cite(page)
        rows.append((value, company, fy, page))
    own = rows[0]
    ranked = sorted(rows, key=lambda row: -row[0])
    table = "\n".join(
        f"| {i} | {company.name} | {value}% | FY{fy} | {link('source', page)} |"
        for i, (value, company, fy, page) in enumerate(ranked, 1)
    )
    peers = "; ".join(
        f"{company.name} {value}% (fiscal {fy})" for value, company, fy, _ in rows[1:]
    )
    return (
        f"## {measure.capitalize()}: {c.name} against its peers (as of {_day(r.as_of)})\n\n"
        "Each company is measured on its own latest reported fiscal year; the fiscal years are "
        "not aligned to one calendar period.\n\n"
        f"**1. {c.name}:** {own[0]}% (fiscal {own[2]}).\n\n**2. Peers:** {peers}.\n\n"
        f"**3. Ranking:**\n\n| Rank | Company | {measure} | Fiscal year | Source |\n"
        f"|---|---|---:|---|---|\n{table}\n\n**4. View (opinion):** not keyed."
    )


async def _mix(r: Research, c: Company, s: dict[str, str], title: str, kind: str) -> str:
    fy = int(s["fiscal_year"])
    shares: dict[int, dict[str, Decimal]] = {}
    for year in (fy - 1, fy):
        revenue, _ = await r.annual(c, "revenue", year)
        members = await _members(r, c, title, year)
        shares[year] = {m: percent(v, revenue) for m, v in members.items()}
    names = list(shares[fy])
    moves = {m: shares[fy][m] - shares[fy - 1][m] for m in names}
    winner = max(names, key=lambda m: (moves[m], [-ord(ch) for ch in m]))
    gained = "gained" if moves[winner] > 0 else "lost"
    lines = "\n".join(f"| {m} | {shares[fy - 1][m]}% | {shares[fy][m]}% |" for m in names)
    return (
        f"## {c.name}: revenue mix by {kind}, fiscal {fy - 1} to fiscal {fy}\n\n"
        f"**1-2. Shares of consolidated revenue:**\n\n| {kind.capitalize()} | Fiscal {fy - 1} | "
        f"Fiscal {fy} |\n|---|---:|---:|\n{lines}\n\n**3. Largest shift:** "
        f"{winner} {gained} the most share ({_signed(moves[winner])} percentage points).\n\n"
        "**4. View (opinion):** not keyed."
    )


async def _members(r: Research, c: Company, title: str, fy: int) -> dict[str, Decimal]:
    for page in await r.annual_pages(c, fy, "revenue by segment"):
        table = page.table(title)
        col = table.column(f"Fiscal {fy}") if table else None
        if col is None:
            continue
        r.cite(page)
        return {row[0]: number(row[col]) for row in table.rows if row[0] != "Total revenue"}
    raise NotFound(f"no fiscal {fy} {title.lower()}")


async def product_mix_shift(r: Research, c: Company, s: dict[str, str]) -> str:
    return await _mix(r, c, s, "Revenue by product line", "product line")


async def regional_mix_shift(r: Research, c: Company, s: dict[str, str]) -> str:
    return await _mix(r, c, s, "Revenue by region", "region")


async def funding_history(r: Research, c: Company, s: dict[str, str]) -> str:
    rounds = await _rounds(r, c)
    for page, _ in rounds:
        r.cite(page)
    amounts = [number(terms["Amount raised"]) for _, terms in rounds]
    listing = "\n".join(
        f"| {terms['Round']} | {_day(page.published_at)} | {money(value, c.currency)} | "
        f"{terms['Lead investor']} | {terms['Post-money valuation']} |"
        for (page, terms), value in zip(rounds, amounts, strict=True)
    )
    latest, before = rounds[-1][1], rounds[-2][1]
    post, previous = number(latest["Post-money valuation"]), number(before["Post-money valuation"])
    step = _growth_of(post, previous)
    return (
        f"## {c.name}: funding history (as of {_day(r.as_of)})\n\n**1. Rounds:** {len(rounds)} "
        f"announced rounds.\n\n| Round | Announced | Amount | Lead investor | Post-money |\n"
        f"|---|---|---:|---|---:|\n{listing}\n\n**2. Total raised:** "
        f"{money(sum(amounts, Decimal(0)), c.currency)} (talks the company denied are not "
        f"rounds).\n\n**3. Latest round:** led by {latest['Lead investor']}, post-money "
        f"valuation {money(post, c.currency)}.\n\n**4. Valuation step-up:** "
        f"{_signed(step)}% (post-money {money(post, c.currency)} against "
        f"{money(previous, c.currency)} in the round before).\n\n"
        "**5. View (opinion):** not keyed."
    )


# private_runway: a private company's stated cash and burn, and its rounds ----------------------

DAYS_PER_MONTH = Decimal("30.4375")  # an average month (docs/conventions.md)
CASH_INTERVIEW = (
    rf"had (-?[$€£][\d,]+\.\d million) of cash and equivalents on hand at ({LONG_DATE})\. "
    rf"Its net burn, spending less what customers pay, was ([$€£][\d,]+\.\d million) a month"
)


async def _cash_statement(r: Research, c: Company) -> tuple[Page, Decimal, dt.date, Decimal] | None:
    """The latest interview published by the as-of date stating the company's cash (and the
    day it was counted) and its monthly net burn."""
    hits = [
        h
        for h in await r.search(c, "chief executive on cash and burn", "news")
        if h["title"].endswith("chief executive on cash and burn")
    ]
    for hit in sorted(hits, key=lambda h: h["published_at"], reverse=True):
        page = await r.page(hit["url"])
        match = page.find(CASH_INTERVIEW)
        if match:
            cash, burn = number(match.group(1)), number(match.group(3))
            return page, cash, parse_long_date(match.group(2)), burn
    return None


async def private_runway(r: Research, c: Company, s: dict[str, str]) -> str:
    rounds = await _rounds(r, c)
    for page, _ in rounds:
        r.cite(page)
    total = sum((number(terms["Amount raised"]) for _, terms in rounds), Decimal(0))
    leads = list(dict.fromkeys(terms["Lead investor"] for _, terms in rounds))
    funding = (
        f"**4. Funding:** {money(total, c.currency)} raised across {len(rounds)} announced "
        f"round{'s' if len(rounds) > 1 else ''} as of {_day(r.as_of)}, led by "
        f"{', '.join(leads)} (talks the company denied are not rounds)."
    )
    said = await _cash_statement(r, c)
    if said is None:
        return (
            f"## {c.name}: cash runway as of {_day(r.as_of)}\n\n**1. Cash:** not disclosed: "
            f"{c.name} is privately held and had stated no cash figure by {_day(r.as_of)}.\n\n"
            "**2. Monthly net burn:** not disclosed.\n\n**3. Runway:** not disclosed (no cash "
            f"or burn to compute it from).\n\n{funding}\n\n**5. View (opinion):** not keyed."
        )
    page, cash, counted, burn = said
    r.cite(page)
    since = [(p, terms) for p, terms in rounds if p.published_at > counted]
    raised = sum((number(terms["Amount raised"]) for _, terms in since), Decimal(0))
    elapsed = Decimal((r.as_of - counted).days) / DAYS_PER_MONTH
    runway = ((cash + raised) / burn - elapsed).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
    if since:
        listing = "; ".join(
            f"{terms['Round']} {money(number(terms['Amount raised']), c.currency)} on "
            f"{_day(p.published_at)}"
            for p, terms in since
        )
        position = (
            f"{money(cash, c.currency)} of cash on {_day(counted)}; rounds announced since: "
            f"{listing}, {money(raised, c.currency)} in all, from {_day(counted)} to "
            f"{_day(r.as_of)}; cash plus rounds {money(cash + raised, c.currency)}."
        )
    else:
        position = f"{money(cash, c.currency)} of cash on {_day(counted)}; no round since."
    return (
        f"## {c.name}: cash runway as of {_day(r.as_of)}\n\n**1. Cash:** {position}\n\n"
        f"**2. Monthly net burn:** {money(burn, c.currency)} a month, stated with the cash on "
        f"{_day(counted)}.\n\n**3. Runway:** {runway} months as of {_day(r.as_of)} (cash plus "
        f"rounds since, over the monthly net burn, less the months elapsed since the cash was "
        f"counted).\n\n{funding}\n\n**5. View (opinion):** not keyed."
    )


async def valuation_snapshot(r: Research, c: Company, s: dict[str, str]) -> str:
    day = parse_long_date(s["date"])
    cap, traded = await _market_cap(r, c, day)
    traded_day = dt.date.fromisoformat(traded)
    then = replace(r, as_of=traded_day)
    fy = await then.latest_fiscal_year(c)
    for year in (fy, fy - 1):
        try:
            debt, page = await then.annual(c, "total_debt", year)
        except NotFound:
            continue
        fy = year
        break
    else:
        raise NotFound("no balance sheet by that day")
    cash, _ = await then.annual(c, "cash", fy)
    income, page2 = await then.annual(c, "operating_income", fy)
    r.cite(page)
    r.cite(page2)
    net = debt - cash
    ev = cap + net
    multiple = (ev / income).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    start = await _close(r, c, traded_day - dt.timedelta(days=91))
    end = await _close(r, c, traded_day)
    change = percent(end[1] - start[1], start[1])
    return (
        f"## {c.name}: valuation at the close on {_day(traded_day)}\n\n"
        f"**1. Market capitalisation:** {money(cap, c.currency)} (closing price x shares "
        f"outstanding last reported).\n\n**2. Enterprise value:** net debt at the end of fiscal "
        f"{fy} {money(net, c.currency)} (the latest balance sheet by then), so EV "
        f"{money(ev, c.currency)}.\n\n**3. EV / operating income:** {multiple}x fiscal {fy} "
        f"operating income of {money(income, c.currency)}.\n\n**4. Share price:** "
        f"{_signed(change)}% from the close on {_day(dt.date.fromisoformat(start[0]))} to the "
        f"close on {_day(traded_day)}.\n\n**5. View (opinion):** not keyed."
    )


async def _close(r: Research, c: Company, day: dt.date) -> tuple[str, Decimal]:
    data = await r.call(
        r.world, "prices", ticker=c.ticker, start=day - dt.timedelta(days=10), end=day, page_size=50
    )
    rows = [row for row in data["items"] if row["date"] <= day.isoformat()]
    if not rows:
        raise NotFound("no price")
    return rows[-1]["date"], Decimal(str(rows[-1]["close"]))


SOLVERS: dict[str, Solver] = {
    "growth_trend": growth_trend,
    "margin_bridge": margin_bridge,
    "leverage_liquidity": leverage_liquidity,
    "cash_runway": cash_runway,
    "shareholder_returns": shareholder_returns,
    "peer_benchmark": peer_benchmark,
    "product_mix_shift": product_mix_shift,
    "regional_mix_shift": regional_mix_shift,
    "funding_history": funding_history,
    "valuation_snapshot": valuation_snapshot,
    "regulatory_exposure": regulatory_exposure,
    "private_runway": private_runway,
    "fy_metric": fy_metric,
    "latest_fy_metric": latest_fy_metric,
    "operating_margin": operating_margin,
    "adjusted_margin": adjusted_margin,
    "free_cash_flow": free_cash_flow,
    "ebitda": ebitda,
    "revenue_growth": revenue_growth,
    "latest_quarter_revenue": latest_quarter_revenue,
    "quarter_metric": quarter_metric,
    "net_debt": net_debt,
    "private_revenue": private_revenue,
    "peer_revenue_ranking": peer_revenue_ranking,
    "peer_margin_comparison": peer_margin_comparison,
    "peer_growth_comparison": peer_growth_comparison,
    "competitors": competitors,
    "market_cap_ranking": market_cap_ranking,
    "product_share": product_share,
    "segment_revenue": segment_revenue,
    "largest_product_line": largest_product_line,
    "latest_launch": latest_launch,
    "latest_funding_round": latest_funding_round,
    "total_raised": total_raised,
    "market_cap": market_cap,
    "regional_share": regional_share,
    "regulatory_action": regulatory_action,
}


# -- briefs ----------------------------------------------------------------------------------------


async def _latest_news(r: Research, c: Company) -> Page | None:
    """The latest article with a sentiment: a search, then searches for anything published after
    the newest article seen (a company may have more news than one page of results)."""
    latest: Page | None = None
    after: dt.date | None = None
    while True:
        hits = await r.search(c, "news", "news", k=10, after=after)
        newer = [h for h in hits if after is None or h["published_at"] > after.isoformat()]
        if not newer:
            return latest
        for hit in newer:
            page = await r.page(hit["url"])
            if _sentiment(page) and (latest is None or page.published_at > latest.published_at):
                latest = page
        after = max(dt.date.fromisoformat(h["published_at"][:10]) for h in newer)


def _sentiment(page: Page) -> str | None:
    match = page.find(r"\((?:market reaction|sentiment): (positive|negative|neutral)\)")
    return match.group(1) if match else None


async def _ar_ap(r: Research, c: Company) -> list[str]:
    """Per ERP account, its position on the brief's day: balance, aging, overdue, last payment."""
    lines = []
    for account in c.erp_accounts:
        kind, le, number_ = account["party_type"], account["legal_entity"], account["account"]
        details = await r.call(r.erp, f"get_{kind}", account=number_, legal_entity=le)
        record_url = (details.get(kind) or {}).get("url") or ""
        data = await r.call(
            r.erp,
            "get_aging",
            party_type=kind,
            account=number_,
            legal_entity=le,
            as_of=r.as_of,
            bucket_edges=[30, 60, 90],
        )
        rows = data.get("rows") or []
        row = rows[0] if rows else {}
        currency = row.get("currency") or (details.get(kind) or {}).get("currency") or ""
        balance = Decimal(str(row.get("balance_cur") or 0))
        url = row.get("url") or record_url
        who = f"[{c.name} ({number_})]({url})" if url else f"{c.name} ({number_})"
        side = "receivable from" if kind == "customer" else "payable to"
        text = f"- Open {side} {who} in {le} on {_day(r.as_of)}: **{currency} {balance:,.2f}**"
        buckets = {
            b.get("label"): Decimal(str(b.get("amount_cur") or 0)) for b in row.get("buckets") or []
        }
        if buckets:
            text += "; aging " + "; ".join(
                f"{label}: {currency} {value:,.2f}" for label, value in buckets.items()
            )
        overdue = sum((v for label, v in buckets.items() if label != "current"), Decimal(0))
        if overdue:
            text += f"; overdue {currency} {overdue:,.2f}"
        text += await _last_payment(r, kind, number_, le, currency)
        lines.append(text + ".")
    return lines


async def _last_payment(r: Research, kind: str, account: str, le: str, currency: str) -> str:
    data = await r.call(
        r.erp,
        f"list_{kind}_transactions",
        account=account,
        legal_entity=le,
        txn_type=["payment"],
        date_to=r.as_of,
        sort_by="txn_date",
        descending=True,
        page_size=1,
    )
    items = data.get("items") or []
    if not items:
        return "; no payment recorded"
    paid = items[0]
    day = dt.date.fromisoformat(str(paid["txn_date"])[:10])
    amount = -Decimal(str(paid["amount_cur"]))
    return f"; last payment {currency} {amount:,.2f} on {_day(day)}"


async def _chief_executive(r: Research, c: Company, profile: Page | None) -> str:
    """Today's chief executive from the company tool; on an earlier day, the latest statement
    published by then: an appointment in the news after the profile, else the profile's."""
    if r.as_of >= r.today or profile is None:
        return c.chief_executive
    stated = profile.find(r"\| Chief executive \| ([^|]+?) \|")
    appointments = await _news(r, c, "names chief executive", " chief executive")
    later = [p for p in appointments if p.published_at >= profile.published_at]
    if later:
        page = max(later, key=lambda p: p.published_at)
        named = re.search(r" names (.+?) chief executive", page.title)
        if named:
            r.cite(page)
            return named.group(1)
    return stated.group(1).strip() if stated else c.chief_executive


async def brief(r: Research, c: Company, s: dict[str, str]) -> str:
    profile = await _profile(r, c)
    parts = [f"# {c.name}"]
    header = f"**{c.name}**" + (f" (ticker {c.ticker})" if c.ticker else " (privately held)")
    header += f", headquartered in {c.headquarters.split(',')[0]}, led by chief executive "
    header += f"{await _chief_executive(r, c, profile)}."
    if profile is not None:
        r.cite(profile)
        header += f" Source: {link('company profile', profile)}."
    parts += ["## Company header", header]
    if c.industry:
        parts += ["## Company overview", f"Industry: {c.industry}."]
    parts += ["## Financials", await _brief_financials(r, c)]
    move = await _strategic_move(r, c)
    if move:
        parts += ["## Strategic moves", move]
    if c.lines_of_business:
        parts += ["## Lines of business", ", ".join(c.lines_of_business) + "."]
    if c.peers:
        parts += ["## Peers", await _brief_peers(r, c)]
    news = await _latest_news(r, c)
    if news is not None:
        r.cite(news)
        parts += [
            "## Top news and sentiment",
            f"{_day(news.published_at)}: {link(news.title, news)} (sentiment: {_sentiment(news)}).",
        ]
    parts += ["## AR/AP in our ERP", "\n".join(await _ar_ap(r, c)) or "No ERP accounts."]
    return "\n\n".join(parts)


async def _brief_peers(r: Research, c: Company) -> str:
    """Each peer with one comparative figure: its latest fiscal year's revenue (listed ones)."""
    lines = []
    for peer in c.peers:
        line = f"- {peer['name']}"
        other = await r.company(peer["name"])
        if other.listed:
            try:
                value, fy, page = await _latest_revenue(r, other)
            except NotFound:
                pass
            else:
                r.cite(page)
                line += f": fiscal {fy} revenue {money(value, other.currency)}"
        lines.append(line)
    return "\n".join(lines)


async def _brief_financials(r: Research, c: Company) -> str:
    if c.listed:
        value, fy, page = await _latest_revenue(r, c)
        margin, _, _ = await _margin(r, c)
        r.cite(page)
        rows = [f"| Fiscal {fy} | {money(value, c.currency)} |"]
        for year in (fy - 1, fy - 2):
            try:
                earlier, _ = await r.annual(c, "revenue", year)
            except NotFound:
                continue
            rows.append(f"| Fiscal {year} | {money(earlier, c.currency)} |")
        return (
            f"Fiscal {fy} GAAP operating margin {margin}% ({link('annual report', page)}).\n\n"
            "| Fiscal year | Revenue |\n|---|---:|\n" + "\n".join(rows)
        )
    text = ""
    hits = [
        h for h in await r.search(c, "revenue reached", "news") if "revenue reached" in h["title"]
    ]
    if hits:
        latest = max(hits, key=lambda h: h["published_at"])
        page = await r.page(latest["url"])
        match = page.find(r"revenue for fiscal (\d{4}).*? was (-?[$€£][\d,]+\.\d) million")
        if match:
            r.cite(page)
            text = (
                f"Fiscal {match.group(1)} revenue {money(number(match.group(2)), c.currency)}"
                f" (announced; {link('source', page)}). "
            )
    if not text:
        text = "Revenue: not disclosed (privately held). "
    try:
        page, terms = (await _rounds(r, c))[-1]
        r.cite(page)
        text += (
            f"Latest funding ({_day(page.published_at)}): {terms['Round']} of "
            f"{terms['Amount raised']} led by {terms['Lead investor']}, post-money valuation "
            f"{terms['Post-money valuation']} ({link('announcement', page)})."
        )
    except NotFound:
        pass
    return text


async def _strategic_move(r: Research, c: Company) -> str:
    candidates = await _news(r, c, "to acquire", " to acquire ")
    candidates += await _news(r, c, "launches", " launches ")
    if not candidates:
        return ""
    page = max(candidates, key=lambda p: p.published_at)
    r.cite(page)
    if " to acquire " in page.title:
        target = page.title.split(" to acquire ", 1)[1]
        return f"Agreed to acquire **{target}** ({_day(page.published_at)}; {link('news', page)})."
    product = page.title.split(" launches ", 1)[1]
    return f"Launched **{product}** ({_day(page.published_at)}; {link('news', page)})."


# -- the entry point -------------------------------------------------------------------------------


async def answer_research(
    world: ErpClient, erp: ErpClient | None, draft: TrajectoryDraft, text: str, today: dt.date
) -> str | None:
    """The answer to a world question, or None when ``text`` is not one of the world's."""
    reading = read_research(text)
    if reading is None:
        return None
    kind, slots = reading
    as_of = parse_long_date(slots["as_of"]) if slots.get("as_of") else today
    research = Research(world, erp, draft, as_of, today)
    draft.extra["intent"] = kind
    try:
        company = await research.company(slots["company"])
        solver = brief if kind.startswith("brief:") else SOLVERS[kind]
        answer = await solver(research, company, slots)
    except NotFound as missing:
        return f"I could not find this in the documents published by {_day(as_of)}: {missing}."
    except ToolFailure as failure:
        return (
            f"I could not answer: the research tool `{failure.tool}` failed "
            f"({failure.message[:200]}). No figures are given rather than guessed."
        )
    if research.cited:
        answer += "\n\nSources: " + ", ".join(research.cited)
    return answer
