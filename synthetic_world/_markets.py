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
    price = rng.uniform(15, 180)
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
