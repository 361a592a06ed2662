"""ERP record links in answers: find them, parse them, and resolve them against the ERP database.

A record is cited as an http(s) URL or a bare path with an ``/erp/{LE}/{set}/{key}`` path, or as
the MCP resource ``erp://{LE}/{set}/{key}`` the server hands out over stdio: the same record either
way, so both count alike.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import threading
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from synthetic_erp._catalog import (
    ENTITY_SETS,
    RESOURCE_SCHEME,
    RecordRef,
    entity_set,
    is_resource_uri,
    parse_record_url,
    record_path,
)

ENTITY_SET_NAMES = frozenset(spec.name for spec in ENTITY_SETS)

_URL_RE = re.compile(r"https?://[^\s<>\"'`|\])]+", re.IGNORECASE)
_PATH_RE = re.compile(r"(?<![\w/.:])/erp/[^\s<>\"'`|\]),;]+")
_RESOURCE_RE = re.compile(r"(?<![\w.+\-/])erp://[^\s<>\"'`|\])]+", re.IGNORECASE)
_TRAILING = ".,;:!?*_"


@dataclass(frozen=True)
class CitedLink:
    text: str
    """The link as written."""
    ref: RecordRef | None
    """The record it addresses; None when it mentions ``/erp/`` or is an ``erp://`` URI but is not a
    record link."""

    @property
    def is_resource(self) -> bool:
        """Written as the MCP resource ``erp://...`` rather than a URL or path."""
        return is_resource_uri(self.text)

    @property
    def path(self) -> str | None:
        return canonical_path(self.ref) if self.ref else None


def canonical_path(ref: RecordRef) -> str:
    return record_path(ref.entity_set, ref.legal_entity, ref.key)


def parse_link(url: str) -> RecordRef | None:
    """The record a cited link points to (see :func:`synthetic_erp.parse_record_url`)."""
    return parse_record_url(url)


def normalize_record_path(path: str) -> str | None:
    """``/erp/LE/set/key`` in canonical form (quoted as the catalogue does); None if malformed."""
    ref = parse_link(path)
    return canonical_path(ref) if ref else None


def find_erp_links(text: str) -> list[CitedLink]:
    """Every URL or bare path that mentions ``/erp/`` and every ``erp://`` resource URI, in order,
    without duplicates: a record cited more than once (URL, path or resource URI) counts once."""
    return list(_find_erp_links(text))


@functools.lru_cache(maxsize=2048)
def _find_erp_links(text: str) -> tuple[CitedLink, ...]:
    """:func:`find_erp_links`, remembered: every citation rule reads the same answer's links."""
    seen: set[str] = set()
    links = []
    candidates = sorted(
        (m.start(), m.group(0))
        for pattern in (_URL_RE, _PATH_RE, _RESOURCE_RE)
        for m in pattern.finditer(text)
    )
    for _, raw in candidates:
        link = raw.rstrip(_TRAILING)
        if not _mentions_a_record(link) or link in seen:
            continue
        if not link.startswith("/") and any(link.endswith(s) for s in seen):
            continue
        seen.add(link)
        links.append(CitedLink(text=link, ref=parse_link(link)))
    # A bare path found inside a URL already seen is the same citation.
    urls = [link.text for link in links if "://" in link.text]
    links = [
        link
        for link in links
        if "://" in link.text or not any(url.endswith(link.text) for url in urls)
    ]
    return tuple(_one_link_per_record(links))


def _mentions_a_record(link: str) -> bool:
    """A path with ``/erp/`` or an ``erp://`` URI with something after the scheme (a record link
    or a malformed one; the bare scheme named in prose is neither)."""
    return "/erp/" in link or (is_resource_uri(link) and len(link) > len(RESOURCE_SCHEME))


def _one_link_per_record(links: list[CitedLink]) -> list[CitedLink]:
    """The first link to each record: a URL and the record's ``erp://`` URI (or two spellings of
    either) cite one record once."""
    cited: set[RecordRef] = set()
    kept = []
    for link in links:
        if link.ref is not None:
            if link.ref in cited:
                continue
            cited.add(link.ref)
        kept.append(link)
    return kept


@dataclass(frozen=True)
class RecordValues:
    """What one ERP record states: its money amounts (in its own currency, ``*_cur``, and in
    the accounting currency, ``*_acct``; other money columns in both) and its dates."""

    currency: str | None
    own: tuple[float, ...]
    accounting: tuple[float, ...]
    dates: tuple[dt.date, ...]


def _values_of(row: object) -> RecordValues:
    own, accounting, dates = [], [], []
    for name, value in vars(row).items():
        if isinstance(value, Decimal):
            if name.endswith("_acct"):
                accounting.append(float(value))
            elif "rate" not in name:
                own.append(float(value))
                if not name.endswith("_cur"):
                    accounting.append(float(value))
        elif isinstance(value, dt.date):
            dates.append(value if not isinstance(value, dt.datetime) else value.date())
    currency = getattr(row, "currency", None)
    return RecordValues(currency, tuple(own), tuple(accounting), tuple(dates))


class ErpResolver:
    """Looks cited records up in the ERP database (opened read-only), memoising answers."""

    def __init__(self, db_url: str) -> None:
        self.db_url = db_url
        self._engine: Engine | None = None
        self._known: dict[RecordRef, bool] = {}
        self._names: dict[tuple[str, RecordRef], str | None] = {}
        self._values: dict[tuple[str, RecordRef], RecordValues | None] = {}
        self._legal_entities: frozenset[str] | None = None
        self._lock = threading.Lock()

    def _get_engine(self) -> Engine:
        with self._lock:
            if self._engine is None:
                from synthetic_erp._db import open_engine

                self._engine = open_engine(self.db_url, read_only=True)
            return self._engine

    def exists(self, ref: RecordRef) -> bool:
        if ref in self._known:
            return self._known[ref]
        if ref.entity_set not in ("customers", "vendors"):  # one query serves both questions
            return self.record_values(ref) is not None
        spec = entity_set(ref.entity_set)
        table = spec.table
        key_column = getattr(table, spec.key_column)
        statement = select(key_column).where(
            table.legal_entity == ref.legal_entity, key_column == ref.key
        )
        with Session(self._get_engine()) as session:
            found = session.execute(statement.limit(1)).first() is not None
        self._known[ref] = found
        return found

    def record_values(self, ref: RecordRef) -> RecordValues | None:
        """The money amounts and dates the record ``ref`` holds; None when it does not exist."""
        key = ("values", ref)
        if key not in self._values:
            spec = entity_set(ref.entity_set)
            table = spec.table
            statement = select(table).where(
                table.legal_entity == ref.legal_entity, getattr(table, spec.key_column) == ref.key
            )
            with Session(self._get_engine()) as session:
                row = session.execute(statement.limit(1)).scalar()
                self._values[key] = None if row is None else _values_of(row)
            self._known[ref] = self._values[key] is not None
        return self._values[key]

    def party_name(self, ref: RecordRef) -> str | None:
        """The name of the customer or vendor ``ref`` points to; None for other records or
        when it does not exist."""
        if ref.entity_set not in ("customers", "vendors"):
            return None
        key = ("name", ref)
        if key not in self._names:
            spec = entity_set(ref.entity_set)
            table = spec.table
            statement = select(table.name).where(
                table.legal_entity == ref.legal_entity, getattr(table, spec.key_column) == ref.key
            )
            with Session(self._get_engine()) as session:
                self._names[key] = session.execute(statement.limit(1)).scalar()
        return self._names[key]

    def legal_entities(self) -> frozenset[str]:
        """The codes of the ERP's legal entities (USMF, ...)."""
        if self._legal_entities is None:
            from synthetic_erp import _schema

            with Session(self._get_engine()) as session:
                codes = session.execute(select(_schema.LegalEntity.code)).scalars()
                self._legal_entities = frozenset(codes)
        return self._legal_entities

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
