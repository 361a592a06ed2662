"""Deterministic pools of names, addresses and items, drawn once per generation from Faker.

Faker is slow per call and its output depends on its provider data, so the generator draws small
pools from it up front (Faker is pinned exactly in pyproject.toml) and composes parties from the
pools with its own ``random.Random`` in the hot loops.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

INDUSTRY_WORDS = (
    "Supply", "Wholesale", "Manufacturing", "Electronics", "Logistics", "Foods", "Retail",
    "Distribution", "Systems", "Industries", "Components", "Trading", "Outfitters", "Hardware",
    "Furniture", "Textiles", "Motors", "Labs", "Media", "Packaging", "Machinery", "Plastics",
    "Office Products", "Engineering", "Instruments", "Farms", "Beverages", "Pharma", "Tooling",
    "Lighting",
)  # fmt: skip
ADJECTIVES = (
    "Northern", "Southern", "Pacific", "Atlantic", "Summit", "Pioneer", "Liberty", "Evergreen",
    "Golden", "Silver", "Blue Ridge", "Red River", "Granite", "Harbor", "Prairie", "Lakeside",
    "Metro", "Coastal", "Highland", "Keystone",
)  # fmt: skip
SUFFIXES = {
    "US": ("Inc.", "LLC", "Corp.", "Co.", ""),
    "DE": ("GmbH", "AG", "KG", "GmbH & Co. KG"),
    "GB": ("Ltd", "PLC", "Ltd", "& Co."),
}
DOMAIN_TLD = {"US": ".com", "DE": ".de", "GB": ".co.uk"}
LOCALES = {"US": "en_US", "DE": "de_DE", "GB": "en_GB"}

ITEMS = (
    ("A0001", "Speaker cable 10m", 1250), ("A0002", "Standard speaker", 18900),
    ("A0003", "Surround sound receiver", 54900), ("A0004", "Television 42in", 89900),
    ("A0005", "Projector bulb", 12900), ("A0006", "HDMI cable 2m", 1490),
    ("A0007", "Wall mount bracket", 4590), ("A0008", "Home theater system", 129900),
    ("A0009", "Subwoofer 12in", 39900), ("A0010", "Universal remote", 3490),
    ("B0001", "Office chair", 21900), ("B0002", "Standing desk", 64900),
    ("B0003", "Filing cabinet", 18500), ("B0004", "Monitor arm", 9900),
    ("B0005", "Conference table", 159000), ("C0001", "Steel bolts (box of 100)", 2450),
    ("C0002", "Hydraulic pump", 87500), ("C0003", "Conveyor belt segment", 42000),
    ("C0004", "Bearing assembly", 6800), ("C0005", "Control panel", 135000),
    ("D0001", "Printer paper (case)", 4200), ("D0002", "Toner cartridge", 8900),
    ("D0003", "Packaging film roll", 3100), ("D0004", "Shipping pallets (10)", 15000),
    ("E0001", "Maintenance service (hour)", 9500), ("E0002", "Installation service", 25000),
    ("E0003", "Calibration service", 18000), ("E0004", "Extended warranty", 14900),
)  # fmt: skip


@dataclass(frozen=True)
class Address:
    street: str
    city: str
    state: str
    zip: str
    country: str


@dataclass(frozen=True)
class RegionPool:
    region: str
    last_names: tuple[str, ...]
    first_names: tuple[str, ...]
    streets: tuple[str, ...]
    places: tuple[tuple[str, str, str], ...]  # city, state/county, zip
    country: str


@dataclass(frozen=True)
class Pools:
    regions: dict[str, RegionPool]
    employee_names: tuple[str, ...]


def build_pools(seed: int) -> Pools:
    """Draw the name and address pools for ``seed`` from Faker (about 0.3 s)."""
    from faker import Faker  # here: the world server imports this module's word lists, not Faker

    regions = {}
    for region, locale in LOCALES.items():
        fake = Faker(locale)
        fake.seed_instance(seed)
        places = []
        for _ in range(300):
            if region == "US":
                places.append((fake.city(), fake.state_abbr(), fake.zipcode()))
            elif region == "DE":
                places.append((fake.city(), fake.state(), fake.postcode()))
            else:
                places.append((fake.city(), fake.county(), fake.postcode()))
        regions[region] = RegionPool(
            region=region,
            last_names=_unique(fake.last_name, 400),
            first_names=_unique(fake.first_name, 250),
            streets=_unique(fake.street_name, 300),
            places=tuple(places),
            country={"US": "USA", "DE": "DEU", "GB": "GBR"}[region],
        )
    fake = Faker("en_US")
    fake.seed_instance(seed + 1)
    employees = _unique(lambda: f"{fake.first_name()} {fake.last_name()}", 400)
    return Pools(regions=regions, employee_names=employees)


def _unique(draw, count: int) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for _ in range(count * 6):
        seen.setdefault(draw(), None)
        if len(seen) >= count:
            break
    return tuple(seen)


class CompanyNamer:
    """Unique company names composed from a region's pools."""

    def __init__(self, rng: random.Random, pools: Pools) -> None:
        self._rng = rng
        self._pools = pools
        self._used: set[str] = set()

    def reserve(self, name: str) -> None:
        self._used.add(name)

    def name(self, region: str) -> str:
        rng, pool = self._rng, self._pools.regions[region]
        suffixes = SUFFIXES[region]
        for _ in range(50):
            pattern = rng.random()
            if pattern < 0.55:
                base = f"{rng.choice(pool.last_names)} {rng.choice(INDUSTRY_WORDS)}"
            elif pattern < 0.8:
                base = f"{rng.choice(ADJECTIVES)} {rng.choice(INDUSTRY_WORDS)}"
            else:
                base = f"{rng.choice(pool.last_names)} & {rng.choice(pool.last_names)}"
            suffix = rng.choice(suffixes)
            candidate = f"{base} {suffix}".strip()
            if candidate not in self._used:
                self._used.add(candidate)
                return candidate
        # Pools are exhausted only at extreme scales: make the name unique with a number.
        candidate = f"{candidate} {len(self._used)}"
        self._used.add(candidate)
        return candidate


def email_domain(name: str, region: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "", name.lower().replace("&", "and"))[:24] or "example"
    return f"{slug}{DOMAIN_TLD[region]}"


def phone(rng: random.Random, region: str) -> str:
    if region == "US":
        return f"{rng.randint(201, 989)}-555-{rng.randint(100, 199):04d}"
    if region == "DE":
        return f"+49 {rng.randint(30, 899)} {rng.randint(1000000, 9999999)}"
    return f"+44 {rng.randint(1000, 9999)} {rng.randint(100000, 999999)}"


def address(rng: random.Random, pools: Pools, region: str) -> Address:
    pool = pools.regions[region]
    city, state, zip_code = rng.choice(pool.places)
    number = rng.randint(1, 9999)
    street = rng.choice(pool.streets)
    street_line = f"{street} {number}" if region == "DE" else f"{number} {street}"
    return Address(street_line, city, state, zip_code, pool.country)
