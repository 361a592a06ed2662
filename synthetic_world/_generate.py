"""``generate_world``: the research world of an ERP, facts first, then every document from them."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from synthetic_erp._db import ErpDatabaseError, open_engine, read_meta, redact_url
from synthetic_erp._pools import Pools, build_pools
from synthetic_world._calendar import DAY
from synthetic_world._documents import Document
from synthetic_world._events import EventsBuilder
from synthetic_world._facts import CompanyLedger
from synthetic_world._financials import FinancialsBuilder
from synthetic_world._markets import build_prices
from synthetic_world._render import Renderer
from synthetic_world._store import (
    WORLD_FORMAT_VERSION,
    build_index,
    create,
    snapshot_hash,
    write_companies,
    write_documents,
    write_events,
    write_facts,
    write_meta,
    write_prices,
)
from synthetic_world._universe import UniverseBuilder, UniverseSize, read_erp_parties

GENERATOR_VERSION = "1.0.0"
MAX_SCALE = 4.0


class WorldError(ValueError):
    """A world cannot be made or read as asked; the message says why and what to do."""


@dataclass(frozen=True)
class WorldReport:
    path: Path
    world_id: str
    snapshot_hash: str
    today: dt.date
    companies: int
    listed: int
    documents: int
    facts: int
    events: int
    prices: int
    seconds: float


def world_id_for(seed: int, scale: float, erp_snapshot: str) -> str:
    """The id in every document link of a world: a new seed, scale or ERP gives another world."""
    key = f"{GENERATOR_VERSION}|{seed}|{scale:g}|{erp_snapshot}"
    return "w" + hashlib.sha256(key.encode()).hexdigest()[:10]


class PersonNamer:
    """First and last names from the ERP generator's pools, drawn in one seeded sequence."""

    def __init__(self, pools: Pools, seed: int) -> None:
        self._pools = pools
        self._rng = random.Random(f"people:{seed}")

    def __call__(self, region: str) -> str:
        pool = self._pools.regions[region]
        return f"{self._rng.choice(pool.first_names)} {self._rng.choice(pool.last_names)}"


def _sized(scale: float) -> UniverseSize:
    base = UniverseSize()
    counts = {
        name: max(2, round(getattr(base, name) * scale))
        for name in ("public", "private", "peers", "decoys", "distressed")
    }
    return UniverseSize(**counts)


def generate_world(
    erp_db_url: str,
    path: Path,
    *,
    seed: int = 42,
    scale: float = 1.0,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
) -> WorldReport:
    """Generate the world of the ERP at ``erp_db_url`` into the SQLite file ``path``.

    Raises :class:`WorldError` (nothing written) for a missing ERP, an existing file without
    ``overwrite`` or a scale out of range."""
    started = time.perf_counter()
    say = progress or (lambda _message: None)
    path = Path(path)
    if not 0 < scale <= MAX_SCALE:
        raise WorldError(f"--scale must be above 0 and at most {MAX_SCALE:g}, got {scale:g}")
    if path.exists() and not overwrite:
        raise WorldError(f"{path} already exists; pass --overwrite to replace it")
    if not path.parent.exists():
        raise WorldError(f"the folder {path.parent} does not exist; create it first")
    engine = _open_erp(erp_db_url)
    try:
        meta = read_meta(engine)
        today = dt.date.fromisoformat(meta["as_of"])
        erp_snapshot = meta.get("snapshot_hash", "")
        say("reading the ERP's customers and vendors")
        parties = read_erp_parties(engine, today)
    finally:
        engine.dispose()
    world_id = world_id_for(seed, scale, erp_snapshot)
    pools = build_pools(seed)
    rng = random.Random(f"universe:{seed}:{erp_snapshot}")
    companies = UniverseBuilder(rng, pools, _sized(scale)).build(parties)
    # Each company's own generators are seeded by its id and the world seed.
    say(f"generating facts for {len(companies)} companies")
    ledgers = _ledgers(companies, today, PersonNamer(pools, seed))
    names = {c.company_id: c for c in companies}
    say("rendering documents")
    documents: list[Document] = []
    for company in companies:
        documents += Renderer(world_id, company, ledgers[company.company_id], names, today).render()
    documents.sort(key=lambda d: (d.published_at, d.doc_id))
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    try:
        conn = create(temporary)
        with conn:
            write_companies(conn, companies, ledgers)
            facts = [f for c in companies for f in ledgers[c.company_id].facts]
            write_facts(conn, facts)
            events = [e for c in companies for e in ledgers[c.company_id].events]
            write_events(conn, events)
            prices = 0
            for company in companies:
                series = ledgers[company.company_id].prices
                if company.ticker and series:
                    write_prices(conn, company.ticker, series)
                    prices += len(series)
            say(f"indexing {len(documents)} documents")
            write_documents(conn, documents)
            build_index(conn)
            write_meta(
                conn,
                {
                    "format_version": WORLD_FORMAT_VERSION,
                    "generator_version": GENERATOR_VERSION,
                    "world_id": world_id,
                    "seed": seed,
                    "scale": f"{scale:g}",
                    "as_of": today.isoformat(),
                    "erp_snapshot_hash": erp_snapshot,
                    "erp_seed": meta.get("seed", ""),
                },
            )
            say("hashing the snapshot")
            digest = snapshot_hash(conn)
            write_meta(conn, {"snapshot_hash": digest})
        conn.execute("VACUUM")
        conn.close()
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return WorldReport(
        path=path,
        world_id=world_id,
        snapshot_hash=digest,
        today=today,
        companies=len(companies),
        listed=sum(c.listed for c in companies),
        documents=len(documents),
        facts=len(facts),
        events=len(events),
        prices=prices,
        seconds=round(time.perf_counter() - started, 2),
    )


def _ledgers(companies, today: dt.date, namer: PersonNamer) -> dict[str, CompanyLedger]:
    ledgers: dict[str, CompanyLedger] = {}
    private = [c for c in companies if not c.listed]
    for company in companies:
        ledger = CompanyLedger()
        financials = FinancialsBuilder(company, ledger, today)
        financials.build()
        start = ledger.annual[1].start if len(ledger.annual) > 1 else today - DAY * 1800
        targets = [c for c in private if c.kind != "notable"] or private
        EventsBuilder(company, ledger, today, start, namer, targets).build(namer(company.region))
        build_prices(company, ledger, start - DAY * 7, today)
        if company.listed:
            financials.retire_repurchased_shares()
        ledgers[company.company_id] = ledger
    return ledgers


def _open_erp(url: str):
    from sqlalchemy.exc import SQLAlchemyError

    from synthetic_erp._db import normalize_url, sqlite_path

    url = normalize_url(url)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        raise WorldError(
            f"ERP database {path} does not exist; create it with: "
            f"python -m synthetic_erp generate --db sqlite:///{path}"
        )
    try:
        engine = open_engine(url, read_only=True)
        read_meta(engine)
    except (SQLAlchemyError, ErpDatabaseError) as error:
        reason = str(getattr(error, "orig", None) or error).splitlines()[0]
        raise WorldError(f"cannot read an ERP at {redact_url(url)} ({reason})") from None
    return engine
