"""The world database: one SQLite file holding the fact ledger, the documents and their index.

SQLite because its FTS5 full-text index (BM25 ranking, snippets, column filters) ships with
Python's ``sqlite3``: a world needs no server and no extra package, and it is one file with one
hash. The file is written to a temporary name and renamed into place, so a failed generation
leaves nothing behind; the same seed writes a byte-identical file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from synthetic_world._documents import Document
from synthetic_world._facts import CompanyLedger, Event, Fact
from synthetic_world._universe import Company

WORLD_FORMAT_VERSION = 1

SCHEMA = """
CREATE TABLE world_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE company (
    company_id TEXT PRIMARY KEY, name TEXT NOT NULL, short_name TEXT NOT NULL,
    kind TEXT NOT NULL, listed INTEGER NOT NULL, ticker TEXT, exchange TEXT,
    industry TEXT NOT NULL, sector TEXT NOT NULL, country TEXT NOT NULL, city TEXT NOT NULL,
    currency TEXT NOT NULL, fiscal_year_end_month INTEGER NOT NULL, founded_year INTEGER NOT NULL,
    ceo TEXT NOT NULL, decoy_of TEXT, distressed INTEGER NOT NULL, erp_stress REAL NOT NULL,
    discloses_revenue INTEGER NOT NULL, segments TEXT NOT NULL, products TEXT NOT NULL,
    regions TEXT NOT NULL
);
CREATE INDEX ix_company_ticker ON company (ticker);
CREATE TABLE company_erp (
    company_id TEXT NOT NULL, legal_entity TEXT NOT NULL, party_type TEXT NOT NULL,
    account TEXT NOT NULL, PRIMARY KEY (company_id, legal_entity, party_type, account)
);
CREATE TABLE company_peer (
    company_id TEXT NOT NULL, peer_id TEXT NOT NULL, PRIMARY KEY (company_id, peer_id)
);
CREATE TABLE period (
    company_id TEXT NOT NULL, period_id TEXT NOT NULL, fiscal_year INTEGER NOT NULL,
    quarter INTEGER NOT NULL, start_date TEXT NOT NULL, end_date TEXT NOT NULL,
    release_date TEXT, report_date TEXT, PRIMARY KEY (company_id, period_id)
);
CREATE TABLE fact (
    fact_id TEXT PRIMARY KEY, company_id TEXT NOT NULL, metric TEXT NOT NULL,
    member TEXT NOT NULL, period_id TEXT NOT NULL, value TEXT NOT NULL, unit TEXT NOT NULL,
    scale TEXT NOT NULL, basis TEXT NOT NULL, status TEXT NOT NULL, version INTEGER NOT NULL,
    supersedes TEXT, published_at TEXT NOT NULL
);
CREATE INDEX ix_fact_lookup ON fact (company_id, metric, period_id, member, basis, version);
CREATE TABLE event (
    event_id TEXT PRIMARY KEY, company_id TEXT NOT NULL, kind TEXT NOT NULL,
    date TEXT NOT NULL, sentiment TEXT NOT NULL, headline TEXT NOT NULL, status TEXT NOT NULL,
    details TEXT NOT NULL
);
CREATE INDEX ix_event_company ON event (company_id, date);
CREATE TABLE price (
    ticker TEXT NOT NULL, date TEXT NOT NULL, close TEXT NOT NULL, PRIMARY KEY (ticker, date)
) WITHOUT ROWID;
CREATE TABLE document (
    rowid INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE, url TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL, source TEXT NOT NULL, source_type TEXT NOT NULL,
    published_at TEXT NOT NULL, companies TEXT NOT NULL, body TEXT NOT NULL
);
CREATE INDEX ix_document_published ON document (published_at);
CREATE TABLE document_company (
    doc_id TEXT NOT NULL, company_id TEXT NOT NULL, PRIMARY KEY (company_id, doc_id)
) WITHOUT ROWID;
CREATE TABLE document_fact (
    doc_id TEXT NOT NULL, fact_id TEXT NOT NULL, stated TEXT NOT NULL, scale TEXT NOT NULL,
    PRIMARY KEY (fact_id, doc_id, stated)
) WITHOUT ROWID;
CREATE TABLE document_event (
    doc_id TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (event_id, doc_id)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE document_fts USING fts5(
    title, body, companies, content='document', content_rowid='rowid',
    tokenize='porter unicode61'
);
"""

HASHED_TABLES = (
    ("company", "company_id"),
    ("company_erp", "company_id, legal_entity, party_type, account"),
    ("company_peer", "company_id, peer_id"),
    ("period", "company_id, period_id"),
    ("fact", "fact_id"),
    ("event", "event_id"),
    ("price", "ticker, date"),
    ("document", "rowid"),
    ("document_company", "company_id, doc_id"),
    ("document_fact", "fact_id, doc_id, stated"),
    ("document_event", "event_id, doc_id"),
    ("document_fts_data", "id"),
    ("document_fts_idx", "segid, term"),
    ("document_fts_docsize", "id"),
    ("document_fts_config", "k"),
)
"""Every table the snapshot hash covers, with its order: facts, documents and the index."""


def create(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.executescript(SCHEMA)
    return conn


def write_companies(
    conn: sqlite3.Connection, companies: list[Company], ledgers: dict[str, CompanyLedger]
) -> None:
    rows, erp_rows, peer_rows, periods = [], [], [], []
    for c in companies:
        ledger = ledgers[c.company_id]
        rows.append(
            (
                c.company_id,
                c.name,
                c.short,
                c.kind,
                int(c.listed),
                c.ticker,
                c.exchange,
                c.industry,
                c.sector,
                c.country,
                c.city,
                c.currency,
                c.fiscal_year_end_month,
                c.founded_year,
                ledger.ceo,
                c.decoy_of,
                int(c.distressed),
                c.erp_stress,
                int(c.discloses_revenue),
                json.dumps(ledger.segments),
                json.dumps(ledger.products),
                json.dumps(ledger.regions),
            )
        )
        erp_rows += [
            (c.company_id, a.legal_entity, a.party_type, a.account) for a in c.erp_accounts
        ]
        peer_rows += [(c.company_id, p) for p in c.peers]
        seen = set()
        for period in [*ledger.annual, *ledger.quarters]:
            if period.id in seen:
                continue
            seen.add(period.id)
            release = ledger.releases.get(period.id)
            report = ledger.reports.get(period.id)
            periods.append(
                (
                    c.company_id,
                    period.id,
                    period.fiscal_year,
                    period.quarter,
                    period.start.isoformat(),
                    period.end.isoformat(),
                    release.isoformat() if release else None,
                    report.isoformat() if report else None,
                )
            )
    conn.executemany(f"INSERT INTO company VALUES ({','.join('?' * 22)})", rows)
    conn.executemany("INSERT INTO company_erp VALUES (?,?,?,?)", erp_rows)
    conn.executemany("INSERT INTO company_peer VALUES (?,?)", peer_rows)
    conn.executemany("INSERT INTO period VALUES (?,?,?,?,?,?,?,?)", periods)


def write_facts(conn: sqlite3.Connection, facts: Iterable[Fact]) -> None:
    conn.executemany(
        "INSERT INTO fact VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            (
                f.fact_id,
                f.company_id,
                f.metric,
                f.member,
                f.period.id,
                str(f.value),
                f.unit,
                f.scale,
                f.basis,
                f.status,
                f.version,
                f.supersedes,
                f.published_at.isoformat(),
            )
            for f in facts
        ),
    )


_EVENT_FIELDS = (
    "amount",
    "currency",
    "round_name",
    "lead_investor",
    "post_money",
    "counterparty",
    "person",
    "previous_person",
    "role",
    "regulator",
    "country",
    "agency",
    "rating_from",
    "rating_to",
    "product",
    "refers_to",
    "matter",
    "action",
    "cash_date",
    "net_burn",
    "gross_burn",
)


def event_details(event: Event) -> dict:
    details = {}
    for name in _EVENT_FIELDS:
        value = getattr(event, name)
        if value is not None:
            details[name] = (
                str(value) if name in ("amount", "post_money", "net_burn", "gross_burn") else value
            )
            if isinstance(value, dt.date):
                details[name] = value.isoformat()
    return details


def write_events(conn: sqlite3.Connection, events: Iterable[Event]) -> None:
    conn.executemany(
        "INSERT INTO event VALUES (?,?,?,?,?,?,?,?)",
        (
            (
                e.event_id,
                e.company_id,
                e.kind,
                e.date.isoformat(),
                e.sentiment,
                e.headline,
                e.status,
                json.dumps(event_details(e), sort_keys=True),
            )
            for e in events
        ),
    )


def write_prices(conn: sqlite3.Connection, ticker: str, prices) -> None:
    conn.executemany(
        "INSERT INTO price VALUES (?,?,?)", ((ticker, d.isoformat(), str(c)) for d, c in prices)
    )


def write_documents(conn: sqlite3.Connection, documents: list[Document]) -> None:
    conn.executemany(
        "INSERT INTO document (doc_id, url, title, source, source_type, published_at, companies,"
        " body) VALUES (?,?,?,?,?,?,?,?)",
        (
            (
                d.doc_id,
                d.url,
                d.title,
                d.source,
                d.source_type,
                d.published_at.isoformat(),
                " ".join(d.companies),
                d.body,
            )
            for d in documents
        ),
    )
    conn.executemany(
        "INSERT OR IGNORE INTO document_company VALUES (?,?)",
        ((d.doc_id, c) for d in documents for c in d.companies),
    )
    conn.executemany(
        "INSERT OR IGNORE INTO document_fact VALUES (?,?,?,?)",
        ((d.doc_id, s.fact_id, s.stated, s.scale) for d in documents for s in d.facts),
    )
    conn.executemany(
        "INSERT OR IGNORE INTO document_event VALUES (?,?)",
        ((d.doc_id, e) for d in documents for e in d.events),
    )


def build_index(conn: sqlite3.Connection) -> None:
    """Fill the FTS5 index from the documents and merge it into one segment (a stable layout)."""
    conn.execute("INSERT INTO document_fts(document_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO document_fts(document_fts) VALUES ('optimize')")


def snapshot_hash(conn: sqlite3.Connection) -> str:
    """SHA-256 over every table of the world (facts, documents and index) in key order, and the
    world's metadata except the hash itself."""
    digest = hashlib.sha256()
    meta = conn.execute(
        "SELECT key, value FROM world_meta WHERE key != 'snapshot_hash' ORDER BY key"
    ).fetchall()
    digest.update(repr(meta).encode())
    for table, order in HASHED_TABLES:
        digest.update(f"\x1e{table}\x1f".encode())
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY {order}"):
            digest.update(repr(row).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def write_meta(conn: sqlite3.Connection, meta: dict[str, str]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO world_meta VALUES (?,?)",
        sorted((k, str(v)) for k, v in meta.items()),
    )
