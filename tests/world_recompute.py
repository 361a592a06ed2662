"""The research conventions (docs/conventions.md), applied to what tests/world_documents.py reads.

For a keyed world item this recomputes its expected facts from the documents published by the
item's as-of date, and compares them with the item's key: values within tolerance, periods,
units, bases, rankings, names, and the gold documents (each must be published by the as-of date
and state the fact or a figure it is computed from). Nothing here reads the fact ledger or
imports synthetic_world; the only table read besides the documents is ``price`` (the closes that
market capitalisation needs on an arbitrary day: MarketLens pages state only a last close).
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from tests.world_documents import Doc, Event, Figure, World

PRIMARY = ("annual_report", "quarterly_report", "earnings_release", "news")
"""The company's own statements (and news of private companies' announcements): the versions
that the 'latest version published by the as-of date' rule chooses among."""
ROLE_ORDER = {"prior": 0, "preliminary": 1, "announced": 1, "current": 2, "restated": 3}
"""Among statements published the same day, a restated column beats the report's own."""

NEWS_TYPES = ("news", "funding_announcement")
FILING_HALF_UNIT = Decimal("0.05")
"""The precision of an amount written in millions with one decimal."""

NOT_REPORTED_FIELDS = {
    "operating_margin": "operating margin",
    "adjusted_margin": "operating margin",
    "free_cash_flow": "free cash flow",
    "ebitda": "EBITDA",
    "revenue_growth": "revenue growth",
    "net_debt": "net debt",
    "product_share": "revenue share",
    "regional_share": "revenue share",
    "segment_revenue": "segment revenue",
    "largest_product_line": "product-line revenue",
}
"""The field label of a "not yet reported" fact, per kind (a label, not a figure)."""


@dataclass
class Fact:
    """One recomputed expected fact, with the documents that state it or its inputs."""

    kind: str
    field: str
    value: Any = None
    tolerance: float = 0.0
    ordered: bool = True
    unit: str | None = None
    currency: str | None = None
    scale: str | None = None
    period: str | None = None
    basis: str | None = None
    subject: str | None = None
    half_unit: Decimal = Decimal(0)
    """The precision the documents give the value (an amount written '$1.2 billion': 50)."""
    inputs: list[tuple[str, frozenset[str]]] = field(default_factory=list)
    """(what, doc ids stating it at the version used) for the value and each figure it is
    computed from."""
    ask: str | None = None
    """Analyst items: the ask the fact keys."""

    @property
    def identity(self) -> tuple:
        return (self.ask, self.kind, self.field, self.subject, self.period)


class KeyUnavailable(Exception):
    """The documents do not let the recomputation produce a key for this item."""


def percent(numerator: Decimal, denominator: Decimal) -> Decimal:
    return (numerator / denominator * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)


def fy_key(period: str) -> tuple[int, int]:
    """'FY2025' -> (2025, 5); 'FY2025-Q3' -> (2025, 3): quarters order before the year."""
    year, _, quarter = period.removeprefix("FY").partition("-Q")
    return int(year), int(quarter or 5)


class Recompute:
    def __init__(self, world: World, price_db: sqlite3.Connection) -> None:
        self.world = world
        self.prices = price_db
        self.names = {cid: company.name for cid, company in world.companies.items()}

    # -- versions --------------------------------------------------------------------------

    def version(
        self, company: str, metric: str, period: str, as_of: dt.date, member: str = ""
    ) -> Figure | None:
        """The latest version of a figure published by ``as_of`` among the primary statements."""
        candidates = [
            f
            for f in self.world.statements(company, metric, period, member)
            if f.published <= as_of and f.doc.source_type in PRIMARY
        ]
        if not candidates:
            return None
        return max(candidates, key=lambda f: (f.published, ROLE_ORDER[f.role]))

    def stating(self, figure: Figure, as_of: dt.date) -> frozenset[str]:
        """Documents published by ``as_of`` that state this version's value (any source type)."""
        return frozenset(
            f.doc.doc_id
            for f in self.world.statements(
                figure.company, figure.metric, figure.period, figure.member
            )
            if f.published <= as_of and abs(f.value - figure.value) <= f.half_unit
        )

    def need(
        self, company: str, metric: str, period: str, as_of: dt.date, member: str = ""
    ) -> Figure:
        figure = self.version(company, metric, period, as_of, member)
        if figure is None:
            raise NotReported(period)
        return figure

    def reported_years(
        self, company: str, metric: str, as_of: dt.date, member: str = ""
    ) -> list[int]:
        years = {
            fy_key(f.period)[0]
            for f in self.world.figures_of(company, metric)
            if f.published <= as_of
            and f.doc.source_type in PRIMARY
            and f.member == member
            and f.period.startswith("FY")
            and "-Q" not in f.period
        }
        return sorted(years)

    def latest_year(self, company: str, as_of: dt.date, *metrics: str) -> int | None:
        """The latest fiscal year whose every ``metrics`` figure is published by ``as_of``."""
        years = None
        for metric in metrics:
            found = set(self.reported_years(company, metric, as_of))
            years = found if years is None else years & found
        return max(years) if years else None

    def money_fact(
        self, field_: str, figure: Figure, as_of: dt.date, subject=None, basis: str | None = "GAAP"
    ) -> Fact:
        return Fact(
            "amount",
            field_,
            figure.value,
            0.05,
            currency=self.currency(figure.company),
            scale="millions",
            period=figure.period,
            basis=basis,
            subject=subject,
            half_unit=figure.half_unit,
            inputs=[
                (
                    f"{figure.metric} {figure.member} {figure.period}".replace("  ", " "),
                    self.stating(figure, as_of),
                )
            ],
        )

    def currency(self, company: str) -> str:
        return self.world.companies[company].currency

    # -- computed measures -----------------------------------------------------------------

    def margin(self, company: str, year: int, as_of: dt.date, subject=None) -> Fact:
        revenue = self.need(company, "revenue", f"FY{year}", as_of)
        income = self.need(company, "operating_income", f"FY{year}", as_of)
        return Fact(
            "percent",
            "operating_margin",
            percent(income.value, revenue.value),
            0.1,
            unit="percent",
            period=f"FY{year}",
            basis="GAAP",
            subject=subject,
            inputs=[
                ("revenue", self.stating(revenue, as_of)),
                ("operating income", self.stating(income, as_of)),
            ],
        )

    def growth(self, company: str, year: int, as_of: dt.date, subject=None) -> Fact:
        this = self.need(company, "revenue", f"FY{year}", as_of)
        prior = self.need(company, "revenue", f"FY{year - 1}", as_of)
        value = ((this.value / prior.value - 1) * 100).quantize(Decimal("0.1"), ROUND_HALF_UP)
        return Fact(
            "percent",
            "revenue_growth",
            value,
            0.1,
            unit="percent",
            period=f"FY{year}",
            basis="GAAP",
            subject=subject,
            inputs=[
                (f"revenue FY{year}", self.stating(this, as_of)),
                (f"revenue FY{year - 1}", self.stating(prior, as_of)),
            ],
        )

    def latest_revenue(self, company: str, as_of: dt.date, subject=None) -> Fact | None:
        year = self.latest_year(company, as_of, "revenue")
        if year is None:
            return None
        return self.money_fact(
            "revenue", self.need(company, "revenue", f"FY{year}", as_of), as_of, subject
        )

    def market_cap(self, company: str, day: dt.date, as_of: dt.date, subject=None) -> Fact:
        info = self.world.companies[company]
        row = self.prices.execute(
            "SELECT date, close FROM price WHERE ticker = ? AND date <= ? ORDER BY date DESC "
            "LIMIT 1",
            (info.ticker, day.isoformat()),
        ).fetchone()
        if row is None:
            raise KeyUnavailable(f"no close for {info.ticker} on or before {day}")
        shares = [
            f
            for f in self.world.figures_of(company, "shares_outstanding")
            if f.published <= day and f.doc.source_type in PRIMARY
        ]
        if not shares:
            raise KeyUnavailable(f"no shares outstanding of {company} reported by {day}")
        latest = max(shares, key=lambda f: (f.published, f.period))
        value = (Decimal(row[1]) * latest.value).quantize(Decimal("0.1"), ROUND_HALF_UP)
        # any page by the as-of date with the same count states it (a later MarketLens page too)
        stating = frozenset(
            f.doc.doc_id
            for f in self.world.figures_of(company, "shares_outstanding")
            if f.published <= as_of and f.value == latest.value
        )
        # the close is data and the shares are as stated: the product is exact, not rounded
        return Fact(
            "amount",
            "market_cap",
            value,
            float(value / 1000),
            currency=info.currency,
            scale="millions",
            period=day.isoformat(),
            subject=subject,
            inputs=[(f"shares outstanding at {latest.period}", stating)],
        )

    # -- events ----------------------------------------------------------------------------

    def rounds(self, company: str, as_of: dt.date) -> list[list[Event]]:
        """Announced funding rounds by ``as_of``, each with every document stating it."""
        grouped: dict[tuple, list[Event]] = {}
        for event in self.world.events_of(company, "funding_round"):
            if event.date <= as_of:
                grouped.setdefault((event.date, event.details["series"]), []).append(event)
        return [grouped[key] for key in sorted(grouped)]

    def latest_event(self, company: str, as_of: dt.date, *kinds: str) -> list[Event]:
        """The latest event of the kinds by ``as_of``, with every document stating it."""
        found = [e for e in self.world.events_of(company, *kinds) if e.date <= as_of]
        if not found:
            return []
        last = found[-1]
        return [e for e in found if (e.date, e.kind) == (last.date, last.kind)]

    def profile(self, company: str, as_of: dt.date):
        profiles = [p for p in self.world.profiles_of(company) if p.doc.published <= as_of]
        return max(profiles, key=lambda p: p.doc.published) if profiles else None

    def chief_executive(self, company: str, as_of: dt.date) -> tuple[str, frozenset[str]]:
        """The latest statement of who leads the company: report, appointment or profile."""
        said: list[tuple[dt.date, int, str, Doc]] = []
        for overview in self.world.overviews_of(company):
            if overview.doc.published <= as_of:
                said.append((overview.doc.published, 0, overview.chief_executive, overview.doc))
        for event in self.world.events_of(company, "ceo_change"):
            if event.date <= as_of:
                said.append((event.date, 1, event.details["new"], event.doc))
        profile = self.profile(company, as_of)
        if profile:
            said.append((profile.doc.published, 0, profile.fields["Chief executive"], profile.doc))
        if not said:
            raise KeyUnavailable(f"no chief executive of {company} stated by {as_of}")
        said.sort(key=lambda s: (s[0], s[1]))
        name = said[-1][2]
        # documents that state the current chief executive after the latest change
        return name, frozenset(doc.doc_id for _day, _rank, who, doc in said if who == name)


class NotReported(Exception):
    """A figure the item needs is not published by the as-of date."""

    def __init__(self, period: str) -> None:
        super().__init__(period)
        self.period = period


# ---------------------------------------------------------------------------------------------
# The question kinds


def _fy_item(kind: str, compute: Callable[[Recompute, str, dict, dt.date], list[Fact]]):
    """A kind about one fiscal year: its facts, or 'not yet reported' plus the same measure for
    the latest earlier fiscal year the documents give it for."""

    def program(rc: Recompute, company: str, params: dict, as_of: dt.date) -> list[Fact]:
        year = params["fy"]
        try:
            return compute(rc, company, params, as_of)
        except NotReported:
            label = params.get("metric") or NOT_REPORTED_FIELDS[kind]
            facts = [Fact("not_disclosed", label, "not yet reported", period=f"FY{year}")]
            for earlier in range(year - 1, year - 6, -1):
                try:
                    return facts + compute(rc, company, {**params, "fy": earlier}, as_of)
                except NotReported:
                    continue
            return facts

    return program


def fy_metric(rc, company, params, as_of):
    metric, year = params["metric"], params["fy"]
    return [rc.money_fact(metric, rc.need(company, metric, f"FY{year}", as_of), as_of)]


def latest_fy_metric(rc, company, params, as_of):
    metric = params["metric"]
    year = rc.latest_year(company, as_of, metric)
    if year is None:
        return [Fact("not_disclosed", metric, "not yet reported")]
    return [rc.money_fact(metric, rc.need(company, metric, f"FY{year}", as_of), as_of)]


def operating_margin(rc, company, params, as_of):
    return [rc.margin(company, params["fy"], as_of)]


def adjusted_margin(rc, company, params, as_of):
    year = params["fy"]
    adjusted = rc.need(company, "adjusted_operating_income", f"FY{year}", as_of)
    release = adjusted.doc
    revenue = next(
        (
            f
            for f in rc.world.statements(company, "revenue", f"FY{year}")
            if f.doc.doc_id == release.doc_id and f.role == "preliminary"
        ),
        None,
    )
    if revenue is None:
        raise KeyUnavailable(f"release {release.doc_id} states no fiscal revenue")
    stated = next(
        f
        for f in rc.world.statements(company, "adjusted_operating_margin", f"FY{year}")
        if f.doc.doc_id == release.doc_id
    )
    value = percent(adjusted.value, revenue.value)
    if abs(value - stated.value) > Decimal("0.1"):
        raise KeyUnavailable(
            f"release {release.doc_id} states adjusted margin {stated.value}%, its figures "
            f"give {value}%"
        )
    return [
        Fact(
            "percent",
            "adjusted_operating_margin",
            value,
            0.1,
            unit="percent",
            period=f"FY{year}",
            basis="non-GAAP",
            inputs=[("adjusted operating income and revenue", frozenset({release.doc_id}))],
        )
    ]


def free_cash_flow(rc, company, params, as_of):
    period = f"FY{params['fy']}"
    cfo = rc.need(company, "cash_from_operations", period, as_of)
    capex = rc.need(company, "capital_expenditures", period, as_of)
    return [
        Fact(
            "amount",
            "free_cash_flow",
            cfo.value - capex.value,
            0.05,
            currency=rc.currency(company),
            scale="millions",
            period=period,
            basis="GAAP",
            inputs=[
                ("operating cash flow", rc.stating(cfo, as_of)),
                ("capital expenditures", rc.stating(capex, as_of)),
            ],
        )
    ]


def ebitda(rc, company, params, as_of):
    period = f"FY{params['fy']}"
    income = rc.need(company, "operating_income", period, as_of)
    charge = rc.need(company, "depreciation_amortization", period, as_of)
    return [
        Fact(
            "amount",
            "ebitda",
            income.value + charge.value,
            0.05,
            currency=rc.currency(company),
            scale="millions",
            period=period,
            basis="GAAP",
            inputs=[
                ("operating income", rc.stating(income, as_of)),
                ("depreciation and amortization", rc.stating(charge, as_of)),
            ],
        )
    ]


def revenue_growth(rc, company, params, as_of):
    return [rc.growth(company, params["fy"], as_of)]


def net_debt(rc, company, params, as_of):
    period = f"FY{params['fy']}"
    debt = rc.need(company, "total_debt", period, as_of)
    cash = rc.need(company, "cash", period, as_of)
    return [
        Fact(
            "amount",
            "net_debt",
            debt.value - cash.value,
            0.05,
            currency=rc.currency(company),
            scale="millions",
            period=period,
            basis="GAAP",
            inputs=[("total debt", rc.stating(debt, as_of)), ("cash", rc.stating(cash, as_of))],
        )
    ]


def latest_quarter_revenue(rc, company, params, as_of):
    quarters = {
        f.period
        for f in rc.world.figures_of(company, "revenue")
        if "-Q" in f.period
        and f.published <= as_of
        and f.doc.source_type in PRIMARY
        and f.role == "current"
    }
    if not quarters:
        return [Fact("not_disclosed", "revenue", "not yet reported")]
    latest = max(quarters, key=fy_key)
    return [rc.money_fact("revenue", rc.need(company, "revenue", latest, as_of), as_of)]


def quarter_metric(rc, company, params, as_of):
    """The quarter's figure, or "not yet reported" and the latest earlier quarter stating the
    metric (quarterly reports, the annual report's fourth-quarter table)."""
    metric, period = params["metric"], f"FY{params['fy']}-Q{params['quarter']}"
    figure = rc.version(company, metric, period, as_of)
    if figure is not None:
        return [rc.money_fact(metric, figure, as_of)]
    facts = [Fact("not_disclosed", metric, "not yet reported", period=period)]
    earlier = {
        f.period
        for f in rc.world.figures_of(company, metric)
        if "-Q" in f.period
        and f.published <= as_of
        and f.doc.source_type in PRIMARY
        and fy_key(f.period) < fy_key(period)
    }
    if earlier:
        latest = max(earlier, key=fy_key)
        facts.append(rc.money_fact(metric, rc.need(company, metric, latest, as_of), as_of))
    return facts


def product_share(rc, company, params, as_of):
    return [
        _share(
            rc, company, params["fy"], "product_revenue", params["product"], "product_share", as_of
        )
    ]


def regional_share(rc, company, params, as_of):
    return [
        _share(
            rc, company, params["fy"], "region_revenue", params["region"], "regional_share", as_of
        )
    ]


def _share(rc, company, year, metric, member, field_, as_of):
    period = f"FY{year}"
    part = rc.need(company, metric, period, as_of, member)
    total = rc.need(company, "revenue", period, as_of)
    return Fact(
        "percent",
        field_,
        percent(part.value, total.value),
        0.1,
        unit="percent",
        period=period,
        basis="GAAP",
        inputs=[
            (f"{member} revenue", rc.stating(part, as_of)),
            ("revenue", rc.stating(total, as_of)),
        ],
    )


def segment_revenue(rc, company, params, as_of):
    period = f"FY{params['fy']}"
    figure = rc.need(company, "segment_revenue", period, as_of, params["segment"])
    return [rc.money_fact("segment_revenue", figure, as_of)]


def largest_product_line(rc, company, params, as_of):
    period = f"FY{params['fy']}"
    members = {
        f.member
        for f in rc.world.figures_of(company, "product_revenue")
        if f.period == period and f.published <= as_of
    }
    if not members:
        raise NotReported(period)
    versions = [rc.need(company, "product_revenue", period, as_of, m) for m in sorted(members)]
    top = max(versions, key=lambda f: f.value)
    if sum(1 for f in versions if f.value == top.value) > 1:
        raise KeyUnavailable(f"two product lines tie at {top.value}")
    return [
        Fact(
            "name",
            "largest_product_line",
            top.member,
            period=period,
            inputs=[("product lines", rc.stating(top, as_of))],
        ),
        rc.money_fact("product_revenue", top, as_of),
    ]


def private_revenue(rc, company, params, as_of):
    year = params["fy"]
    announced = [
        f
        for f in rc.world.figures_of(company, "revenue")
        if f.role == "announced" and f.published <= as_of
    ]
    this = [f for f in announced if f.period == f"FY{year}"]
    if this:
        figure = max(this, key=lambda f: f.published)
        return [rc.money_fact("revenue", figure, as_of, basis=None)]
    value = "not yet reported" if announced else "not disclosed"
    return [Fact("not_disclosed", "revenue", value, period=f"FY{year}")]


def peer_revenue_ranking(rc, company, params, as_of):
    facts = []
    for member in [company, *params["peers"]]:
        fact = rc.latest_revenue(member, as_of, subject=rc.names[member])
        if fact is None:
            raise KeyUnavailable(f"{member} has no revenue reported by {as_of}")
        facts.append(fact)
    ranking = sorted(facts, key=lambda f: -f.value)
    if len({f.value for f in facts}) < len(facts):
        raise KeyUnavailable("a tie in the ranking")
    return [Fact("top_n", "revenue_ranking", [f.subject for f in ranking]), *facts]


def peer_margin_comparison(rc, company, params, as_of):
    facts = []
    for member in (company, params["peer"]):
        year = rc.latest_year(member, as_of, "revenue", "operating_income")
        if year is None:
            raise KeyUnavailable(f"{member} has no margin by {as_of}")
        facts.append(rc.margin(member, year, as_of, subject=rc.names[member]))
    if facts[0].value == facts[1].value:
        raise KeyUnavailable("equal margins")
    higher = max(facts, key=lambda f: f.value)
    return [Fact("name", "higher_operating_margin", higher.subject), *facts]


def peer_growth_comparison(rc, company, params, as_of):
    facts = []
    for member in (company, params["peer"]):
        years = rc.reported_years(member, "revenue", as_of)
        year = next((y for y in reversed(years) if y - 1 in years), None)
        if year is None:
            raise KeyUnavailable(f"{member} has no growth by {as_of}")
        facts.append(rc.growth(member, year, as_of, subject=rc.names[member]))
    if facts[0].value == facts[1].value:
        raise KeyUnavailable("equal growth")
    return [Fact("boolean", "grew_faster", facts[0].value > facts[1].value), *facts]


def competitors(rc, company, params, as_of):
    profile = rc.profile(company, as_of)
    if profile is None or not profile.competitors:
        return [Fact("no_records", "competitors")]
    return [
        Fact(
            "top_n",
            "competitors",
            list(profile.competitors),
            ordered=False,
            inputs=[("competitors", frozenset({profile.doc.doc_id}))],
        )
    ]


def market_cap_ranking(rc, company, params, as_of):
    day = dt.date.fromisoformat(params["day"])
    facts = [rc.market_cap(m, day, as_of, subject=rc.names[m]) for m in [company, *params["peers"]]]
    if len({f.value for f in facts}) < len(facts):
        raise KeyUnavailable("a tie in the ranking")
    ranking = sorted(facts, key=lambda f: -f.value)
    return [Fact("top_n", "market_cap_ranking", [f.subject for f in ranking]), *facts]


def market_cap(rc, company, params, as_of):
    return [rc.market_cap(company, dt.date.fromisoformat(params["day"]), as_of)]


def latest_launch(rc, company, params, as_of):
    events = rc.latest_event(company, as_of, "launch")
    if not events:
        return [Fact("no_records", "product_launches")]
    docs = frozenset(e.doc.doc_id for e in events)
    return [
        Fact("name", "product", events[0].details["product"], inputs=[("launch", docs)]),
        Fact("date", "launch_date", events[0].date.isoformat(), inputs=[("launch", docs)]),
    ]


def latest_funding_round(rc, company, params, as_of):
    rounds = rc.rounds(company, as_of)
    if not rounds:
        return [Fact("no_records", "funding_rounds")]
    return _round_facts(rc, company, rounds[-1], as_of)


def _round_facts(rc, company, statements: list[Event], as_of, fields=None) -> list[Fact]:
    docs = frozenset(e.doc.doc_id for e in statements)
    first = statements[0]
    day = first.date.isoformat()
    amount = _most_precise(statements, "amount")
    post = _most_precise(statements, "post_money")
    facts = [
        Fact(
            "amount",
            "round_amount",
            amount[0],
            0.05,
            currency=first.details["currency"],
            scale="millions",
            period=day,
            half_unit=amount[1],
            inputs=[("amount", docs)],
        ),
        Fact("name", "lead_investor", first.details["lead"], inputs=[("lead", docs)]),
        Fact(
            "amount",
            "post_money_valuation",
            post[0],
            0.05,
            currency=first.details["currency"],
            scale="millions",
            period=day,
            half_unit=post[1],
            inputs=[("valuation", docs)],
        ),
        Fact("date", "round_date", day, inputs=[("date", docs)]),
    ]
    return [f for f in facts if fields is None or f.field in fields]


def _most_precise(statements: list[Event], name: str) -> tuple[Decimal, Decimal]:
    best = min(statements, key=lambda e: e.details[f"{name}_half"])
    for event in statements:
        if abs(event.details[name] - best.details[name]) > event.details[f"{name}_half"]:
            raise KeyUnavailable(f"documents disagree on a round's {name}")
    return best.details[name], best.details[f"{name}_half"]


def total_raised(rc, company, params, as_of):
    rounds = rc.rounds(company, as_of)
    if not rounds:
        return [Fact("no_records", "funding_rounds")]
    amounts = [_most_precise(r, "amount") for r in rounds]
    docs = [(f"{r[0].details['series']} round", frozenset(e.doc.doc_id for e in r)) for r in rounds]
    return [
        Fact(
            "amount",
            "total_raised",
            sum(a for a, _ in amounts),
            0.05,
            currency=rounds[0][0].details["currency"],
            scale="millions",
            period=as_of.isoformat(),
            # amounts written to 0.1 million add up exactly; each written in billions adds
            # its rounding to the total's
            half_unit=sum(h for _, h in amounts if h > FILING_HALF_UNIT),
            inputs=docs,
        )
    ]


PENALTIES = ("fine", "settlement")
"""Regulatory penalties: a regulator's fine, or a settlement the company agreed to pay."""


def penalty_docs(rc, company: str, penalty: Event, as_of: dt.date) -> frozenset[str]:
    """The penalty's news article and the annual reports' legal notes listing it (same day and
    amount) published by ``as_of``."""
    notes = {
        note.doc.doc_id
        for note in rc.world.events_of(company, "penalty_note")
        if note.date == penalty.date
        and note.details["amount"] == penalty.details["amount"]
        and note.doc.published <= as_of
    }
    return frozenset({penalty.doc.doc_id, *notes})


def regulatory_action(rc, company, params, as_of):
    fines = [e for e in rc.world.events_of(company, *PENALTIES) if e.date <= as_of]
    if not fines:
        return [Fact("no_records", "regulatory_actions")]
    last = fines[-1]
    docs = penalty_docs(rc, company, last, as_of)
    return [
        Fact("name", "regulator", last.details["regulator"], inputs=[("fine", docs)]),
        Fact("date", "action_date", last.date.isoformat(), inputs=[("penalty", docs)]),
        Fact(
            "amount",
            "fine",
            last.details["amount"],
            0.05,
            currency=last.details["currency"],
            scale="millions",
            period=last.date.isoformat(),
            half_unit=last.details["half_unit"],
            inputs=[("fine", docs)],
        ),
    ]


# ---------------------------------------------------------------------------------------------
# Analyst kinds: several asks, each fact tagged with its ask


def _asked(ask: str, facts: list[Fact]) -> list[Fact]:
    for fact in facts:
        fact.ask = ask
    return facts


def _pct(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.1"), ROUND_HALF_UP)


def _growth_pct(new: Decimal, old: Decimal) -> Decimal:
    if old <= 0:
        raise KeyUnavailable("growth from a non-positive base")
    return _pct((new - old) / old * 100)


def _pct_fact(field_: str, value: Decimal, period: str, inputs, subject=None, basis="GAAP"):
    return Fact(
        "percent",
        field_,
        value,
        0.1,
        unit="percent",
        period=period,
        basis=basis,
        subject=subject,
        inputs=inputs,
    )


def _text_fact(field_: str, phrase: str) -> Fact:
    return Fact("text", field_, phrase)


def growth_trend(rc, company, params, as_of):
    year = params["fy"]
    years = (year - 2, year - 1, year)
    figures = [rc.need(company, "revenue", f"FY{y}", as_of) for y in years]
    values = [f.value for f in figures]
    yoy = [_growth_pct(values[1], values[0]), _growth_pct(values[2], values[1])]
    cagr = _pct((float_root(values[2] / values[0]) - 1) * 100)
    inputs = [(f"revenue {f.period}", rc.stating(f, as_of)) for f in figures]
    direction = "growth accelerated" if yoy[1] > yoy[0] else "growth slowed"
    return [
        *_asked("revenue", [rc.money_fact("revenue", f, as_of) for f in figures]),
        *_asked(
            "yoy",
            [
                _pct_fact("revenue_growth", yoy[0], f"FY{year - 1}", inputs[:2]),
                _pct_fact("revenue_growth", yoy[1], f"FY{year}", inputs[1:]),
            ],
        ),
        *_asked(
            "cagr",
            [_pct_fact("revenue_cagr", cagr, f"FY{year - 2}-FY{year}", [inputs[0], inputs[2]])],
        ),
        *_asked("direction", [_text_fact("growth_direction", direction)]),
    ]


def float_root(ratio: Decimal) -> Decimal:
    """The square root of a ratio (a two-year CAGR), to Decimal precision."""
    return ratio.sqrt()


def margin_bridge(rc, company, params, as_of):
    year = params["fy"]
    get = {
        (m, y): rc.need(company, m, f"FY{y}", as_of)
        for m in ("revenue", "operating_expenses")
        for y in (year - 1, year)
    }
    revenue_growth = _growth_pct(get["revenue", year].value, get["revenue", year - 1].value)
    opex_growth = _growth_pct(
        get["operating_expenses", year].value, get["operating_expenses", year - 1].value
    )
    driver = (
        "operating expenses grew faster than revenue"
        if opex_growth > revenue_growth
        else "revenue grew faster than operating expenses"
    )

    def both(metric):
        return [
            (f"{metric} {get[metric, y].period}", rc.stating(get[metric, y], as_of))
            for y in (year - 1, year)
        ]

    return [
        *_asked("margins", [rc.margin(company, y, as_of) for y in (year - 1, year)]),
        *_asked(
            "growth",
            [
                _pct_fact("revenue_growth", revenue_growth, f"FY{year}", both("revenue")),
                _pct_fact(
                    "operating_expense_growth", opex_growth, f"FY{year}", both("operating_expenses")
                ),
            ],
        ),
        *_asked("driver", [_text_fact("margin_driver", driver)]),
    ]


def leverage_liquidity(rc, company, params, as_of):
    year = params["fy"]
    period = f"FY{year}"
    debt, cash = (
        rc.need(company, "total_debt", period, as_of),
        rc.need(company, "cash", period, as_of),
    )
    income = rc.need(company, "operating_income", period, as_of)
    prior = f"FY{year - 1}"
    debt0, cash0 = (
        rc.need(company, "total_debt", prior, as_of),
        rc.need(company, "cash", prior, as_of),
    )
    net, net0 = debt.value - cash.value, debt0.value - cash0.value
    currency = rc.currency(company)

    def net_fact(value, period_, parts):
        return Fact(
            "amount",
            "net_debt",
            value,
            0.05,
            currency=currency,
            scale="millions",
            period=period_,
            basis="GAAP",
            inputs=[(f"{f.metric} {f.period}", rc.stating(f, as_of)) for f in parts],
        )

    multiple = (net / income.value).quantize(Decimal("0.01"), ROUND_HALF_UP)
    return [
        *_asked(
            "position",
            [
                rc.money_fact("cash", cash, as_of),
                rc.money_fact("total_debt", debt, as_of),
                net_fact(net, period, (debt, cash)),
            ],
        ),
        *_asked(
            "leverage",
            [
                rc.money_fact("operating_income", income, as_of),
                Fact(
                    "ratio",
                    "net_debt_to_operating_income",
                    multiple,
                    0.01,
                    unit="x",
                    period=period,
                    basis="GAAP",
                    inputs=[(f.metric, rc.stating(f, as_of)) for f in (debt, cash, income)],
                ),
            ],
        ),
        *_asked(
            "trend",
            [
                net_fact(net0, prior, (debt0, cash0)),
                _text_fact(
                    "net_debt_direction", "net debt rose" if net > net0 else "net debt fell"
                ),
            ],
        ),
    ]


def cash_runway(rc, company, params, as_of):
    """Cash, the year's free cash flow (a burn), the runway = cash / burn in years, and the
    change in cash from the prior year end."""
    year = params["fy"]
    period, prior = f"FY{year}", f"FY{year - 1}"
    cash, cash0 = rc.need(company, "cash", period, as_of), rc.need(company, "cash", prior, as_of)
    cfo = rc.need(company, "cash_from_operations", period, as_of)
    capex = rc.need(company, "capital_expenditures", period, as_of)
    burn = capex.value - cfo.value
    if burn <= 0:
        raise KeyUnavailable("free cash flow is not negative: no burn to run down")
    inputs = [(f.metric, rc.stating(f, as_of)) for f in (cash, cfo, capex)]
    return [
        *_asked("cash", [rc.money_fact("cash", cash, as_of)]),
        *_asked(
            "burn",
            [
                rc.money_fact("cash_from_operations", cfo, as_of),
                rc.money_fact("capital_expenditures", capex, as_of),
                *free_cash_flow(rc, company, {"fy": year}, as_of),
            ],
        ),
        *_asked(
            "runway",
            [
                Fact(
                    "ratio",
                    "cash_runway_years",
                    (cash.value / burn).quantize(Decimal("0.01"), ROUND_HALF_UP),
                    0.01,
                    unit="x",
                    period=period,
                    basis="GAAP",
                    inputs=inputs,
                )
            ],
        ),
        *_asked(
            "trend",
            [
                rc.money_fact("cash", cash0, as_of),
                _text_fact(
                    "cash_direction", "cash rose" if cash.value > cash0.value else "cash fell"
                ),
            ],
        ),
    ]


def shareholder_returns(rc, company, params, as_of):
    """Free cash flow, dividends paid and repurchases of common stock, their total as a share of
    free cash flow, dividends over net income, and whether free cash flow covered the total."""
    year = params["fy"]
    period = f"FY{year}"
    cfo = rc.need(company, "cash_from_operations", period, as_of)
    capex = rc.need(company, "capital_expenditures", period, as_of)
    dividends = rc.need(company, "dividends_paid", period, as_of)
    buybacks = rc.need(company, "share_repurchases", period, as_of)
    net = rc.need(company, "net_income", period, as_of)
    depreciation = rc.need(company, "depreciation_amortization", period, as_of)
    fcf = cfo.value - capex.value
    returned = dividends.value + buybacks.value
    if fcf <= 0 or net.value <= 0 or returned <= 0:
        raise KeyUnavailable("no payout of a positive free cash flow and net income")
    stated = {f.metric: rc.stating(f, as_of) for f in (cfo, capex, dividends, buybacks, net)}
    total = Fact(
        "amount",
        "shareholder_returns",
        returned,
        0.05,
        currency=rc.currency(company),
        scale="millions",
        period=period,
        basis="GAAP",
        inputs=[(m, stated[m]) for m in ("dividends_paid", "share_repurchases")],
    )
    per_share = _per_share_facts(rc, company, year, as_of, net, dividends, stated)
    return [
        *_asked(
            "fcf",
            [
                rc.money_fact("cash_from_operations", cfo, as_of),
                rc.money_fact("capital_expenditures", capex, as_of),
                *free_cash_flow(rc, company, {"fy": year}, as_of),
                rc.money_fact("depreciation_amortization", depreciation, as_of),
                Fact(
                    "ratio",
                    "capex_to_depreciation",
                    (capex.value / depreciation.value).quantize(Decimal("0.01"), ROUND_HALF_UP),
                    0.01,
                    unit="x",
                    period=period,
                    basis="GAAP",
                    inputs=[
                        ("capital expenditures", stated["capital_expenditures"]),
                        ("depreciation and amortization", rc.stating(depreciation, as_of)),
                    ],
                ),
            ],
        ),
        *_asked(
            "returns",
            [
                rc.money_fact("dividends_paid", dividends, as_of),
                rc.money_fact("share_repurchases", buybacks, as_of),
                total,
            ],
        ),
        *_asked(
            "payout",
            [
                _pct_fact(
                    "cash_returned_to_free_cash_flow",
                    _pct(returned / fcf * 100),
                    period,
                    list(stated.items())[:4],
                ),
                _pct_fact(
                    "dividend_payout_ratio",
                    _pct(dividends.value / net.value * 100),
                    period,
                    [(m, stated[m]) for m in ("dividends_paid", "net_income")],
                ),
            ],
        ),
        *_asked("per_share", per_share),
        *_asked(
            "coverage",
            [
                _text_fact(
                    "returns_coverage",
                    "free cash flow covered the returns"
                    if returned < fcf
                    else "the returns exceeded free cash flow",
                )
            ],
        ),
    ]


def _year_end_shares(rc, company: str, year: int, as_of: dt.date) -> tuple[Decimal, frozenset]:
    """The shares outstanding (millions) a filing states at the fiscal year's last day, and the
    documents by ``as_of`` stating that count: the annual report's overview, and (as for market
    capitalisation) any page giving the same count, such as a later market data page."""
    month = rc.world.companies[company].fiscal_year_end_month
    following = dt.date(year + month // 12, month % 12 + 1, 1)
    end = (following - dt.timedelta(days=1)).isoformat()
    counts = [
        f
        for f in rc.world.figures_of(company, "shares_outstanding")
        if f.period == end and f.published <= as_of and f.doc.source_type in PRIMARY
    ]
    if not counts:
        raise KeyUnavailable(f"no shares outstanding of {company} stated at {end}")
    value = max(counts, key=lambda f: f.published).value
    stating = frozenset(
        f.doc.doc_id
        for f in rc.world.figures_of(company, "shares_outstanding")
        if f.published <= as_of and f.value == value
    )
    return value, stating


def _per_share_facts(rc, company, year, as_of, net, dividends, stated) -> list[Fact]:
    """Earnings and dividends per share: the year's net income and dividends paid over the
    shares outstanding at its end (docs/conventions.md, "Per-share figures"), to the cent."""
    shares, shares_docs = _year_end_shares(rc, company, year, as_of)
    if shares <= 0:
        raise KeyUnavailable("no shares outstanding")
    facts = []
    for field_, figure in (("earnings_per_share", net), ("dividends_per_share", dividends)):
        facts.append(
            Fact(
                "amount",
                field_,
                (figure.value / shares).quantize(Decimal("0.01"), ROUND_HALF_UP),
                0.01,
                unit="per share",
                currency=rc.currency(company),
                scale="units",
                period=f"FY{year}",
                basis="GAAP",
                inputs=[(figure.metric, stated[figure.metric]), ("year-end shares", shares_docs)],
            )
        )
    return facts


def peer_benchmark(rc, company, params, as_of):
    measure = params["measure"]
    facts = []
    for member in [company, *params["peers"]]:
        name = rc.names[member]
        if measure == "operating_margin":
            year = rc.latest_year(member, as_of, "revenue", "operating_income")
            if year is None:
                raise KeyUnavailable(f"{member} has no margin by {as_of}")
            facts.append(rc.margin(member, year, as_of, subject=name))
        else:
            years = rc.reported_years(member, "revenue", as_of)
            if not years or years[-1] - 1 not in years:
                raise KeyUnavailable(f"{member} has no growth by {as_of}")
            facts.append(rc.growth(member, years[-1], as_of, subject=name))
    if len({f.value for f in facts}) < len(facts):
        raise KeyUnavailable("a tie in the ranking")
    ranking = [f.subject for f in sorted(facts, key=lambda f: -f.value)]
    return [
        *_asked("company", facts[:1]),
        *_asked("peers", facts[1:]),
        *_asked("ranking", [Fact("top_n", f"{measure}_ranking", ranking)]),
    ]


def _mix_shift(rc, company, params, as_of, metric):
    year = params["fy"]
    shares: dict[int, dict[str, Fact]] = {}
    for y in (year - 1, year):
        members = {
            f.member
            for f in rc.world.figures_of(company, metric)
            if f.period == f"FY{y}" and f.published <= as_of
        }
        if not members:
            raise NotReported(f"FY{y}")
        shares[y] = {}
        for member in sorted(members):
            fact = _share(rc, company, y, metric, member, "revenue_share", as_of)
            fact.subject = member
            shares[y][member] = fact
    moves = {m: shares[year][m].value - shares[year - 1][m].value for m in shares[year]}
    winner = max(moves, key=lambda m: moves[m])
    if sum(1 for v in moves.values() if v == moves[winner]) > 1:
        raise KeyUnavailable("tied share moves")
    gained = "gained" if moves[winner] > 0 else "lost"
    inputs = shares[year][winner].inputs + shares[year - 1][winner].inputs
    return [
        *_asked("current", list(shares[year].values())),
        *_asked("prior", list(shares[year - 1].values())),
        *_asked(
            "shift",
            [
                _pct_fact("share_change", moves[winner], f"FY{year}", inputs, subject=winner),
                _text_fact("largest_share_gain", f"{winner} {gained} the most share"),
            ],
        ),
    ]


def product_mix_shift(rc, company, params, as_of):
    return _mix_shift(rc, company, params, as_of, "product_revenue")


def regional_mix_shift(rc, company, params, as_of):
    return _mix_shift(rc, company, params, as_of, "region_revenue")


def funding_history(rc, company, params, as_of):
    rounds = rc.rounds(company, as_of)
    if len(rounds) < 2:
        raise KeyUnavailable("fewer than two rounds")
    per_round = [_round_facts(rc, company, r, as_of) for r in rounds]
    amounts = [facts[0] for facts in per_round]
    all_docs = [(f"round {i}", frozenset(e.doc.doc_id for e in r)) for i, r in enumerate(rounds)]
    total = total_raised(rc, company, params, as_of)[0]
    latest = {f.field: f for f in per_round[-1]}
    before = {f.field: f for f in per_round[-2]}
    post, previous = latest["post_money_valuation"], before["post_money_valuation"]
    step = _growth_pct(post.value, previous.value)
    return [
        *_asked(
            "history",
            [
                Fact(
                    "count",
                    "funding_rounds",
                    len(rounds),
                    unit="rounds",
                    period=as_of.isoformat(),
                    inputs=all_docs,
                ),
                *amounts,
            ],
        ),
        *_asked("total", [total]),
        *_asked("latest", [latest["lead_investor"], post]),
        *_asked(
            "step_up",
            [
                _pct_fact(
                    "valuation_step_up",
                    step,
                    post.period,
                    post.inputs + previous.inputs,
                    basis=None,
                )
            ],
        ),
    ]


# private_runway: the runway of a private company from its stated cash, burn and rounds ------

DAYS_PER_MONTH = Decimal("30.4375")  # 365.25 / 12 (docs/conventions.md)


def private_runway(rc, company, params, as_of):
    """The last stated cash (and the rounds announced after the day it was counted), the monthly
    net burn stated with it, the runway in months on the as-of date (cash plus rounds since over
    the burn, less the months since the count), the total raised and the lead investors; "not
    disclosed" for the first three when no statement is published by then."""
    rounds = rc.rounds(company, as_of)
    if not rounds:
        raise KeyUnavailable("no funding round")
    currency = rounds[0][0].details["currency"]
    announced = [
        (r, frozenset(e.doc.doc_id for e in r if e.doc.source_type == "funding_announcement"))
        for r in rounds
    ]
    leads = list(dict.fromkeys(r[0].details["lead"] for r in rounds))
    funding = _asked(
        "funding",
        [
            *total_raised(rc, company, params, as_of),
            Fact(
                "top_n",
                "lead_investors",
                leads,
                ordered=False,
                inputs=[(f"round {i}", docs) for i, (_, docs) in enumerate(announced)],
            ),
        ],
    )
    said = [e for e in rc.world.events_of(company, "cash_update") if e.date <= as_of]
    if not said:
        day = as_of.isoformat()
        return [
            *_asked("position", [Fact("not_disclosed", "cash", "not disclosed", period=day)]),
            *_asked(
                "burn", [Fact("not_disclosed", "monthly_net_burn", "not disclosed", period=day)]
            ),
            *_asked(
                "runway",
                [Fact("not_disclosed", "cash_runway_months", "not disclosed", period=day)],
            ),
            *funding,
        ]
    last = max(said, key=lambda e: e.date)
    counted = last.details["cash_date"]
    statement = [("cash statement", frozenset({last.doc.doc_id}))]

    def money_fact(field_: str, value: Decimal, period: str, inputs, half=Decimal("0.05")):
        return Fact(
            "amount",
            field_,
            value,
            0.05,
            currency=currency,
            scale="millions",
            period=period,
            half_unit=half,
            inputs=inputs,
        )

    cash, burn = last.details["cash"], last.details["net_burn"]
    since = [(r, docs) for r, docs in announced if r[0].date > counted]
    raised = sum((_most_precise(r, "amount")[0] for r, _ in since), Decimal(0))
    since_inputs = [(f"{r[0].details['series']} round", docs) for r, docs in since]
    position = [money_fact("cash", cash, counted.isoformat(), statement, last.details["cash_half"])]
    if since:
        window = f"{counted.isoformat()}/{as_of.isoformat()}"
        position += [
            money_fact("raised_since", raised, window, since_inputs),
            money_fact("cash_with_rounds", cash + raised, window, statement + since_inputs),
        ]
    elapsed = Decimal((as_of - counted).days) / DAYS_PER_MONTH
    months = ((cash + raised) / burn - elapsed).quantize(Decimal("0.1"), ROUND_HALF_UP)
    if months <= 0:
        raise KeyUnavailable("the stated cash is spent by the as-of date")
    return [
        *_asked("position", position),
        *_asked(
            "burn",
            [
                money_fact(
                    "monthly_net_burn",
                    burn,
                    counted.isoformat(),
                    statement,
                    last.details["net_burn_half"],
                )
            ],
        ),
        *_asked(
            "runway",
            [
                Fact(
                    "ratio",
                    "cash_runway_months",
                    months,
                    0.1,
                    unit="months",
                    period=as_of.isoformat(),
                    inputs=statement + since_inputs,
                )
            ],
        ),
        *funding,
    ]


def valuation_snapshot(rc, company, params, as_of):
    day = dt.date.fromisoformat(params["day"])
    cap = rc.market_cap(company, day, as_of)
    info = rc.world.companies[company]
    traded = rc.prices.execute(
        "SELECT date, close FROM price WHERE ticker = ? AND date <= ? ORDER BY date DESC LIMIT 1",
        (info.ticker, day.isoformat()),
    ).fetchone()
    traded_day = dt.date.fromisoformat(traded[0])
    year = rc.latest_year(company, traded_day, "total_debt", "cash")
    if year is None:
        raise KeyUnavailable("no balance sheet by that day")
    period = f"FY{year}"
    debt = rc.need(company, "total_debt", period, traded_day)
    cash = rc.need(company, "cash", period, traded_day)
    income = rc.need(company, "operating_income", period, traded_day)
    start = rc.prices.execute(
        "SELECT date, close FROM price WHERE ticker = ? AND date <= ? ORDER BY date DESC LIMIT 1",
        (info.ticker, (traded_day - dt.timedelta(days=91)).isoformat()),
    ).fetchone()
    net = debt.value - cash.value
    ev = (cap.value + net).quantize(Decimal("0.1"), ROUND_HALF_UP)
    balance_inputs = [(f.metric, rc.stating(f, as_of)) for f in (debt, cash)]
    ev_fact = Fact(
        "amount",
        "enterprise_value",
        ev,
        cap.tolerance,
        currency=info.currency,
        scale="millions",
        period=traded[0],
        inputs=cap.inputs + balance_inputs,
    )
    multiple = (ev / income.value).quantize(Decimal("0.01"), ROUND_HALF_UP)
    change = _growth_pct(Decimal(traded[1]), Decimal(start[1]))
    cap.period = traded[0]
    return [
        *_asked("market_cap", [cap]),
        *_asked(
            "enterprise_value",
            [
                Fact(
                    "amount",
                    "net_debt",
                    net,
                    0.05,
                    currency=info.currency,
                    scale="millions",
                    period=period,
                    basis="GAAP",
                    inputs=balance_inputs,
                ),
                ev_fact,
            ],
        ),
        *_asked(
            "multiple",
            [
                Fact(
                    "ratio",
                    "ev_to_operating_income",
                    multiple,
                    max(0.01, round(float(multiple) * 0.002, 2)),
                    unit="x",
                    period=period,
                    basis="GAAP",
                    inputs=[*ev_fact.inputs, ("operating income", rc.stating(income, as_of))],
                )
            ],
        ),
        *_asked(
            "price",
            [_pct_fact("share_price_change", change, f"{start[0]}/{traded[0]}", [], basis=None)],
        ),
    ]


def _penalty_amount(field_: str, value: Decimal, half: Decimal, currency: str, period: str, inputs):
    return Fact(
        "amount",
        field_,
        value,
        0.05,
        currency=currency,
        scale="millions",
        period=period,
        half_unit=half,
        inputs=inputs,
    )


def regulatory_exposure(rc, company, params, as_of):
    """Fines and settlements dated in the calendar years, their total, the largest over the
    operating income of the fiscal year it fell in, and the yearly totals with the direction
    from the first year to the last ("none" facts when there was none)."""
    first, last = params["first_year"], params["last_year"]
    found = [
        e
        for e in rc.world.events_of(company, *PENALTIES)
        if first <= e.date.year <= last and e.date <= as_of
    ]
    if not found:
        return [
            *_asked("actions", [Fact("no_records", "regulatory_penalties")]),
            *_asked("total", [Fact("no_records", "penalties_paid")]),
            *_asked("largest", [Fact("no_records", "largest_penalty")]),
            *_asked("trend", [Fact("no_records", "penalty_trend")]),
        ]
    window = f"{first}-{last}"
    currency = rc.currency(company)
    stated = [(f"penalty of {e.date}", penalty_docs(rc, company, e, as_of)) for e in found]
    listing = [
        Fact(
            "count",
            "regulatory_penalties",
            len(found),
            unit="penalties",
            period=window,
            inputs=stated,
        ),
        Fact("name", "regulator", found[0].details["regulator"], inputs=stated),
    ]
    for e, inputs in zip(found, stated, strict=True):
        day = e.date.isoformat()
        listing.append(
            _penalty_amount(
                "penalty", e.details["amount"], e.details["half_unit"], currency, day, [inputs]
            )
        )
        listing.append(Fact("date", "penalty_date", day, period=day, inputs=[inputs]))
    total = sum((e.details["amount"] for e in found), Decimal(0))
    largest = max(found, key=lambda e: e.details["amount"])
    month = rc.world.companies[company].fiscal_year_end_month
    year = largest.date.year + (largest.date.month > month)
    income = rc.need(company, "operating_income", f"FY{year}", as_of)
    income_fact = rc.money_fact("operating_income", income, as_of)
    ratio = _pct_fact(
        "largest_penalty_to_operating_income",
        percent(largest.details["amount"], income.value),
        f"FY{year}",
        [stated[found.index(largest)], *income_fact.inputs],
    )
    trend, totals = [], []
    for y in range(first, last + 1):
        inputs = [i for e, i in zip(found, stated, strict=True) if e.date.year == y]
        value = sum((e.details["amount"] for e in found if e.date.year == y), Decimal(0))
        if value:  # a year without a penalty has no figure stated: only the direction counts
            trend.append(_penalty_amount("penalties", value, Decimal(0), currency, str(y), inputs))
        totals.append(value)
    rose = totals[-1] > totals[0]
    return [
        *_asked("actions", listing),
        *_asked(
            "total",
            [_penalty_amount("total_penalties", total, Decimal(0), currency, window, stated)],
        ),
        *_asked("largest", [income_fact, ratio]),
        *_asked(
            "trend",
            [
                *trend,
                _text_fact("penalty_direction", "penalties rose" if rose else "penalties fell"),
            ],
        ),
    ]


PROGRAMS: dict[str, Callable] = {
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
    "fy_metric": _fy_item("fy_metric", fy_metric),
    "latest_fy_metric": latest_fy_metric,
    "operating_margin": _fy_item("operating_margin", operating_margin),
    "adjusted_margin": _fy_item("adjusted_margin", adjusted_margin),
    "free_cash_flow": _fy_item("free_cash_flow", free_cash_flow),
    "ebitda": _fy_item("ebitda", ebitda),
    "revenue_growth": _fy_item("revenue_growth", revenue_growth),
    "latest_quarter_revenue": latest_quarter_revenue,
    "quarter_metric": quarter_metric,
    "net_debt": _fy_item("net_debt", net_debt),
    "private_revenue": private_revenue,
    "peer_revenue_ranking": peer_revenue_ranking,
    "peer_margin_comparison": peer_margin_comparison,
    "peer_growth_comparison": peer_growth_comparison,
    "competitors": competitors,
    "market_cap_ranking": market_cap_ranking,
    "product_share": _fy_item("product_share", product_share),
    "segment_revenue": _fy_item("segment_revenue", segment_revenue),
    "largest_product_line": _fy_item("largest_product_line", largest_product_line),
    "latest_launch": latest_launch,
    "latest_funding_round": latest_funding_round,
    "total_raised": total_raised,
    "market_cap": market_cap,
    "regional_share": _fy_item("regional_share", regional_share),
    "regulatory_action": regulatory_action,
}


# ---------------------------------------------------------------------------------------------
# Briefs: the world's sections (the ERP's AR/AP facts are the ERP oracle's, checked elsewhere)

ERP_FIELDS = ("customer_", "vendor_")


def brief(rc: Recompute, company: str, params: dict, as_of: dt.date) -> list[Fact]:
    profile = rc.profile(company, as_of)
    if profile is None:
        raise KeyUnavailable(f"no profile of {company} by {as_of}")
    profile_docs = frozenset({profile.doc.doc_id})
    facts = []
    listing = re.fullmatch(r"Public \((.+): ([A-Z]+)\)", profile.fields["Ownership"])
    listed = listing is not None
    if listed:
        ticker = listing[2]
        facts.append(Fact("id", "ticker", ticker, inputs=[("ticker", profile_docs)]))
    ceo, ceo_docs = rc.chief_executive(company, as_of)
    facts.append(Fact("name", "chief_executive", ceo, inputs=[("chief executive", ceo_docs)]))
    city = profile.fields["Headquarters"].rsplit(", ", 1)[0]
    facts.append(Fact("name", "headquarters", city, inputs=[("headquarters", profile_docs)]))
    facts = _asked("header", facts)
    industry = Fact(
        "name", "industry", profile.fields["Industry"], inputs=[("industry", profile_docs)]
    )
    facts += _asked("overview", [industry])
    sections: dict[str, list[Fact]] = {"financials": [], "strategy": [], "lines": [], "peers": []}
    sections["news"] = []
    if listed:
        year = rc.latest_year(company, as_of, "revenue", "operating_income")
        sections["financials"].append(
            rc.money_fact("revenue", rc.need(company, "revenue", f"FY{year}", as_of), as_of)
        )
        sections["financials"].append(rc.margin(company, year, as_of))
        for earlier in (year - 1, year - 2):  # the three-year table
            figure = rc.version(company, "revenue", f"FY{earlier}", as_of)
            if figure is not None:
                sections["financials"].append(rc.money_fact("revenue", figure, as_of))
    else:
        announced = [
            f
            for f in rc.world.figures_of(company, "revenue")
            if f.role == "announced" and f.published <= as_of
        ]
        if announced:
            latest = max(announced, key=lambda f: fy_key(f.period))
            sections["financials"].append(rc.money_fact("revenue", latest, as_of, basis=None))
        else:
            sections["financials"].append(Fact("not_disclosed", "revenue", "not disclosed"))
        rounds = rc.rounds(company, as_of)
        if rounds:
            sections["financials"] += _round_facts(
                rc, company, rounds[-1], as_of, fields=("post_money_valuation", "lead_investor")
            )
    moves = rc.latest_event(company, as_of, "launch", "acquisition")
    if moves:
        docs = frozenset(e.doc.doc_id for e in moves)
        if moves[0].kind == "launch":
            sections["strategy"].append(
                Fact(
                    "name", "latest_launch", moves[0].details["product"], inputs=[("launch", docs)]
                )
            )
        else:
            sections["strategy"].append(
                Fact(
                    "name",
                    "latest_acquisition",
                    moves[0].details["target"],
                    inputs=[("acquisition", docs)],
                )
            )
    lines = rc.world.lines_of_business(profile)
    if lines:
        sections["lines"].append(
            Fact(
                "top_n",
                "lines_of_business",
                list(lines),
                ordered=False,
                inputs=[("lines of business", profile_docs)],
            )
        )
    sections["peers"].append(
        Fact(
            "top_n",
            "peers",
            list(profile.competitors),
            ordered=False,
            inputs=[("competitors", profile_docs)],
        )
    )
    # Top news: the latest articles reporting an event with its sentiment (conventions: revenue
    # announcements, funding talks and denials state none).
    news = [
        e
        for e in rc.world.events_of(company)
        if e.date <= as_of and e.doc.source_type in NEWS_TYPES and e.details.get("sentiment")
    ]
    if news:
        last_day = max(e.date for e in news)
        latest = [e for e in news if e.date == last_day]
        docs = frozenset(e.doc.doc_id for e in latest)
        moods = {e.details["sentiment"] for e in latest}
        sections["news"].append(
            Fact("date", "latest_news_date", last_day.isoformat(), inputs=[("news", docs)])
        )
        sections["news"].append(
            Fact(
                "text",
                "latest_news_sentiment",
                moods.pop() if len(moods) == 1 else sorted(moods),
                inputs=[("news", docs)],
            )
        )
    by_name = {info.name: cid for cid, info in rc.world.companies.items()}
    for name in profile.competitors:  # one comparative figure per listed peer
        peer = by_name.get(name)
        if peer is not None and rc.world.companies[peer].listed:
            figure = rc.latest_revenue(peer, as_of, subject=name)
            if figure is not None:
                sections["peers"].append(figure)
    for section, found in sections.items():
        facts += _asked(section, found)
    return facts


# ---------------------------------------------------------------------------------------------
# Comparing with a key


@dataclass(frozen=True)
class Mismatch:
    item: str
    kind: str
    what: str
    expected: Any
    recomputed: Any
    cause: str = ""
    """A known defect the documents show (see tests/test_world_recompute.py), or ''."""

    def __str__(self) -> str:
        cause = f" ({self.cause})" if self.cause else ""
        return (
            f"{self.item} [{self.kind}] {self.what}: key {self.expected!r}, documents "
            f"{self.recomputed!r}{cause}"
        )


def recompute_item(rc: Recompute, item) -> list[Fact]:
    kind = item.metadata["kind"]
    program = brief if item.task_type == "business_brief" else PROGRAMS[kind]
    return program(rc, item.metadata["company_id"], item.metadata.get("params") or {}, item.as_of)


def compare_item(rc: Recompute, item) -> tuple[list[Mismatch], int]:
    """Mismatches between an item's key and the recomputation, and the facts compared."""
    kind = item.metadata["kind"]
    out: list[Mismatch] = []

    def miss(what, expected, recomputed, cause=""):
        out.append(Mismatch(item.id, kind, what, expected, recomputed, cause))

    try:
        mine = recompute_item(rc, item)
    except (KeyUnavailable, NotReported) as error:
        miss("recomputation", "a key", f"none: {error!r}")
        return out, 0
    expected = [e for e in item.expected if not e.field.startswith(ERP_FIELDS)]
    mine_by = {f.identity: f for f in mine}
    key_by = {(e.ask, e.kind, e.field, e.subject, e.period): e for e in expected}
    if len(key_by) != len(expected):
        miss("facts", "unique (ask, kind, field, subject, period)", "duplicates in the key")
    for identity in sorted(set(key_by) - set(mine_by), key=str):
        miss(f"fact {identity}", key_by[identity].value, "not derivable from the documents")
    not_reported = any(e.kind == "not_disclosed" for e in expected)
    for identity in sorted(set(mine_by) - set(key_by), key=str):
        fallback = (
            not_reported
            and identity[1] == "amount"
            and not any(e.kind == "amount" for e in expected)
        )
        miss(
            f"fact {identity} (the latest reported figure)" if fallback else f"fact {identity}",
            "absent from the key",
            mine_by[identity].value,
            "missing_fallback" if fallback else "",
        )
    compared = 0
    for identity in sorted(set(key_by) & set(mine_by), key=str):
        compared += 1
        key, mine = key_by[identity], mine_by[identity]
        cause = _cause(rc, item, key, mine, key_by)

        def fact_miss(what, expected, recomputed, cause=cause):
            miss(what, expected, recomputed, cause)

        _compare_fact(rc, item, key, mine, fact_miss)
    return out, compared


def _cause(rc: Recompute, item, key, mine: Fact, key_by: dict) -> str:
    """The known defect behind a fact's disagreement, if it is one (empty otherwise)."""
    if (
        key.kind == "amount"
        and mine.half_unit > Decimal(str(key.tolerance))
        and abs(Decimal(str(key.value)) - Decimal(str(mine.value))) <= mine.half_unit
    ):
        return "stated_coarser"
    if key.field == "chief_executive" and key.value == mine.value:
        stale = [
            profile
            for profile in rc.world.profiles_of(item.metadata["company_id"])
            if profile.doc.url in key.sources and profile.fields["Chief executive"] != key.value
        ]
        if stale:
            return "stale_gold_source"
    return ""


def _compare_fact(rc: Recompute, item, key, mine: Fact, miss) -> None:
    label = f"{key.field}" + (f" of {key.subject}" if key.subject else "")
    if key.kind in ("amount", "percent", "ratio"):
        difference = abs(Decimal(str(key.value)) - Decimal(str(mine.value)))
        if difference > Decimal(str(key.tolerance)) + Decimal("1e-9"):
            miss(f"{label} value", key.value, mine.value)
        elif mine.half_unit > Decimal(str(key.tolerance)) + Decimal("1e-9"):
            miss(
                f"{label} precision: the documents state it to +/- {mine.half_unit}, the key "
                f"asks +/- {key.tolerance}",
                key.value,
                f"{mine.value} +/- {mine.half_unit}",
            )
    elif key.kind == "top_n":
        if key.ordered != mine.ordered:
            miss(f"{label} ordered", key.ordered, mine.ordered)
        same = key.value == mine.value if mine.ordered else sorted(key.value) == sorted(mine.value)
        if not same:
            miss(f"{label} list", key.value, mine.value)
    elif key.value != mine.value:
        miss(f"{label} value", key.value, mine.value)
    for attribute in ("unit", "currency", "scale", "period", "basis"):
        if getattr(key, attribute) != getattr(mine, attribute):
            miss(f"{label} {attribute}", getattr(key, attribute), getattr(mine, attribute))
    _check_sources(rc, item, key, mine, label, miss)


def _check_sources(rc: Recompute, item, key, mine: Fact, label: str, miss) -> None:
    stating = frozenset().union(*(docs for _what, docs in mine.inputs)) if mine.inputs else None
    ids = []
    for url in key.sources:
        doc_id = url.rsplit("/", 1)[1]
        doc = rc.world.docs.get(doc_id)
        if doc is None or doc.url != url:
            miss(f"{label} gold document", url, "no such document in this world")
            continue
        if doc.published > item.as_of:
            miss(
                f"{label} gold document {doc_id}",
                f"published by {item.as_of}",
                f"published {doc.published}",
            )
        ids.append(doc_id)
    if stating is None:
        return
    for doc_id in ids:
        if doc_id not in stating:
            miss(
                f"{label} gold document {doc_id} ({rc.world.docs[doc_id].title})",
                "states the fact",
                "does not state it (or states another version)",
            )
    for what, docs in mine.inputs:
        if key.sources and not docs & set(ids):
            miss(
                f"{label} gold documents",
                f"cover {what}",
                f"none of them states it; documents that do: {sorted(docs)[:3]}",
            )
    if not key.sources and key.kind in ("amount", "percent", "name", "date", "id"):
        miss(f"{label} gold documents", "none", f"documents stating it: {sorted(stating)[:3]}")


# ---------------------------------------------------------------------------------------------
# Does the question name the company its key is about?


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return previous[-1]


def reference_problems(world: World, item, erp: sqlite3.Connection) -> list[str]:
    """Problems with how the question refers to its company (and, for peer kinds, its peers)."""
    company = world.companies[item.metadata["company_id"]]
    reference = item.metadata.get("company_reference", "name")
    query = item.query
    problems = []
    if reference == "name":
        if company.name not in query:
            problems.append(f"{item.id}: the query does not name {company.name!r}")
    elif reference == "ticker":
        match = re.search(r"the company with ticker ([A-Z]+)", query)
        owners = [c.company_id for c in world.companies.values() if match and c.ticker == match[1]]
        if owners != [company.company_id]:
            problems.append(
                f"{item.id}: ticker {match and match[1]!r} belongs to {owners}, "
                f"not {company.company_id}"
            )
    elif reference == "erp":
        match = re.search(r"our (customer|vendor) (\S+) in ([A-Z]{4})", query)
        row = (
            match
            and erp.execute(
                f"SELECT name FROM {match[1]} WHERE account = ? AND legal_entity = ?",
                (match[2], match[3]),
            ).fetchone()
        )
        if not row or row[0] != company.name:
            problems.append(
                f"{item.id}: ERP reference {match and match[0]!r} names "
                f"{row and row[0]!r}, not {company.name!r}"
            )
    elif reference == "misspelled":
        words = _misspelled_span(query, company.name)
        ranked = sorted(world.companies.values(), key=lambda c: edit_distance(words, c.name))
        best = edit_distance(words, ranked[0].name)
        nearest = [c.name for c in ranked if edit_distance(words, c.name) == best]
        if words == company.name or nearest != [company.name]:
            problems.append(
                f"{item.id}: the misspelling {words!r} of {company.name!r} is nearest to {nearest}"
            )
    else:
        problems.append(f"{item.id}: unknown company_reference {reference!r}")
    for fact in item.expected:  # a brief's AR/AP facts are about the company's own accounts
        party = fact.field.split("_", 1)[0]
        if party in ("customer", "vendor"):
            entity, _, account = (fact.subject or "").partition("/")
            row = erp.execute(
                f"SELECT name FROM {party} WHERE account = ? AND legal_entity = ?",
                (account, entity),
            ).fetchone()
            if not row or row[0] != company.name:
                problems.append(
                    f"{item.id}: {fact.field} is about {party} {fact.subject!r} "
                    f"({row and row[0]!r}), not {company.name!r}"
                )
    params = item.metadata.get("params") or {}
    for peer in [*params.get("peers", []), *([params["peer"]] if "peer" in params else [])]:
        if world.companies[peer].name not in query:
            problems.append(
                f"{item.id}: the query does not name peer {peer} ({world.companies[peer].name!r})"
            )
    return problems


def _misspelled_span(query: str, name: str) -> str:
    """The words of the query that stand for ``name``: the span of the same word count that is
    nearest to it."""
    words = re.findall(r"[\w&.'-]+", query)
    size = len(name.split())
    spans = [
        " ".join(words[i : i + size]).removesuffix("'s").rstrip(",?")
        for i in range(len(words) - size + 1)
    ]
    return min(spans, key=lambda span: edit_distance(span, name))
