"""Documents rendered from the fact ledger: filings, releases, news, notes, profiles, data tables.

Every figure a document states is recorded as a :class:`StatedFact`, so the gold documents of a
key are known, and the hard negatives are built in: prior-year columns beside current ones,
restated values in newer reports beside originals in older ones, segment totals above the
consolidated total, non-GAAP margins beside GAAP ones, thousands in vendor tables beside millions
in filings, calendar-year sums in analyst notes beside fiscal years, decoys with near-duplicate
names, denied funding rumours and preliminary figures that the annual report revises. Nothing is
published after the world's today. The layout of each kind is described in synthetic_world's
README ("Document formats"); parsers in the tests rely on it.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from decimal import Decimal

from synthetic_world._calendar import DAY, Period, profile_dates, quarters
from synthetic_world._documents import (
    CURRENCY_NAMES,
    CURRENCY_SIGNS,
    Document,
    StatedFact,
    doc_id,
    doc_url,
    in_words,
    long_date,
    millions,
    percent,
    table,
    thousands,
    units,
)
from synthetic_world._facts import (
    ANNUAL_CASH_ROWS,
    BALANCE_ROWS,
    INCOME_ROWS,
    METRICS,
    TENTH,
    CompanyLedger,
    Event,
    Fact,
    FactIndex,
)
from synthetic_world._universe import Company

NEWS_SOURCES = (
    "Meridian Wire",
    "Harbor Business Daily",
    "The Ledger Street Journal",
    "Pacific Trade Times",
)
ANALYSTS = ("Northgate Securities Research", "Calder & Finch Equity Research")
FUNDING_WIRE = "StartWire"
PROFILE_SOURCE = "CompanyAtlas"
VENDOR_SOURCE = "DataVista Fundamentals"
MARKET_SOURCE = "MarketLens"

MARKET_REACTION = {
    "positive": "Shares rose on the news (market reaction: positive).",
    "negative": "Shares fell on the news (market reaction: negative).",
    "neutral": "Shares were little changed (market reaction: neutral).",
}
"""How a news article about a listed company reports the sentiment of its event."""
PRIVATE_REACTION = {
    "positive": "Industry observers read the news as a good sign (sentiment: positive).",
    "negative": "Industry observers read the news as a setback (sentiment: negative).",
    "neutral": "Industry observers saw little change (sentiment: neutral).",
}

UNRATED_NEWS = ("funding_rumour", "rumour_denial", "cash_update")
"""Event kinds whose article states no sentiment (talks, denials, a chief executive's interview)."""


class Renderer:
    """Renders every document of one company; ``links`` names the other companies."""

    def __init__(
        self,
        world_id: str,
        company: Company,
        ledger: CompanyLedger,
        names: dict[str, Company],
        today: dt.date,
    ) -> None:
        self.world_id = world_id
        self.company = company
        self.ledger = ledger
        self.names = names
        self.today = today
        self.facts = FactIndex(ledger.facts)
        self.rng = random.Random(f"render:{company.company_id}")

    # -- the shape of every document --------------------------------------------------------------

    def _doc(
        self,
        key: str,
        title: str,
        source: str,
        source_type: str,
        published: dt.date,
        body: list[str],
        facts: list[StatedFact],
        companies: list[str] | None = None,
        events: list[str] | None = None,
    ) -> Document | None:
        if published > self.today:
            return None
        identifier = doc_id(self.world_id, f"{self.company.company_id}|{key}")
        return Document(
            doc_id=identifier,
            url=doc_url(self.world_id, identifier),
            title=title,
            source=source,
            source_type=source_type,
            published_at=published,
            companies=companies or [self.company.company_id],
            body="\n\n".join(part for part in body if part),
            facts=facts,
            events=events or [],
        )

    @property
    def who(self) -> str:
        c = self.company
        return f"{c.name} ({c.exchange}: {c.ticker})" if c.listed else c.name

    def _units_line(self, extra: str = "") -> str:
        name = CURRENCY_NAMES[self.company.currency]
        return f"(In millions of {name}{extra}.)"

    def _cell(self, fact: Fact | None, stated: list[StatedFact], scale: str = "millions") -> str:
        if fact is None:
            return "n/a"
        text = {"millions": millions, "thousands": thousands, "units": units}[scale](fact.value)
        stated.append(StatedFact(fact.fact_id, text, scale))
        return text

    def render(self) -> Iterator[Document]:
        if self.company.listed:
            for year in self.ledger.annual[1:]:
                yield from self._annual_report(year)
            for q in self.ledger.quarters:
                if q.fiscal_year < self.ledger.annual[1].fiscal_year:
                    continue
                if q.quarter < 4:
                    yield from self._optional(self._quarterly_report(q))
                yield from self._optional(self._earnings_release(q))
            yield from self._analyst_notes()
            yield from self._optional(self._market_data())
        else:
            yield from self._private_revenue_news()
        yield from self._event_documents()
        yield from self._profiles()
        yield from self._optional(self._vendor_table())

    @staticmethod
    def _optional(doc: Document | None) -> Iterator[Document]:
        if doc is not None:
            yield doc

    # -- annual report ----------------------------------------------------------------------------

    def _columns(self, year: Period, published: dt.date) -> tuple[Period, str, str]:
        prior = self.ledger.annual[self.ledger.annual.index(year) - 1]
        restated = self.ledger.restated.get(prior.id) == year.id
        label = f"Fiscal {prior.fiscal_year}" + (" (restated)" if restated else "")
        return prior, f"Fiscal {year.fiscal_year}", label

    def _statement(
        self, year: Period, rows: tuple[str, ...], published: dt.date, stated: list[StatedFact]
    ) -> str:
        prior, current_label, prior_label = self._columns(year, published)
        lines = []
        for metric in rows:
            lines.append(
                [
                    METRICS[metric],
                    self._cell(self.facts.as_of(metric, year.id, published), stated),
                    self._cell(self.facts.as_of(metric, prior.id, published), stated),
                ]
            )
        return table(["", current_label, prior_label], lines)

    def _annual_report(self, year: Period) -> Iterator[Document]:
        company, ledger = self.company, self.ledger
        published = ledger.reports[year.id]
        end = long_date(year.end)
        heading = f"# {company.name}: Annual Report for Fiscal Year {year.fiscal_year}"
        period_line = (
            f"Fiscal year ended {end} (fiscal {year.fiscal_year} runs from "
            f"{long_date(year.start)} to {end})."
        )
        prior = ledger.annual[ledger.annual.index(year) - 1]
        restated_note = ""
        if ledger.restated.get(prior.id) == year.id:
            restated_note = (
                f"Note 2. Restatement: fiscal {prior.fiscal_year} figures have been "
                "restated to correct the timing of revenue recognition on certain "
                "multi-year contracts; the previously reported figures should no "
                "longer be relied upon."
            )
        sections = (
            ("operations", "Consolidated Statements of Operations", INCOME_ROWS, ""),
            ("balance", "Consolidated Balance Sheets (at fiscal year end)", BALANCE_ROWS, ""),
            (
                "cash-flows",
                "Consolidated Statements of Cash Flows (summary)",
                ANNUAL_CASH_ROWS,
                "Capital expenditures are purchases of property and equipment. Depreciation and "
                "amortization is a non-cash charge already added back in the first line. Capital "
                "expenditures, dividends paid and repurchases of common stock are cash outflows, "
                "shown as positive amounts.",
            ),
        )
        for key, title, rows, note in sections:
            stated: list[StatedFact] = []
            body = [
                heading,
                f"## {title}",
                period_line,
                self._units_line(),
                self._statement(year, rows, published, stated),
                note,
                restated_note,
                self._fourth_quarter(
                    year, key, ANNUAL_CASH_ROWS if key == "cash-flows" else rows, published, stated
                ),
            ]
            yield from self._optional(
                self._doc(
                    f"annual|{year.id}|{key}",
                    f"{company.name} annual report fiscal "
                    f"{year.fiscal_year}: {title.split(' (')[0].lower()}",
                    f"{company.short} investor relations",
                    "annual_report",
                    published,
                    body,
                    stated,
                )
            )
        yield from self._optional(self._disaggregation(year, heading, period_line, published))
        yield from self._optional(self._overview(year, heading, published))
        yield from self._optional(self._legal_matters(year, heading, period_line, published))

    def _legal_matters(
        self, year: Period, heading: str, period_line: str, published: dt.date
    ) -> Document | None:
        """The annual report's legal and regulatory note: the penalties paid in the fiscal year
        (a fiscal, not a calendar, window), the investigations open at its end and the provision
        recorded for them (an estimate, not a payment)."""
        events = self.ledger.events
        paid = [
            e for e in events if e.kind == "regulatory_action" and year.start <= e.date <= year.end
        ]
        open_ = [e for e in events if self._open_at(e, year.end)]
        if not paid and not open_:
            return None
        company = self.company
        sign = CURRENCY_SIGNS[company.currency]
        end = long_date(year.end)
        body = [heading, "## Legal and Regulatory Matters", period_line, self._units_line()]
        if paid:
            body.append(f"Penalties paid to regulators in fiscal {year.fiscal_year}:")
            rows = [
                [
                    long_date(e.date),
                    f"{e.regulator[0].upper()}{e.regulator[1:]}",
                    e.matter or "sales practices",
                    f"{sign}{millions(e.amount or Decimal(0))}",
                ]
                for e in paid
            ]
            body.append(table(["Date", "Regulator", "Matter", "Amount"], rows))
        else:
            body.append(f"No penalty was paid to a regulator in fiscal {year.fiscal_year}.")
        if open_:
            matters = "; ".join(e.matter or "" for e in open_)
            provision = sum((self._provision(e) for e in open_), Decimal(0))
            body.append(
                f"At {end}, {len(open_)} regulatory investigation"
                f"{'s were' if len(open_) > 1 else ' was'} open ({matters})."
            )
            body.append(
                f"We recorded a provision of {sign}{millions(provision)} million for these "
                "matters: an estimate of what they may cost, not a penalty paid."
                if provision
                else "No provision has been recorded: the outcome cannot yet be estimated."
            )
        return self._doc(
            f"annual|{year.id}|legal",
            f"{company.name} annual report fiscal {year.fiscal_year}: legal and regulatory matters",
            f"{company.short} investor relations",
            "annual_report",
            published,
            body,
            [],
            events=[e.event_id for e in (*paid, *open_)],
        )

    def _open_at(self, event: Event, day: dt.date) -> bool:
        """Whether a regulatory-history investigation was open at the end of ``day``."""
        if event.kind != "regulatory_investigation" or event.date > day:
            return False
        ended = [
            e.date
            for e in self.ledger.events
            if e.kind in ("regulatory_action", "regulatory_closure") and e.matter == event.matter
        ]
        return not ended or ended[0] > day

    def _provision(self, investigation: Event) -> Decimal:
        """60-110% of the penalty the investigation ends in; none when it ends without one or
        has not ended by today."""
        penalty = next(
            (
                e
                for e in self.ledger.events
                if e.kind == "regulatory_action" and e.matter == investigation.matter
            ),
            None,
        )
        if penalty is None or penalty.amount is None:
            return Decimal(0)
        factor = random.Random(f"{investigation.event_id}|provision").uniform(0.6, 1.1)
        return (penalty.amount * Decimal(str(factor))).quantize(TENTH)

    def _fourth_quarter(
        self,
        year: Period,
        key: str,
        rows: tuple[str, ...],
        published: dt.date,
        stated: list[StatedFact],
    ) -> str:
        """The fourth quarter's figures, which no quarterly report states: a table of the
        quarter (income and cash flows) or, for balances, the year-end figures again (the
        fourth quarter ends with the year)."""
        q4 = f"{year.id}-Q4"
        if key == "balance":
            for metric in rows:
                fact = self.facts.as_of(metric, q4, published)
                if fact is not None:
                    stated.append(StatedFact(fact.fact_id, millions(fact.value), "millions"))
            return ""
        before = f"FY{year.fiscal_year - 1}-Q4"
        lines = [
            [
                METRICS[metric],
                self._cell(self.facts.as_of(metric, q4, published), stated),
                self._cell(self.facts.as_of(metric, before, published), stated),
            ]
            for metric in rows
        ]
        return (
            "### Fourth quarter (three months ended "
            f"{long_date(year.end)}, unaudited)\n\n"
            + table(
                ["", f"Q4 fiscal {year.fiscal_year}", f"Q4 fiscal {year.fiscal_year - 1}"], lines
            )
        )

    def _disaggregation(
        self, year: Period, heading: str, period_line: str, published: dt.date
    ) -> Document | None:
        ledger = self.ledger
        prior, current_label, prior_label = self._columns(year, published)
        stated: list[StatedFact] = []
        body = [
            heading,
            "## Note 4. Revenue by Segment, Product Line and Region",
            period_line,
            self._units_line(),
        ]
        for metric, members, title in (
            ("segment_revenue", ledger.segments, "Segment revenue"),
            ("product_revenue", ledger.products, "Revenue by product line"),
            ("regional_revenue", ledger.regions, "Revenue by region"),
        ):
            rows = []
            for member in members:
                current = self.facts.as_of(metric, year.id, published, member)
                before = self.facts.as_of(metric, prior.id, published, member)
                rows.append([member, self._cell(current, stated), self._cell(before, stated)])
            if metric == "segment_revenue":
                rows.append(self._eliminations(year, prior, published, members))
            rows.append(
                [
                    "Total revenue",
                    self._cell(self.facts.as_of("revenue", year.id, published), stated),
                    self._cell(self.facts.as_of("revenue", prior.id, published), stated),
                ]
            )
            body += [
                f"### {title}",
                table(["", current_label, prior_label], rows),
            ]
        body.append(
            "Segment revenue includes sales between segments, which are eliminated in "
            "consolidation."
        )
        return self._doc(
            f"annual|{year.id}|revenue-note",
            f"{self.company.name} annual report "
            f"fiscal {year.fiscal_year}: revenue by segment, product line and region",
            f"{self.company.short} investor relations",
            "annual_report",
            published,
            body,
            stated,
        )

    def _eliminations(
        self, year: Period, prior: Period, published: dt.date, members: list[str]
    ) -> list[str]:
        cells = ["Intersegment eliminations"]
        for period in (year, prior):
            total = self.facts.as_of("revenue", period.id, published)
            parts = [self.facts.as_of("segment_revenue", period.id, published, m) for m in members]
            if total is None or any(p is None for p in parts):
                cells.append("n/a")
                continue
            cells.append(millions(total.value - sum(p.value for p in parts if p)))
        return cells

    def _overview(self, year: Period, heading: str, published: dt.date) -> Document | None:
        company, ledger = self.company, self.ledger
        stated: list[StatedFact] = []
        employees = self.facts.as_of("employees", year.id, published)
        ceo = self._ceo_on(published)
        lines = [
            heading,
            "## Business Overview",
            f"{company.name} is {_article(company.industry)} {company.industry.lower()} company "
            "in the "
            f"{company.sector.lower()} sector, headquartered in {company.city}, "
            f"{_country(company.country)}, and founded in {company.founded_year}. Its shares "
            f"trade on the {company.exchange} under the symbol {company.ticker}.",
            f"Our businesses are organised in {len(ledger.segments)} reportable segments: "
            f"{'; '.join(ledger.segments)}.",
        ]
        if employees is not None:
            count = self._cell(employees, stated, "units")
            lines.append(f"Human capital: as of {long_date(year.end)} we had {count} employees.")
        shares = self.facts.as_of("shares_outstanding", f"{year.id}-Q4", published)
        if shares is not None:
            lines.append(
                f"Shares outstanding at {long_date(year.end)}: "
                f"{self._cell(shares, stated)} million."
            )
        lines.extend(self._share_changes(year, published, stated))
        lines.append(f"{ceo}, Chief Executive Officer, signs this report.")
        return self._doc(
            f"annual|{year.id}|overview",
            f"{company.name} annual report fiscal {year.fiscal_year}: business overview",
            f"{company.short} investor relations",
            "annual_report",
            published,
            lines,
            stated,
        )

    def _share_changes(
        self, year: Period, published: dt.date, stated: list[StatedFact]
    ) -> list[str]:
        """The year's repurchased and issued shares, which take the count from the prior year
        end's to this one's."""
        bought = self.facts.as_of("shares_repurchased", year.id, published)
        issued = self.facts.as_of("shares_issued", year.id, published)
        if bought is None or issued is None:
            return []
        return [
            f"During fiscal {year.fiscal_year} we repurchased {self._cell(bought, stated)} "
            f"million shares and issued {self._cell(issued, stated)} million shares under "
            "employee share plans."
        ]

    # -- quarterly reports and earnings releases --------------------------------------------------

    def _same_quarter_last_year(self, q: Period) -> Period | None:
        for other in self.ledger.quarters:
            if other.fiscal_year == q.fiscal_year - 1 and other.quarter == q.quarter:
                return other
        return None

    def _quarterly_report(self, q: Period) -> Document | None:
        company = self.company
        published = self.ledger.reports[q.id]
        before = self._same_quarter_last_year(q)
        stated: list[StatedFact] = []
        rows = []
        for metric in INCOME_ROWS:
            rows.append(
                [
                    METRICS[metric],
                    self._cell(self.facts.as_of(metric, q.id, published), stated),
                    self._cell(self.facts.as_of(metric, before.id, published), stated)
                    if before
                    else "n/a",
                ]
            )
        balance = []
        for metric in BALANCE_ROWS:
            balance.append(
                [METRICS[metric], self._cell(self.facts.as_of(metric, q.id, published), stated)]
            )
        cash_flows = [
            [
                METRICS[metric],
                self._cell(self.facts.as_of(metric, q.id, published), stated),
                self._cell(self.facts.as_of(metric, before.id, published), stated)
                if before
                else "n/a",
            ]
            for metric in ANNUAL_CASH_ROWS
        ]
        shares = self.facts.as_of("shares_outstanding", q.id, published)
        ordinal = q.label.split(" quarter")[0].removeprefix("the ")
        body = [
            f"# {company.name}: Quarterly Report, {ordinal.capitalize()} Quarter of Fiscal "
            f"{q.fiscal_year}",
            f"Three months ended {long_date(q.end)} ({q.label}), unaudited. " + self._units_line(),
            "## Condensed Consolidated Statements of Operations",
            table(
                [
                    "",
                    f"Q{q.quarter} fiscal {q.fiscal_year}",
                    f"Q{q.quarter} fiscal {q.fiscal_year - 1}",
                ],
                rows,
            ),
            f"## Condensed Consolidated Balance Sheet (at {long_date(q.end)})",
            table(["", long_date(q.end)], balance),
            "## Condensed Consolidated Cash Flows (three months)",
            table(
                [
                    "",
                    f"Q{q.quarter} fiscal {q.fiscal_year}",
                    f"Q{q.quarter} fiscal {q.fiscal_year - 1}",
                ],
                cash_flows,
            ),
        ]
        if shares is not None:
            count = self._cell(shares, stated)
            body.append(f"Shares outstanding at {long_date(q.end)}: {count} million.")
        return self._doc(
            f"quarterly|{q.id}",
            f"{company.name} quarterly report Q{q.quarter} fiscal {q.fiscal_year}",
            f"{company.short} investor relations",
            "quarterly_report",
            published,
            body,
            stated,
        )

    def _earnings_release(self, q: Period) -> Document | None:
        company, ledger = self.company, self.ledger
        published = ledger.releases.get(q.id)
        if published is None:
            return None
        stated: list[StatedFact] = []
        year = next((y for y in ledger.annual if y.fiscal_year == q.fiscal_year), None)
        before = self._same_quarter_last_year(q)
        sign = CURRENCY_SIGNS[company.currency]
        title_period = (
            f"fourth quarter and fiscal {q.fiscal_year}"
            if q.quarter == 4
            else f"{q.label.split(' quarter')[0].removeprefix('the ')} quarter of "
            f"fiscal {q.fiscal_year}"
        )
        body = [
            f"# {company.name} reports results for the {title_period}",
            f"{company.city}, {long_date(published)}. {self.who} today reported results for "
            f"the three months ended {long_date(q.end)}.",
        ]
        body += self._release_paragraph(q, before, published, stated, "the quarter")
        if q.quarter == 4 and year is not None:
            prior_year = next(
                (y for y in ledger.annual if y.fiscal_year == q.fiscal_year - 1), None
            )
            body.append(f"## Fiscal {q.fiscal_year} (preliminary, unaudited)")
            body += self._release_paragraph(
                year, prior_year, published, stated, f"fiscal {q.fiscal_year}"
            )
            body.append(
                "Figures for the fiscal year are preliminary until the annual report is filed."
            )
        body += self._reconciliation(q, year if q.quarter == 4 else None, published, stated)
        body += self._guidance_lines(q, published, stated, sign)
        return self._doc(
            f"release|{q.id}",
            f"{company.name} reports {title_period} results",
            f"{company.short} investor relations",
            "earnings_release",
            published,
            body,
            stated,
        )

    def _release_paragraph(
        self,
        period: Period,
        before: Period | None,
        published: dt.date,
        stated: list[StatedFact],
        name: str,
    ) -> list[str]:
        sign = CURRENCY_SIGNS[self.company.currency]
        revenue = self.facts.as_of("revenue", period.id, published)
        income = self.facts.as_of("operating_income", period.id, published)
        net = self.facts.as_of("net_income", period.id, published)
        if revenue is None or income is None or net is None:
            return []
        text = f"Revenue for {name} was {sign}{self._cell(revenue, stated)} million"
        previous = self.facts.as_of("revenue", before.id, published) if before else None
        if previous is not None:
            change = (revenue.value / previous.value - 1) * 100
            direction = "up" if change >= 0 else "down"
            text += (
                f", {direction} {abs(change):.1f}% from {sign}"
                f"{self._cell(previous, stated)} million a year earlier"
            )
        text += (
            f". GAAP operating income was {sign}{self._cell(income, stated)} million "
            f"(GAAP operating margin {percent(income.value, revenue.value)}) and net income "
            f"was {sign}{self._cell(net, stated)} million."
        )
        return [text]

    def _reconciliation(
        self, q: Period, year: Period | None, published: dt.date, stated: list[StatedFact]
    ) -> list[str]:
        rows, header = [], [""]
        periods = [q] + ([year] if year else [])
        cells = {
            "gaap": ["Operating income (GAAP)"],
            "adj": [
                "Adjustments (share-based "
                "compensation, amortisation of acquired intangibles, restructuring)"
            ],
            "non": ["Adjusted operating income (non-GAAP)"],
            "gm": ["Operating margin (GAAP)"],
            "nm": ["Adjusted operating margin (non-GAAP)"],
        }
        for period in periods:
            header.append(
                f"Q{period.quarter} fiscal {period.fiscal_year}"
                if period.quarter
                else f"Fiscal {period.fiscal_year}"
            )
            gaap = self.facts.as_of("operating_income", period.id, published)
            adjusted = self.facts.as_of("adjusted_operating_income", period.id, published)
            revenue = self.facts.as_of("revenue", period.id, published)
            if gaap is None or adjusted is None or revenue is None:
                return []
            cells["gaap"].append(self._cell(gaap, stated))
            cells["adj"].append(millions(adjusted.value - gaap.value))
            cells["non"].append(self._cell(adjusted, stated))
            cells["gm"].append(percent(gaap.value, revenue.value))
            cells["nm"].append(percent(adjusted.value, revenue.value))
        rows = list(cells.values())
        return [
            "## Reconciliation of GAAP to non-GAAP operating income",
            self._units_line(),
            table(header, rows),
            "Adjusted operating income is a non-GAAP measure; it is not a substitute for "
            "operating income under GAAP.",
        ]

    def _guidance_lines(
        self, q: Period, published: dt.date, stated: list[StatedFact], sign: str
    ) -> list[str]:
        target = q.fiscal_year + 1 if q.quarter == 4 else q.fiscal_year
        period_id = f"FY{target}"
        low = self.facts.as_of("revenue_guidance_low", period_id, published)
        high = self.facts.as_of("revenue_guidance_high", period_id, published)
        if low is None or high is None or low.published_at != published:
            return []
        verb = "updates its outlook and now expects" if q.quarter == 2 else "expects"
        return [
            "## Outlook",
            f"{self.company.short} {verb} fiscal {target} revenue of {sign}"
            f"{self._cell(low, stated)} million to {sign}{self._cell(high, stated)} million.",
        ]

    # -- news, notes, announcements ---------------------------------------------------------------

    def _source(self, salt: str) -> str:
        return NEWS_SOURCES[random.Random(f"{self.company.company_id}|{salt}").randrange(4)]

    def _event_documents(self) -> Iterator[Document]:
        for event in self.ledger.events:
            yield from self._optional(self._news(event))
            if event.kind == "funding_round":
                yield from self._optional(self._funding_announcement(event))

    def _news(self, event: Event) -> Document | None:
        company = self.company
        day = event.date
        lead = {
            "funding_round": self._funding_text,
            "acquisition": self._acquisition_text,
            "executive_change": self._executive_text,
            "product_launch": self._launch_text,
            "regulatory_action": self._regulatory_text,
            "rating_change": self._rating_text,
            "restructuring": self._restructuring_text,
            "funding_rumour": self._rumour_text,
            "rumour_denial": self._denial_text,
            "regulatory_investigation": self._investigation_text,
            "regulatory_closure": self._closure_text,
            "cash_update": self._cash_text,
        }[event.kind](event)
        source = self._source(event.event_id)
        companies = [company.company_id]
        if event.counterparty in self.names:
            companies.append(event.counterparty)
        body = [f"# {event.headline}", f"*{source}, {long_date(day)}*", lead]
        if event.kind not in UNRATED_NEWS and self.company.listed:
            body.append(MARKET_REACTION[event.sentiment])
        elif event.kind not in UNRATED_NEWS:
            body.append(PRIVATE_REACTION[event.sentiment])
        return self._doc(
            f"news|{event.event_id}",
            event.headline,
            source,
            "news",
            day,
            body,
            [],
            companies,
            [event.event_id],
        )

    def _money(self, amount: Decimal, currency: str | None) -> str:
        """As news writes it: $12.3 million, $1.2 billion."""
        return in_words(amount, currency or self.company.currency)[0]

    def _exact(self, amount: Decimal | None, currency: str | None) -> str:
        """As a term sheet states it: millions with one decimal ($2,312.4 million)."""
        sign = CURRENCY_SIGNS[currency or self.company.currency]
        return f"{sign}{millions(amount or Decimal(0))} million"

    def _funding_text(self, e: Event) -> str:
        return (
            f"{self.company.name}, {_article(self.company.industry)} "
            f"{self.company.industry.lower()} company based in "
            f"{self.company.city}, has raised {self._money(e.amount, e.currency)} in a "
            f"{e.round_name} round led by {e.lead_investor}, at a post-money valuation of "
            f"{self._money(e.post_money, e.currency)}."
        )

    def _acquisition_text(self, e: Event) -> str:
        target = self.names[e.counterparty].name if e.counterparty in self.names else e.counterparty
        return (
            f"{self.company.name} agreed to acquire {target} for "
            f"{self._money(e.amount, e.currency)} in cash. The deal is expected to close "
            "within two quarters."
        )

    def _executive_text(self, e: Event) -> str:
        before = f", succeeding {e.previous_person}" if e.previous_person else ""
        return (
            f"{self.company.name} has appointed {e.person} as {e.role}{before}, effective "
            f"{long_date(e.date)}."
        )

    def _launch_text(self, e: Event) -> str:
        return (
            f"{self.company.name} introduced {e.product}, which it expects to broaden its "
            f"{self.company.industry.lower()} offering."
        )

    def _regulatory_text(self, e: Event) -> str:
        if e.matter is not None:
            return self._penalty_text(e)
        return (
            f"{e.regulator[0].upper()}{e.regulator[1:]} fined {self.company.name} "
            f"{self._money(e.amount, e.currency)} over its sales practices. The company said "
            "it would comply."
        )

    def _penalty_text(self, e: Event) -> str:
        """A regulatory-history penalty, to the tenth of a million as the order states it."""
        regulator = f"{e.regulator[0].upper()}{e.regulator[1:]}"
        if e.action == "settlement":
            return (
                f"{self.company.name} agreed to pay {self._exact(e.amount, e.currency)} to settle "
                f"an investigation by {e.regulator} into its {e.matter}. The settlement ends "
                "the matter."
            )
        return (
            f"{regulator} fined {self.company.name} {self._exact(e.amount, e.currency)} over its "
            f"{e.matter}. The company said it would comply."
        )

    def _investigation_text(self, e: Event) -> str:
        regulator = f"{e.regulator[0].upper()}{e.regulator[1:]}"
        return (
            f"{regulator} opened an investigation into {self.company.name}'s {e.matter}. No "
            "penalty has been set, and the company said it was cooperating."
        )

    def _closure_text(self, e: Event) -> str:
        regulator = f"{e.regulator[0].upper()}{e.regulator[1:]}"
        return (
            f"{regulator} closed its investigation into {self.company.name}'s {e.matter} "
            "without a penalty."
        )

    def _rating_text(self, e: Event) -> str:
        verb = "upgraded" if e.sentiment == "positive" else "downgraded"
        why = (
            "citing falling sales and weaker cash flow"
            if self.company.distressed
            else ("citing its results and leverage")
        )
        return (
            f"{e.agency} {verb} {self.company.name}'s issuer credit rating from "
            f"{e.rating_from} to {e.rating_to}, {why}."
        )

    def _restructuring_text(self, e: Event) -> str:
        return (
            f"{self.company.name} said it would cut {int(e.amount)}% of its workforce as "
            "sales decline and it seeks a waiver from its lenders."
        )

    def _rumour_text(self, e: Event) -> str:
        return (
            f"{self.company.name} is in talks to raise about {self._money(e.amount, e.currency)}"
            f" in a {e.round_name} round at a valuation near "
            f"{self._money(e.post_money, e.currency)}, according to people familiar with the "
            "matter. The company declined to comment."
        )

    def _denial_text(self, e: Event) -> str:
        return (
            f"{self.company.name} said it is not raising new capital and denied reports of "
            "funding talks."
        )

    def _cash_text(self, e: Event) -> str:
        return (
            f"In an interview, {self._ceo_on(e.date)}, chief executive of privately held "
            f"{self.company.name}, said the company had {self._exact(e.amount, e.currency)} of "
            f"cash and equivalents on hand at {long_date(e.cash_date or e.date)}. Its net burn, "
            f"spending less what customers pay, was {self._exact(e.net_burn, e.currency)} a "
            f"month; its gross burn, before customer receipts, was "
            f"{self._exact(e.gross_burn, e.currency)} a month."
        )

    def _funding_announcement(self, e: Event) -> Document | None:
        body = [
            f"# {self.company.name} announces {e.round_name} financing",
            f"*{FUNDING_WIRE}, {long_date(e.date)}*",
            f"{self.company.name} today announced a {e.round_name} round of "
            f"{self._money(e.amount, e.currency)}, led by {e.lead_investor}. The round values "
            f"the company at {self._money(e.post_money, e.currency)} after the investment.",
            table(
                ["Term", "Value"],
                [
                    ["Round", e.round_name or ""],
                    ["Amount raised", self._exact(e.amount, e.currency)],
                    ["Lead investor", e.lead_investor or ""],
                    ["Post-money valuation", self._exact(e.post_money, e.currency)],
                ],
            ),
        ]
        return self._doc(
            f"funding|{e.event_id}",
            f"{self.company.name} announces {e.round_name} financing",
            FUNDING_WIRE,
            "funding_announcement",
            e.date,
            body,
            [],
            events=[e.event_id],
        )

    def _private_revenue_news(self) -> Iterator[Document]:
        for year in self.ledger.annual:
            fact = self.facts.as_of("revenue", year.id, self.today)
            if fact is None:
                continue
            words, scale = in_words(fact.value, fact.unit)
            stated = [StatedFact(fact.fact_id, words, scale)]
            sign = CURRENCY_SIGNS[fact.unit]
            exact = f"{sign}{millions(fact.value)} million"
            stated.append(StatedFact(fact.fact_id, millions(fact.value), "millions"))
            source = self._source(f"revenue|{year.id}")
            body = [
                f"# {self.company.short} says fiscal {year.fiscal_year} revenue reached {words}",
                f"*{source}, {long_date(fact.published_at)}*",
                f"Privately held {self.company.name} said revenue for fiscal "
                f"{year.fiscal_year}, the year ended {long_date(year.end)}, was {exact}. The "
                "company does not publish profit figures.",
            ]
            yield from self._optional(
                self._doc(
                    f"private-revenue|{year.id}",
                    f"{self.company.short} says fiscal {year.fiscal_year} revenue reached {words}",
                    source,
                    "news",
                    fact.published_at,
                    body,
                    stated,
                )
            )

    def _analyst_notes(self) -> Iterator[Document]:
        """Twice a year, a broker's note: rating, target and a calendar-year revenue figure (a
        trap for fiscal-year questions when the fiscal year is not the calendar year)."""
        if self.company.kind != "notable":
            return
        analyst = ANALYSTS[int(self.company.company_id[2:]) % 2]
        for year in self.ledger.annual[1:]:
            for q in quarters(year):
                if q.quarter not in (2, 4) or q.id not in self.ledger.releases:
                    continue
                day = self.ledger.releases[q.id] + DAY * 3
                doc = self._note(analyst, q, day)
                if doc is not None:
                    yield doc

    def _note(self, analyst: str, q: Period, day: dt.date) -> Document | None:
        rng = random.Random(f"note|{self.company.company_id}|{q.id}")
        rating = rng.choice(
            ("Buy", "Hold", "Hold", "Sell") if self.company.distressed else ("Buy", "Buy", "Hold")
        )
        price = self._close_on(day)
        if price is None:
            return None
        target = price * Decimal(str(round(rng.uniform(0.85, 1.35), 2)))
        sign = CURRENCY_SIGNS[self.company.currency]
        body = [
            f"# {analyst}: {self.company.name} ({self.company.ticker}), rating {rating}",
            f"*{analyst}, {long_date(day)}*",
            f"We rate {self.company.short} {rating} with a 12-month price target of "
            f"{sign}{target:,.2f} (last close {sign}{price:,.2f}).",
        ]
        calendar = day.year - 1
        total = self._calendar_revenue(calendar, day)
        if total is not None and self.company.fiscal_year_end_month != 12:
            body.append(
                f"On a calendar-year basis, {self.company.short}'s revenue for calendar "
                f"{calendar} was about {sign}{millions(total)} million (the four quarters "
                "ending in that calendar year); note that its fiscal year ends in "
                f"{_month(self.company.fiscal_year_end_month)}."
            )
        return self._doc(
            f"note|{q.id}",
            f"{analyst} note on {self.company.name}: {rating}",
            analyst,
            "analyst_note",
            day,
            body,
            [],
        )

    def _calendar_revenue(self, year: int, day: dt.date) -> Decimal | None:
        parts = []
        for q in self.ledger.quarters:
            if q.end.year == year:
                fact = self.facts.as_of("revenue", q.id, day)
                if fact is None:
                    return None
                parts.append(fact.value)
        return sum(parts, Decimal(0)) if len(parts) == 4 else None

    # -- profiles, data tables, market data -------------------------------------------------------

    def _ceo_on(self, day: dt.date) -> str:
        ceo = self.ledger.first_ceo
        for event in self.ledger.events:
            if event.kind == "executive_change" and event.date <= day:
                ceo = event.person or ceo
        return ceo

    def _latest_year(self, day: dt.date, metric: str = "revenue") -> Period | None:
        for year in reversed(self.ledger.annual):
            if self.facts.as_of(metric, year.id, day) is not None:
                return year
        return None

    def _profiles(self) -> Iterator[Document]:
        """The profile page as updated on each of its days (the latest keeps its old link)."""
        *archived, latest = profile_dates(self.company.company_id, self.today)
        for day in archived:
            yield from self._optional(self._profile(day, f"profile|{day.isoformat()}"))
        yield from self._optional(self._profile(latest, "profile"))

    def _profile(self, day: dt.date, key: str) -> Document | None:
        company = self.company
        stated: list[StatedFact] = []
        peers = [self.names[p].name for p in company.peers if p in self.names]
        rows = [
            ["Legal name", company.name],
            [
                "Ownership",
                f"Public ({company.exchange}: {company.ticker})" if company.listed else "Private",
            ],
            ["Industry", company.industry],
            ["Sector", company.sector],
            ["Headquarters", f"{company.city}, {_country(company.country)}"],
            ["Founded", str(company.founded_year)],
            ["Chief executive", self._ceo_on(day)],
            ["Fiscal year ends", _month(company.fiscal_year_end_month)],
            ["Reporting currency", company.currency],
        ]
        year = self._latest_year(day, "employees")
        if year is not None:
            employees = self.facts.as_of("employees", year.id, day)
            rows.append(
                [f"Employees (fiscal {year.fiscal_year})", self._cell(employees, stated, "units")]
            )
        revenue_year = self._latest_year(day)
        if revenue_year is not None:
            revenue = self.facts.as_of("revenue", revenue_year.id, day)
            rows.append(
                [
                    f"Revenue (fiscal {revenue_year.fiscal_year}, millions of {company.currency})",
                    self._cell(revenue, stated),
                ]
            )
        elif not company.listed:
            rows.append(["Revenue", "not disclosed"])
        body = [
            f"# {company.name}: company profile",
            f"*{PROFILE_SOURCE}, updated {long_date(day)}*",
            table(["Field", "Value"], rows),
        ]
        if peers:
            body.append(_sentence(f"Competitors: {_join(peers)}"))
        if self.ledger.segments:
            body.append(f"Lines of business: {'; '.join(self.ledger.segments)}.")
        return self._doc(
            key,
            f"{company.name} company profile",
            PROFILE_SOURCE,
            "company_profile",
            day,
            body,
            stated,
        )

    def _vendor_table(self) -> Document | None:
        """Five fiscal years in thousands: the same figures as the filings, another scale."""
        company = self.company
        if not company.listed:
            return None
        day = self.today - DAY * self.rng.randint(3, 20)
        years = [y for y in self.ledger.annual if self.facts.as_of("revenue", y.id, day)][-5:]
        if not years:
            return None
        stated: list[StatedFact] = []
        rows = []
        for metric in ("revenue", "operating_income", "net_income", "total_assets"):
            rows.append(
                [METRICS[metric]]
                + [
                    self._cell(self.facts.as_of(metric, y.id, day), stated, "thousands")
                    for y in years
                ]
            )
        rows.append(
            ["Employees"]
            + [self._cell(self.facts.as_of("employees", y.id, day), stated, "units") for y in years]
        )
        body = [
            f"# {VENDOR_SOURCE}: {company.name} ({company.ticker}) five-year summary",
            f"*{VENDOR_SOURCE}, {long_date(day)}*",
            f"Figures in thousands of {CURRENCY_NAMES[company.currency]} (employees in "
            "persons), by fiscal year, as last reported (restated where restated).",
            table(["", *(f"FY{y.fiscal_year}" for y in years)], rows),
        ]
        return self._doc(
            "vendor",
            f"{VENDOR_SOURCE}: {company.name} five-year summary",
            VENDOR_SOURCE,
            "data_vendor",
            day,
            body,
            stated,
        )

    def _close_on(self, day: dt.date) -> Decimal | None:
        found = None
        for date, close in self.ledger.prices:
            if date > day:
                break
            found = close
        return found

    def _market_data(self) -> Document | None:
        company = self.company
        if not self.ledger.prices:
            return None
        day, close = self.ledger.prices[-1]
        published = day + DAY
        shares = self._shares_on(day)
        year_ago = [c for d, c in self.ledger.prices if d > day - DAY * 365]
        sign = CURRENCY_SIGNS[company.currency]
        rows = [
            ["Last close", f"{sign}{close:,.2f} ({long_date(day)})"],
            ["52-week high", f"{sign}{max(year_ago):,.2f}"],
            ["52-week low", f"{sign}{min(year_ago):,.2f}"],
        ]
        stated: list[StatedFact] = []
        if shares is not None:
            rows.append(["Shares outstanding (millions)", self._cell(shares, stated)])
            rows.append(
                [
                    f"Market capitalisation (millions of {company.currency})",
                    millions(close * shares.value),
                ]
            )
        body = [
            f"# {MARKET_SOURCE}: {company.ticker} market data",
            f"*{MARKET_SOURCE}, {long_date(published)}*",
            _sentence(company.name),
            table(["Measure", "Value"], rows),
        ]
        return self._doc(
            "market",
            f"{MARKET_SOURCE}: {company.name} ({company.ticker}) market data",
            MARKET_SOURCE,
            "data_vendor",
            published,
            body,
            stated,
        )

    def _shares_on(self, day: dt.date) -> Fact | None:
        found = None
        for q in self.ledger.quarters:
            fact = self.facts.as_of("shares_outstanding", q.id, day)
            if fact is not None and q.end <= day:
                found = fact
        return found


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _sentence(text: str) -> str:
    """``text`` ended with one full stop ("Moses Plastics Inc." stays as it is)."""
    return text if text.endswith(".") else text + "."


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _country(code: str) -> str:
    return {"USA": "United States", "DEU": "Germany", "GBR": "United Kingdom"}[code]


def _month(month: int) -> str:
    from synthetic_world._documents import MONTHS

    return MONTHS[month - 1]
