"""Answer keys of research questions: programs over the fact ledger, as of the question's date.

A key reads only what was published by the as-of date: the latest version of each figure (a
restatement or a revision wins once published, a preliminary figure counts until then), confirmed
events (a rumour never counts), and the documents that state each figure as gold documents.
Conventions (docs/conventions.md): fiscal years are named by the year they end in; figures are
GAAP unless the question asks for an adjusted (non-GAAP) measure; free cash flow is operating cash
flow minus capital expenditures; margins, shares and growth are percentages with one decimal.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal

from ledgerbench_core.dataset import ExpectedFact
from synthetic_world._documents import CURRENCY_SIGNS, LINK_BASE, long_date, millions

AMOUNT_TOLERANCE = 0.05
"""Millions: half the last digit filings state (one decimal)."""
PERCENT_TOLERANCE = 0.1
"""Percentage points: a margin or share computed from the stated figures may round either way."""


@dataclass(frozen=True)
class FactRow:
    fact_id: str
    company_id: str
    metric: str
    member: str
    period_id: str
    value: Decimal
    unit: str
    scale: str
    basis: str
    status: str
    version: int
    published_at: str


@dataclass
class Key:
    """A question's key: reference text, checkable facts and the documents behind them."""

    text: str
    facts: list[ExpectedFact] = field(default_factory=list)
    period: str | None = None
    metrics: list[str] = field(default_factory=list)
    comparison: bool = False
    global_context: bool = False

    @property
    def negative(self) -> bool:
        """A "not disclosed", "not yet reported" or "none found" item."""
        return any(f.kind in ("not_disclosed", "no_records") for f in self.facts)

    @property
    def gold_documents(self) -> list[str]:
        seen: dict[str, None] = {}
        for fact in self.facts:
            for url in fact.sources:
                seen.setdefault(url, None)
        return list(seen)


class KeyError_(LookupError):
    """The item cannot be keyed as drawn (the generator draws another)."""


@dataclass
class Company:
    company_id: str
    name: str
    ticker: str | None
    listed: bool
    currency: str
    fiscal_year_end_month: int
    kind: str
    discloses_revenue: bool
    segments: list[str]
    products: list[str]
    regions: list[str]
    peers: list[str]
    erp: list[tuple[str, str, str]]


class KeyContext:
    """Point-in-time reads of one world (its SQLite file, read-only)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.meta = dict(conn.execute("SELECT key, value FROM world_meta"))
        self.today = dt.date.fromisoformat(self.meta["as_of"])
        self.world_id = self.meta["world_id"]
        self.companies: dict[str, Company] = {}
        erp: dict[str, list[tuple[str, str, str]]] = {}
        for cid, le, kind, account in conn.execute(
            "SELECT company_id, legal_entity, party_type, account FROM company_erp "
            "ORDER BY 1, 2, 3, 4"
        ):
            erp.setdefault(cid, []).append((le, kind, account))
        peers: dict[str, list[str]] = {}
        for cid, peer in conn.execute("SELECT company_id, peer_id FROM company_peer ORDER BY 1, 2"):
            peers.setdefault(cid, []).append(peer)
        for row in conn.execute(
            "SELECT company_id, name, ticker, listed, currency, fiscal_year_end_month, kind, "
            "discloses_revenue, segments, products, regions FROM company ORDER BY company_id"
        ):
            self.companies[row[0]] = Company(
                row[0],
                row[1],
                row[2],
                bool(row[3]),
                row[4],
                row[5],
                row[6],
                bool(row[7]),
                json.loads(row[8]),
                json.loads(row[9]),
                json.loads(row[10]),
                peers.get(row[0], []),
                erp.get(row[0], []),
            )

    # -- reads ------------------------------------------------------------------------------------

    def fact(
        self,
        cid: str,
        metric: str,
        period_id: str,
        as_of: dt.date,
        member: str = "",
        basis: str = "GAAP",
    ) -> FactRow | None:
        row = self.conn.execute(
            "SELECT fact_id, company_id, metric, member, period_id, value, unit, scale, basis, "
            "status, version, published_at FROM fact WHERE company_id = ? AND metric = ? AND "
            "period_id = ? AND member = ? AND basis = ? AND published_at <= ? "
            "ORDER BY version DESC LIMIT 1",
            (cid, metric, period_id, member, basis, as_of.isoformat()),
        ).fetchone()
        return FactRow(*row[:5], Decimal(row[5]), *row[6:]) if row else None

    def fiscal_years(self, cid: str) -> list[tuple[int, str | None]]:
        """(fiscal year, release date) of every modelled fiscal year, oldest first."""
        return [
            (fy, release)
            for fy, release in self.conn.execute(
                "SELECT fiscal_year, release_date FROM period WHERE company_id = ? AND quarter = 0 "
                "ORDER BY fiscal_year",
                (cid,),
            )
        ]

    def reported_years(self, cid: str, as_of: dt.date, metric: str = "revenue") -> list[int]:
        """Fiscal years whose ``metric`` was published by ``as_of`` and that a document states
        by then (the oldest modelled year appears only as a prior-year column)."""
        years = []
        for fy, _ in self.fiscal_years(cid)[1:]:
            fact = self.fact(cid, metric, f"FY{fy}", as_of)
            if fact is not None and self.sources([fact], as_of):
                years.append(fy)
        return years

    def sources(self, facts: list[FactRow], as_of: dt.date) -> list[str]:
        """Links of the documents published by ``as_of`` that state every one of ``facts`` (or,
        when no one document states them all, each of them)."""
        ids = sorted({f.fact_id for f in facts})
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(
            f"SELECT d.doc_id, count(DISTINCT df.fact_id) FROM document_fact df JOIN document d "
            f"USING (doc_id) WHERE df.fact_id IN ({marks}) AND d.published_at <= ? "
            "GROUP BY d.doc_id ORDER BY min(d.published_at), d.doc_id",
            (*ids, as_of.isoformat()),
        ).fetchall()
        complete = [doc for doc, n in rows if n == len(ids)]
        chosen = complete or [doc for doc, _ in rows]
        return [self.url(doc) for doc in chosen]

    def event_sources(
        self, event_ids: list[str], as_of: dt.date, source_type: str | None = None
    ) -> list[str]:
        """Documents reporting the events by ``as_of`` (only ``source_type`` ones, if given)."""
        marks = ",".join("?" * len(event_ids))
        kind = " AND d.source_type = ?" if source_type else ""
        rows = self.conn.execute(
            f"SELECT DISTINCT d.doc_id FROM document_event de JOIN document d USING (doc_id) "
            f"WHERE de.event_id IN ({marks}) AND d.published_at <= ?{kind} ORDER BY d.doc_id",
            (*event_ids, as_of.isoformat(), *([source_type] if source_type else [])),
        ).fetchall()
        return [self.url(doc) for (doc,) in rows]

    def doc_sources(self, cid: str, source_type: str, as_of: dt.date) -> list[str]:
        rows = self.conn.execute(
            "SELECT d.doc_id FROM document d JOIN document_company dc USING (doc_id) "
            "WHERE dc.company_id = ? AND d.source_type = ? AND d.published_at <= ? "
            "AND substr(d.companies, 1, length(?)) = ? ORDER BY d.doc_id",
            (cid, source_type, as_of.isoformat(), cid, cid),
        ).fetchall()
        return [self.url(doc) for (doc,) in rows]

    def profile_sources(self, cid: str, as_of: dt.date) -> list[str]:
        """The company's profile page as it stood on ``as_of``: its latest update by then."""
        row = self.conn.execute(
            "SELECT d.doc_id FROM document d JOIN document_company dc USING (doc_id) "
            "WHERE dc.company_id = ? AND d.source_type = 'company_profile' AND "
            "d.published_at <= ? AND substr(d.companies, 1, length(?)) = ? "
            "ORDER BY d.published_at DESC LIMIT 1",
            (cid, as_of.isoformat(), cid, cid),
        ).fetchone()
        return [self.url(row[0])] if row else []

    def events(self, cid: str, kinds: tuple[str, ...], as_of: dt.date) -> list[dict]:
        marks = ",".join("?" * len(kinds))
        rows = self.conn.execute(
            f"SELECT event_id, kind, date, sentiment, headline, status, details FROM event "
            f"WHERE company_id = ? AND kind IN ({marks}) AND date <= ? ORDER BY date, event_id",
            (cid, *kinds, as_of.isoformat()),
        ).fetchall()
        return [
            {
                "event_id": r[0],
                "kind": r[1],
                "date": r[2],
                "sentiment": r[3],
                "headline": r[4],
                "status": r[5],
                **json.loads(r[6]),
            }
            for r in rows
        ]

    def release_date(self, cid: str, period_id: str) -> dt.date:
        (day,) = self.conn.execute(
            "SELECT release_date FROM period WHERE company_id = ? AND period_id = ?",
            (cid, period_id),
        ).fetchone()
        return dt.date.fromisoformat(day)

    def close_on(self, ticker: str, day: dt.date) -> tuple[str, Decimal] | None:
        row = self.conn.execute(
            "SELECT date, close FROM price WHERE ticker = ? AND date <= ? ORDER BY date DESC "
            "LIMIT 1",
            (ticker, day.isoformat()),
        ).fetchone()
        return (row[0], Decimal(row[1])) if row else None

    def shares_on(self, cid: str, day: dt.date) -> FactRow | None:
        """The share count last reported by ``day`` in a filing (the world's prices tool uses
        the same one)."""
        row = self.conn.execute(
            "SELECT f.period_id FROM fact f WHERE f.company_id = ? AND "
            "f.metric = 'shares_outstanding' AND f.published_at <= ? AND EXISTS (SELECT 1 FROM "
            "document_fact df JOIN document d USING (doc_id) WHERE df.fact_id = f.fact_id AND "
            "d.published_at = f.published_at) ORDER BY f.published_at DESC, f.period_id DESC "
            "LIMIT 1",
            (cid, day.isoformat()),
        ).fetchone()
        return self.fact(cid, "shares_outstanding", row[0], day) if row else None

    def latest_quarter(self, cid: str, as_of: dt.date) -> FactRow | None:
        row = self.conn.execute(
            "SELECT period_id FROM fact WHERE company_id = ? AND metric = 'revenue' AND "
            "period_id LIKE 'FY%-Q%' AND published_at <= ? ORDER BY published_at DESC, "
            "period_id DESC LIMIT 1",
            (cid, as_of.isoformat()),
        ).fetchone()
        return self.fact(cid, "revenue", row[0], as_of) if row else None

    def url(self, doc_id: str) -> str:
        return f"{LINK_BASE}/{self.world_id}/docs/{doc_id}"


# -- expected facts ------------------------------------------------------------------------------

METRIC_WORDS = {
    "revenue": "revenue",
    "net_income": "net income",
    "operating_income": "operating income",
    "gross_profit": "gross profit",
    "cash_from_operations": "operating cash flow",
    "total_assets": "total assets",
    "employees": "employee count",
    "depreciation_amortization": "depreciation and amortization",
    "dividends_paid": "dividends paid",
    "share_repurchases": "share repurchases",
}


def amount(
    field_name: str,
    value: Decimal,
    company: Company,
    period: str,
    sources: list[str],
    *,
    basis: str | None = "GAAP",
    subject: str | None = None,
) -> ExpectedFact:
    return ExpectedFact(
        kind="amount",
        field=field_name,
        value=float(value),
        tolerance=AMOUNT_TOLERANCE,
        currency=company.currency,
        scale="millions",
        period=period,
        basis=basis,
        subject=subject,
        sources=sources,
    )


def percent(
    field_name: str,
    value: Decimal,
    period: str,
    sources: list[str],
    *,
    basis: str | None = "GAAP",
    subject: str | None = None,
) -> ExpectedFact:
    return ExpectedFact(
        kind="percent",
        field=field_name,
        value=float(value),
        tolerance=PERCENT_TOLERANCE,
        unit="percent",
        period=period,
        basis=basis,
        subject=subject,
        sources=sources,
    )


def share(
    field_name: str,
    numerator: Decimal,
    denominator: Decimal,
    period: str,
    sources: list[str],
    *,
    basis: str | None = "GAAP",
    subject: str | None = None,
) -> tuple[ExpectedFact, Decimal]:
    value = (numerator / denominator * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
    return percent(field_name, value, period, sources, basis=basis, subject=subject), value


def money_text(value: Decimal, currency: str) -> str:
    sign = "-" if value < 0 else ""
    return f"{sign}{CURRENCY_SIGNS[currency]}{millions(abs(value))} million"


def as_of_text(day: dt.date) -> str:
    return f"as of {long_date(day)}"


def _need(fact: FactRow | None) -> FactRow:
    if fact is None:
        raise KeyError_("figure not published by the as-of date")
    return fact


def not_reported(
    ctx: KeyContext,
    company: Company,
    field_name: str,
    fy: int,
    as_of: dt.date,
    latest: Callable[[int], Key] | None = None,
) -> Key:
    """The fiscal year asked is not reported by the as-of date: say so, and give the asked
    measure for the latest fiscal year it is reported for (``latest(year)`` keys that year).

    A fourth-quarter release reports revenue and income (preliminary) and the annual report,
    weeks later, the balance sheet, cash flows and segments: the latest year with a margin may be
    newer than the latest year with a free cash flow."""
    facts = [
        ExpectedFact(
            kind="not_disclosed", field=field_name, value="not yet reported", period=f"FY{fy}"
        )
    ]
    why = "has not ended" if _ends_after(company, fy, as_of) else "has ended, results not out"
    what = METRIC_WORDS.get(field_name, field_name)
    text = (
        f"{company.name} had not reported fiscal {fy} results {as_of_text(as_of)} (the "
        f"fiscal year {why}), so its fiscal {fy} {what} is not yet reported."
    )
    for year in reversed(ctx.reported_years(company.company_id, as_of)) if latest else ():
        if year >= fy:
            continue
        found = latest(year)
        if found.negative:
            continue
        for fact in found.facts:  # "not yet reported" alone, with no lookup, is no answer
            fact.dealbreaker = True
        facts += found.facts
        text += f" The latest fiscal year with its {what} reported is fiscal {year}: {found.text}"
        break
    return Key(text, facts, period=f"FY{fy}", metrics=[what])


def year_end_text(company: Company, fy: int) -> str:
    """ "fiscal 2025, ended June 30, 2025": a company's fiscal year with the day it ended."""
    from synthetic_world._calendar import fiscal_year

    end = fiscal_year(company.fiscal_year_end_month, fy).end
    return f"fiscal {fy}, ended {long_date(end)}"


def alignment_text(rows: list[tuple[Company, int]]) -> str:
    """How a comparison across companies aligns their fiscal years (each its own latest)."""
    listing = "; ".join(f"{company.name}: {year_end_text(company, fy)}" for company, fy in rows)
    return (
        " Fiscal years are not aligned to one calendar period: each company is measured on its "
        f"own latest reported fiscal year ({listing})."
    )


def _ends_after(company: Company, fy: int, as_of: dt.date) -> bool:
    from synthetic_world._calendar import fiscal_year

    return fiscal_year(company.fiscal_year_end_month, fy).end >= as_of


# -- key programs, one per question kind ---------------------------------------------------------


def fy_metric(ctx: KeyContext, c: Company, as_of: dt.date, metric: str, fy: int) -> Key:
    fact = ctx.fact(c.company_id, metric, f"FY{fy}", as_of)
    if fact is None:
        return not_reported(
            ctx, c, metric, fy, as_of, lambda year: fy_metric(ctx, c, as_of, metric, year)
        )
    sources = ctx.sources([fact], as_of)
    word = METRIC_WORDS[metric]
    if metric == "employees":
        expected = ExpectedFact(
            kind="count",
            field="employees",
            value=int(fact.value),
            unit="employees",
            period=f"FY{fy}",
            sources=sources,
        )
        text = f"{c.name} had {int(fact.value):,} employees at the end of fiscal {fy}."
    else:
        expected = amount(metric, fact.value, c, f"FY{fy}", sources)
        text = f"{c.name}'s fiscal {fy} {word} was {money_text(fact.value, c.currency)} (GAAP)."
    if fact.status == "restated" or fact.version > 1:
        text += _version_note(ctx, c, fact)
    return Key(text, [expected], period=f"FY{fy}", metrics=[word])


def _version_note(ctx: KeyContext, c: Company, fact: FactRow) -> str:
    first = ctx.conn.execute(
        "SELECT value FROM fact WHERE company_id = ? AND metric = ? AND period_id = ? AND "
        "member = ? AND basis = ? AND version = 1",
        (c.company_id, fact.metric, fact.period_id, fact.member, fact.basis),
    ).fetchone()
    if first is None:
        return ""
    old = money_text(Decimal(first[0]), c.currency)
    why = (
        "restated in the following year's annual report"
        if fact.status == "restated"
        else ("the annual report's final figure; the earnings release had a preliminary one")
    )
    return f" This is the {why} (originally {old})."


def latest_fy_metric(ctx: KeyContext, c: Company, as_of: dt.date, metric: str) -> Key:
    years = ctx.reported_years(c.company_id, as_of, metric)
    if not years:
        raise KeyError_("no fiscal year reported yet")
    key = fy_metric(ctx, c, as_of, metric, years[-1])
    key.text = (
        f"The latest fiscal year {c.name} had reported {as_of_text(as_of)} is fiscal "
        f"{years[-1]}. " + key.text
    )
    return key


def operating_margin(
    ctx: KeyContext, c: Company, as_of: dt.date, fy: int, adjusted: bool = False
) -> Key:
    metric = "adjusted_operating_income" if adjusted else "operating_income"
    basis = "non-GAAP" if adjusted else "GAAP"
    income = ctx.fact(c.company_id, metric, f"FY{fy}", as_of, basis=basis)
    # An adjusted margin is the release's: adjusted income over the revenue the release states.
    revenue_day = ctx.release_date(c.company_id, f"FY{fy}") if adjusted and income else as_of
    revenue = ctx.fact(c.company_id, "revenue", f"FY{fy}", min(as_of, revenue_day))
    if revenue is None or income is None:
        return not_reported(
            ctx,
            c,
            "operating margin",
            fy,
            as_of,
            lambda year: operating_margin(ctx, c, as_of, year, adjusted),
        )
    name = "adjusted_operating_margin" if adjusted else "operating_margin"
    fact, value = share(
        name,
        income.value,
        revenue.value,
        f"FY{fy}",
        ctx.sources([revenue, income], as_of),
        basis=basis,
    )
    label = "adjusted (non-GAAP) operating margin" if adjusted else "GAAP operating margin"
    text = (
        f"{c.name}'s fiscal {fy} {label} was {value}%: "
        f"{'adjusted ' if adjusted else ''}operating income of "
        f"{money_text(income.value, c.currency)} on revenue of "
        f"{money_text(revenue.value, c.currency)}."
    )
    return Key(text, [fact], period=f"FY{fy}", metrics=[label])


def adjusted_margin(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    return operating_margin(ctx, c, as_of, fy, adjusted=True)


def free_cash_flow(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    cfo = ctx.fact(c.company_id, "cash_from_operations", f"FY{fy}", as_of)
    capex = ctx.fact(c.company_id, "capital_expenditures", f"FY{fy}", as_of)
    if cfo is None or capex is None:
        return not_reported(
            ctx, c, "free cash flow", fy, as_of, lambda year: free_cash_flow(ctx, c, as_of, year)
        )
    value = cfo.value - capex.value
    fact = amount("free_cash_flow", value, c, f"FY{fy}", ctx.sources([cfo, capex], as_of))
    text = (
        f"{c.name}'s fiscal {fy} free cash flow was {money_text(value, c.currency)}: "
        f"operating cash flow of {money_text(cfo.value, c.currency)} minus capital "
        f"expenditures of {money_text(capex.value, c.currency)}."
    )
    return Key(text, [fact], period=f"FY{fy}", metrics=["free cash flow"])


def ebitda(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    """Operating income (its latest version) plus the depreciation and amortization of the
    annual cash-flow statement: not reported until the annual report is out."""
    income = ctx.fact(c.company_id, "operating_income", f"FY{fy}", as_of)
    charge = ctx.fact(c.company_id, "depreciation_amortization", f"FY{fy}", as_of)
    if income is None or charge is None:
        return not_reported(ctx, c, "EBITDA", fy, as_of, lambda year: ebitda(ctx, c, as_of, year))
    value = income.value + charge.value
    fact = amount("ebitda", value, c, f"FY{fy}", ctx.sources([income, charge], as_of))
    text = (
        f"{c.name}'s fiscal {fy} EBITDA was {money_text(value, c.currency)}: operating income "
        f"of {money_text(income.value, c.currency)} plus depreciation and amortization of "
        f"{money_text(charge.value, c.currency)}."
    )
    return Key(text, [fact], period=f"FY{fy}", metrics=["EBITDA"])


def revenue_growth(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    current = ctx.fact(c.company_id, "revenue", f"FY{fy}", as_of)
    prior = ctx.fact(c.company_id, "revenue", f"FY{fy - 1}", as_of)
    if current is None or prior is None:
        return not_reported(
            ctx, c, "revenue growth", fy, as_of, lambda year: revenue_growth(ctx, c, as_of, year)
        )
    sources = ctx.sources([current, prior], as_of)
    fact, value = share(
        "revenue_growth", current.value - prior.value, prior.value, f"FY{fy}", sources
    )
    text = (
        f"{c.name}'s revenue {'grew' if value >= 0 else 'fell'} {abs(value)}% in fiscal {fy}, "
        f"from {money_text(prior.value, c.currency)} in fiscal {fy - 1} to "
        f"{money_text(current.value, c.currency)}."
    )
    return Key(text, [fact], period=f"FY{fy}", metrics=["revenue growth"], comparison=True)


def latest_quarter_revenue(ctx: KeyContext, c: Company, as_of: dt.date) -> Key:
    fact = _need(ctx.latest_quarter(c.company_id, as_of))
    fy, quarter = fact.period_id[2:6], fact.period_id[-1]
    expected = amount("revenue", fact.value, c, fact.period_id, ctx.sources([fact], as_of))
    text = (
        f"{c.name}'s most recent reported quarter {as_of_text(as_of)} is the Q{quarter} of "
        f"fiscal {fy} ({fact.period_id}): revenue of {money_text(fact.value, c.currency)}."
    )
    return Key(text, [expected], period=fact.period_id, metrics=["quarterly revenue"])


def net_debt(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    debt = ctx.fact(c.company_id, "total_debt", f"FY{fy}", as_of)
    cash = ctx.fact(c.company_id, "cash", f"FY{fy}", as_of)
    if debt is None or cash is None:
        return not_reported(
            ctx, c, "net debt", fy, as_of, lambda year: net_debt(ctx, c, as_of, year)
        )
    value = debt.value - cash.value
    fact = amount("net_debt", value, c, f"FY{fy}", ctx.sources([debt, cash], as_of))
    text = (
        f"{c.name}'s net debt at the end of fiscal {fy} was {money_text(value, c.currency)}:"
        f" total debt of {money_text(debt.value, c.currency)} less cash of "
        f"{money_text(cash.value, c.currency)}."
    )
    return Key(text, [fact], period=f"FY{fy}", metrics=["net debt"])


def private_revenue(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    fact = ctx.fact(c.company_id, "revenue", f"FY{fy}", as_of)
    if fact is None:
        missing = "not disclosed" if not c.discloses_revenue else "not yet reported"
        expected = ExpectedFact(
            kind="not_disclosed", field="revenue", value=missing, period=f"FY{fy}"
        )
        text = (
            f"{c.name} is privately held and its fiscal {fy} revenue is {missing} "
            f"{as_of_text(as_of)}; no filing, release or article states it."
        )
        return Key(text, [expected], period=f"FY{fy}", metrics=["revenue"])
    key = fy_metric(ctx, c, as_of, "revenue", fy)
    key.text = key.text.replace(" (GAAP)", " (as the company announced it)")
    key.facts[0].basis = None
    return key


def _latest_fy(ctx: KeyContext, c: Company, as_of: dt.date) -> int:
    years = ctx.reported_years(c.company_id, as_of)
    if not years:
        raise KeyError_(f"{c.company_id} has no reported year")
    return years[-1]


def _same_currency(ctx: KeyContext, c: Company, peers: list[str]) -> list[Company]:
    return [
        ctx.companies[p]
        for p in peers
        if ctx.companies[p].currency == c.currency and ctx.companies[p].listed
    ]


def peer_revenue_ranking(ctx: KeyContext, c: Company, as_of: dt.date, peers: list[str]) -> Key:
    rows = []
    facts = []
    for company in [c, *(ctx.companies[p] for p in peers)]:
        fy = _latest_fy(ctx, company, as_of)
        fact = _need(ctx.fact(company.company_id, "revenue", f"FY{fy}", as_of))
        rows.append((fact.value, company, fy))
        facts.append(
            amount(
                "revenue",
                fact.value,
                company,
                f"FY{fy}",
                ctx.sources([fact], as_of),
                subject=company.name,
            )
        )
    rows.sort(key=lambda r: (-r[0], r[1].company_id))
    order = ExpectedFact(
        kind="top_n", field="revenue_ranking", value=[r[1].name for r in rows], ordered=True
    )
    lines = "; ".join(
        f"{i}. {company.name}: {money_text(value, company.currency)} (fiscal {fy})"
        for i, (value, company, fy) in enumerate(rows, 1)
    )
    return Key(
        f"By latest reported fiscal-year revenue {as_of_text(as_of)}: {lines}."
        + alignment_text([(company, fy) for _, company, fy in rows]),
        [order, *facts],
        period="latest fiscal year",
        metrics=["revenue"],
        comparison=True,
    )


def _margin(ctx: KeyContext, company: Company, as_of: dt.date) -> tuple[ExpectedFact, Decimal, int]:
    fy = _latest_fy(ctx, company, as_of)
    revenue = _need(ctx.fact(company.company_id, "revenue", f"FY{fy}", as_of))
    income = _need(ctx.fact(company.company_id, "operating_income", f"FY{fy}", as_of))
    fact, value = share(
        "operating_margin",
        income.value,
        revenue.value,
        f"FY{fy}",
        ctx.sources([revenue, income], as_of),
        subject=company.name,
    )
    return fact, value, fy


def peer_margin_comparison(ctx: KeyContext, c: Company, as_of: dt.date, peer: str) -> Key:
    other = ctx.companies[peer]
    a, av, afy = _margin(ctx, c, as_of)
    b, bv, bfy = _margin(ctx, other, as_of)
    if av == bv:
        raise KeyError_("equal margins")
    higher = c if av > bv else other
    winner = ExpectedFact(kind="name", field="higher_operating_margin", value=higher.name)
    text = (
        f"{higher.name} had the higher GAAP operating margin: {c.name} {av}% (fiscal {afy}) "
        f"versus {other.name} {bv}% (fiscal {bfy})." + alignment_text([(c, afy), (other, bfy)])
    )
    return Key(
        text,
        [winner, a, b],
        period="latest fiscal year",
        metrics=["operating margin"],
        comparison=True,
    )


def _growth(ctx: KeyContext, company: Company, as_of: dt.date) -> tuple[ExpectedFact, Decimal, int]:
    fy = _latest_fy(ctx, company, as_of)
    current = _need(ctx.fact(company.company_id, "revenue", f"FY{fy}", as_of))
    prior = _need(ctx.fact(company.company_id, "revenue", f"FY{fy - 1}", as_of))
    fact, value = share(
        "revenue_growth",
        current.value - prior.value,
        prior.value,
        f"FY{fy}",
        ctx.sources([current, prior], as_of),
        subject=company.name,
    )
    return fact, value, fy


def peer_growth_comparison(ctx: KeyContext, c: Company, as_of: dt.date, peer: str) -> Key:
    other = ctx.companies[peer]
    a, av, afy = _growth(ctx, c, as_of)
    b, bv, bfy = _growth(ctx, other, as_of)
    if av == bv:
        raise KeyError_("equal growth")
    faster = ExpectedFact(kind="boolean", field="grew_faster", value=bool(av > bv))
    text = (
        f"{'Yes' if av > bv else 'No'}: {c.name}'s revenue grew {av}% in fiscal {afy}, "
        f"against {bv}% for {other.name} in fiscal {bfy}."
        + alignment_text([(c, afy), (other, bfy)])
    )
    return Key(
        text,
        [faster, a, b],
        period="latest fiscal year",
        metrics=["revenue growth"],
        comparison=True,
    )


def competitors(ctx: KeyContext, c: Company, as_of: dt.date) -> Key:
    names = [ctx.companies[p].name for p in c.peers]
    if not names:
        raise KeyError_("no peers")
    sources = ctx.profile_sources(c.company_id, as_of)
    if not sources:
        raise KeyError_("no profile published by the as-of date")
    fact = ExpectedFact(
        kind="top_n", field="competitors", value=names, ordered=False, sources=sources
    )
    return Key(
        f"{c.name}'s main competitors are {', '.join(names)}.",
        [fact],
        metrics=["competitors"],
        comparison=True,
    )


def _market_cap(ctx: KeyContext, company: Company, day: dt.date) -> tuple[Decimal, str, FactRow]:
    close = ctx.close_on(company.ticker or "", day)
    shares = ctx.shares_on(company.company_id, day)
    if close is None or shares is None:
        raise KeyError_("no price or share count by that day")
    # Keyed to the cent, not the filings' tenth: a product ending in .x5 is right rounded
    # either way, and the amount tolerance then accepts both.
    value = (close[1] * shares.value).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    return value, close[0], shares


def market_cap(ctx: KeyContext, c: Company, as_of: dt.date, day: dt.date) -> Key:
    value, traded, shares = _market_cap(ctx, c, day)
    fact = amount("market_cap", value, c, traded, ctx.sources([shares], as_of), basis=None)
    fact.tolerance = max(AMOUNT_TOLERANCE, round(float(value) * 0.001, 2))
    text = (
        f"{c.name}'s market capitalisation at the close on "
        f"{long_date(dt.date.fromisoformat(traded))} "
        f"was about {money_text(value, c.currency)} ({shares.value} million shares "
        "outstanding as last reported)."
    )
    return Key(text, [fact], period=traded, metrics=["market capitalisation"])


def market_cap_ranking(
    ctx: KeyContext, c: Company, as_of: dt.date, peers: list[str], day: dt.date
) -> Key:
    rows, facts = [], []
    for company in [c, *(ctx.companies[p] for p in peers)]:
        value, traded, shares = _market_cap(ctx, company, day)
        rows.append((value, company))
        fact = amount(
            "market_cap",
            value,
            company,
            traded,
            ctx.sources([shares], as_of),
            basis=None,
            subject=company.name,
        )
        fact.tolerance = max(AMOUNT_TOLERANCE, round(float(value) * 0.001, 2))
        facts.append(fact)
    rows.sort(key=lambda r: (-r[0], r[1].company_id))
    order = ExpectedFact(
        kind="top_n",
        field="market_cap_ranking",
        value=[company.name for _, company in rows],
        ordered=True,
    )
    lines = "; ".join(
        f"{i}. {company.name}: {money_text(value, company.currency)}"
        for i, (value, company) in enumerate(rows, 1)
    )
    return Key(
        f"By market capitalisation at the close on {long_date(day)}: {lines}.",
        [order, *facts],
        period=day.isoformat(),
        metrics=["market capitalisation"],
        comparison=True,
    )


def product_share(
    ctx: KeyContext,
    c: Company,
    as_of: dt.date,
    fy: int,
    product: str,
    dimension: str = "product_revenue",
) -> Key:
    part = ctx.fact(c.company_id, dimension, f"FY{fy}", as_of, member=product)
    revenue = ctx.fact(c.company_id, "revenue", f"FY{fy}", as_of)
    if part is None or revenue is None:
        return not_reported(
            ctx,
            c,
            "revenue share",
            fy,
            as_of,
            lambda year: product_share(ctx, c, as_of, year, product, dimension),
        )
    field_name = "product_share" if dimension == "product_revenue" else "regional_share"
    fact, value = share(
        field_name, part.value, revenue.value, f"FY{fy}", ctx.sources([part, revenue], as_of)
    )
    what = f"its {product} product line" if dimension == "product_revenue" else product
    text = (
        f"{value}% of {c.name}'s fiscal {fy} revenue came from {what}: "
        f"{money_text(part.value, c.currency)} of {money_text(revenue.value, c.currency)}."
    )
    return Key(
        text,
        [fact],
        period=f"FY{fy}",
        metrics=["revenue share"],
        global_context=dimension == "regional_revenue",
    )


def regional_share(ctx: KeyContext, c: Company, as_of: dt.date, fy: int, region: str) -> Key:
    return product_share(ctx, c, as_of, fy, region, "regional_revenue")


def segment_revenue(ctx: KeyContext, c: Company, as_of: dt.date, fy: int, segment: str) -> Key:
    fact = ctx.fact(c.company_id, "segment_revenue", f"FY{fy}", as_of, member=segment)
    if fact is None:
        return not_reported(
            ctx,
            c,
            "segment revenue",
            fy,
            as_of,
            lambda year: segment_revenue(ctx, c, as_of, year, segment),
        )
    expected = amount("segment_revenue", fact.value, c, f"FY{fy}", ctx.sources([fact], as_of))
    text = (
        f"{c.name}'s {segment} segment generated {money_text(fact.value, c.currency)} of "
        f"revenue in fiscal {fy} (segment revenue, before intersegment eliminations)."
    )
    return Key(text, [expected], period=f"FY{fy}", metrics=["segment revenue"])


def largest_product_line(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    parts = [
        (ctx.fact(c.company_id, "product_revenue", f"FY{fy}", as_of, member=p), p)
        for p in c.products
    ]
    if any(f is None for f, _ in parts) or not parts:
        return not_reported(
            ctx,
            c,
            "product-line revenue",
            fy,
            as_of,
            lambda year: largest_product_line(ctx, c, as_of, year),
        )
    parts.sort(key=lambda item: (-item[0].value, item[1]))
    top, name = parts[0]
    if len(parts) > 1 and parts[1][0].value == top.value:
        raise KeyError_("tie")
    facts = [
        ExpectedFact(
            kind="name",
            field="largest_product_line",
            value=name,
            period=f"FY{fy}",
            sources=ctx.sources([top], as_of),
        ),
        amount("product_revenue", top.value, c, f"FY{fy}", ctx.sources([top], as_of)),
    ]
    text = (
        f"{c.name}'s largest product line in fiscal {fy} was {name}, with "
        f"{money_text(top.value, c.currency)} of revenue."
    )
    return Key(text, facts, period=f"FY{fy}", metrics=["product-line revenue"])


def latest_launch(ctx: KeyContext, c: Company, as_of: dt.date) -> Key:
    launches = ctx.events(c.company_id, ("product_launch",), as_of)
    if not launches:
        raise KeyError_("no launch")
    event = launches[-1]
    sources = ctx.event_sources([event["event_id"]], as_of)
    facts = [
        ExpectedFact(kind="name", field="product", value=event["product"], sources=sources),
        ExpectedFact(kind="date", field="launch_date", value=event["date"], sources=sources),
    ]
    text = (
        f"{c.name}'s most recent launch {as_of_text(as_of)} was {event['product']}, "
        f"announced on {long_date(dt.date.fromisoformat(event['date']))}."
    )
    return Key(text, facts, metrics=["latest launch"])


def _rounds(ctx: KeyContext, c: Company, as_of: dt.date) -> list[dict]:
    rounds = ctx.events(c.company_id, ("funding_round",), as_of)
    if not rounds:
        raise KeyError_("no funding round")
    return rounds


def latest_funding_round(ctx: KeyContext, c: Company, as_of: dt.date) -> Key:
    event = _rounds(ctx, c, as_of)[-1]
    sources = ctx.event_sources([event["event_id"]], as_of)
    size, valuation = Decimal(event["amount"]), Decimal(event["post_money"])
    facts = [
        amount("round_amount", size, c, event["date"], sources, basis=None),
        ExpectedFact(
            kind="name", field="lead_investor", value=event["lead_investor"], sources=sources
        ),
        amount("post_money_valuation", valuation, c, event["date"], sources, basis=None),
        ExpectedFact(kind="date", field="round_date", value=event["date"], sources=sources),
    ]
    text = (
        f"{c.name}'s most recent funding round {as_of_text(as_of)} was its "
        f"{event['round_name']} of {money_text(size, c.currency)}, announced on "
        f"{long_date(dt.date.fromisoformat(event['date']))} and led by "
        f"{event['lead_investor']}, at a post-money valuation of "
        f"{money_text(valuation, c.currency)}."
    )
    return Key(
        text,
        facts,
        period=event["date"],
        metrics=["round size", "lead investor", "post-money valuation"],
    )


def total_raised(ctx: KeyContext, c: Company, as_of: dt.date) -> Key:
    rounds = _rounds(ctx, c, as_of)
    total = sum((Decimal(r["amount"]) for r in rounds), Decimal(0))
    sources = ctx.event_sources([r["event_id"] for r in rounds], as_of)
    fact = amount("total_raised", total, c, as_of.isoformat(), sources, basis=None)
    listing = ", ".join(
        f"{r['round_name']} {money_text(Decimal(r['amount']), c.currency)}" for r in rounds
    )
    text = (
        f"{c.name} has raised {money_text(total, c.currency)} in {len(rounds)} announced "
        f"rounds {as_of_text(as_of)} ({listing}); reported talks that the company denied do "
        "not count."
    )
    return Key(text, [fact], period=as_of.isoformat(), metrics=["total raised"])


def regulatory_action(ctx: KeyContext, c: Company, as_of: dt.date) -> Key:
    actions = ctx.events(c.company_id, ("regulatory_action",), as_of)
    if not actions:
        return Key(
            f"No regulator has fined {c.name} {as_of_text(as_of)}, nor has it settled a "
            "regulatory investigation: no filing or article reports a penalty (an investigation "
            "opened or closed without one is not a penalty).",
            [ExpectedFact(kind="no_records", field="regulatory_actions")],
            metrics=["regulatory actions"],
            global_context=True,
        )
    event = actions[-1]
    sources = ctx.event_sources([event["event_id"]], as_of)
    regulator = event["regulator"].removeprefix("the ")
    facts = [
        ExpectedFact(kind="name", field="regulator", value=regulator, sources=sources),
        ExpectedFact(kind="date", field="action_date", value=event["date"], sources=sources),
        amount("fine", Decimal(event["amount"]), c, event["date"], sources, basis=None),
    ]
    paid = money_text(Decimal(event["amount"]), c.currency)
    day = long_date(dt.date.fromisoformat(event["date"]))
    text = (
        f"Yes: the most recent penalty {as_of_text(as_of)}: {c.name} agreed on {day} to pay "
        f"{paid} to settle an investigation by {event['regulator']}."
        if event.get("action") == "settlement"
        else f"Yes: the most recent penalty {as_of_text(as_of)}: {event['regulator']} fined "
        f"{c.name} {paid} on {day}."
    )
    if len(actions) > 1:
        text += f" It is the latest of {len(actions)} regulatory penalties by then."
    return Key(
        text,
        facts,
        period=event["date"],
        metrics=["regulator", "date", "fine"],
        global_context=True,
    )


# -- quarter_metric (issue 38): a fiscal quarter's depreciation and amortization, dividends paid
# or share repurchases, from the quarterly report (Q1-Q3) or the annual report's fourth-quarter
# table (Q4, weeks after the fourth-quarter release) ------------------------------------------

QUARTER_METRICS = ("depreciation_amortization", "dividends_paid", "share_repurchases")
"""The cash-flow rows a quarter_metric item asks (quarterly revenue: latest_quarter_revenue)."""


def reported_quarters(ctx: KeyContext, cid: str, metric: str, as_of: dt.date) -> list[str]:
    """Quarter ids ("FY2025-Q3") with ``metric`` published by ``as_of``, oldest first."""
    rows = ctx.conn.execute(
        "SELECT DISTINCT period_id FROM fact WHERE company_id = ? AND metric = ? AND "
        "period_id LIKE 'FY%-Q%' AND published_at <= ?",
        (cid, metric, as_of.isoformat()),
    ).fetchall()
    return sorted((row[0] for row in rows), key=_quarter_order)


def _quarter_order(period_id: str) -> tuple[int, int]:
    return int(period_id[2:6]), int(period_id[-1])


def quarter_text(period_id: str) -> str:
    """ "FY2025-Q3" -> "the third quarter (Q3) of fiscal 2025"."""
    ordinal = ("first", "second", "third", "fourth")[int(period_id[-1]) - 1]
    return f"the {ordinal} quarter (Q{period_id[-1]}) of fiscal {period_id[2:6]}"


def quarter_metric(
    ctx: KeyContext, c: Company, as_of: dt.date, metric: str, fy: int, quarter: int
) -> Key:
    """The quarter's figure; when the quarter is not reported by the as-of date, "not yet
    reported" and the same metric for the latest quarter reported (a dealbreaker, as
    :func:`not_reported` keys the latest fiscal year)."""
    period, what = f"FY{fy}-Q{quarter}", METRIC_WORDS[metric]
    fact = ctx.fact(c.company_id, metric, period, as_of)
    if fact is not None:
        expected = amount(metric, fact.value, c, period, ctx.sources([fact], as_of))
        text = (
            f"{c.name}'s {what} in {quarter_text(period)} ({period}) was "
            f"{money_text(fact.value, c.currency)}."
        )
        return Key(text, [expected], period=period, metrics=[f"quarterly {what}"])
    facts = [
        ExpectedFact(kind="not_disclosed", field=metric, value="not yet reported", period=period)
    ]
    text = f"{c.name} had not reported its {what} for {quarter_text(period)} {as_of_text(as_of)}."
    earlier = [
        q
        for q in reported_quarters(ctx, c.company_id, metric, as_of)
        if _quarter_order(q) < _quarter_order(period)
    ]
    if earlier:
        latest = _need(ctx.fact(c.company_id, metric, earlier[-1], as_of))
        found = amount(metric, latest.value, c, earlier[-1], ctx.sources([latest], as_of))
        found.dealbreaker = True  # "not yet reported" alone, with no lookup, is no answer
        facts.append(found)
        text += (
            f" The latest quarter with its {what} reported is {quarter_text(earlier[-1])}: "
            f"{money_text(latest.value, c.currency)}."
        )
    return Key(text, facts, period=period, metrics=[f"quarterly {what}"])


PROGRAMS = {
    "fy_metric": fy_metric,
    "latest_fy_metric": latest_fy_metric,
    "operating_margin": operating_margin,
    "adjusted_margin": adjusted_margin,
    "free_cash_flow": free_cash_flow,
    "ebitda": ebitda,
    "revenue_growth": revenue_growth,
    "latest_quarter_revenue": latest_quarter_revenue,
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
    "quarter_metric": quarter_metric,
}
"""Question kind -> its key program (question_kinds.yaml names the kinds)."""
