"""The fact ledger's record types: figures, events and prices, each with when it was published.

Facts are generated first and every document is rendered from them (synthetic_world._render), so
the answer keys, the gold documents and the hard negatives all come out of one ledger. A fact is
never overwritten: a restatement or a revision appends a new version that supersedes the old one,
and a question asked as of a date sees the latest version published by then.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from synthetic_world._calendar import Period

METRICS = {
    "revenue": "Revenue",
    "cost_of_revenue": "Cost of revenue",
    "gross_profit": "Gross profit",
    "operating_expenses": "Operating expenses",
    "operating_income": "Operating income",
    "net_income": "Net income",
    "cash_from_operations": "Net cash from operating activities",
    "capital_expenditures": "Capital expenditures",
    "depreciation_amortization": "Depreciation and amortization",
    "dividends_paid": "Dividends paid",
    "share_repurchases": "Repurchases of common stock",
    "cash": "Cash and cash equivalents",
    "total_debt": "Total debt",
    "total_assets": "Total assets",
    "employees": "Employees",
    "adjusted_operating_income": "Adjusted operating income",
    "segment_revenue": "Segment revenue",
    "product_revenue": "Product-line revenue",
    "regional_revenue": "Regional revenue",
    "revenue_guidance_low": "Revenue guidance (low end)",
    "revenue_guidance_high": "Revenue guidance (high end)",
    "shares_outstanding": "Shares outstanding",
    "shares_repurchased": "Shares repurchased",
    "shares_issued": "Shares issued under employee share plans",
}
"""Every metric of the ledger and the line label filings use for it."""

INCOME_ROWS = (
    "revenue",
    "cost_of_revenue",
    "gross_profit",
    "operating_expenses",
    "operating_income",
    "net_income",
)
"""The rows of an annual report's statement of operations, in order (labels: ``METRICS``)."""
CASH_ROWS = ("cash_from_operations", "capital_expenditures")
"""The cash-flow rows every period states (quarterly reports, fourth-quarter tables)."""
SHAREHOLDER_ROWS = ("depreciation_amortization", "dividends_paid", "share_repurchases")
"""Cash-flow rows of listed companies: the depreciation and amortization added back in operating
cash flow, and the cash returned to shareholders (outflows, stated positive); fiscal years and
quarters."""
ANNUAL_CASH_ROWS = (*CASH_ROWS, *SHAREHOLDER_ROWS)
"""The rows of a listed company's statements of cash flows (annual, fourth-quarter and quarterly
tables)."""
BALANCE_METRICS = ("cash", "total_debt", "total_assets")
BALANCE_ROWS = BALANCE_METRICS
"""The rows of its balance sheet."""
FLOW_METRICS = (*INCOME_ROWS, *CASH_ROWS, "adjusted_operating_income")
MEMBER_METRICS = {
    "segment_revenue": "segment",
    "product_revenue": "product",
    "regional_revenue": "region",
}

TENTH = Decimal("0.1")


@dataclass
class Fact:
    """One figure as a company (or a data provider) published it."""

    fact_id: str
    company_id: str
    metric: str
    period: Period
    value: Decimal
    """In ``scale`` units of ``unit`` (millions of USD, employees, millions of shares)."""
    unit: str
    """A currency code, ``employees`` or ``shares``."""
    scale: str
    """``millions`` or ``units``."""
    basis: str = "GAAP"
    """GAAP, non-GAAP or guidance."""
    member: str = ""
    """Segment, product line or region for member metrics; empty for consolidated figures."""
    status: str = "final"
    """final, preliminary (an earnings release before the annual report), restated or revised."""
    version: int = 1
    published_at: dt.date = dt.date.min
    supersedes: str | None = None


@dataclass
class Event:
    """A dated happening with a sentiment: a funding round, a deal, a new CEO, a fine, ..."""

    event_id: str
    company_id: str
    kind: str
    """funding_round, acquisition, executive_change, product_launch, regulatory_action,
    rating_change, restructuring, funding_rumour, rumour_denial, regulatory_investigation,
    regulatory_closure, cash_update (a private company's statement of its cash and monthly
    burn)."""
    date: dt.date
    sentiment: str
    """positive, neutral or negative."""
    headline: str
    amount: Decimal | None = None
    """Millions of ``currency`` (round size, deal value, fine)."""
    currency: str | None = None
    round_name: str | None = None
    lead_investor: str | None = None
    post_money: Decimal | None = None
    """Post-money valuation, millions of ``currency``."""
    counterparty: str | None = None
    """Target or acquirer (a company id when the world has it, else a name)."""
    person: str | None = None
    previous_person: str | None = None
    role: str | None = None
    regulator: str | None = None
    matter: str | None = None
    """What a regulator investigated (regulatory history events)."""
    action: str | None = None
    """How a penalised matter ended: fine or settlement (regulatory history events)."""
    country: str | None = None
    agency: str | None = None
    rating_from: str | None = None
    rating_to: str | None = None
    product: str | None = None
    status: str = "confirmed"
    """confirmed, rumour or denied (a rumour that a later event denies)."""
    refers_to: str | None = None
    """The rumour a denial denies."""
    cash_date: dt.date | None = None
    """cash_update: the day its cash (``amount``) was counted (a month end before ``date``)."""
    net_burn: Decimal | None = None
    """cash_update: monthly net burn (spending less customer receipts), millions."""
    gross_burn: Decimal | None = None
    """cash_update: monthly gross burn (spending before customer receipts), millions."""


@dataclass
class CompanyLedger:
    """Everything generated about one company."""

    facts: list[Fact] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    prices: list[tuple[dt.date, Decimal]] = field(default_factory=list)
    ceo: str = ""
    """The chief executive at the world's today."""
    first_ceo: str = ""
    """The chief executive when the modelled years begin (executive changes follow)."""
    segments: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    annual: list[Period] = field(default_factory=list)
    """Fiscal years with figures, oldest first (the oldest appears only as a prior-year column)."""
    quarters: list[Period] = field(default_factory=list)
    releases: dict[str, dt.date] = field(default_factory=dict)
    """Period id -> date of its earnings release (preliminary figures)."""
    reports: dict[str, dt.date] = field(default_factory=dict)
    """Period id -> date of its annual or quarterly report."""
    revised: set[str] = field(default_factory=set)
    """Fiscal years whose preliminary figures the annual report revised."""
    restated: dict[str, str] = field(default_factory=dict)
    """Restated fiscal year id -> the fiscal year id of the report that restated it."""


def fact_id(company_id: str, metric: str, period_id: str, member: str, basis: str, version: int):
    slug = "".join(ch if ch.isalnum() else "-" for ch in member.lower()).strip("-")
    return f"{company_id}.{metric}.{slug}.{period_id}.{basis.lower()}.v{version}"


class FactIndex:
    """Point-in-time lookup over one company's facts: the latest version published by a day."""

    def __init__(self, facts: list[Fact]) -> None:
        self._versions: dict[tuple[str, str, str, str], list[Fact]] = {}
        for fact in facts:
            key = (fact.metric, fact.period.id, fact.member, fact.basis)
            self._versions.setdefault(key, []).append(fact)
        for versions in self._versions.values():
            versions.sort(key=lambda f: f.version)

    def as_of(
        self, metric: str, period_id: str, day: dt.date, member: str = "", basis: str | None = None
    ) -> Fact | None:
        """The latest version published on or before ``day`` (None: not published yet)."""
        if basis is None:
            basis = {"adjusted_operating_income": "non-GAAP"}.get(metric, "GAAP")
            if metric.startswith("revenue_guidance"):
                basis = "guidance"
        found = None
        for fact in self._versions.get((metric, period_id, member, basis), ()):
            if fact.published_at <= day:
                found = fact
        return found

    def versions(self, metric: str, period_id: str, member: str = "", basis: str = "GAAP"):
        return list(self._versions.get((metric, period_id, member, basis), ()))
