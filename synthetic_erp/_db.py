"""Opening the ERP database: URL checks, read-only engines, and the snapshot metadata."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session
from sqlalchemy.pool import QueuePool

from synthetic_erp._schema import ErpMeta

SUPPORTED_SCHEMES = ("sqlite", "postgresql")
DEFAULT_DB_URL = "sqlite:///erp.db"


class ErpDatabaseError(ValueError):
    """A database URL or database the ERP cannot use; the message names the problem and the fix."""


def normalize_url(url: str) -> str:
    """Check the URL's scheme and rewrite ``postgresql://`` to the psycopg 3 driver."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ErpDatabaseError(
            f"cannot parse database URL {url!r}; use sqlite:///path/to/erp.db or "
            "postgresql://user:password@host:5432/dbname"
        ) from None
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_SCHEMES:
        raise ErpDatabaseError(
            f"unsupported database URL scheme {parsed.drivername!r}; "
            "use sqlite:///path/to/erp.db or postgresql://user:password@host/dbname"
        )
    if backend == "sqlite" and parsed.database in (None, "", ":memory:"):
        # An in-memory ERP is empty when read and gone when written: always a typo here.
        raise ErpDatabaseError(
            f"database URL {url!r} names no SQLite file; use sqlite:///path/to/erp.db "
            "(three slashes, then the path)"
        )
    if backend == "postgresql" and parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL, or None for other databases and in-memory SQLite."""
    parsed = make_url(url)
    if (
        parsed.get_backend_name() != "sqlite"
        or not parsed.database
        or parsed.database == ":memory:"
    ):
        return None
    return Path(parsed.database)


def redact_url(url: str) -> str:
    """The URL with any password hidden, for logs and manifests."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable url>"


def open_engine(url: str, *, read_only: bool = False) -> Engine:
    """An engine on the ERP at ``url``.

    ``read_only=True`` opens SQLite files with ``mode=ro`` (the file must exist) and makes every
    PostgreSQL transaction read-only, so no statement can write whatever it is.
    """
    url = normalize_url(url)
    path = sqlite_path(url)
    if path is not None:
        if read_only:
            if not path.exists():
                raise ErpDatabaseError(
                    f"ERP database {path} does not exist; create it with: "
                    f"python -m synthetic_erp generate --db sqlite:///{path}"
                )
            uri = f"file:{path.resolve()}?mode=ro"
            # A real pool: the default for "sqlite://" (SingletonThreadPool) closes connections that
            # other threads still use once more than 5 threads query at once (MCP tools run in a
            # thread pool), which fails concurrent requests.
            engine = create_engine(
                "sqlite://",
                creator=lambda: _sqlite_connect(uri),
                poolclass=QueuePool,
                pool_size=8,
                max_overflow=56,
            )
        else:
            engine = create_engine(url)
        return engine
    engine = create_engine(url, pool_pre_ping=True)
    if read_only:

        @event.listens_for(engine, "connect")
        def _set_read_only(dbapi_connection, _record):  # pragma: no cover - exercised with pg
            dbapi_connection.read_only = True

    return engine


def _sqlite_connect(uri: str):
    import sqlite3

    connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
    connection.execute("PRAGMA query_only = ON")
    return connection


def read_meta(engine: Engine) -> dict[str, str]:
    """All ``erp_meta`` key/values of the snapshot."""
    with Session(engine) as session:
        return {row.key: row.value for row in session.scalars(select(ErpMeta))}


def erp_today(engine: Engine) -> dt.date:
    """The ERP's frozen "today" (``as_of`` in ``erp_meta``)."""
    return dt.date.fromisoformat(read_meta(engine)["as_of"])
