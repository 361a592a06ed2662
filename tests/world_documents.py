"""A second reading of a research world: parse its rendered documents into figures and events.

This is the test suite's own parser of the document formats that synthetic_world/README.md and
docs/conventions.md describe. It reads only the ``document`` table (the rendered markdown), the
``company`` table (names, tickers, fiscal year ends, currencies: what the profiles also state) and
``world_meta`` (today); never the fact ledger, the events, the prices or the document-fact links,
and it imports nothing from synthetic_world. tests/world_recompute.py applies the research
conventions to what is parsed here, so the keys are proven by a second implementation.

Every value keeps the precision it is written in (``half_unit``): "$1.2 billion" is 1,200
million give or take 50, "1,204.3" in a filing table is give or take 0.05.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
MONTHS = {name: number for number, name in enumerate(MONTH_NAMES, start=1)}
CURRENCY_WORDS = {"US dollars": "USD", "euros": "EUR", "pounds sterling": "GBP"}
CURRENCY_SIGNS = {"$": "USD", "€": "EUR", "£": "GBP"}
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4}

STATEMENT_ROWS = {
    "Revenue": "revenue",
    "Cost of revenue": "cost_of_revenue",
    "Gross profit": "gross_profit",
    "Operating expenses": "operating_expenses",
    "Operating income": "operating_income",
    "Net income": "net_income",
    "Cash and cash equivalents": "cash",
    "Total debt": "total_debt",
    "Total assets": "total_assets",
    "Net cash from operating activities": "cash_from_operations",
    "Capital expenditures": "capital_expenditures",
    "Depreciation and amortization": "depreciation_amortization",
    "Dividends paid": "dividends_paid",
    "Repurchases of common stock": "share_repurchases",
}
NOTE_TABLES = {
    "Segment revenue": "segment_revenue",
    "Revenue by product line": "product_revenue",
    "Revenue by region": "region_revenue",
}
VENDOR_ROWS = {
    "Revenue": "revenue",
    "Operating income": "operating_income",
    "Net income": "net_income",
    "Total assets": "total_assets",
    "Employees": "employees",
}

DATE = rf"({'|'.join(MONTH_NAMES)}) (\d{{1,2}}), (\d{{4}})"
MONEY = r"(-?)([$€£])(-?[\d,]+(?:\.\d+)?) (million|billion)"


class ParseError(ValueError):
    """A document does not have the layout its source type promises."""


@dataclass(frozen=True)
class Doc:
    doc_id: str
    url: str
    title: str
    source: str
    source_type: str
    published: dt.date
    companies: tuple[str, ...]
    body: str = field(repr=False, compare=False)

    @property
    def company(self) -> str:
        """The main company (first in the document's list)."""
        return self.companies[0]


@dataclass(frozen=True)
class Figure:
    """One number as a document states it."""

    company: str
    metric: str
    """revenue, gross_profit, ..., segment_revenue, product_revenue, region_revenue,
    adjusted_operating_income, operating_margin, adjusted_operating_margin, employees,
    shares_outstanding, market_cap, calendar_revenue, revenue_outlook_low/high."""
    period: str
    """FY2025, FY2025-Q3, CY2024 (calendar year) or an ISO date (shares at a day)."""
    value: Decimal
    """In millions of the reporting currency for money, percent points, persons, millions of
    shares."""
    half_unit: Decimal
    """Half a unit of the last digit written: the value's precision."""
    doc: Doc
    role: str
    """current (the document's own period), prior (a comparative column or 'a year earlier'),
    restated (a prior column marked restated), preliminary (a release's fiscal-year figure),
    announced (a private company's revenue announcement), vendor (a data-vendor table),
    profile (a company profile), note (an analyst note)."""
    member: str = ""
    """Segment, product line or region ('Total revenue', 'Intersegment eliminations' kept)."""
    unit: str = ""
    """USD, EUR, GBP, percent, persons or shares."""

    @property
    def published(self) -> dt.date:
        return self.doc.published


@dataclass(frozen=True)
class Event:
    """A dated happening stated by a news article or a funding announcement."""

    company: str
    kind: str
    """launch, acquisition, ceo_change, fine, rating_change, job_cuts, funding_round, rumour,
    denial, revenue_announcement, settlement, investigation, closure, cash_update (a private
    company's cash and monthly burn)."""
    date: dt.date
    doc: Doc
    details: dict


@dataclass(frozen=True)
class Profile:
    company: str
    doc: Doc
    fields: dict[str, str]
    competitors: tuple[str, ...]
    lines_text: str
    """'A, B and C' as written: a line's own name may hold ' and ' ('Software and Services'),
    so :meth:`World.lines_of_business` splits it with the segment names of the filings."""


@dataclass(frozen=True)
class Overview:
    """An annual report's business overview."""

    company: str
    doc: Doc
    fiscal_year: int
    chief_executive: str
    headquarters: str
    ticker: str
    exchange: str


@dataclass(frozen=True)
class Company:
    company_id: str
    name: str
    short_name: str
    listed: bool
    ticker: str | None
    currency: str
    fiscal_year_end_month: int


@dataclass
class World:
    path: Path
    today: dt.date
    world_id: str
    companies: dict[str, Company]
    docs: dict[str, Doc]
    figures: list[Figure] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    profiles: list[Profile] = field(default_factory=list)
    overviews: list[Overview] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Documents that did not parse (the parser's own failures, reported by the tests)."""

    def __post_init__(self) -> None:
        self._figures: dict[tuple, list[Figure]] = defaultdict(list)
        self._by_metric: dict[tuple, list[Figure]] = defaultdict(list)
        self._events: dict[str, list[Event]] = defaultdict(list)

    def index(self) -> None:
        self._figures.clear()
        self._by_metric.clear()
        self._events.clear()
        for figure in self.figures:
            self._figures[(figure.company, figure.metric, figure.member, figure.period)].append(
                figure
            )
            self._by_metric[(figure.company, figure.metric)].append(figure)
        for event in sorted(self.events, key=lambda e: (e.date, e.doc.published, e.doc.doc_id)):
            self._events[event.company].append(event)

    def statements(self, company: str, metric: str, period: str, member: str = "") -> list[Figure]:
        """Every statement of one figure, in every document, oldest first."""
        found = self._figures.get((company, metric, member, period), [])
        return sorted(found, key=lambda f: (f.published, f.doc.doc_id))

    def figures_of(self, company: str, metric: str) -> list[Figure]:
        return self._by_metric.get((company, metric), [])

    def events_of(self, company: str, *kinds: str) -> list[Event]:
        """The company's events (of the kinds), oldest first."""
        return [e for e in self._events.get(company, []) if not kinds or e.kind in kinds]

    def profiles_of(self, company: str) -> list[Profile]:
        return [p for p in self.profiles if p.company == company]

    def overviews_of(self, company: str) -> list[Overview]:
        return [o for o in self.overviews if o.company == company]

    def lines_of_business(self, profile: Profile) -> tuple[str, ...]:
        """A profile's lines of business, split on the segment names the company's annual
        reports use (any split when it files none)."""
        if not profile.lines_text:
            return ()
        segments = {
            f.member
            for f in self.figures_of(profile.company, "segment_revenue")
            if f.member != "Intersegment eliminations"
        }
        return split_names(profile.lines_text, segments)


# ---------------------------------------------------------------------------------------------
# Small readers


def parse_date(text: str) -> dt.date:
    match = re.fullmatch(DATE, text.strip())
    if not match:
        raise ParseError(f"not a long date: {text!r}")
    return dt.date(int(match[3]), MONTHS[match[1]], int(match[2]))


NUMBER = re.compile(r"-?\d+(\.(\d+))?")
HALF_UNITS = [Decimal(5) / Decimal(10) ** (decimals + 1) for decimals in range(8)]


def number(text: str) -> tuple[Decimal, Decimal]:
    """A table number ('1,204.3', '-8.0', '12.3%') and its half unit."""
    text = text.strip().rstrip("%").replace(",", "")
    match = NUMBER.fullmatch(text)
    if not match:
        raise ParseError(f"not a number: {text!r}")
    return Decimal(text), HALF_UNITS[len(match[2] or "")]


def money(match: re.Match) -> tuple[Decimal, Decimal, str]:
    """A MONEY match in millions, its half unit in millions, and its currency."""
    sign, symbol, digits, scale = match.groups()
    value, half = number(digits)
    if sign:
        value = -value
    if scale == "billion":
        value, half = value * 1000, half * 1000
    return value, half, CURRENCY_SIGNS[symbol]


HEADING = re.compile(r"(#+) (.*)")


def tables(body: str) -> list[tuple[tuple[str, ...], list[str], list[list[str]]]]:
    """Every markdown table with the headings above it: (headings, header cells, rows)."""
    found = []
    headings: dict[int, str] = {}
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        heading = line.startswith("#") and HEADING.match(line)
        if heading:
            level = len(heading[1])
            headings = {k: v for k, v in headings.items() if k < level}
            headings[level] = heading[2].strip()
        if line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append([cell.strip() for cell in lines[i].strip().strip("|").split("|")])
                i += 1
            if len(block) < 2 or not set("".join(block[1])) <= set("-: "):
                raise ParseError("a table without its separator row")
            path = tuple(headings[k] for k in sorted(headings))
            found.append((path, block[0], block[2:]))
            continue
        i += 1
    return found


def split_names(text: str, known: set[str]) -> tuple[str, ...]:
    """'A, B and C.' as known names (names may hold commas, '&' and a final period); a list
    separated by semicolons ('Devices; Software and Services.') splits on them alone."""
    text = text.strip()
    if "; " in text:
        return tuple(part.strip() for part in text.rstrip(".").split("; "))
    pieces = re.split(r"(, | and )", text)
    words = pieces[::2]

    def solve(start: int) -> list[str] | None:
        if start == len(words):
            return []
        for end in range(start + 1, len(words) + 1):
            candidate = "".join(
                piece for piece in pieces[2 * start : 2 * end - 1]
            )  # rejoin with the separators in between
            for name in (candidate, candidate[:-1] if candidate.endswith(".") else None):
                if name and (not known or name in known) and (rest := solve(end)) is not None:
                    return [name, *rest]
        return None

    names = solve(0)
    if names is None:
        raise ParseError(f"cannot split into known names: {text!r}")
    return tuple(names)


# ---------------------------------------------------------------------------------------------
# The world file


def load_world(path: Path) -> World:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        meta = dict(conn.execute("SELECT key, value FROM world_meta"))
        companies = {
            row[0]: Company(row[0], row[1], row[2], bool(row[3]), row[4], row[5], row[6])
            for row in conn.execute(
                "SELECT company_id, name, short_name, listed, ticker, currency, "
                "fiscal_year_end_month FROM company"
            )
        }
        docs = {
            row[0]: Doc(
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                dt.date.fromisoformat(row[5]),
                tuple(row[6].split()),
                row[7],
            )
            for row in conn.execute(
                "SELECT doc_id, url, title, source, source_type, published_at, companies, body "
                "FROM document ORDER BY rowid"
            )
        }
    finally:
        conn.close()
    world = World(path, dt.date.fromisoformat(meta["as_of"]), meta["world_id"], companies, docs)
    names = {company.name for company in companies.values()}
    for doc in docs.values():
        reader = READERS.get(doc.source_type)
        if reader is None:
            world.problems.append(f"{doc.doc_id}: unknown source type {doc.source_type!r}")
            continue
        try:
            reader(world, doc, names)
        except ParseError as error:
            world.problems.append(f"{doc.doc_id} ({doc.source_type}, {doc.title!r}): {error}")
    world.index()
    return world


def _unit_currency(world: World, doc: Doc) -> str:
    match = re.search(r"\(In millions of ([a-zA-Z ]+)\.\)", doc.body)
    if not match or match[1] not in CURRENCY_WORDS:
        raise ParseError("no '(In millions of ...)' unit line")
    return _own_currency(world, doc, CURRENCY_WORDS[match[1]])


def _own_currency(world: World, doc: Doc, currency: str) -> str:
    """The currency a document states, which must be its company's reporting currency."""
    if currency != world.companies[doc.company].currency:
        raise ParseError(
            f"figures in {currency}, the company reports in {world.companies[doc.company].currency}"
        )
    return currency


@functools.cache
def _column_period(header: str) -> tuple[str, bool]:
    """'Fiscal 2024 (restated)' -> ('FY2024', True); 'Q4 fiscal 2025' -> ('FY2025-Q4', False)."""
    match = re.fullmatch(r"Fiscal (\d{4})( \(restated\))?", header)
    if match:
        return f"FY{match[1]}", bool(match[2])
    match = re.fullmatch(r"Q([1-4]) fiscal (\d{4})", header)
    if match:
        return f"FY{match[2]}-Q{match[1]}", False
    match = re.fullmatch(r"FY(\d{4})", header)
    if match:
        return f"FY{match[1]}", False
    raise ParseError(f"unknown column {header!r}")


def _read_statement_table(
    world: World,
    doc: Doc,
    header: list[str],
    rows: list[list[str]],
    own: str,
    currency: str,
    metric_of,
    member_of=None,
) -> None:
    periods = [_column_period(cell) for cell in header[1:]]
    for row in rows:
        label = row[0]
        metric = metric_of(label)
        if metric is None:
            raise ParseError(f"unknown row {label!r}")
        for (period, restated), cell in zip(periods, row[1:], strict=True):
            value, half = number(cell)
            role = "current" if period == own else ("restated" if restated else "prior")
            world.figures.append(
                Figure(
                    doc.company,
                    metric,
                    period,
                    value,
                    half,
                    doc,
                    role,
                    member_of(label) if member_of else "",
                    currency,
                )
            )


def read_annual_report(world: World, doc: Doc, names: set[str]) -> None:
    title = re.match(r"# (.+): Annual Report for Fiscal Year (\d{4})\n", doc.body)
    if not title:
        raise ParseError("no annual report title line")
    fiscal_year = int(title[2])
    own = f"FY{fiscal_year}"
    if "## Business Overview" in doc.body:  # the one section without a period line
        _read_overview(world, doc, fiscal_year)
        return
    period_line = re.search(
        rf"Fiscal year ended {DATE} \(fiscal (\d{{4}}) runs from {DATE} to {DATE}\)", doc.body
    )
    if not period_line or int(period_line[4]) != fiscal_year:
        raise ParseError("no period line for the report's fiscal year")
    year_end = dt.date(int(period_line[3]), MONTHS[period_line[1]], int(period_line[2]))
    _check_fiscal_year_end(world, doc, fiscal_year, year_end)
    currency = _unit_currency(world, doc)
    if "## Legal and Regulatory Matters" in doc.body:
        _read_legal_matters(world, doc, currency)
        return
    found = tables(doc.body)
    if not found:
        raise ParseError("an annual report section without a table")
    for path, header, rows in found:
        if path[-1] in NOTE_TABLES:
            metric = NOTE_TABLES[path[-1]]

            def metric_of(label, metric=metric):
                return "revenue" if label == "Total revenue" else metric

            def member_of(label):
                return "" if label == "Total revenue" else label

            _read_statement_table(world, doc, header, rows, own, currency, metric_of, member_of)
        else:
            _read_statement_table(world, doc, header, rows, own, currency, STATEMENT_ROWS.get)


def _read_legal_matters(world: World, doc: Doc, currency: str) -> None:
    """The note's penalties paid in the fiscal year (one 'penalty_note' event each, dated by
    its row), and the provision for open investigations (an estimate, not a penalty)."""
    found = tables(doc.body)
    paid = "Penalties paid to regulators in fiscal" in doc.body
    if paid != bool(found) or (found and found[0][1] != ["Date", "Regulator", "Matter", "Amount"]):
        raise ParseError("a legal note whose penalty table does not match its text")
    for row in found[0][2] if found else []:
        value, half, cur = money(re.fullmatch(MONEY, f"{row[3]} million"))
        if cur != currency:
            raise ParseError(f"a penalty in {cur} in a {currency} report")
        world.events.append(
            Event(
                doc.company,
                "penalty_note",
                parse_date(row[0]),
                doc,
                {
                    "regulator": row[1].removeprefix("The "),
                    "matter": row[2],
                    "amount": value,
                    "half_unit": half,
                    "currency": cur,
                },
            )
        )
    provision = re.search(r"We recorded a provision of ([$€£][\d,.]+) million", doc.body)
    if (
        provision is None
        and "No provision has been recorded" not in doc.body
        and ("investigation" in doc.body)
    ):
        raise ParseError("open investigations without a provision line")


def _check_fiscal_year_end(world: World, doc: Doc, fiscal_year: int, year_end: dt.date) -> None:
    month = world.companies[doc.company].fiscal_year_end_month
    if (year_end.year, year_end.month) != (fiscal_year, month):
        raise ParseError(
            f"fiscal {fiscal_year} ends {year_end}, not in month {month} of {fiscal_year}"
        )


def _read_overview(world: World, doc: Doc, fiscal_year: int) -> None:
    body = doc.body
    employees = re.search(rf"Human capital: as of {DATE} we had ([\d,]+) employees\.", body)
    shares = re.search(rf"Shares outstanding at {DATE}: ([\d,.]+) million\.", body)
    ceo = re.search(r"\n([^\n]+), Chief Executive Officer, signs this report\.", body)
    place = re.search(r"headquartered in ([^,]+), ([^,]+), and founded in (\d{4})\.", body)
    listing = re.search(r"Its shares trade on the (.+) under the symbol ([A-Z]+)\.", body)
    if not (employees and shares and ceo and place and listing):
        raise ParseError("a business overview without employees, shares, CEO, HQ or listing")
    year_end = dt.date(int(employees[3]), MONTHS[employees[1]], int(employees[2]))
    _check_fiscal_year_end(world, doc, fiscal_year, year_end)
    value, half = number(employees[4])
    world.figures.append(
        Figure(
            doc.company,
            "employees",
            f"FY{fiscal_year}",
            value,
            half,
            doc,
            "current",
            unit="persons",
        )
    )
    _shares(world, doc, shares)
    _share_changes(world, doc, fiscal_year)
    world.overviews.append(
        Overview(doc.company, doc, fiscal_year, ceo[1].strip(), place[1], listing[2], listing[1])
    )


def _share_changes(world: World, doc: Doc, fiscal_year: int) -> None:
    """The year's repurchased and issued shares (millions), when the overview states them."""
    changes = re.search(
        rf"During fiscal {fiscal_year} we repurchased ([\d,.]+) million shares and issued "
        r"([\d,.]+) million shares under employee share plans\.",
        doc.body,
    )
    if not changes:
        return
    for metric, text in (("shares_repurchased", changes[1]), ("shares_issued", changes[2])):
        value, half = number(text)
        world.figures.append(
            Figure(
                doc.company, metric, f"FY{fiscal_year}", value, half, doc, "current", unit="shares"
            )
        )


def _shares(world: World, doc: Doc, match: re.Match) -> None:
    day = dt.date(int(match[3]), MONTHS[match[1]], int(match[2]))
    value, half = number(match[4])
    world.figures.append(
        Figure(
            doc.company,
            "shares_outstanding",
            day.isoformat(),
            value,
            half,
            doc,
            "current",
            unit="shares",
        )
    )


def read_quarterly_report(world: World, doc: Doc, names: set[str]) -> None:
    title = re.match(
        r"# (.+): Quarterly Report, (First|Second|Third) Quarter of Fiscal (\d{4})\n", doc.body
    )
    if not title:
        raise ParseError("no quarterly report title line")
    quarter, fiscal_year = ORDINALS[title[2].lower()], int(title[3])
    own = f"FY{fiscal_year}-Q{quarter}"
    currency = _unit_currency(world, doc)
    for path, header, rows in tables(doc.body):
        if path[-1].startswith("Condensed Consolidated Balance Sheet"):
            parse_date(header[1])  # the quarter end
            for row in rows:
                metric = STATEMENT_ROWS.get(row[0])
                if metric is None:
                    raise ParseError(f"unknown balance sheet row {row[0]!r}")
                value, half = number(row[1])
                world.figures.append(
                    Figure(doc.company, metric, own, value, half, doc, "current", unit=currency)
                )
        else:
            _read_statement_table(world, doc, header, rows, own, currency, STATEMENT_ROWS.get)
    shares = re.search(rf"Shares outstanding at {DATE}: ([\d,.]+) million\.", doc.body)
    if not shares:
        raise ParseError("a quarterly report without shares outstanding")
    _shares(world, doc, shares)


RESULTS_SENTENCE = (
    rf"Revenue for (the quarter|fiscal (\d{{4}})) was {MONEY}, (up|down) ([\d.]+)% from {MONEY} "
    rf"a year earlier\. GAAP operating income was {MONEY} \(GAAP operating margin (-?[\d.]+)%\) "
    rf"and net income was {MONEY}\."
)


def read_earnings_release(world: World, doc: Doc, names: set[str]) -> None:
    title = re.match(
        r"# (.+) reports results for the (first|second|third|fourth) quarter( and fiscal "
        r"(\d{4})| of fiscal (\d{4}))\n",
        doc.body,
    )
    if not title:
        raise ParseError("no earnings release title line")
    quarter = ORDINALS[title[2]]
    fiscal_year = int(title[4] or title[5])
    if (quarter == 4) != bool(title[4]):
        raise ParseError("a fourth-quarter release without its fiscal year, or the reverse")
    sentences = list(re.finditer(RESULTS_SENTENCE, doc.body))
    expected = 2 if quarter == 4 else 1
    if len(sentences) != expected:
        raise ParseError(f"{len(sentences)} results paragraphs, expected {expected}")
    currency = _unit_currency(world, doc)
    for sentence in sentences:
        if sentence[2]:
            if int(sentence[2]) != fiscal_year or "## Fiscal" not in doc.body:
                raise ParseError("a fiscal-year paragraph for another year")
            period, role = f"FY{fiscal_year}", "preliminary"
            prior = f"FY{fiscal_year - 1}"
        else:
            period, role = f"FY{fiscal_year}-Q{quarter}", "current"
            prior = f"FY{fiscal_year - 1}-Q{quarter}"
        _release_sentence(world, doc, sentence, period, prior, role, currency)
    for _path, header, rows in tables(doc.body):
        periods = [_column_period(cell)[0] for cell in header[1:]]
        for row in rows:
            metric = RECONCILIATION_ROWS.get(row[0].split(" (share-based")[0])
            if metric is None:
                raise ParseError(f"unknown reconciliation row {row[0]!r}")
            for period, cell in zip(periods, row[1:], strict=True):
                value, half = number(cell)
                role = "preliminary" if "-" not in period else "current"
                unit = "percent" if cell.endswith("%") else currency
                world.figures.append(
                    Figure(doc.company, metric, period, value, half, doc, role, unit=unit)
                )
    outlook = re.search(
        rf"(?:expects|now expects) fiscal (\d{{4}}) revenue of {MONEY} to {MONEY}\.", doc.body
    )
    if outlook:
        for metric, groups in (
            ("revenue_outlook_low", outlook.groups()[1:5]),
            ("revenue_outlook_high", outlook.groups()[5:9]),
        ):
            value, half, cur = money(_Match(groups))
            world.figures.append(
                Figure(
                    doc.company, metric, f"FY{outlook[1]}", value, half, doc, "current", unit=cur
                )
            )


RECONCILIATION_ROWS = {
    "Operating income (GAAP)": "operating_income",
    "Adjustments": "adjustments",
    "Adjusted operating income (non-GAAP)": "adjusted_operating_income",
    "Operating margin (GAAP)": "operating_margin",
    "Adjusted operating margin (non-GAAP)": "adjusted_operating_margin",
}


def _release_sentence(
    world: World, doc: Doc, sentence: re.Match, period: str, prior: str, role: str, currency: str
) -> None:
    groups = sentence.groups()

    # groups: 0 which, 1 fy, 2-5 revenue, 6 up/down, 7 pct, 8-11 prior revenue, 12-15 op income,
    # 16 margin, 17-20 net income
    def amount(start: int) -> tuple[Decimal, Decimal]:
        value, half, cur = money(_Match(groups[start : start + 4]))
        if cur != currency:
            raise ParseError(f"an amount in {cur} in a {currency} release")
        return value, half

    for metric, start, this_period, this_role in (
        ("revenue", 2, period, role),
        ("revenue", 8, prior, "prior"),
        ("operating_income", 12, period, role),
        ("net_income", 17, period, role),
    ):
        value, half = amount(start)
        world.figures.append(
            Figure(doc.company, metric, this_period, value, half, doc, this_role, unit=currency)
        )
    value, half = number(groups[16])
    world.figures.append(
        Figure(doc.company, "operating_margin", period, value, half, doc, role, unit="percent")
    )
    growth, half = number(groups[7])
    if groups[6] == "down":
        growth = -growth
    world.figures.append(
        Figure(doc.company, "revenue_growth", period, growth, half, doc, role, unit="percent")
    )


class _Match:
    """Four MONEY groups taken out of a longer match, readable by :func:`money`."""

    def __init__(self, groups):
        self._groups = tuple(groups)

    def groups(self):
        return self._groups


def read_news(world: World, doc: Doc, names: set[str]) -> None:
    body = doc.body
    dateline = re.search(rf"\n\*([^,*]+), {DATE}\*\n", body)
    if not dateline or parse_date(f"{dateline[2]} {dateline[3]}, {dateline[4]}") != doc.published:
        raise ParseError("no '*source, date*' line matching the publication date")
    if dateline[1] != doc.source:
        raise ParseError(f"dateline source {dateline[1]!r} is not {doc.source!r}")
    text = body.split("*\n", 1)[1].strip()
    company, day = doc.company, doc.published
    stated = re.search(
        r"\n\n[^\n]*\((?:market reaction|sentiment): (positive|negative|neutral)\)\.$", text
    )
    mood = stated[1] if stated else None
    if stated:
        text = text[: stated.start()].strip()

    def event(kind: str, **details) -> None:
        world.events.append(Event(company, kind, day, doc, {**details, "sentiment": mood}))

    if m := re.fullmatch(
        r"(.+) introduced (.+), which it expects to broaden its .+ offering\.", text
    ):
        event("launch", product=m[2])
    elif m := re.fullmatch(rf"(.+) agreed to acquire (.+) for {MONEY} in cash\. .+", text):
        value, half, cur = money(_Match(m.groups()[2:6]))
        target = doc.companies[1] if len(doc.companies) > 1 else None
        event(
            "acquisition", target=m[2], target_id=target, amount=value, half_unit=half, currency=cur
        )
    elif m := re.fullmatch(
        rf"(.+) has appointed (.+) as Chief Executive Officer, succeeding (.+), effective {DATE}\.",
        text,
    ):
        event("ceo_change", new=m[2], previous=m[3], effective=parse_date(f"{m[4]} {m[5]}, {m[6]}"))
    elif m := re.fullmatch(rf"The (.+) fined (.+?) {MONEY} over its (.+?)\. .+", text):
        value, half, cur = money(_Match(m.groups()[2:6]))
        event("fine", regulator=m[1], amount=value, half_unit=half, currency=cur, matter=m[7])
    elif m := re.fullmatch(
        rf"(.+) agreed to pay {MONEY} to settle an investigation by the (.+) into its (.+)\. "
        r"The settlement ends the matter\.",
        text,
    ):
        value, half, cur = money(_Match(m.groups()[1:5]))
        event("settlement", regulator=m[6], amount=value, half_unit=half, currency=cur, matter=m[7])
    elif m := re.fullmatch(
        r"The (.+) opened an investigation into (.+)'s (.+)\. No penalty has been set, .+", text
    ):
        event("investigation", regulator=m[1], matter=m[3])
    elif m := re.fullmatch(
        r"The (.+) closed its investigation into (.+)'s (.+) without a penalty\.", text
    ):
        event("closure", regulator=m[1], matter=m[3])
    elif m := re.fullmatch(
        r"(.+) (upgraded|downgraded) (.+)'s issuer credit rating from (\S+) to (\S+), citing .+",
        text,
    ):
        event("rating_change", agency=m[1], direction=m[2], old=m[4], new=m[5])
    elif m := re.fullmatch(r"(.+) said it would cut (\d+)% of its workforce .+", text):
        event("job_cuts", percent=int(m[2]))
    elif m := re.fullmatch(
        rf"(.+), an? .+ company based in (.+), has raised {MONEY} in a (Series [A-Z]|Seed|"
        rf"[A-Za-z ]+?) round led by (.+), at a post-money valuation of {MONEY}\.",
        text,
    ):
        amount, amount_half, cur = money(_Match(m.groups()[2:6]))
        post, post_half, cur2 = money(_Match(m.groups()[8:12]))
        _own_currency(world, doc, cur)
        _own_currency(world, doc, cur2)
        event(
            "funding_round",
            series=m[7],
            amount=amount,
            amount_half=amount_half,
            lead=m[8],
            post_money=post,
            post_money_half=post_half,
            currency=cur,
            city=m[2],
        )
    elif m := re.fullmatch(
        rf"(.+) is in talks to raise about {MONEY} in a (.+) round at a valuation near {MONEY}, "
        r"according to people familiar with the matter\. .+",
        text,
    ):
        event("rumour", series=m[6])
    elif re.fullmatch(
        r"(.+) said it is not raising new capital and denied reports of funding talks\.", text
    ):
        event("denial")
    elif m := re.fullmatch(
        rf"In an interview, (.+), chief executive of privately held (.+), said the company had "
        rf"{MONEY} of cash and equivalents on hand at {DATE}\. Its net burn, spending less what "
        rf"customers pay, was {MONEY} a month; its gross burn, before customer receipts, was "
        rf"{MONEY} a month\.",
        text,
    ):
        cash, cash_half, cur = money(_Match(m.groups()[2:6]))
        net, net_half, cur2 = money(_Match(m.groups()[9:13]))
        gross, _, cur3 = money(_Match(m.groups()[13:17]))
        for currency in (cur, cur2, cur3):
            _own_currency(world, doc, currency)
        event(
            "cash_update",
            cash=cash,
            cash_half=cash_half,
            cash_date=parse_date(f"{m[7]} {m[8]}, {m[9]}"),
            net_burn=net,
            net_burn_half=net_half,
            gross_burn=gross,
            currency=cur,
        )
    elif m := re.fullmatch(
        rf"Privately held (.+) said revenue for fiscal (\d{{4}}), the year ended {DATE}, was "
        rf"{MONEY}\. .+",
        text,
    ):
        value, half, cur = money(_Match(m.groups()[5:9]))
        _own_currency(world, doc, cur)
        year_end = parse_date(f"{m[3]} {m[4]}, {m[5]}")
        _check_fiscal_year_end(world, doc, int(m[2]), year_end)
        world.figures.append(
            Figure(company, "revenue", f"FY{m[2]}", value, half, doc, "announced", unit=cur)
        )
        event("revenue_announcement", fiscal_year=int(m[2]))
    else:
        raise ParseError(f"unknown news article: {text[:80]!r}")


def read_funding_announcement(world: World, doc: Doc, names: set[str]) -> None:
    found = tables(doc.body)
    if len(found) != 1 or found[0][1] != ["Term", "Value"]:
        raise ParseError("no Term/Value table")
    terms = {row[0]: row[1] for row in found[0][2]}
    try:
        amount, amount_half, cur = money(re.fullmatch(MONEY, terms["Amount raised"]))
        post, post_half, cur2 = money(re.fullmatch(MONEY, terms["Post-money valuation"]))
    except (KeyError, TypeError) as error:
        raise ParseError(f"a funding table without amount or valuation: {error}") from None
    _own_currency(world, doc, cur)
    _own_currency(world, doc, cur2)
    world.events.append(
        Event(
            doc.company,
            "funding_round",
            doc.published,
            doc,
            dict(
                series=terms["Round"],
                amount=amount,
                amount_half=amount_half,
                lead=terms["Lead investor"],
                post_money=post,
                post_money_half=post_half,
                currency=cur,
            ),
        )
    )


def read_company_profile(world: World, doc: Doc, names: set[str]) -> None:
    found = tables(doc.body)
    if len(found) != 1 or found[0][1] != ["Field", "Value"]:
        raise ParseError("no Field/Value table")
    fields = {row[0]: row[1] for row in found[0][2]}
    _own_currency(world, doc, fields.get("Reporting currency", ""))
    competitors = re.search(r"\nCompetitors: (.+)\n", doc.body + "\n")
    lines = re.search(r"\nLines of business: (.+)\n", doc.body + "\n")
    world.profiles.append(
        Profile(
            doc.company,
            doc,
            fields,
            split_names(competitors[1], names) if competitors else (),
            lines[1].removesuffix(".") if lines else "",
        )
    )
    for label, value in fields.items():
        if m := re.fullmatch(r"Revenue \(fiscal (\d{4}), millions of ([A-Z]{3})\)", label):
            amount, half = number(value)
            world.figures.append(
                Figure(doc.company, "revenue", f"FY{m[1]}", amount, half, doc, "profile", unit=m[2])
            )
        elif m := re.fullmatch(r"Employees \(fiscal (\d{4})\)", label):
            amount, half = number(value)
            world.figures.append(
                Figure(
                    doc.company,
                    "employees",
                    f"FY{m[1]}",
                    amount,
                    half,
                    doc,
                    "profile",
                    unit="persons",
                )
            )


def read_data_vendor(world: World, doc: Doc, names: set[str]) -> None:
    found = tables(doc.body)
    if len(found) != 1:
        raise ParseError("a data-vendor page without exactly one table")
    _path, header, rows = found[0]
    if doc.source == "DataVista Fundamentals":
        unit = re.search(r"Figures in thousands of ([a-zA-Z ]+) \(employees in persons\)", doc.body)
        if not unit or unit[1] not in CURRENCY_WORDS:
            raise ParseError("a DataVista table without its thousands unit line")
        currency = _own_currency(world, doc, CURRENCY_WORDS[unit[1]])
        periods = [_column_period(cell)[0] for cell in header[1:]]
        for row in rows:
            metric = VENDOR_ROWS.get(row[0])
            if metric is None:
                raise ParseError(f"unknown DataVista row {row[0]!r}")
            for period, cell in zip(periods, row[1:], strict=True):
                if cell == "n/a":
                    continue
                value, half = number(cell)
                if metric != "employees":
                    value, half = value / 1000, half / 1000  # thousands -> millions
                world.figures.append(
                    Figure(
                        doc.company,
                        metric,
                        period,
                        value,
                        half,
                        doc,
                        "vendor",
                        unit="persons" if metric == "employees" else currency,
                    )
                )
    elif doc.source == "MarketLens":
        measures = {row[0]: row[1] for row in rows}
        close = re.fullmatch(rf"[$€£]([\d,.]+) \({DATE}\)", measures.get("Last close", ""))
        shares = measures.get("Shares outstanding (millions)")
        cap_label = next((k for k in measures if k.startswith("Market capitalisation")), None)
        if not (close and shares and cap_label):
            raise ParseError("a MarketLens table without close, shares or market cap")
        day = parse_date(f"{close[2]} {close[3]}, {close[4]}").isoformat()
        for metric, text in (
            ("close", close[1]),
            ("shares_outstanding", shares),
            ("market_cap", measures[cap_label]),
        ):
            value, half = number(text)
            world.figures.append(Figure(doc.company, metric, day, value, half, doc, "vendor"))
    else:
        raise ParseError(f"unknown data vendor {doc.source!r}")


def read_analyst_note(world: World, doc: Doc, names: set[str]) -> None:
    if not re.search(r"We rate .+ (Buy|Hold|Sell) with a 12-month price target of ", doc.body):
        raise ParseError("an analyst note without its rating sentence")
    calendar = re.search(
        rf"revenue for calendar (\d{{4}}) was about {MONEY} \(the four quarters ending in that "
        r"calendar year\)",
        doc.body,
    )
    if calendar:
        value, half, cur = money(_Match(calendar.groups()[1:5]))
        world.figures.append(
            Figure(
                doc.company,
                "calendar_revenue",
                f"CY{calendar[1]}",
                value,
                half,
                doc,
                "note",
                unit=cur,
            )
        )


READERS = {
    "annual_report": read_annual_report,
    "quarterly_report": read_quarterly_report,
    "earnings_release": read_earnings_release,
    "news": read_news,
    "funding_announcement": read_funding_announcement,
    "company_profile": read_company_profile,
    "data_vendor": read_data_vendor,
    "analyst_note": read_analyst_note,
}
