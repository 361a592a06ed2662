"""Fiscal periods, publication lags and trading days: the world's clock (docs/conventions.md).

A company's fiscal year is named after the calendar year in which it ends: with a June year end,
FY2025 runs from 2024-07-01 to 2025-06-30. Quarters are the fiscal year's four three-month blocks,
Q1 first. Every period has an id such as ``FY2025`` or ``FY2025-Q3``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

DAY = dt.timedelta(days=1)


def month_end(year: int, month: int) -> dt.date:
    """The last day of ``month`` in ``year``."""
    if month == 12:
        return dt.date(year, 12, 31)
    return dt.date(year, month + 1, 1) - DAY


def add_months(year: int, month: int, months: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + months
    return index // 12, index % 12 + 1


@dataclass(frozen=True, order=True)
class Period:
    """A fiscal year (``quarter`` 0) or one of its quarters."""

    fiscal_year: int
    quarter: int
    start: dt.date
    end: dt.date

    @property
    def id(self) -> str:
        return (
            f"FY{self.fiscal_year}"
            if self.quarter == 0
            else f"FY{self.fiscal_year}-Q{self.quarter}"
        )

    @property
    def annual(self) -> bool:
        return self.quarter == 0

    @property
    def label(self) -> str:
        """How documents name the period: "fiscal 2025" or "the third quarter of fiscal 2025"."""
        if self.annual:
            return f"fiscal {self.fiscal_year}"
        return f"the {ORDINALS[self.quarter]} quarter of fiscal {self.fiscal_year}"


ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth"}


def fiscal_year(year_end_month: int, fiscal_year_number: int) -> Period:
    """FY ``fiscal_year_number`` of a company whose year ends in ``year_end_month``."""
    start_year, start_month = add_months(fiscal_year_number, year_end_month, -11)
    return Period(
        fiscal_year_number,
        0,
        dt.date(start_year, start_month, 1),
        month_end(fiscal_year_number, year_end_month),
    )


def quarters(year: Period) -> list[Period]:
    """The four fiscal quarters of ``year``."""
    out = []
    for q in range(4):
        sy, sm = add_months(year.start.year, year.start.month, 3 * q)
        ey, em = add_months(sy, sm, 2)
        out.append(Period(year.fiscal_year, q + 1, dt.date(sy, sm, 1), month_end(ey, em)))
    return out


def fiscal_year_of(year_end_month: int, day: dt.date) -> int:
    """The number of the fiscal year that contains ``day``."""
    return day.year if day.month <= year_end_month else day.year + 1


def profile_date(company_id: str, today: dt.date) -> dt.date:
    """When a company's profile page was last updated: 5 to 40 days before the world's today."""
    import hashlib

    spread = int(hashlib.sha256(company_id.encode()).hexdigest()[:8], 16) % 36
    return today - DAY * (5 + spread)


PROFILE_HISTORY_DAYS = (365, 91)
"""Earlier updates of a company's profile page: about a year and a quarter before the latest (a
brief may be asked as of a day that far back)."""


def profile_dates(company_id: str, today: dt.date) -> list[dt.date]:
    """Every update of a company's profile page, oldest first: the earlier ones the archive
    keeps, and the latest (:func:`profile_date`)."""
    latest = profile_date(company_id, today)
    return [*(latest - DAY * days for days in PROFILE_HISTORY_DAYS), latest]


def profile_on(company_id: str, today: dt.date, day: dt.date) -> dt.date | None:
    """The profile update a reader sees on ``day``: the latest one published by then."""
    seen = [update for update in profile_dates(company_id, today) if update <= day]
    return seen[-1] if seen else None


def trading_days(start: dt.date, end: dt.date) -> list[dt.date]:
    """Weekdays from ``start`` to ``end`` (the world's exchanges close on weekends only)."""
    days, day = [], start
    while day <= end:
        if day.weekday() < 5:
            days.append(day)
        day += DAY
    return days
