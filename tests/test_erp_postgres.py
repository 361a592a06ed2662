"""The generator on a real PostgreSQL server gives the same snapshot as on SQLite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from synthetic_erp import erp_stats, generate_erp, snapshot_hash
from synthetic_erp._db import ErpDatabaseError, open_engine
from tests.test_erp_invariants import assert_all_invariants

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]


@pytest.fixture
def fresh_pg_db(pg_url: str) -> Iterator[str]:
    import psycopg

    name = f"lb_erp_test_{os.getpid()}"
    admin = make_url(pg_url).set(drivername="postgresql")
    conninfo = admin.render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_postgres_snapshot_equals_sqlite(fresh_pg_db: str, tmp_path: Path) -> None:
    sqlite_url = f"sqlite:///{tmp_path / 'erp.db'}"
    on_sqlite = generate_erp(sqlite_url, customers=120, vendors=120, seed=11)
    on_pg = generate_erp(fresh_pg_db, customers=120, vendors=120, seed=11)
    assert on_pg.snapshot_hash == on_sqlite.snapshot_hash
    assert on_pg.row_counts == on_sqlite.row_counts
    engine = open_engine(fresh_pg_db, read_only=True)
    try:
        assert snapshot_hash(engine) == on_sqlite.snapshot_hash
    finally:
        engine.dispose()
    assert erp_stats(fresh_pg_db)["customers"] == 120
    assert_all_invariants(fresh_pg_db)


def test_postgres_refuses_existing_tables_unless_overwrite(fresh_pg_db: str) -> None:
    first = generate_erp(fresh_pg_db, customers=20, vendors=20, seed=1)
    with pytest.raises(ErpDatabaseError, match="--overwrite"):
        generate_erp(fresh_pg_db, customers=20, vendors=20, seed=2)
    assert erp_stats(fresh_pg_db)["snapshot_hash"] == first.snapshot_hash
    second = generate_erp(fresh_pg_db, customers=20, vendors=20, seed=2, overwrite=True)
    assert erp_stats(fresh_pg_db)["snapshot_hash"] == second.snapshot_hash != first.snapshot_hash


def test_postgres_failure_late_in_the_run_leaves_nothing(fresh_pg_db: str) -> None:
    """A clash that only shows when the indexes are built, after every row was inserted, rolls the
    whole generation back: not one ERP table is left."""
    import psycopg

    conninfo = make_url(fresh_pg_db).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE ix_vendinv_party (note text)")
    with pytest.raises(ErpDatabaseError, match="ix_vendinv_party"):
        generate_erp(fresh_pg_db, customers=30, vendors=30, seed=4)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    assert tables == [("ix_vendinv_party",)]
