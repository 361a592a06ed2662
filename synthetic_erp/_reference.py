"""Reference data shared by every legal entity: companies, currencies, terms, groups, pools."""

from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import dataclass

MICRO = 1_000_000


@dataclass(frozen=True)
class LegalEntitySpec:
    code: str
    name: str
    currency: str
    country: str
    fiscal_year_start_month: int
    region: str
    share: float
    """Share of the parties that belong to this legal entity."""
    party_currencies: tuple[tuple[str, float], ...]


LEGAL_ENTITIES: tuple[LegalEntitySpec, ...] = (
    LegalEntitySpec(
        "USMF", "Contoso Entertainment System USA", "USD", "USA", 1, "US", 0.70,
        (("USD", 0.85), ("CAD", 0.07), ("EUR", 0.05), ("GBP", 0.03)),
    ),
    LegalEntitySpec(
        "USPI", "Contoso Consumer Products USA", "USD", "USA", 1, "US", 0.10,
        (("USD", 0.90), ("CAD", 0.10)),
    ),
    LegalEntitySpec(
        "DEMF", "Contoso Entertainment System Germany", "EUR", "DEU", 1, "DE", 0.10,
        (("EUR", 0.85), ("USD", 0.10), ("GBP", 0.05)),
    ),
    LegalEntitySpec(
        "GBSI", "Contoso Distribution UK", "GBP", "GBR", 4, "GB", 0.10,
        (("GBP", 0.85), ("EUR", 0.10), ("USD", 0.05)),
    ),
)  # fmt: skip
LE_BY_CODE = {le.code: le for le in LEGAL_ENTITIES}

CURRENCIES = (
    ("USD", "US dollar"),
    ("EUR", "Euro"),
    ("GBP", "Pound sterling"),
    ("CAD", "Canadian dollar"),
)
USD_VALUE = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "CAD": 0.73}
"""Starting value of one unit in USD; the daily series random-walk from here."""

CASH_DISCOUNTS = (
    ("2%10", "2% if paid within 10 days", 200, 10),
    ("1%15", "1% within 15 days", 100, 15),
)
"""code, description, percent in hundredths, days."""

PAYMENT_TERMS = (
    ("COD", "Cash on delivery", 0, None),
    ("Net10", "Net 10 days", 10, None),
    ("Net15", "Net 15 days", 15, None),
    ("Net30", "Net 30 days", 30, None),
    ("Net45", "Net 45 days", 45, None),
    ("Net60", "Net 60 days", 60, None),
    ("2%10Net30", "2% 10 days, net 30 days", 30, "2%10"),
    ("1%15Net45", "1% 15 days, net 45 days", 45, "1%15"),
)
TERMS_BY_ID = {t[0]: t for t in PAYMENT_TERMS}
DISCOUNT_BY_CODE = {d[0]: d for d in CASH_DISCOUNTS}
CUSTOMER_TERMS_WEIGHTS = (
    ("COD", 10), ("Net10", 7), ("Net15", 15), ("Net30", 25), ("Net45", 15), ("Net60", 8),
    ("2%10Net30", 12), ("1%15Net45", 8),
)  # fmt: skip
VENDOR_TERMS_WEIGHTS = (
    ("COD", 5), ("Net10", 5), ("Net15", 15), ("Net30", 30), ("Net45", 15), ("Net60", 10),
    ("2%10Net30", 12), ("1%15Net45", 8),
)  # fmt: skip

CUSTOMER_METHODS = (
    ("CHECK", "Check", "110110"),
    ("ELECTRONIC", "Electronic payment (ACH)", "110120"),
    ("WIRE", "Wire transfer", "110130"),
    ("CREDITCARD", "Credit card", "110140"),
)
VENDOR_METHODS = (
    ("CHECK", "Check", "110110"),
    ("ELECTRONIC", "Electronic payment (ACH)", "110120"),
    ("WIRE", "Wire transfer", "110130"),
)
CUSTOMER_GROUPS = (
    ("10", "Major customers"),
    ("20", "Retail customers"),
    ("30", "Wholesale customers"),
    ("80", "Other customers"),
    ("90", "Intercompany customers"),
)
VENDOR_GROUPS = (
    ("10", "Parts suppliers"),
    ("20", "Service providers"),
    ("30", "Raw materials"),
    ("40", "Wholesale suppliers"),
    ("50", "Utilities and facilities"),
)
COLLECTIONS_POOLS = (
    (
        "PASTDUE-30",
        "Past due 1-30 days",
        "Customers whose oldest open invoice is up to 30 days late",
    ),
    ("PASTDUE-90", "Past due 31-90 days", "Customers 31 to 90 days past due"),
    ("SEVERE", "Severely past due", "Customers more than 90 days past due or on credit hold"),
    ("KEYACCT", "Key accounts", "Major customers handled by senior collectors"),
)
CREDIT_TIERS = (1000, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000)
CREDIT_RATINGS = ("Excellent", "Good", "Fair", "Poor")
HOLD_REASONS = (
    "Invoice dispute under review",
    "Missing tax form (W-9)",
    "Bank details under verification",
    "Quality issue on recent deliveries",
)
DISPUTE_REASONS = (
    "Pricing discrepancy",
    "Damaged goods",
    "Short shipment",
    "Duplicate billing",
    "Freight charge disputed",
    "Quality issue",
)
DEDUCTION_REASONS = (
    "Promotional allowance",
    "Short shipment",
    "Damaged goods",
    "Freight deduction",
)
MATCH_FAILURES = (
    "Price variance: invoice unit price exceeds purchase order price",
    "Quantity variance: invoiced quantity exceeds received quantity",
    "No product receipt posted for the purchase order line",
)
ACTIVITY_PURPOSES = {
    "call": ("Follow up on overdue balance", "Confirm promise to pay", "Discuss disputed invoice"),
    "email": ("Send account statement", "Request remittance advice", "Send invoice copies"),
    "letter": ("Follow up on collection letter", "Final notice follow-up"),
    "appointment": ("Payment plan meeting", "Account review meeting"),
    "action": ("Review credit hold", "Escalate to legal", "Update credit limit review"),
}


def exchange_rate_series(
    rng: random.Random, first: dt.date, last: dt.date
) -> dict[tuple[str, str], dict[dt.date, int]]:
    """Daily rates in micro-units for every (currency -> accounting currency) pair that differ."""
    usd_value = {code: [] for code in USD_VALUE}
    days = (last - first).days + 1
    for code, start in USD_VALUE.items():
        value = start
        for _ in range(days):
            if code != "USD":
                value *= math.exp(rng.gauss(0.0, 0.004) + 0.02 * math.log(start / value))
            usd_value[code].append(value)
    accounting = sorted({le.currency for le in LEGAL_ENTITIES})
    series: dict[tuple[str, str], dict[dt.date, int]] = {}
    for source in USD_VALUE:
        for target in accounting:
            if source == target:
                continue
            series[(source, target)] = {
                first + dt.timedelta(days=i): round(
                    usd_value[source][i] / usd_value[target][i] * MICRO
                )
                for i in range(days)
            }
    return series


def to_accounting(cents: int, rate_micro: int) -> int:
    """``cents`` x rate rounded half away from zero to cents."""
    sign = -1 if cents < 0 else 1
    return sign * ((abs(cents) * rate_micro + MICRO // 2) // MICRO)
