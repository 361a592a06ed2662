"""Figures of one company: six fiscal years and their quarters, segments, guidance, non-GAAP
measures, restatements and revisions, with the dates each was first published.

All money is in millions of the reporting currency with one decimal (exact ``Decimal`` tenths),
so every document states exactly what the ledger holds. Quarterly flows sum to the annual figure
(Q4 takes the remainder); balance-sheet figures are quarter-end positions, the fourth quarter's
being the year's.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

from synthetic_world._calendar import (
    DAY,
    Period,
    fiscal_year,
    fiscal_year_of,
    profile_date,
    quarters,
)
from synthetic_world._facts import TENTH, CompanyLedger, Fact, fact_id
from synthetic_world._universe import SECTOR_PROFILE, Company

RELEASED = frozenset({"revenue", "operating_income", "net_income", "adjusted_operating_income"})
"""The figures an earnings release states; every other figure first appears in a report."""

CENT = Decimal("0.01")

YEARS = 6
"""Fiscal years modelled: five reported ones, plus the year before, shown as prior-year columns."""

SEGMENT_NAMES = {
    "Wholesale & Distribution": (
        "Distribution Services",
        "Specialty Supply",
        "Logistics Solutions",
        "Industrial Supply",
    ),
    "Industrials": (
        "Industrial Products",
        "Precision Components",
        "Aftermarket Services",
        "Automation Systems",
    ),
    "Materials & Packaging": (
        "Flexible Packaging",
        "Rigid Packaging",
        "Specialty Materials",
        "Recycled Products",
    ),
    "Technology": ("Devices", "Software and Services", "Embedded Systems", "Sensors"),
    "Transportation & Logistics": (
        "Freight",
        "Contract Logistics",
        "Fleet Services",
        "Last-Mile Delivery",
    ),
    "Food & Beverage": ("Branded Foods", "Beverages", "Foodservice", "Ingredients"),
    "Retail & Consumer": ("Stores", "E-commerce", "Wholesale Brands", "Home Goods"),
    "Healthcare": ("Pharmaceuticals", "Diagnostics", "Consumer Health", "Contract Research"),
    "Media & Communications": ("Advertising", "Subscriptions", "Content Licensing", "Events"),
}
PRODUCT_WORDS = ("Core", "Pro", "Select", "Prime", "Edge", "Flex", "One", "Max", "Series")
REGIONS = {
    "USA": ("United States", "Canada", "Europe", "Asia Pacific", "Latin America"),
    "DEU": ("Germany", "Rest of Europe", "North America", "Asia Pacific"),
    "GBR": ("United Kingdom", "Continental Europe", "North America", "Rest of World"),
}


def tenth(value: float | Decimal) -> Decimal:
    return Decimal(str(value)).quantize(TENTH, rounding=ROUND_HALF_EVEN)


def latest_fiscal_year(company: Company, today: dt.date) -> int:
    """The last fiscal year that has ended by ``today``."""
    current = fiscal_year_of(company.fiscal_year_end_month, today)
    return current - 1


class FinancialsBuilder:
    def __init__(self, company: Company, ledger: CompanyLedger, today: dt.date) -> None:
        self.company = company
        self.ledger = ledger
        self.today = today
        self.rng = random.Random(f"financials:{company.company_id}")
        # Its own stream, so adding shareholder returns left every other figure's draw as it was.
        self.returns_rng = random.Random(f"shareholder-returns:{company.company_id}")
        self.returns_policy: tuple[bool, float, bool, float] | None = None
        self._issued = Decimal(0)

    # -- periods and publication dates ------------------------------------------------------------

    def periods(self) -> None:
        company, ledger = self.company, self.ledger
        last = latest_fiscal_year(company, self.today)
        ledger.annual = [
            fiscal_year(company.fiscal_year_end_month, y) for y in range(last - YEARS + 1, last + 1)
        ]
        current = fiscal_year(company.fiscal_year_end_month, last + 1)
        ledger.quarters = [
            q for year in [*ledger.annual, current] for q in quarters(year) if q.end < self.today
        ]
        rng = self.rng
        quarter_lag, annual_lag = rng.randint(33, 44), rng.randint(56, 78)
        for q in ledger.quarters:
            if q.quarter == 4:
                continue
            report = q.end + DAY * (quarter_lag + rng.randint(-2, 2))
            ledger.reports[q.id] = report
            ledger.releases[q.id] = report - DAY * rng.randint(1, 6)
        for year in [*ledger.annual, current]:
            report = year.end + DAY * (annual_lag + rng.randint(-3, 3))
            ledger.reports[year.id] = report
            release = report - DAY * rng.randint(14, 26)
            ledger.releases[year.id] = release
            ledger.releases[f"{year.id}-Q4"] = release

    # -- figures ----------------------------------------------------------------------------------

    def build(self) -> None:
        self.periods()
        company, rng = self.company, self.rng
        gross_range, operating_range, capex_range = SECTOR_PROFILE[company.sector]
        revenue = company.size
        gross = rng.uniform(*gross_range)
        operating = rng.uniform(*operating_range)
        capex_share = rng.uniform(*capex_range)
        growth = rng.gauss(0.06, 0.05)
        cash_share, debt_share = rng.uniform(0.05, 0.25), rng.uniform(0.1, 0.6)
        assets_turn = rng.uniform(0.6, 1.6)
        per_employee = rng.uniform(0.15, 0.6)  # millions of revenue per employee
        tax = rng.uniform(0.19, 0.27)
        current = fiscal_year(company.fiscal_year_end_month, self.ledger.annual[-1].fiscal_year + 1)
        modelled = [*self.ledger.annual, current]
        for index, year in enumerate(modelled):
            distress = self.company.distressed and index >= len(modelled) - 3
            if index:
                step = rng.gauss(growth, 0.04)
                if distress:
                    step = -rng.uniform(0.08, 0.2)
                revenue = max(revenue * (1 + step), 2.0)
            margin = operating + rng.gauss(0, 0.015)
            if distress:
                margin = -rng.uniform(0.02, 0.12)
                cash_share = max(cash_share * 0.6, 0.01)
                debt_share = min(debt_share * 1.35, 1.5)
            self._year(
                year,
                revenue,
                gross + rng.gauss(0, 0.01),
                margin,
                capex_share,
                tax,
                cash_share,
                debt_share,
                assets_turn,
                per_employee,
                annual=year is not current,
            )
        if company.listed:
            self._revisions()
            self._members()
            self._guidance()
            self._restatement()
        else:
            self._private_disclosures()
        self.ledger.facts = [f for f in self.ledger.facts if f.published_at <= self.today]

    def _private_disclosures(self) -> None:
        """A private company files nothing: some announce their annual revenue (about three months
        after the year ends) and every one states a headcount on its profile; nothing else is
        public."""
        ledger, company = self.ledger, self.company
        profile = profile_date(company.company_id, self.today)
        kept = []
        headcounts = [f for f in ledger.facts if f.metric == "employees" and f.period.end < profile]
        if headcounts:
            latest = max(headcounts, key=lambda f: f.period.end)
            latest.published_at = profile
            kept.append(latest)
        for fact in ledger.facts:
            if fact.period.annual and fact.metric == "revenue" and company.discloses_revenue:
                fact.published_at = fact.period.end + DAY * 95
                kept.append(fact)
        ledger.facts = kept
        ledger.quarters = []

    def _year(
        self,
        year: Period,
        revenue: float,
        gross: float,
        margin: float,
        capex: float,
        tax: float,
        cash_share: float,
        debt_share: float,
        assets_turn: float,
        per_employee: float,
        *,
        annual: bool,
    ) -> None:
        rng, company = self.rng, self.company
        rev = tenth(revenue)
        cogs = tenth(revenue * (1 - gross))
        gross_profit = rev - cogs
        operating_income = tenth(revenue * margin)
        opex = gross_profit - operating_income
        interest = tenth(revenue * debt_share * 0.05)
        pre_tax = operating_income - interest
        net = pre_tax - (tenth(pre_tax * Decimal(str(tax))) if pre_tax > 0 else Decimal(0))
        depreciation = tenth(revenue * rng.uniform(0.03, 0.06))
        cfo = net + depreciation + tenth(revenue * rng.gauss(0, 0.015))
        capex_value = tenth(revenue * capex * rng.uniform(0.8, 1.2))
        addbacks = tenth(revenue * rng.uniform(0.015, 0.06))
        flows = {
            "revenue": rev,
            "cost_of_revenue": cogs,
            "gross_profit": gross_profit,
            "operating_expenses": opex,
            "operating_income": operating_income,
            "net_income": net,
            "cash_from_operations": cfo,
            "capital_expenditures": capex_value,
            "adjusted_operating_income": operating_income + addbacks,
        }
        for metric, value in flows.items() if annual else ():
            basis = "non-GAAP" if metric == "adjusted_operating_income" else "GAAP"
            self._fact(metric, year, value, basis=basis, published=self._published(metric, year))
        if company.listed:
            returns = self._shareholder_flows(net, cfo - capex_value, depreciation)
            for metric, value in returns.items() if annual else ():
                self._fact(metric, year, value, published=self._published(metric, year))
            for q, values in self._split_returns(year, returns).items():
                for metric, value in values.items():
                    self._fact(metric, q, value, published=self._published(metric, q))
        split = self._split(year, flows)
        balances = {
            "cash": revenue * cash_share,
            "total_debt": revenue * debt_share,
            "total_assets": revenue / assets_turn,
        }
        year_quarters = [q for q in self.ledger.quarters if q.fiscal_year == year.fiscal_year]
        for q in year_quarters:
            for metric, value in balances.items():
                drift = rng.uniform(0.93, 1.07)
                quarter_value = tenth(value * drift) if q.quarter < 4 else tenth(value)
                self._fact(metric, q, quarter_value, published=self._published(metric, q))
        if annual:
            for metric, value in balances.items():
                self._fact(metric, year, tenth(value), published=self._published(metric, year))
            self._fact(
                "employees",
                year,
                Decimal(round(revenue / per_employee)),
                unit="employees",
                scale="units",
                published=self.ledger.reports[year.id],
            )
        if company.listed:
            self._issue_shares(year, year_quarters, annual=annual)
        for q, values in split.items():
            for metric, value in values.items():
                basis = "non-GAAP" if metric == "adjusted_operating_income" else "GAAP"
                self._fact(metric, q, value, basis=basis, published=self._published(metric, q))

    def _shareholder_flows(
        self, net: Decimal, free_cash_flow: Decimal, depreciation: Decimal
    ) -> dict[str, Decimal]:
        """A listed company's fiscal-year depreciation and amortization (the add-back already in
        its operating cash flow), dividends paid (a payout share of a positive net income) and
        share repurchases (a share of a positive free cash flow, at times more than it)."""
        rng = self.returns_rng
        if self.returns_policy is None:
            self.returns_policy = (
                rng.random() < 0.7,
                rng.uniform(0.25, 0.6),
                rng.random() < 0.6,
                rng.uniform(0.2, 0.7),
            )
        pays, payout, buys, buyback_share = self.returns_policy
        dividend_step, buyback_step = rng.uniform(0.9, 1.1), rng.uniform(0.6, 1.4)
        dividends = tenth(float(net) * payout * dividend_step) if pays and net > 0 else Decimal(0)
        buybacks = Decimal(0)
        if buys and free_cash_flow > 0:
            buybacks = tenth(float(free_cash_flow) * buyback_share * buyback_step)
        return {
            "depreciation_amortization": depreciation,
            "dividends_paid": dividends,
            "share_repurchases": buybacks,
        }

    def _split_returns(
        self, year: Period, returns: dict[str, Decimal]
    ) -> dict[Period, dict[str, Decimal]]:
        """The year's depreciation and amortization, dividends and repurchases by quarter, on the
        returns' own stream: the charge about evenly, the dividend in four equal payments, the
        repurchases unevenly; the fourth quarter takes the remainder (quarters sum to the year)."""
        rng = self.returns_rng
        weights = {
            "depreciation_amortization": [rng.uniform(0.23, 0.27) for _ in range(3)],
            "dividends_paid": [0.25] * 3,
            "share_repurchases": [rng.uniform(0.15, 0.3) for _ in range(3)],
        }
        out: dict[Period, dict[str, Decimal]] = {}
        for i, q in enumerate(quarters(year)):
            values = {}
            for metric, total in returns.items():
                if i < 3:
                    values[metric] = tenth(float(total) * weights[metric][i])
                else:
                    earlier = sum((tenth(float(total) * w) for w in weights[metric]), Decimal(0))
                    values[metric] = total - earlier
            if q in self.ledger.quarters:
                out[q] = values
        return out

    def _shares_base(self) -> float:
        if not hasattr(self, "_shares"):
            self._shares = round(self.rng.uniform(20, 400), 1)
        return self._shares

    def _issue_shares(self, year: Period, year_quarters: list[Period], *, annual: bool) -> None:
        """Quarter-end share counts before repurchases: the base count plus what employee share
        plans have issued, 0-0.3% of the base a quarter; a fiscal year's issuance is stated
        with its annual report. Repurchases retire shares once the year's prices exist
        (``retire_repurchased_shares``)."""
        base = self._shares_base()
        issued_in_year = Decimal(0)
        for q in year_quarters:
            issued = tenth(base * (self.rng.uniform(0.995, 1.005) - 0.995) * 0.3)
            self._issued += issued
            issued_in_year += issued
            self._fact(
                "shares_outstanding",
                q,
                tenth(base) + self._issued,
                unit="shares",
                published=self._published("shares_outstanding", q),
            )
        if annual:
            published = self._published("shares_issued", year)
            self._fact("shares_issued", year, issued_in_year, unit="shares", published=published)

    def retire_repurchased_shares(self) -> None:
        """After the prices: each quarter the price history covers retires, at its end, the
        shares its repurchases bought (``shares_retired``: the quarter's amount over its average
        close), so every later share count is lower by them; a fiscal year's annual report
        states the shares its quarters retired. Called once the ledger holds only what is
        published by today: a quarter whose figures are not out retires nothing yet."""
        ledger = self.ledger
        averages = average_closes(ledger.quarters, ledger.prices)
        repurchases = {f.period.id: f for f in ledger.facts if f.metric == "share_repurchases"}
        counts = {f.period.id: f for f in ledger.facts if f.metric == "shares_outstanding"}
        retired, by_year = Decimal(0), {}  # by_year: fiscal year id -> the shares it retired
        for q in ledger.quarters:
            if q.id in repurchases and q.id in averages:
                bought = shares_retired(repurchases[q.id].value, averages[q.id])
                retired += bought
                year_id = f"FY{q.fiscal_year}"
                by_year[year_id] = by_year.get(year_id, Decimal(0)) + bought
            if q.id in counts:
                counts[q.id].value -= retired
        for year in ledger.annual:
            if year.id in repurchases and year.id in by_year:
                amount = repurchases[year.id]
                self._fact(
                    "shares_repurchased",
                    year,
                    by_year[year.id],
                    unit="shares",
                    published=amount.published_at,
                )

    def _published(self, metric: str, period: Period) -> dt.date:
        """When ``metric`` for ``period`` is first published: at the earnings release for the
        figures a release states, else with the quarterly report, or for a fiscal year and its
        fourth quarter with the annual report."""
        if metric in RELEASED:
            return self.ledger.releases[period.id]
        if period.annual or period.quarter == 4:
            return self.ledger.reports[f"FY{period.fiscal_year}"]
        return self.ledger.reports[period.id]

    def _split(self, year: Period, flows: dict[str, Decimal]) -> dict[Period, dict[str, Decimal]]:
        """Quarterly flows that sum exactly to the year's (Q4 takes the remainder)."""
        rng = self.rng
        weights = [0.25 + rng.uniform(-0.03, 0.03) for _ in range(3)]
        out: dict[Period, dict[str, Decimal]] = {}
        year_quarters = quarters(year)
        sums = {metric: Decimal(0) for metric in flows}
        for i, q in enumerate(year_quarters):
            values = {}
            for metric in (
                "revenue",
                "cost_of_revenue",
                "operating_expenses",
                "net_income",
                "cash_from_operations",
                "capital_expenditures",
            ):
                if i < 3:
                    values[metric] = tenth(
                        float(flows[metric]) * (weights[i] + rng.gauss(0, 0.004))
                    )
                else:
                    values[metric] = flows[metric] - sums[metric]
                sums[metric] += values[metric]
            values["gross_profit"] = values["revenue"] - values["cost_of_revenue"]
            values["operating_income"] = values["gross_profit"] - values["operating_expenses"]
            addbacks = flows["adjusted_operating_income"] - flows["operating_income"]
            share = (
                tenth(float(addbacks) / 4) if i < 3 else addbacks - 3 * tenth(float(addbacks) / 4)
            )
            values["adjusted_operating_income"] = values["operating_income"] + share
            if q in self.ledger.quarters:
                out[q] = values
        return out

    # -- segments, product lines and regions ------------------------------------------------------

    def _members(self) -> None:
        company, rng, ledger = self.company, self.rng, self.ledger
        if not company.listed:
            return
        names = list(SEGMENT_NAMES[company.sector])
        rng.shuffle(names)
        ledger.segments = sorted(names[: rng.randint(2, 3)])
        words = list(PRODUCT_WORDS)
        rng.shuffle(words)
        base = company.short.split()[-1]
        ledger.products = sorted(f"{base} {w}" for w in words[: rng.randint(3, 4)])
        regions = list(REGIONS[company.country])
        ledger.regions = regions[: rng.randint(2, 4)]
        shares = {
            "segment": _shares(rng, len(ledger.segments)),
            "product": _shares(rng, len(ledger.products)),
            "region": _shares(rng, len(ledger.regions)),
        }
        for year in ledger.annual:
            revenue = self._value("revenue", year)
            published = ledger.reports[year.id]
            for dimension, members in (
                ("segment", ledger.segments),
                ("product", ledger.products),
                ("region", ledger.regions),
            ):
                drifted = [s * rng.uniform(0.93, 1.07) for s in shares[dimension]]
                total = sum(drifted)
                parts = [tenth(float(revenue) * s / total) for s in drifted[:-1]]
                parts.append(revenue - sum(parts, Decimal(0)))
                if dimension == "segment":  # inter-segment sales: segments sum above revenue
                    parts = [p + tenth(float(p) * rng.uniform(0.005, 0.03)) for p in parts]
                metric = {
                    "segment": "segment_revenue",
                    "product": "product_revenue",
                    "region": "regional_revenue",
                }[dimension]
                for member, value in zip(members, parts, strict=True):
                    self._fact(metric, year, value, member=member, published=published)

    def _guidance(self) -> None:
        """Each annual release guides next year's revenue; the second-quarter release updates it."""
        if not self.company.listed:
            return
        rng, ledger = self.rng, self.ledger
        for year in ledger.annual[1:]:
            revenue = float(self._value("revenue", year))
            nxt = fiscal_year(self.company.fiscal_year_end_month, year.fiscal_year + 1)
            centre = revenue * (1 + rng.gauss(0.05, 0.04))
            low, high = tenth(centre * 0.97), tenth(centre * 1.03)
            published = ledger.releases[year.id]
            self._fact("revenue_guidance_low", nxt, low, basis="guidance", published=published)
            self._fact("revenue_guidance_high", nxt, high, basis="guidance", published=published)
            update = ledger.releases.get(f"{nxt.id}-Q2")
            if update and rng.random() < 0.5:
                shift = rng.uniform(-0.04, 0.03)
                for metric, value in (
                    ("revenue_guidance_low", low),
                    ("revenue_guidance_high", high),
                ):
                    self._fact(
                        metric,
                        nxt,
                        tenth(float(value) * (1 + shift)),
                        basis="guidance",
                        published=update,
                        status="revised",
                        version=2,
                    )

    # -- restatements and revisions ---------------------------------------------------------------

    def _restatement(self) -> None:
        """About one listed company in eight restates the year before its latest reported one:
        the later annual report shows new figures in its prior-year column; the older report
        keeps the original ones."""
        rng, ledger = self.rng, self.ledger
        if not self.company.listed or rng.random() > 0.125 or len(ledger.annual) < 3:
            return
        reporting_years = [y for y in ledger.annual[2:] if ledger.reports[y.id] <= self.today]
        if not reporting_years:
            return
        report_year = rng.choice(reporting_years[-2:])
        restated = ledger.annual[ledger.annual.index(report_year) - 1]
        if restated.id in ledger.revised:
            return
        original = self._value("revenue", restated)
        delta = tenth(float(original) * -rng.uniform(0.01, 0.04))
        published = ledger.reports[report_year.id]
        self._restate_members(restated, original, original + delta, published)
        for metric in ("revenue", "gross_profit", "operating_income", "net_income"):
            old = self._latest(metric, restated)
            change = delta if metric != "net_income" else tenth(float(delta) * 0.78)
            self._fact(
                metric,
                restated,
                old.value + change,
                published=published,
                status="restated",
                version=old.version + 1,
                supersedes=old.fact_id,
            )
        ledger.restated[restated.id] = report_year.id

    def _restate_members(self, year: Period, old: Decimal, new: Decimal, published: dt.date):
        """Segment, product-line and regional revenue restated with the total (in proportion;
        product lines and regions still add up to revenue exactly)."""
        ledger = self.ledger
        for metric, members in (
            ("segment_revenue", ledger.segments),
            ("product_revenue", ledger.products),
            ("regional_revenue", ledger.regions),
        ):
            before = [self._latest(metric, year, member) for member in members]
            after = [tenth(float(f.value * new / old)) for f in before]
            if metric != "segment_revenue":
                after[-1] = new - sum(after[:-1], Decimal(0))
            for fact, value in zip(before, after, strict=True):
                self._fact(
                    metric,
                    year,
                    value,
                    member=fact.member,
                    published=published,
                    status="restated",
                    version=fact.version + 1,
                    supersedes=fact.fact_id,
                )

    def _revisions(self) -> None:
        """Some annual reports revise the earnings release's preliminary figures."""
        rng, ledger = self.rng, self.ledger
        if not self.company.listed:
            return
        for year in ledger.annual[1:]:
            if rng.random() > 0.12:
                continue
            report = ledger.reports[year.id]
            if report > self.today:  # the world does not know yet that the report will revise
                continue
            shift = rng.choice((-1, 1)) * rng.uniform(0.003, 0.015)
            revenue = self._latest("revenue", year)
            delta = tenth(float(revenue.value) * shift)
            if delta == 0:
                continue
            for metric in ("revenue", "gross_profit", "operating_income", "net_income"):
                old = self._latest(metric, year)
                change = delta if metric != "net_income" else tenth(float(delta) * 0.78)
                if old.published_at == report:  # first published in the report: final as is
                    old.value += change
                    continue
                old.status = "preliminary"
                self._fact(
                    metric,
                    year,
                    old.value + change,
                    published=report,
                    status="final",
                    version=old.version + 1,
                    supersedes=old.fact_id,
                    basis=old.basis,
                )
            ledger.revised.add(year.id)

    # -- helpers ----------------------------------------------------------------------------------

    def _fact(
        self,
        metric: str,
        period: Period,
        value: Decimal,
        *,
        basis: str = "GAAP",
        member: str = "",
        unit: str | None = None,
        scale: str = "millions",
        published: dt.date,
        status: str = "final",
        version: int = 1,
        supersedes: str | None = None,
    ) -> Fact:
        fact = Fact(
            fact_id=fact_id(self.company.company_id, metric, period.id, member, basis, version),
            company_id=self.company.company_id,
            metric=metric,
            period=period,
            value=value,
            unit=unit or self.company.currency,
            scale=scale,
            basis=basis,
            member=member,
            status=status,
            version=version,
            published_at=published,
            supersedes=supersedes,
        )
        self.ledger.facts.append(fact)
        return fact

    def _latest(self, metric: str, period: Period, member: str = "") -> Fact:
        matches = [
            f
            for f in self.ledger.facts
            if f.metric == metric and f.period == period and f.member == member
        ]
        return max(matches, key=lambda f: f.version)

    def _value(self, metric: str, period: Period) -> Decimal:
        return self._latest(metric, period).value


def average_closes(
    periods: list[Period], closes: list[tuple[dt.date, Decimal]]
) -> dict[str, Decimal]:
    """Each period's average close (the mean of its trading days' closes, to the cent, half up),
    for the periods the price history covers from their first day."""
    averages = {}
    first = closes[0][0] if closes else None
    for period in periods:
        inside = [close for day, close in closes if period.start <= day <= period.end]
        if inside and first is not None and first <= period.start:
            mean = sum(inside, Decimal(0)) / len(inside)
            averages[period.id] = mean.quantize(CENT, rounding=ROUND_HALF_UP)
    return averages


def shares_retired(amount: Decimal, average_close: Decimal) -> Decimal:
    """Millions of shares a repurchase of ``amount`` millions bought at ``average_close``, to a
    tenth of a million, half up."""
    return (amount / average_close).quantize(TENTH, rounding=ROUND_HALF_UP)


def _shares(rng: random.Random, n: int) -> list[float]:
    raw = [rng.uniform(0.5, 3.0) for _ in range(n)]
    raw.sort(reverse=True)
    return raw
