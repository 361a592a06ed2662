"""The companies of a world: notable ERP customers and vendors, their peers and their decoys.

Notable companies are drawn mostly from the ERP's parties (one world company per distinct party
name; every ERP account of that name is recorded). Peers share a notable company's sector; decoys
carry a near-duplicate of a notable company's name, so that resolving a name is part of the task.
A notable customer becomes *distressed* only when its payment behaviour in the ERP is poor (a
credit hold, a Poor rating or most of its open balance overdue): its filings then show losses,
falling cash and downgrades, so the world and the ERP tell one story.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from rapidfuzz import fuzz, process

from synthetic_erp._pools import ADJECTIVES, INDUSTRY_WORDS, Pools

if TYPE_CHECKING:
    from sqlalchemy import Engine

SECTORS = {
    "Supply": "Wholesale & Distribution",
    "Wholesale": "Wholesale & Distribution",
    "Distribution": "Wholesale & Distribution",
    "Trading": "Wholesale & Distribution",
    "Manufacturing": "Industrials",
    "Industries": "Industrials",
    "Components": "Industrials",
    "Machinery": "Industrials",
    "Tooling": "Industrials",
    "Engineering": "Industrials",
    "Plastics": "Materials & Packaging",
    "Packaging": "Materials & Packaging",
    "Instruments": "Technology",
    "Electronics": "Technology",
    "Systems": "Technology",
    "Lighting": "Technology",
    "Logistics": "Transportation & Logistics",
    "Motors": "Transportation & Logistics",
    "Foods": "Food & Beverage",
    "Farms": "Food & Beverage",
    "Beverages": "Food & Beverage",
    "Retail": "Retail & Consumer",
    "Outfitters": "Retail & Consumer",
    "Hardware": "Retail & Consumer",
    "Furniture": "Retail & Consumer",
    "Office Products": "Retail & Consumer",
    "Textiles": "Retail & Consumer",
    "Labs": "Healthcare",
    "Pharma": "Healthcare",
    "Media": "Media & Communications",
}
"""Industry word of a company name -> its sector (peers share a sector)."""

SECTOR_PROFILE = {
    # gross margin range, operating margin range, capex share of revenue
    "Wholesale & Distribution": ((0.14, 0.24), (0.02, 0.07), (0.01, 0.03)),
    "Industrials": ((0.25, 0.40), (0.06, 0.15), (0.03, 0.07)),
    "Materials & Packaging": ((0.20, 0.32), (0.05, 0.12), (0.04, 0.08)),
    "Technology": ((0.40, 0.65), (0.08, 0.24), (0.03, 0.08)),
    "Transportation & Logistics": ((0.18, 0.30), (0.04, 0.10), (0.05, 0.10)),
    "Food & Beverage": ((0.28, 0.45), (0.06, 0.14), (0.03, 0.06)),
    "Retail & Consumer": ((0.30, 0.48), (0.04, 0.11), (0.02, 0.05)),
    "Healthcare": ((0.50, 0.72), (0.10, 0.26), (0.03, 0.07)),
    "Media & Communications": ((0.38, 0.60), (0.07, 0.20), (0.03, 0.09)),
}

COUNTRIES = {
    "USA": ("US", "USD", ("NYSE", "NASDAQ")),
    "DEU": ("DE", "EUR", ("XETRA",)),
    "GBR": ("GB", "GBP", ("LSE",)),
}
"""ISO country -> (name-pool region, reporting currency, exchanges)."""

FISCAL_YEAR_ENDS = ((12, 55), (6, 15), (9, 10), (3, 10), (1, 5), (10, 5))
"""Fiscal year-end month and weight: FY2025 is calendar 2025 for barely half the companies."""

_SUFFIX = re.compile(
    r"\s+(Inc\.|LLC|Corp\.|Co\.|GmbH & Co\. KG|GmbH|AG|KG|Ltd|PLC|& Co\.|plc|Group|Holdings)$"
)


def short_name(name: str) -> str:
    """The name without its legal suffix: "Lynch Hardware LLC" -> "Lynch Hardware"."""
    previous = None
    while previous != name:
        previous, name = name, _SUFFIX.sub("", name).strip()
    return name


NEAR_DUPLICATE = 90
"""Name keys at least this similar (rapidfuzz ratio, 0-100) are near-duplicates: "Forest
Wholesale" and "Forest Whole Sale" (equal keys), "Lynch Hardware" and "Lynch Hardwares"."""


def name_key(name: str) -> str:
    """The short name in lower-case letters and digits: what near-duplicates share."""
    return "".join(ch for ch in short_name(name).lower() if ch.isalnum())


def _distinct_names(names: list[str], n: int) -> list[str]:
    """The first ``n`` of ``names`` with no near-duplicate among those kept: the ERP may hold
    look-alike party names, and two world companies may look alike only as a planted decoy."""
    kept: list[str] = []
    keys: list[str] = []
    for name in names:
        if len(kept) == n:
            break
        key = name_key(name)
        if process.extractOne(key, keys, scorer=fuzz.ratio, score_cutoff=NEAR_DUPLICATE):
            continue
        kept.append(name)
        keys.append(key)
    return kept


def industry_of(name: str, rng: random.Random) -> str:
    for word in sorted(INDUSTRY_WORDS, key=len, reverse=True):
        if re.search(rf"\b{re.escape(word)}\b", name):
            return word
    return rng.choice(sorted(SECTORS))


@dataclass(frozen=True)
class ErpAccount:
    legal_entity: str
    party_type: str
    account: str


@dataclass
class Company:
    company_id: str
    name: str
    kind: str
    """notable, peer or decoy."""
    listed: bool
    industry: str
    country: str
    currency: str
    fiscal_year_end_month: int
    founded_year: int
    city: str
    ticker: str | None = None
    exchange: str | None = None
    erp_accounts: list[ErpAccount] = field(default_factory=list)
    peers: list[str] = field(default_factory=list)
    decoy_of: str | None = None
    distressed: bool = False
    erp_stress: float = 0.0
    """Share of the ERP open balance overdue, plus a half for a credit hold or a Poor rating."""
    discloses_revenue: bool = True
    """Private companies often publish no figures: their revenue is "not disclosed"."""
    size: float = 0.0
    """Revenue of the first modelled fiscal year, in millions of the reporting currency."""

    @property
    def sector(self) -> str:
        return SECTORS[self.industry]

    @property
    def short(self) -> str:
        return short_name(self.name)

    @property
    def region(self) -> str:
        return COUNTRIES[self.country][0]


@dataclass(frozen=True)
class ErpParty:
    legal_entity: str
    party_type: str
    account: str
    name: str
    country: str
    stress: float


def read_erp_parties(engine: Engine, today: dt.date) -> list[ErpParty]:
    """Every customer and vendor with its payment stress (customers only: the ERP sees how a
    customer pays, not how a vendor does)."""
    # Here, not at import: the world's server imports this module and never reads an ERP.
    from sqlalchemy import case, func, select

    from synthetic_erp import _schema as erp

    c, t = erp.Customer.__table__, erp.CustomerTransaction.__table__
    overdue = case((t.c.due_date < today, t.c.open_amount_acct), else_=0)
    parties: list[ErpParty] = []
    with engine.connect() as conn:
        balances = {
            (row.legal_entity, row.customer_account): (Decimal(row.open), Decimal(row.overdue))
            for row in conn.execute(
                select(
                    t.c.legal_entity,
                    t.c.customer_account,
                    func.sum(t.c.open_amount_acct).label("open"),
                    func.sum(overdue).label("overdue"),
                )
                .where(t.c.posted.is_(True), t.c.open_amount_acct > 0, t.c.txn_date <= today)
                .group_by(t.c.legal_entity, t.c.customer_account)
            )
        }
        customers = conn.execute(
            select(
                c.c.legal_entity,
                c.c.account,
                c.c.name,
                c.c.address_country,
                c.c.credit_hold,
                c.c.credit_rating,
            ).order_by(c.c.legal_entity, c.c.account)
        )
        for row in customers:
            open_total, overdue_total = balances.get((row.legal_entity, row.account), (0, 0))
            share = float(overdue_total / open_total) if open_total else 0.0
            penalty = 0.5 if (row.credit_hold or row.credit_rating == "Poor") else 0.0
            parties.append(
                ErpParty(
                    row.legal_entity,
                    "customer",
                    row.account,
                    row.name,
                    row.address_country,
                    round(share + penalty, 4),
                )
            )
        v = erp.Vendor.__table__
        for row in conn.execute(
            select(v.c.legal_entity, v.c.account, v.c.name, v.c.address_country).order_by(
                v.c.legal_entity, v.c.account
            )
        ):
            parties.append(
                ErpParty(row.legal_entity, "vendor", row.account, row.name, row.address_country, 0)
            )
    return parties


DISTRESS_THRESHOLD = 0.9
"""ERP stress at or above which a notable customer may be distressed (most of its balance overdue
and a hold or a Poor rating, or nearly all of it overdue)."""


@dataclass(frozen=True)
class UniverseSize:
    public: int = 150
    private: int = 100
    peers: int = 170
    decoys: int = 80
    from_erp: float = 0.85
    """Share of notable companies that are ERP customers or vendors."""
    distressed: int = 18


class UniverseBuilder:
    def __init__(self, rng: random.Random, pools: Pools, size: UniverseSize) -> None:
        self.rng = rng
        self.pools = pools
        self.size = size
        self.companies: list[Company] = []
        self._names: set[str] = set()
        self._tickers: set[str] = set()
        self._keys: list[str] = []
        """Name keys (short name, letters and digits only) of the world's companies so far."""

    # -- names ------------------------------------------------------------------------------------

    def _fresh_name(self, industry: str, region: str) -> str:
        rng, pool = self.rng, self.pools.regions[region]
        suffixes = {
            "US": ("Inc.", "Corp.", "Co.", "Group"),
            "DE": ("AG", "GmbH", "SE"),
            "GB": ("plc", "Ltd", "Group"),
        }[region]
        for _ in range(200):
            first = rng.choice(ADJECTIVES) if rng.random() < 0.5 else rng.choice(pool.last_names)
            candidate = f"{first} {industry} {rng.choice(suffixes)}"
            if short_name(candidate).lower() not in self._names and not self._near(candidate):
                return candidate
        raise RuntimeError("ran out of company names")  # pragma: no cover

    def _decoy_name(self, name: str) -> str:
        """A near-duplicate of ``name``: another suffix, a plural, one letter off."""
        rng, base = self.rng, short_name(name)
        words = base.split()
        options = [
            f"{base} Holdings",
            f"{base} Group",
            f"{words[0]} {' '.join(words[1:])}s" if len(words) > 1 else f"{base}s",
            f"{base} International",
        ]
        if len(words[0]) > 4:
            w = words[0]
            i = rng.randrange(1, len(w) - 1)
            options.append(" ".join([w[:i] + w[i + 1 :], *words[1:]]))
        rng.shuffle(options)
        for option in options:
            if short_name(option).lower() not in self._names and not self._near(option, name):
                suffix = rng.choice(("Inc.", "plc", "AG", "Ltd", "Corp."))
                return (
                    option
                    if option.endswith(("Holdings", "Group", "International"))
                    else (f"{option} {suffix}")
                )
        return f"{base} Partners"

    def _near(self, name: str, planted_for: str | None = None) -> bool:
        """Whether ``name`` is a near-duplicate of a company already in the world (other than
        ``planted_for``, the company a decoy imitates): only planted decoys may be one."""
        key = name_key(name)
        allowed = name_key(planted_for) if planted_for else None
        for other, _score, _ in process.extract(
            key, self._keys, scorer=fuzz.ratio, score_cutoff=NEAR_DUPLICATE, limit=None
        ):
            if other != allowed:
                return True
        return False

    def _ticker(self, name: str) -> str:
        letters = re.sub(r"[^A-Z]", "", short_name(name).upper())
        words = [re.sub(r"[^A-Z]", "", w.upper()) for w in short_name(name).split()]
        candidates = [
            "".join(w[0] for w in words if w)[:4],
            (words[0][:3] + (words[1][:1] if len(words) > 1 else "")) if words else "",
            letters[:4],
            letters[:2] + letters[-2:],
        ]
        for candidate in candidates:
            if len(candidate) >= 3 and candidate not in self._tickers:
                self._tickers.add(candidate)
                return candidate
        for _ in range(500):
            candidate = letters[:2] + "".join(self.rng.choice("ABCDEFGHKLMNPRSTVWXZ") for _ in "ab")
            if candidate not in self._tickers:
                self._tickers.add(candidate)
                return candidate
        raise RuntimeError("ran out of tickers")  # pragma: no cover

    # -- companies --------------------------------------------------------------------------------

    def _add(self, name: str, kind: str, listed: bool, country: str, **extra) -> Company:
        rng = self.rng
        region, currency, exchanges = COUNTRIES[country]
        company = Company(
            company_id=f"WC{len(self.companies) + 1:04d}",
            name=name,
            kind=kind,
            listed=listed,
            industry=extra.pop("industry", None) or industry_of(name, rng),
            country=country,
            currency=currency,
            fiscal_year_end_month=_weighted(rng, FISCAL_YEAR_ENDS),
            founded_year=rng.randint(1921, 2004) if listed else rng.randint(1995, 2019),
            city=rng.choice(self.pools.regions[region].places)[0],
            **extra,
        )
        if listed:
            company.ticker = self._ticker(name)
            company.exchange = rng.choice(exchanges)
        else:
            company.discloses_revenue = rng.random() < 0.3
        scale = (2.6, 1.2) if listed else (1.6, 0.9)  # log10 of revenue in millions
        company.size = round(10 ** rng.gauss(*scale), 1)
        company.size = min(max(company.size, 40.0 if listed else 6.0), 60_000.0)
        self.companies.append(company)
        self._names.add(short_name(name).lower())
        self._keys.append(name_key(name))
        return company

    def build(self, parties: list[ErpParty]) -> list[Company]:
        rng, size = self.rng, self.size
        by_name: dict[str, list[ErpParty]] = defaultdict(list)
        for party in parties:
            by_name[party.name].append(party)
            self._names.add(short_name(party.name).lower())
        names = sorted(by_name)
        rng.shuffle(names)
        notable = size.public + size.private
        from_erp = _distinct_names(names, round(notable * size.from_erp))
        kinds = [True] * size.public + [False] * size.private
        rng.shuffle(kinds)
        for i, listed in enumerate(kinds):
            if i < len(from_erp):
                group = by_name[from_erp[i]]
                country = group[0].country if group[0].country in COUNTRIES else "USA"
                self._add(
                    from_erp[i],
                    "notable",
                    listed,
                    country,
                    erp_accounts=[
                        ErpAccount(p.legal_entity, p.party_type, p.account) for p in group
                    ],
                    erp_stress=max(p.stress for p in group),
                )
            else:
                country = _weighted(rng, (("USA", 70), ("DEU", 15), ("GBR", 15)))
                industry = rng.choice(sorted(SECTORS))
                self._add(
                    self._fresh_name(industry, COUNTRIES[country][0]),
                    "notable",
                    listed,
                    country,
                    industry=industry,
                )
        self._mark_distressed()
        notables = list(self.companies)
        for target in rng.sample(notables, size.decoys):
            country = rng.choice(sorted(COUNTRIES))
            self._add(
                self._decoy_name(target.name),
                "decoy",
                rng.random() < 0.6,
                country,
                industry=target.industry,
                decoy_of=target.company_id,
            )
        by_sector: dict[str, list[Company]] = defaultdict(list)
        for company in notables:
            by_sector[company.sector].append(company)
        for i in range(size.peers):
            sector = sorted(by_sector)[i % len(by_sector)]
            industry = rng.choice(sorted(w for w, s in SECTORS.items() if s == sector))
            country = _weighted(rng, (("USA", 60), ("DEU", 20), ("GBR", 20)))
            peer = self._add(
                self._fresh_name(industry, COUNTRIES[country][0]),
                "peer",
                rng.random() < 0.75,
                country,
                industry=industry,
            )
            by_sector[sector].append(peer)
        self._link_peers(notables, by_sector)
        return self.companies

    def _mark_distressed(self) -> None:
        candidates = sorted(
            (c for c in self.companies if c.erp_stress >= DISTRESS_THRESHOLD),
            key=lambda c: (-c.erp_stress, c.company_id),
        )
        for company in candidates[: self.size.distressed]:
            company.distressed = True

    def _link_peers(self, notables: list[Company], by_sector: dict[str, list[Company]]) -> None:
        """Three peers per notable company, from its sector, listed peers first for listed
        companies (peer rankings compare reported figures)."""
        for company in notables:
            pool = [c for c in by_sector[company.sector] if c.company_id != company.company_id]
            if company.listed:
                pool.sort(key=lambda c: (not c.listed, c.company_id))
                listed = [c for c in pool if c.listed]
                chosen = self.rng.sample(listed, min(3, len(listed)))
            else:
                chosen = self.rng.sample(
                    sorted(pool, key=lambda c: c.company_id), min(3, len(pool))
                )
            company.peers = sorted(c.company_id for c in chosen)


def _weighted(rng: random.Random, options) -> object:
    values = [value for value, _ in options]
    weights = [weight for _, weight in options]
    return rng.choices(values, weights)[0]
