"""Atomic writing of a whole ERP database.

SQLite files are built in a temporary file next to the target and renamed over it only when
complete; PostgreSQL databases are written in one transaction. Either way an error or an interrupt
leaves the previous state (no database, or the old one) untouched.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import Connection, create_engine, event, inspect
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.schema import CreateTable
from sqlmodel import SQLModel

from synthetic_erp._db import ErpDatabaseError, normalize_url, redact_url, sqlite_path
from synthetic_erp._schema import ALL_TABLES
from synthetic_erp._summaries import METADATA as SUMMARY_METADATA

TABLES = [table.__table__ for table in ALL_TABLES]


def create_schema(conn: Connection) -> None:
    """The tables with their primary keys and unique constraints; the other indexes come later
    (:func:`create_indexes`), because building them once over loaded rows is faster."""
    for table in TABLES:
        conn.execute(CreateTable(table))


def create_indexes(conn: Connection) -> None:
    """The secondary indexes, then the planner statistics over the loaded rows (``ANALYZE``, on
    SQLite and PostgreSQL alike), so the query planner picks indexes by what the ERP holds."""
    for table in TABLES:
        for index in sorted(table.indexes, key=lambda i: i.name or ""):
            index.create(conn)
    conn.exec_driver_sql("ANALYZE")


def add_missing_indexes(conn: Connection) -> list[str]:
    """Create the secondary indexes an ERP built by older code lacks (its planner statistics
    are then refreshed); the names of those created."""
    existing = {
        table.name: {ix["name"] for ix in inspect(conn).get_indexes(table.name)} for table in TABLES
    }
    added = []
    for table in TABLES:
        for index in sorted(table.indexes, key=lambda i: i.name or ""):
            if index.name not in existing[table.name]:
                index.create(conn)
                added.append(str(index.name))
    if added:
        conn.exec_driver_sql("ANALYZE")
    return added


@contextlib.contextmanager
def open_target(url: str, *, overwrite: bool) -> Iterator[Connection]:
    """A connection inside one transaction on a fresh, empty ERP schema at ``url``; committed (and,
    for SQLite files, renamed into place) only if the block finishes without an exception."""
    url = normalize_url(url)
    path = sqlite_path(url)
    if path is not None:
        with _sqlite_file(path, overwrite=overwrite) as conn:
            yield conn
    elif url.startswith("sqlite"):
        engine = create_engine(url)
        with engine.begin() as conn:
            create_schema(conn)
            yield conn
    else:
        with _postgres(url, overwrite=overwrite) as conn:
            yield conn


def temp_path_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def remove_abandoned_temps(path: Path) -> list[Path]:
    """Delete temporary files that a killed generation (``kill -9``) left next to ``path``.

    A temporary file belongs to the process id in its name; it is abandoned when that process no
    longer runs. Files of a generation still running are left alone.
    """
    removed = []
    for temp in path.parent.glob(f".{path.name}.*.tmp"):
        pid_text = temp.name[len(path.name) + 2 : -len(".tmp")]
        if not pid_text.isdigit() or _process_alive(int(pid_text)):
            continue
        _remove(temp)
        removed.append(temp)
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _sqlite_file(path: Path, *, overwrite: bool) -> Iterator[Connection]:
    if path.exists() and not overwrite:
        raise ErpDatabaseError(f"{path} already exists; pass --overwrite to replace it")
    if not path.parent.is_dir():
        raise ErpDatabaseError(f"directory {path.parent} does not exist; create it first")
    remove_abandoned_temps(path)
    temp = temp_path_for(path)
    _remove(temp)
    engine = create_engine(f"sqlite:///{temp}")

    @event.listens_for(engine, "connect")
    def _fast_pragmas(dbapi_connection, _record):
        # Safe to skip journaling: the file is renamed into place only when complete.
        dbapi_connection.execute("PRAGMA journal_mode = OFF")
        dbapi_connection.execute("PRAGMA synchronous = OFF")

    try:
        with engine.begin() as conn:
            create_schema(conn)
            yield conn
        engine.dispose()
        os.replace(temp, path)
    except BaseException:
        engine.dispose()
        _remove(temp)
        raise


def _remove(path: Path) -> None:
    for candidate in (path, path.with_name(path.name + "-journal")):
        with contextlib.suppress(FileNotFoundError):
            candidate.unlink()


@contextlib.contextmanager
def _postgres(url: str, *, overwrite: bool) -> Iterator[Connection]:
    engine = create_engine(url)
    try:
        try:
            connection = engine.connect()
        except OperationalError as error:
            reason = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
            raise ErpDatabaseError(
                f"cannot connect to {redact_url(url)}: {reason}; check the server is running and "
                "the database exists"
            ) from None
        with connection as conn, conn.begin():
            existing = [t.name for t in TABLES if inspect(conn).has_table(t.name)]
            if existing and not overwrite:
                raise ErpDatabaseError(
                    f"{redact_url(url)} already holds ERP tables ({existing[0]}, ...); "
                    "pass --overwrite to replace them"
                )
            if existing:
                SQLModel.metadata.drop_all(conn, tables=TABLES)
                SUMMARY_METADATA.drop_all(conn)  # derived from the old tables
            create_schema(conn)
            yield conn
    except SQLAlchemyError as error:
        raise ErpDatabaseError(f"writing to {redact_url(url)} failed: {error}") from error
    finally:
        engine.dispose()
