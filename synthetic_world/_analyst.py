"""Answer keys of analyst items: several asks in one question, each keyed by its own facts.

An analyst kind (question_kinds.yaml, ``asks:``) words a business context and two to six asks;
its program here returns one :class:`~synthetic_world._keys.Key` whose facts carry the id of the
ask they key (``ExpectedFact.ask``). An "explain" ask is keyed as the figures it rests on and the
direction it must state ("operating expenses grew faster than revenue"); an opinion ask (a
recommendation) has no facts. Computations follow docs/conventions.md (CAGR, EV, bridges,
leverage, mix shifts, fiscal-year alignment).
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_EVEN, Decimal

from ledgerbench_core.dataset import ExpectedFact
from synthetic_world._calendar import fiscal_year_of
from synthetic_world._documents import CURRENCY_SIGNS, long_date, millions
from synthetic_world._keys import (
    Company,
    FactRow,
    Key,
    KeyContext,
    KeyError_,
    _growth,
    _margin,
    _market_cap,
    _need,
    _rounds,
    alignment_text,
    amount,
    as_of_text,
    money_text,
    percent,
    share,
    year_end_text,
)

RATIO_TOLERANCE = 0.01
"""Multiples (net debt / operating income, EV / operating income) have two decimals."""
PRICE_WINDOW_DAYS = 91
"""A valuation item's price change runs over the 91 days (about three months) to its day."""
TENTH = Decimal("0.1")


def _asked(facts: list[ExpectedFact], ask: str, dealbreaker: bool = False) -> list[ExpectedFact]:
    for fact in facts:
        fact.ask = ask
        fact.dealbreaker = dealbreaker
    return facts


def _pct(value: Decimal) -> Decimal:
    return value.quantize(TENTH, rounding=ROUND_HALF_EVEN)


def _ratio_fact(field_name: str, value: Decimal, period: str, sources: list[str]) -> ExpectedFact:
    return ExpectedFact(
        kind="ratio",
        field=field_name,
        value=float(value),
        tolerance=RATIO_TOLERANCE,
        unit="x",
        period=period,
        basis="GAAP",
        sources=sources,
    )


def _text(field_name: str, phrase: str, sources: list[str]) -> ExpectedFact:
    return ExpectedFact(kind="text", field=field_name, value=phrase, sources=sources)


def _year(ctx: KeyContext, c: Company, metric: str, fy: int, as_of: dt.date) -> FactRow:
    return _need(ctx.fact(c.company_id, metric, f"FY{fy}", as_of))


def _change(new: Decimal, old: Decimal) -> Decimal:
    if old <= 0:
        raise KeyError_("growth from a non-positive base")
    return _pct((new - old) / old * 100)


def _money(value: Decimal, c: Company) -> str:
    return money_text(value, c.currency)


# -- Financial Performance & Financial Health ------------------------------------------------------


def growth_trend(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    """Revenue over three fiscal years, both YoY growth rates, the two-year CAGR, and whether
    growth accelerated or slowed."""
    years = (fy - 2, fy - 1, fy)
    rows = [_year(ctx, c, "revenue", y, as_of) for y in years]
    revenue = [
        amount("revenue", row.value, c, f"FY{y}", ctx.sources([row], as_of))
        for row, y in zip(rows, years, strict=True)
    ]
    growth = [_change(rows[i].value, rows[i - 1].value) for i in (1, 2)]
    if growth[0] == growth[1]:
        raise KeyError_("equal growth both years")
    yoy = [
        percent(
            "revenue_growth",
            growth[i - 1],
            f"FY{years[i]}",
            ctx.sources([rows[i], rows[i - 1]], as_of),
        )
        for i in (1, 2)
    ]
    if rows[0].value <= 0:
        raise KeyError_("no CAGR from a non-positive base")
    cagr = _pct(((rows[2].value / rows[0].value).sqrt() - 1) * 100)
    # the filings stating each end year (one document rarely states both: a data vendor's table)
    ends = sorted({*revenue[0].sources, *revenue[2].sources})
    cagr_fact = percent("revenue_cagr", cagr, f"FY{fy - 2}-FY{fy}", ends)
    direction = "growth accelerated" if growth[1] > growth[0] else "growth slowed"
    facts = [
        *_asked(revenue, "revenue"),
        *_asked(yoy, "yoy"),
        *_asked([cagr_fact], "cagr", dealbreaker=True),
        *_asked([_text("growth_direction", direction, cagr_fact.sources)], "direction"),
    ]
    listing = ", ".join(
        f"fiscal {y} {_money(row.value, c)}" for row, y in zip(rows, years, strict=True)
    )
    text = (
        f"{c.name}'s revenue {as_of_text(as_of)}: {listing}. Year-over-year growth was "
        f"{growth[0]}% in fiscal {fy - 1} and {growth[1]}% in fiscal {fy}; the two-year CAGR "
        f"from fiscal {fy - 2} to fiscal {fy} was {cagr}% ((revenue {fy} / revenue {fy - 2})^(1/2)"
        f" - 1). Revenue {direction} in fiscal {fy}."
    )
    return Key(text, facts, period=f"FY{fy}", metrics=["revenue", "YoY growth", "CAGR"])


def margin_bridge(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    """Operating margin in two years, revenue and operating-expense growth, and which grew
    faster (the driver of the margin change)."""
    rows = {
        (metric, y): _year(ctx, c, metric, y, as_of)
        for metric in ("revenue", "operating_income", "operating_expenses")
        for y in (fy - 1, fy)
    }
    margins = []
    values = {}
    for y in (fy - 1, fy):
        revenue, income = rows["revenue", y], rows["operating_income", y]
        fact, value = share(
            "operating_margin",
            income.value,
            revenue.value,
            f"FY{y}",
            ctx.sources([revenue, income], as_of),
        )
        margins.append(fact)
        values[y] = value
    revenue_growth = _change(rows["revenue", fy].value, rows["revenue", fy - 1].value)
    opex_growth = _change(
        rows["operating_expenses", fy].value, rows["operating_expenses", fy - 1].value
    )
    if revenue_growth == opex_growth:
        raise KeyError_("revenue and operating expenses grew alike")
    revenue_sources = ctx.sources([rows["revenue", fy], rows["revenue", fy - 1]], as_of)
    opex_sources = ctx.sources(
        [rows["operating_expenses", fy], rows["operating_expenses", fy - 1]], as_of
    )
    growth = [
        percent("revenue_growth", revenue_growth, f"FY{fy}", revenue_sources),
        percent("operating_expense_growth", opex_growth, f"FY{fy}", opex_sources),
    ]
    driver = (
        "operating expenses grew faster than revenue"
        if opex_growth > revenue_growth
        else "revenue grew faster than operating expenses"
    )
    facts = [
        *_asked(margins[:1], "margins"),
        *_asked(margins[1:], "margins", dealbreaker=True),
        *_asked(growth, "growth"),
        *_asked([_text("margin_driver", driver, opex_sources)], "driver"),
    ]
    moved = "widened" if values[fy] > values[fy - 1] else "narrowed"
    text = (
        f"{c.name}'s GAAP operating margin {moved} from {values[fy - 1]}% in fiscal {fy - 1} to "
        f"{values[fy]}% in fiscal {fy}. Revenue changed {revenue_growth:+}% "
        f"({_money(rows['revenue', fy - 1].value, c)} to {_money(rows['revenue', fy].value, c)})"
        f" and operating expenses {opex_growth:+}% "
        f"({_money(rows['operating_expenses', fy - 1].value, c)} to "
        f"{_money(rows['operating_expenses', fy].value, c)}): {driver}."
    )
    return Key(
        text,
        facts,
        period=f"FY{fy}",
        metrics=["operating margin", "revenue growth", "operating-expense growth"],
        comparison=True,
    )


def cash_burn(ctx: KeyContext, c: Company, fy: int, as_of: dt.date) -> bool:
    """Whether the company's fiscal ``fy`` free cash flow, as published by ``as_of``, is
    negative (a burn a cash runway can be computed on), with the year before's cash published."""
    rows = [
        ctx.fact(c.company_id, metric, f"FY{year}", as_of)
        for metric, year in (
            ("cash_from_operations", fy),
            ("capital_expenditures", fy),
            ("cash", fy),
            ("cash", fy - 1),
        )
    ]
    if any(row is None for row in rows):
        return False
    cfo, capex, cash, cash0 = rows
    return cfo.value - capex.value < 0 and cash.value > 0 and cash.value != cash0.value


def cash_runway(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    """Cash at the year end, the year's free cash flow (negative: the burn), the runway (cash
    over the burn, in years) and the change in cash from the prior year end."""
    if not cash_burn(ctx, c, fy, as_of):
        raise KeyError_("no cash burn that year")
    cash, cash0 = _year(ctx, c, "cash", fy, as_of), _year(ctx, c, "cash", fy - 1, as_of)
    cfo = _year(ctx, c, "cash_from_operations", fy, as_of)
    capex = _year(ctx, c, "capital_expenditures", fy, as_of)
    period = f"FY{fy}"
    flow_sources = ctx.sources([cfo, capex], as_of)
    fcf = cfo.value - capex.value
    runway = (cash.value / -fcf).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    direction = "cash rose" if cash.value > cash0.value else "cash fell"
    prior_sources = ctx.sources([cash0], as_of)
    runway_sources = ctx.sources([cash, cfo, capex], as_of)
    facts = [
        *_asked([amount("cash", cash.value, c, period, ctx.sources([cash], as_of))], "cash"),
        *_asked(
            [
                amount("cash_from_operations", cfo.value, c, period, ctx.sources([cfo], as_of)),
                amount("capital_expenditures", capex.value, c, period, ctx.sources([capex], as_of)),
            ],
            "burn",
        ),
        *_asked([amount("free_cash_flow", fcf, c, period, flow_sources)], "burn", dealbreaker=True),
        *_asked([_ratio_fact("cash_runway_years", runway, period, runway_sources)], "runway"),
        *_asked(
            [
                amount("cash", cash0.value, c, f"FY{fy - 1}", prior_sources),
                _text("cash_direction", direction, prior_sources),
            ],
            "trend",
        ),
    ]
    text = (
        f"At the end of {year_end_text(c, fy)}, {c.name} held cash of {_money(cash.value, c)}. "
        f"In fiscal {fy} operating cash flow was {_money(cfo.value, c)} and capital "
        f"expenditures {_money(capex.value, c)}: free cash flow of {_money(fcf, c)}, a burn of "
        f"{_money(-fcf, c)} a year, so cash covers {runway}x that burn ({runway} years of "
        f"runway). A year earlier cash was {_money(cash0.value, c)}, so {direction}."
    )
    return Key(
        text,
        facts,
        period=period,
        metrics=["cash", "free cash flow", "cash runway"],
        comparison=True,
    )


def returns_year(ctx: KeyContext, c: Company, fy: int, as_of: dt.date) -> bool:
    """Whether fiscal ``fy``, as published by ``as_of``, has a positive free cash flow and net
    income and some cash returned to shareholders (a payout can be computed on it)."""
    metrics = (
        "cash_from_operations",
        "capital_expenditures",
        "dividends_paid",
        "share_repurchases",
        "net_income",
    )
    rows = [ctx.fact(c.company_id, metric, f"FY{fy}", as_of) for metric in metrics]
    if any(row is None for row in rows):
        return False
    cfo, capex, dividends, buybacks, net = (row.value for row in rows)
    returned = dividends + buybacks
    return cfo - capex > 0 and net > 0 and returned > 0 and returned != cfo - capex


def shareholder_returns(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    """Free cash flow, dividends paid and share repurchases in a fiscal year, the cash returned
    as a share of free cash flow, the dividend payout ratio (dividends over net income), and
    whether free cash flow covered the returns."""
    if not returns_year(ctx, c, fy, as_of):
        raise KeyError_("no payout to compute that year")
    cfo = _year(ctx, c, "cash_from_operations", fy, as_of)
    capex = _year(ctx, c, "capital_expenditures", fy, as_of)
    dividends = _year(ctx, c, "dividends_paid", fy, as_of)
    buybacks = _year(ctx, c, "share_repurchases", fy, as_of)
    net = _year(ctx, c, "net_income", fy, as_of)
    depreciation = _year(ctx, c, "depreciation_amortization", fy, as_of)
    shares = _need(ctx.fact(c.company_id, "shares_outstanding", f"FY{fy}-Q4", as_of))
    period = f"FY{fy}"
    fcf = cfo.value - capex.value
    earnings_per_share = _per_share(net.value, shares.value)
    dividends_per_share = _per_share(dividends.value, shares.value)
    reinvestment = (capex.value / depreciation.value).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_EVEN
    )
    returned = dividends.value + buybacks.value
    cash_payout = _pct(returned / fcf * 100)
    dividend_payout = _pct(dividends.value / net.value * 100)
    covered = (
        "free cash flow covered the returns"
        if returned < fcf
        else "the returns exceeded free cash flow"
    )
    flow_sources = ctx.sources([cfo, capex], as_of)
    return_sources = ctx.sources([dividends, buybacks], as_of)
    all_sources = ctx.sources([cfo, capex, dividends, buybacks], as_of)
    facts = [
        *_asked(
            [
                amount("cash_from_operations", cfo.value, c, period, ctx.sources([cfo], as_of)),
                amount("capital_expenditures", capex.value, c, period, ctx.sources([capex], as_of)),
            ],
            "fcf",
        ),
        *_asked([amount("free_cash_flow", fcf, c, period, flow_sources)], "fcf", dealbreaker=True),
        *_asked(
            [
                amount(
                    "depreciation_amortization",
                    depreciation.value,
                    c,
                    period,
                    ctx.sources([depreciation], as_of),
                ),
                _ratio_fact(
                    "capex_to_depreciation",
                    reinvestment,
                    period,
                    ctx.sources([capex, depreciation], as_of),
                ),
            ],
            "fcf",
        ),
        *_asked(
            [
                amount(
                    "dividends_paid", dividends.value, c, period, ctx.sources([dividends], as_of)
                ),
                amount(
                    "share_repurchases", buybacks.value, c, period, ctx.sources([buybacks], as_of)
                ),
                amount("shareholder_returns", returned, c, period, return_sources),
            ],
            "returns",
        ),
        *_asked(
            [
                percent("cash_returned_to_free_cash_flow", cash_payout, period, all_sources),
                percent(
                    "dividend_payout_ratio",
                    dividend_payout,
                    period,
                    ctx.sources([dividends, net], as_of),
                ),
            ],
            "payout",
        ),
        *_asked(
            [
                _per_share_fact(
                    "earnings_per_share",
                    earnings_per_share,
                    c,
                    period,
                    ctx.sources([net, shares], as_of),
                ),
                _per_share_fact(
                    "dividends_per_share",
                    dividends_per_share,
                    c,
                    period,
                    ctx.sources([dividends, shares], as_of),
                ),
            ],
            "per_share",
        ),
        *_asked([_text("returns_coverage", covered, all_sources)], "coverage"),
    ]
    text = (
        f"In fiscal {fy} {c.name}'s operating cash flow was {_money(cfo.value, c)} and capital "
        f"expenditures {_money(capex.value, c)}: free cash flow of {_money(fcf, c)}. Capital "
        f"expenditures were {reinvestment}x depreciation and amortization of "
        f"{_money(depreciation.value, c)}. It paid "
        f"dividends of {_money(dividends.value, c)} and repurchased shares for "
        f"{_money(buybacks.value, c)}, returning {_money(returned, c)} in all: {cash_payout}% of "
        f"free cash flow. Dividends were {dividend_payout}% of net income of "
        f"{_money(net.value, c)}, so {covered}. On the {millions(shares.value)} million shares "
        f"outstanding at the year end, earnings per share were "
        f"{_per_share_text(earnings_per_share, c)} and dividends per share "
        f"{_per_share_text(dividends_per_share, c)}."
    )
    return Key(
        text,
        facts,
        period=period,
        metrics=["free cash flow", "dividends paid", "share repurchases", "payout ratio"],
        comparison=True,
    )


PER_SHARE_TOLERANCE = 0.01
"""Per-share figures are keyed to the cent."""


def _per_share(total_millions: Decimal, shares_millions: Decimal) -> Decimal:
    """A fiscal year's total (in millions) over the shares outstanding at its end (in millions):
    currency units per share, to the cent (docs/conventions.md, "Per-share figures")."""
    if shares_millions <= 0:
        raise KeyError_("no shares outstanding")
    return (total_millions / shares_millions).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)


def _per_share_fact(
    field_name: str, value: Decimal, c: Company, period: str, sources: list[str]
) -> ExpectedFact:
    return ExpectedFact(
        kind="amount",
        field=field_name,
        value=float(value),
        tolerance=PER_SHARE_TOLERANCE,
        currency=c.currency,
        scale="units",
        unit="per share",
        period=period,
        basis="GAAP",
        sources=sources,
    )


def _per_share_text(value: Decimal, c: Company) -> str:
    sign = "-" if value < 0 else ""
    return f"{sign}{CURRENCY_SIGNS[c.currency]}{abs(value):.2f}"


def leverage_liquidity(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    """Cash, total debt and net debt at the year end, net debt over operating income, and the
    change in net debt from the prior year end."""
    debt, cash = _year(ctx, c, "total_debt", fy, as_of), _year(ctx, c, "cash", fy, as_of)
    income = _year(ctx, c, "operating_income", fy, as_of)
    debt0, cash0 = _year(ctx, c, "total_debt", fy - 1, as_of), _year(ctx, c, "cash", fy - 1, as_of)
    if income.value <= 0:
        raise KeyError_("no leverage multiple on an operating loss")
    net = debt.value - cash.value
    net0 = debt0.value - cash0.value
    if net == net0:
        raise KeyError_("net debt unchanged")
    period = f"FY{fy}"
    balance_sources = ctx.sources([debt, cash], as_of)
    position = [
        amount("cash", cash.value, c, period, ctx.sources([cash], as_of)),
        amount("total_debt", debt.value, c, period, ctx.sources([debt], as_of)),
    ]
    net_fact = amount("net_debt", net, c, period, balance_sources)
    multiple = (net / income.value).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    coverage = [
        amount("operating_income", income.value, c, period, ctx.sources([income], as_of)),
        _ratio_fact(
            "net_debt_to_operating_income",
            multiple,
            period,
            ctx.sources([debt, cash, income], as_of),
        ),
    ]
    prior_sources = ctx.sources([debt0, cash0], as_of)
    direction = "net debt rose" if net > net0 else "net debt fell"
    trend = [
        amount("net_debt", net0, c, f"FY{fy - 1}", prior_sources),
        _text("net_debt_direction", direction, prior_sources),
    ]
    facts = [
        *_asked(position, "position"),
        *_asked([net_fact], "position", dealbreaker=True),
        *_asked(coverage, "leverage"),
        *_asked(trend, "trend"),
    ]
    text = (
        f"At the end of {year_end_text(c, fy)}, {c.name} held cash of {_money(cash.value, c)} "
        f"against total debt of {_money(debt.value, c)}: net debt of {_money(net, c)}. With "
        f"fiscal {fy} operating income of {_money(income.value, c)}, net debt was {multiple}x "
        f"operating income. A year earlier net debt was {_money(net0, c)}, so {direction}."
    )
    return Key(
        text,
        facts,
        period=period,
        metrics=["cash", "total debt", "net debt", "net debt / operating income"],
        comparison=True,
    )


# -- Peers & Competitive Positioning ---------------------------------------------------------------

BENCHMARKS = {
    "operating_margin": ("GAAP operating margin", _margin),
    "revenue_growth": ("revenue growth", _growth),
}
"""Peer benchmark measures: words and the per-company computation (latest fiscal year)."""


def peer_benchmark(
    ctx: KeyContext, c: Company, as_of: dt.date, peers: list[str], measure: str
) -> Key:
    """One measure for the company and named peers, each on its own latest reported fiscal
    year (fiscal years are not aligned), ranked highest first."""
    words, compute = BENCHMARKS[measure]
    rows = []
    for company in [c, *(ctx.companies[p] for p in peers)]:
        fact, value, fy = compute(ctx, company, as_of)
        rows.append((value, company, fy, fact))
    values = [row[0] for row in rows]
    if len(set(values)) != len(values):
        raise KeyError_("tied values")
    ranked = sorted(rows, key=lambda r: (-r[0], r[1].company_id))
    order = ExpectedFact(
        kind="top_n", field=f"{measure}_ranking", value=[r[1].name for r in ranked], ordered=True
    )
    facts = [
        *_asked([rows[0][3]], "company", dealbreaker=True),
        *_asked([r[3] for r in rows[1:]], "peers"),
        *_asked([order], "ranking"),
    ]
    lines = "; ".join(
        f"{i}. {company.name} {value}% (fiscal {fy})"
        for i, (value, company, fy, _) in enumerate(ranked, 1)
    )
    text = (
        f"Ranked by {words} in each company's latest reported fiscal year "
        f"{as_of_text(as_of)}: {lines}."
    ) + alignment_text([(company, fy) for _, company, fy, _ in rows])
    return Key(text, facts, period="latest fiscal year", metrics=[words], comparison=True)


# -- Product & Service Intelligence, Geographic & Governmental Insights ---------------------------


def _restated(ctx: KeyContext, c: Company, fy: int, as_of: dt.date) -> bool:
    row = ctx.fact(c.company_id, "revenue", f"FY{fy}", as_of)
    return row is not None and row.status == "restated"


def mix_shift(
    ctx: KeyContext, c: Company, as_of: dt.date, fy: int, dimension: str = "product_revenue"
) -> Key:
    """Each product line's (region's) share of revenue in two fiscal years, and the one whose
    share rose most, with its change in percentage points."""
    members = c.products if dimension == "product_revenue" else c.regions
    if len(members) < 2 or _restated(ctx, c, fy, as_of) or _restated(ctx, c, fy - 1, as_of):
        raise KeyError_("no clean two-year mix")
    shares: dict[int, dict[str, tuple[ExpectedFact, Decimal]]] = {}
    for y in (fy - 1, fy):
        revenue = _year(ctx, c, "revenue", y, as_of)
        shares[y] = {}
        for member in members:
            part = _need(ctx.fact(c.company_id, dimension, f"FY{y}", as_of, member=member))
            shares[y][member] = share(
                "revenue_share",
                part.value,
                revenue.value,
                f"FY{y}",
                ctx.sources([part, revenue], as_of),
                subject=member,
            )
    moves = {m: shares[fy][m][1] - shares[fy - 1][m][1] for m in members}
    ranked = sorted(members, key=lambda m: (-moves[m], m))
    if moves[ranked[0]] == moves[ranked[1]]:
        raise KeyError_("tied share moves")
    winner = ranked[0]
    move_fact = percent(
        "share_change",
        moves[winner],
        f"FY{fy}",
        sorted({*shares[fy][winner][0].sources, *shares[fy - 1][winner][0].sources}),
        subject=winner,
    )
    gained = "gained" if moves[winner] > 0 else "lost"
    phrase = f"{winner} {gained} the most share"
    facts = [
        *_asked([shares[fy][m][0] for m in members], "current"),
        *_asked([shares[fy - 1][m][0] for m in members], "prior"),
        *_asked([move_fact], "shift", dealbreaker=True),
        *_asked([_text("largest_share_gain", phrase, move_fact.sources)], "shift"),
    ]
    kind = "product line" if dimension == "product_revenue" else "region"
    listing = "; ".join(
        f"{m}: {shares[fy - 1][m][1]}% -> {shares[fy][m][1]}% ({moves[m]:+} points)"
        for m in members
    )
    text = (
        f"{c.name}'s revenue by {kind}, share of consolidated revenue in fiscal {fy - 1} -> "
        f"fiscal {fy}: {listing}. {phrase} ({moves[winner]:+} percentage points)."
    )
    return Key(
        text,
        facts,
        period=f"FY{fy}",
        metrics=[f"{kind} revenue share", "mix shift"],
        comparison=True,
        global_context=dimension == "regional_revenue",
    )


def product_mix_shift(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    return mix_shift(ctx, c, as_of, fy, "product_revenue")


def regional_mix_shift(ctx: KeyContext, c: Company, as_of: dt.date, fy: int) -> Key:
    return mix_shift(ctx, c, as_of, fy, "regional_revenue")


# -- Investor & Funding Landscape ------------------------------------------------------------------


def funding_history(ctx: KeyContext, c: Company, as_of: dt.date) -> Key:
    """Every announced round (count and sizes), the total raised, the latest round's lead
    investor and post-money valuation, and the valuation step-up from the round before."""
    rounds = _rounds(ctx, c, as_of)
    if len(rounds) < 2:
        raise KeyError_("fewer than two rounds")
    sources = {r["event_id"]: ctx.event_sources([r["event_id"]], as_of) for r in rounds}
    all_sources = ctx.event_sources([r["event_id"] for r in rounds], as_of)
    history = [
        ExpectedFact(
            kind="count",
            field="funding_rounds",
            value=len(rounds),
            unit="rounds",
            period=as_of.isoformat(),
            sources=all_sources,
        ),
        *(
            amount(
                "round_amount",
                Decimal(r["amount"]),
                c,
                r["date"],
                sources[r["event_id"]],
                basis=None,
            )
            for r in rounds
        ),
    ]
    total = sum((Decimal(r["amount"]) for r in rounds), Decimal(0))
    latest, before = rounds[-1], rounds[-2]
    post, previous = Decimal(latest["post_money"]), Decimal(before["post_money"])
    step = _change(post, previous)
    latest_facts = [
        ExpectedFact(
            kind="name",
            field="lead_investor",
            value=latest["lead_investor"],
            sources=sources[latest["event_id"]],
        ),
        amount(
            "post_money_valuation", post, c, latest["date"], sources[latest["event_id"]], basis=None
        ),
    ]
    step_fact = percent(
        "valuation_step_up",
        step,
        latest["date"],
        sorted({*sources[latest["event_id"]], *sources[before["event_id"]]}),
    )
    step_fact.basis = None
    facts = [
        *_asked(history, "history"),
        *_asked(
            [amount("total_raised", total, c, as_of.isoformat(), all_sources, basis=None)],
            "total",
            dealbreaker=True,
        ),
        *_asked(latest_facts, "latest"),
        *_asked([step_fact], "step_up"),
    ]
    listing = "; ".join(
        f"{r['round_name']} {_money(Decimal(r['amount']), c)} on "
        f"{long_date(dt.date.fromisoformat(r['date']))} led by {r['lead_investor']} "
        f"(post-money {_money(Decimal(r['post_money']), c)})"
        for r in rounds
    )
    text = (
        f"{c.name} has announced {len(rounds)} funding rounds {as_of_text(as_of)}: {listing}. "
        f"Total raised: {_money(total, c)}. The latest round, led by {latest['lead_investor']}, "
        f"valued the company at {_money(post, c)} post-money, {step:+}% on the previous round's "
        f"{_money(previous, c)}. Reported talks the company denied are not rounds."
    )
    return Key(
        text,
        facts,
        period=as_of.isoformat(),
        metrics=["funding rounds", "total raised", "post-money valuation", "valuation step-up"],
    )


# private_runway: a private company's cash runway from its stated cash, burn and rounds --------

DAYS_PER_MONTH = Decimal("30.4375")
"""An average month (365.25 / 12 days): the months elapsed since a stated cash figure."""
MONTHS_TOLERANCE = 0.1
"""A runway in months has one decimal."""


def _cash_statement(ctx: KeyContext, c: Company, as_of: dt.date) -> dict | None:
    """The company's latest statement of cash and monthly burn published by ``as_of``."""
    statements = ctx.events(c.company_id, ("cash_update",), as_of)
    return statements[-1] if statements else None


def runway_months(
    cash: Decimal, raised: Decimal, burn: Decimal, counted: dt.date, as_of: dt.date
) -> Decimal:
    """Months of runway left on ``as_of`` (docs/conventions.md): the cash counted on
    ``counted`` plus the rounds raised since, over the monthly net burn, less the months
    elapsed since ``counted``; one decimal."""
    elapsed = Decimal((as_of - counted).days) / DAYS_PER_MONTH
    return ((cash + raised) / burn - elapsed).quantize(TENTH, rounding=ROUND_HALF_EVEN)


def _months_fact(field_name: str, value: Decimal, period: str, sources: list[str]) -> ExpectedFact:
    fact = _ratio_fact(field_name, value, period, sources)
    fact.unit, fact.tolerance, fact.basis = "months", MONTHS_TOLERANCE, None
    return fact


def _not_disclosed(field_name: str, day: dt.date) -> ExpectedFact:
    return ExpectedFact(
        kind="not_disclosed", field=field_name, value="not disclosed", period=day.isoformat()
    )


def private_runway(ctx: KeyContext, c: Company, as_of: dt.date) -> Key:
    """A private company's cash at its last stated date and the rounds raised since, its latest
    stated monthly net burn, the runway in months on the as-of date (a dealbreaker), and the total
    raised across its rounds with their lead investors. A company that has stated no cash by
    then: the cash, burn and runway are not disclosed (the total raised across two rounds or
    more is still keyed, a dealbreaker)."""
    rounds = _rounds(ctx, c, as_of)
    total = sum((Decimal(r["amount"]) for r in rounds), Decimal(0))
    all_sources = ctx.event_sources([r["event_id"] for r in rounds], as_of, "funding_announcement")
    investors = list(dict.fromkeys(r["lead_investor"] for r in rounds))
    funding = [
        amount("total_raised", total, c, as_of.isoformat(), all_sources, basis=None),
        ExpectedFact(
            kind="top_n",
            field="lead_investors",
            value=investors,
            ordered=False,
            sources=all_sources,
        ),
    ]
    listing = "; ".join(
        f"{r['round_name']} {_money(Decimal(r['amount']), c)} led by {r['lead_investor']}"
        for r in rounds
    )
    raised_text = (
        f"Across its {len(rounds)} announced round{'s' if len(rounds) > 1 else ''} ({listing}) "
        f"it has raised "
        f"{_money(total, c)}; talks it denied are not rounds."
    )
    statement = _cash_statement(ctx, c, as_of)
    if statement is None:
        if len(rounds) < 2:  # the total raised, its dealbreaker, must be a sum
            raise KeyError_("a single round and no cash stated")
        facts = [
            *_asked([_not_disclosed("cash", as_of)], "position"),
            *_asked([_not_disclosed("monthly_net_burn", as_of)], "burn"),
            *_asked([_not_disclosed("cash_runway_months", as_of)], "runway"),
            *_asked(funding, "funding", dealbreaker=True),
        ]
        text = (
            f"{c.name} is privately held and had not disclosed its cash or burn {as_of_text(as_of)}"
            f", so its cash, monthly net burn and runway are not disclosed. {raised_text}"
        )
        return Key(text, facts, period=as_of.isoformat(), metrics=["cash runway", "total raised"])
    counted = dt.date.fromisoformat(statement["cash_date"])
    cash, burn = Decimal(statement["amount"]), Decimal(statement["net_burn"])
    since = [r for r in rounds if dt.date.fromisoformat(r["date"]) > counted]
    raised = sum((Decimal(r["amount"]) for r in since), Decimal(0))
    months = runway_months(cash, raised, burn, counted, as_of)
    if months <= 0:
        raise KeyError_("the stated cash is spent by the as-of date")
    stated = ctx.event_sources([statement["event_id"]], as_of)
    since_sources = ctx.event_sources([r["event_id"] for r in since], as_of, "funding_announcement")
    position = [amount("cash", cash, c, counted.isoformat(), stated, basis=None)]
    since_text = "no round since"
    if since:
        window = f"{counted.isoformat()}/{as_of.isoformat()}"
        position += [
            amount("raised_since", raised, c, window, since_sources, basis=None),
            amount(
                "cash_with_rounds",
                cash + raised,
                c,
                window,
                sorted({*stated, *since_sources}),
                basis=None,
            ),
        ]
        since_text = f"{_money(raised, c)} raised since, {_money(cash + raised, c)} in all"
    facts = [
        *_asked(position, "position"),
        *_asked(
            [amount("monthly_net_burn", burn, c, counted.isoformat(), stated, basis=None)], "burn"
        ),
        *_asked(
            [
                _months_fact(
                    "cash_runway_months",
                    months,
                    as_of.isoformat(),
                    sorted({*stated, *since_sources}),
                )
            ],
            "runway",
            dealbreaker=True,  # the analysis itself: stating the stated figures is not enough
        ),
        *_asked(funding, "funding"),
    ]
    text = (
        f"{c.name} is privately held. Its latest statement {as_of_text(as_of)} put cash at "
        f"{_money(cash, c)} on {long_date(counted)} ({since_text}) and its monthly net burn at "
        f"{_money(burn, c)} (the gross burn, before customer receipts, is not the burn). "
        f"{(as_of - counted).days} days ({(Decimal((as_of - counted).days) / DAYS_PER_MONTH):.1f}"
        f" months) have passed since, so the runway {as_of_text(as_of)} is about {months} "
        f"months. {raised_text}"
    )
    return Key(
        text,
        facts,
        period=as_of.isoformat(),
        metrics=["cash", "monthly net burn", "cash runway", "total raised"],
    )


def valuation_snapshot(ctx: KeyContext, c: Company, as_of: dt.date, day: dt.date) -> Key:
    """Market capitalisation at a close, enterprise value with the balance sheet last reported
    by then, EV over the latest fiscal year's operating income, and the share price change over
    the 91 days to that close."""
    cap, traded, shares = _market_cap(ctx, c, day)
    traded_day = dt.date.fromisoformat(traded)
    years = ctx.reported_years(c.company_id, traded_day, "total_debt")
    if not years:
        raise KeyError_("no balance sheet by that day")
    fy = years[-1]
    debt, cash = _year(ctx, c, "total_debt", fy, traded_day), _year(ctx, c, "cash", fy, traded_day)
    income = _year(ctx, c, "operating_income", fy, traded_day)
    if income.value <= 0:
        raise KeyError_("no EV multiple on an operating loss")
    start = ctx.close_on(c.ticker or "", traded_day - dt.timedelta(days=PRICE_WINDOW_DAYS))
    end = ctx.close_on(c.ticker or "", traded_day)
    if start is None or end is None:
        raise KeyError_("no price at the window's start")
    ev = cap + debt.value - cash.value  # to the cent, like the market capitalisation
    multiple = (ev / income.value).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    change = _pct((end[1] - start[1]) / start[1] * 100)
    share_sources = ctx.sources([shares], as_of)
    balance_sources = ctx.sources([debt, cash], as_of)
    cap_fact = amount("market_cap", cap, c, traded, share_sources, basis=None)
    cap_fact.tolerance = max(cap_fact.tolerance, round(float(cap) * 0.001, 2))
    ev_fact = amount(
        "enterprise_value", ev, c, traded, sorted({*share_sources, *balance_sources}), basis=None
    )
    ev_fact.tolerance = cap_fact.tolerance
    multiple_fact = _ratio_fact(
        "ev_to_operating_income",
        multiple,
        f"FY{fy}",
        sorted({*ev_fact.sources, *ctx.sources([income], as_of)}),
    )
    multiple_fact.tolerance = max(RATIO_TOLERANCE, round(float(multiple) * 0.002, 2))
    price_fact = percent("share_price_change", change, f"{start[0]}/{end[0]}", [])
    price_fact.basis = None
    facts = [
        *_asked([cap_fact], "market_cap", dealbreaker=True),
        *_asked(
            [
                amount("net_debt", debt.value - cash.value, c, f"FY{fy}", balance_sources),
                ev_fact,
            ],
            "enterprise_value",
        ),
        *_asked([multiple_fact], "multiple"),
        *_asked([price_fact], "price"),
    ]
    text = (
        f"At the close on {long_date(traded_day)}, {c.name}'s market capitalisation was about "
        f"{_money(cap, c)} ({shares.value} million shares outstanding as last reported). With "
        f"net debt of {_money(debt.value - cash.value, c)} at the end of "
        f"{year_end_text(c, fy)} (the latest balance sheet by then), enterprise value was "
        f"about {_money(ev, c)}, or {multiple}x fiscal {fy} operating income of "
        f"{_money(income.value, c)}. The share price moved {change:+}% from the close on "
        f"{long_date(dt.date.fromisoformat(start[0]))} to the close on {long_date(traded_day)}."
    )
    return Key(
        text,
        facts,
        period=traded,
        metrics=["market capitalisation", "enterprise value", "EV / operating income"],
    )


# -- Geographic & Governmental Insights: regulatory exposure (issue 38) ---------------------------

REGULATORY_YEARS = 3
"""A regulatory-exposure item covers the three calendar years before its as-of date's year."""


def regulatory_window(as_of: dt.date) -> tuple[int, int]:
    """The first and last calendar year of an item's window (complete years before ``as_of``)."""
    return as_of.year - REGULATORY_YEARS, as_of.year - 1


def penalties(ctx: KeyContext, c: Company, first_year: int, last_year: int) -> list[dict]:
    """Fines and settlements dated within the calendar years (investigations are not)."""
    end = dt.date(last_year, 12, 31)
    return [
        e
        for e in ctx.events(c.company_id, ("regulatory_action",), end)
        if first_year <= int(e["date"][:4]) <= last_year
    ]


def _no_penalty_key(c: Company, first_year: int, last_year: int) -> Key:
    facts = [
        *_asked([ExpectedFact(kind="no_records", field="regulatory_penalties")], "actions"),
        *_asked([ExpectedFact(kind="no_records", field="penalties_paid")], "total", True),
        *_asked([ExpectedFact(kind="no_records", field="largest_penalty")], "largest"),
        *_asked([ExpectedFact(kind="no_records", field="penalty_trend")], "trend"),
    ]
    text = (
        f"No regulator fined {c.name} and it settled no regulatory investigation in calendar "
        f"{first_year}-{last_year}: no penalty to total, compare with operating income or "
        "trend. Investigations opened or closed without a penalty, and penalties outside the "
        "window, do not count."
    )
    return Key(
        text,
        facts,
        period=f"{first_year}-{last_year}",
        metrics=["regulatory penalties"],
        global_context=True,
    )


def regulatory_exposure(
    ctx: KeyContext, c: Company, as_of: dt.date, first_year: int, last_year: int
) -> Key:
    """Every fine and settlement dated in the calendar years (regulator, date, amount), their
    total, the largest as a share of the operating income of the fiscal year it fell in, and the
    yearly totals with whether the last year's exceeded the first's ("none" when there was no
    penalty)."""
    if last_year >= as_of.year:
        raise KeyError_("the window has not ended by the as-of date")
    found = penalties(ctx, c, first_year, last_year)
    if not found:
        return _no_penalty_key(c, first_year, last_year)
    window = f"{first_year}-{last_year}"
    sources = {e["event_id"]: ctx.event_sources([e["event_id"]], as_of) for e in found}
    all_sources = ctx.event_sources(list(sources), as_of)
    if len({e["date"] for e in found}) != len(found):
        raise KeyError_("two penalties on one day")
    values = {e["event_id"]: Decimal(e["amount"]) for e in found}
    listing = [
        ExpectedFact(
            kind="count",
            field="regulatory_penalties",
            value=len(found),
            unit="penalties",
            period=window,
            sources=all_sources,
        ),
        ExpectedFact(
            kind="name",
            field="regulator",
            value=found[0]["regulator"].removeprefix("the "),
            sources=all_sources,
        ),
    ]
    for e in found:
        listing.append(
            amount(
                "penalty", values[e["event_id"]], c, e["date"], sources[e["event_id"]], basis=None
            )
        )
        listing.append(
            ExpectedFact(
                kind="date",
                field="penalty_date",
                value=e["date"],
                period=e["date"],
                sources=sources[e["event_id"]],
            )
        )
    total = sum(values.values(), Decimal(0))
    ranked = sorted(found, key=lambda e: -values[e["event_id"]])
    if len(ranked) > 1 and values[ranked[0]["event_id"]] == values[ranked[1]["event_id"]]:
        raise KeyError_("two largest penalties")
    largest = ranked[0]
    fy = fiscal_year_of(c.fiscal_year_end_month, dt.date.fromisoformat(largest["date"]))
    income = _year(ctx, c, "operating_income", fy, as_of)
    if income.value <= 0:
        raise KeyError_("no share of an operating loss")
    income_sources = ctx.sources([income], as_of)
    ratio_fact, ratio = share(
        "largest_penalty_to_operating_income",
        values[largest["event_id"]],
        income.value,
        f"FY{fy}",
        sorted({*sources[largest["event_id"]], *income_sources}),
    )
    yearly = {
        y: sum((values[e["event_id"]] for e in found if int(e["date"][:4]) == y), Decimal(0))
        for y in range(first_year, last_year + 1)
    }
    if yearly[first_year] == yearly[last_year]:
        raise KeyError_("no direction: the first and last years' totals are equal")
    direction = "penalties rose" if yearly[last_year] > yearly[first_year] else "penalties fell"
    # a year without a penalty has no document stating a figure: only its direction is keyed
    trend = [
        amount(
            "penalties",
            value,
            c,
            str(y),
            ctx.event_sources([e["event_id"] for e in found if int(e["date"][:4]) == y], as_of),
            basis=None,
        )
        for y, value in yearly.items()
        if value
    ]
    facts = [
        *_asked(listing, "actions"),
        *_asked(
            [amount("total_penalties", total, c, window, all_sources, basis=None)], "total", True
        ),
        *_asked(
            [amount("operating_income", income.value, c, f"FY{fy}", income_sources), ratio_fact],
            "largest",
        ),
        *_asked([*trend, _text("penalty_direction", direction, all_sources)], "trend"),
    ]
    described = "; ".join(
        f"{long_date(dt.date.fromisoformat(e['date']))}: "
        f"{'settlement' if e.get('action') == 'settlement' else 'fine'} of "
        f"{_money(values[e['event_id']], c)} ({e.get('matter') or 'sales practices'})"
        for e in found
    )
    by_year = ", ".join(f"{y} {_money(v, c)}" for y, v in yearly.items())
    text = (
        f"In calendar {first_year}-{last_year} {found[0]['regulator']} imposed {len(found)} "
        f"{'penalty' if len(found) == 1 else 'penalties'} on {c.name}: {described}. Total: "
        f"{_money(total, c)}. The largest, "
        f"{_money(values[largest['event_id']], c)}, was {ratio}% of fiscal {fy} GAAP operating "
        f"income of {_money(income.value, c)}. By year: {by_year}, so {direction} from "
        f"{first_year} to {last_year}. Investigations without a penalty do not count."
    )
    return Key(
        text,
        facts,
        period=window,
        metrics=["regulatory penalties", "total penalties", "penalty / operating income"],
        comparison=True,
        global_context=True,
    )


PROGRAMS = {
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
}
"""Analyst kind -> its key program."""
