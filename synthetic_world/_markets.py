"""Daily closing prices of listed companies (market cap = close x shares outstanding)."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import ROUND_HALF_EVEN, Decimal

from synthetic_world._calendar import trading_days
from synthetic_world._facts import CompanyLedger
from synthetic_world._universe import Company

CENT = Decimal("0.01")


def build_prices(company: Company, ledger: CompanyLedger, start: dt.date, today: dt.date) -> None:
    """A geometric random walk from a price that fits the company's size; distressed companies
    lose value over their last year and a half."""
    if not company.listed:
        return
    rng = random.Random(f"prices:{company.company_id}")
    price = _opening_price(rng, ledger)
    volatility = rng.uniform(0.011, 0.024)
    drift = rng.gauss(0.0003, 0.0003)
    closes = []
    distress_from = today - dt.timedelta(days=540)
    for day in trading_days(start, today - dt.timedelta(days=1)):
        step = drift - (0.0016 if company.distressed and day >= distress_from else 0.0)
        price *= math.exp(rng.gauss(step, volatility))
        price = max(price, 0.5)
        closes.append((day, Decimal(str(price)).quantize(CENT, rounding=ROUND_HALF_EVEN)))
    ledger.prices = closes


def _opening_price(rng: random.Random, ledger: CompanyLedger) -> float:
    """A price that fits the company's size: a market capitalisation of 9-22 times the first
    modelled year's operating income (0.3-0.9 times its revenue on an operating loss), over the
    first reported share count, so valuation multiples (EV / operating income) stay plausible."""
    first = ledger.annual[1].id if len(ledger.annual) > 1 else None
    figures = {
        f.metric: float(f.value)
        for f in ledger.facts
        if f.period.id == first and f.version == 1 and f.basis == "GAAP" and not f.member
    }
    shares = next((float(f.value) for f in ledger.facts if f.metric == "shares_outstanding"), None)
    if not shares or "revenue" not in figures:
        return rng.uniform(15, 180)
    income = figures.get("operating_income", 0.0)
    cap = income * rng.uniform(9, 22) if income > 0 else figures["revenue"] * rng.uniform(0.3, 0.9)
    return max(cap / shares, 1.0)
