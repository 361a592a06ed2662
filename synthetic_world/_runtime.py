"""What the world's tools share while the server runs: read-only connections, the world's facts
and an in-memory company index for name, misspelling and ticker resolution."""

from __future__ import annotations

import bisect
import datetime as dt
import json
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rapidfuzz import fuzz, process, utils

from synthetic_world._documents import LINK_BASE
from synthetic_world._store import WORLD_FORMAT_VERSION
from synthetic_world._universe import short_name


class WorldUnavailable(ValueError):
    """The world database is missing or is not a world; the message says how to make one."""


@dataclass(frozen=True)
class CompanyRow:
    company_id: str
    name: str
    short_name: str
    kind: str
    listed: bool
    ticker: str | None
    exchange: str | None
    industry: str
    sector: str
    country: str
    city: str
    currency: str
    fiscal_year_end_month: int
    founded_year: int
    ceo: str
    segments: tuple[str, ...]
    erp_accounts: tuple[tuple[str, str, str], ...]
    peers: tuple[str, ...]


def _compact(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


@dataclass
class CompanyIndex:
    """Every company of the world, resolvable by id, ticker, exact name, short name or typo."""

    rows: list[CompanyRow] = field(default_factory=list)
    by_id: dict[str, CompanyRow] = field(default_factory=dict)
    by_ticker: dict[str, CompanyRow] = field(default_factory=dict)
    _keys: list[str] = field(default_factory=list)
    """Processed short names, aligned with ``rows``."""
    _compacts: dict[str, list[CompanyRow]] = field(default_factory=dict)

    def add(self, row: CompanyRow) -> None:
        self.rows.append(row)
        self.by_id[row.company_id] = row
        if row.ticker:
            self.by_ticker[row.ticker] = row
        self._keys.append(utils.default_process(row.short_name))
        for key in {_compact(row.name), _compact(row.short_name)}:
            self._compacts.setdefault(key, []).append(row)

    def resolve(self, text: str, limit: int = 5) -> list[tuple[CompanyRow, float, str]]:
        """Ranked ``(company, score 0-100, how)``: id, ticker, exact name, then fuzzy names."""
        query = text.strip()
        found: dict[str, tuple[CompanyRow, float, str]] = {}
        upper = query.upper().removeprefix("$")
        if upper in self.by_id:
            found[upper] = (self.by_id[upper], 100.0, "company_id")
        if upper in self.by_ticker:
            row = self.by_ticker[upper]
            found.setdefault(row.company_id, (row, 100.0, "ticker"))
        for row in self._compacts.get(_compact(query), []):
            # Written exactly as the company's name or short name: that company alone scores 99;
            # another whose name differs only in spacing or punctuation ranks below it.
            exact = query.casefold() in (row.name.casefold(), row.short_name.casefold())
            found.setdefault(row.company_id, (row, 99.0 if exact else 98.0, "name"))
        processed = utils.default_process(short_name(query))
        if processed:
            for _, score, i in process.extract(
                processed, self._keys, scorer=fuzz.WRatio, limit=limit * 3, score_cutoff=70
            ):
                row = self.rows[i]
                if row.company_id not in found:
                    exactness = fuzz.ratio(processed, self._keys[i])
                    found[row.company_id] = (row, round(min(score, exactness) * 0.97, 1), "fuzzy")
        ranked = sorted(found.values(), key=lambda item: (-item[1], item[0].company_id))
        return ranked[:limit]


@dataclass
class WorldRuntime:
    path: Path
    meta: dict[str, str]
    today: dt.date
    first_day: dt.date
    """The earliest publication date: searches before it find nothing."""
    companies: CompanyIndex
    link_base: str
    _local: threading.local = field(default_factory=threading.local)
    _opened: list[sqlite3.Connection] = field(default_factory=list)
    _opened_lock: threading.Lock = field(default_factory=threading.Lock)
    _shares: dict[str, tuple[list[str], list[float], list[str]]] = field(default_factory=dict)
    """ticker -> (publication dates, shares outstanding in millions, the filing stating each)."""

    @property
    def world_id(self) -> str:
        return self.meta["world_id"]

    @property
    def snapshot_hash(self) -> str:
        return self.meta.get("snapshot_hash", "")

    @classmethod
    def open(cls, path: Path, link_base: str | None = None) -> WorldRuntime:
        conn = connect_read_only(path)
        try:
            meta = dict(conn.execute("SELECT key, value FROM world_meta"))
            index = CompanyIndex()
            erp: dict[str, list[tuple[str, str, str]]] = {}
            for cid, le, party_type, account in conn.execute(
                "SELECT company_id, legal_entity, party_type, account FROM company_erp "
                "ORDER BY company_id, legal_entity, party_type, account"
            ):
                erp.setdefault(cid, []).append((le, party_type, account))
            peers: dict[str, list[str]] = {}
            for cid, peer in conn.execute(
                "SELECT company_id, peer_id FROM company_peer ORDER BY 1, 2"
            ):
                peers.setdefault(cid, []).append(peer)
            for row in conn.execute(
                "SELECT company_id, name, short_name, kind, listed, ticker, exchange, industry, "
                "sector, country, city, currency, fiscal_year_end_month, founded_year, ceo, "
                "segments FROM company ORDER BY company_id"
            ):
                index.add(
                    CompanyRow(
                        *row[:4],
                        bool(row[4]),
                        *row[5:15],
                        tuple(json.loads(row[15])),
                        tuple(erp.get(row[0], ())),
                        tuple(peers.get(row[0], ())),
                    )
                )
            first = conn.execute("SELECT MIN(published_at) FROM document").fetchone()[0]
            shares = _shares_by_ticker(conn)
        finally:
            conn.close()
        return cls(
            path=path,
            meta=meta,
            today=dt.date.fromisoformat(meta["as_of"]),
            first_day=dt.date.fromisoformat(first),
            companies=index,
            link_base=(link_base or LINK_BASE).rstrip("/"),
            _shares=shares,
        )

    def connection(self) -> sqlite3.Connection:
        """This thread's read-only connection (tools run in worker threads)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect_read_only(self.path)
            self._local.conn = conn
            with self._opened_lock:
                self._opened.append(conn)
        return conn

    def url(self, doc_id: str) -> str:
        return f"{self.link_base}/{self.world_id}/docs/{doc_id}"

    def shares_on(self, ticker: str, day: str) -> tuple[float, str] | None:
        """Shares outstanding (millions) as last reported on or before ``day``, and the link of
        the filing that reported them."""
        dates, values, docs = self._shares.get(ticker, ([], [], []))
        i = bisect.bisect_right(dates, day)
        return (values[i - 1], self.url(docs[i - 1])) if i else None

    def close(self) -> None:
        with self._opened_lock:
            for conn in self._opened:
                conn.close()
            self._opened.clear()
        self._local = threading.local()


def _shares_by_ticker(
    conn: sqlite3.Connection,
) -> dict[str, tuple[list[str], list[float], list[str]]]:
    out: dict[str, tuple[list[str], list[float], list[str]]] = {}
    rows = conn.execute(
        "SELECT c.ticker, f.published_at, f.value, min(d.doc_id) FROM fact f "
        "JOIN company c USING (company_id) JOIN document_fact df ON df.fact_id = f.fact_id "
        "JOIN document d ON d.doc_id = df.doc_id AND d.published_at = f.published_at "
        "WHERE f.metric = 'shares_outstanding' AND c.ticker IS NOT NULL "
        "GROUP BY f.fact_id ORDER BY c.ticker, f.published_at, f.period_id"
    )
    for ticker, published, value, doc_id in rows:
        dates, values, docs = out.setdefault(ticker, ([], [], []))
        dates.append(published)
        values.append(float(value))
        docs.append(doc_id)
    return out


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection, or WorldUnavailable naming how to make the world."""
    path = Path(path)
    if not path.exists():
        raise WorldUnavailable(
            f"world database {path} does not exist; create it with: python -m synthetic_world "
            f"generate --db sqlite:///{path}"
        )
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    try:
        version = conn.execute(
            "SELECT value FROM world_meta WHERE key = 'format_version'"
        ).fetchone()
    except sqlite3.DatabaseError as error:
        conn.close()
        raise WorldUnavailable(
            f"{path} is not a research world ({error}); create one with: python -m "
            f"synthetic_world generate --db sqlite:///{path}"
        ) from None
    if version is None or int(version[0]) != WORLD_FORMAT_VERSION:
        conn.close()
        raise WorldUnavailable(
            f"{path} holds world format {version[0] if version else 'unknown'}, this LedgerBench "
            f"reads format {WORLD_FORMAT_VERSION}; regenerate it with: python -m synthetic_world "
            f"generate --db sqlite:///{path} --overwrite"
        )
    return conn


class WorldHolder:
    """Opens the runtime once (lazily, thread-safe) and closes it at shutdown."""

    def __init__(self, path: Path, link_base: str | None = None) -> None:
        self.path = Path(path)
        self.link_base = link_base
        self._runtime: WorldRuntime | None = None
        self._lock = threading.Lock()

    def get(self) -> WorldRuntime:
        if self._runtime is None:
            with self._lock:
                if self._runtime is None:
                    self._runtime = WorldRuntime.open(self.path, self.link_base)
        return self._runtime

    def close(self) -> None:
        with self._lock:
            if self._runtime is not None:
                self._runtime.close()
                self._runtime = None
