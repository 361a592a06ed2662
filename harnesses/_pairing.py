"""Dataset <-> ERP <-> research world, checked from the files before any server starts.

A dataset's answer keys were computed on one ERP snapshot (and research keys on one world), and a
world was generated from one ERP. The servers confirm the same facts once they are up
(``check_snapshot``, ``check_world_snapshot``); reading the SQLite files first refuses a wrong
pairing in one line at once, not after the servers started (or the default ERP was rebuilt). A
running server (``--erp-url``, ``--world-url``) or a PostgreSQL ERP is checked by those later
checks alone.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from harnesses._erp_process import DEFAULT_ERP_SEED, _is_stale, default_erp_db_url
from harnesses._erp_serving import snapshot_problem
from harnesses._redact import redact_url
from harnesses._run_config import RunConfig
from harnesses._world_serving import needs_world, world_path_of, world_snapshot_problem
from ledgerbench_core.dataset import Dataset, Question


def read_meta(path: Path, table: str) -> dict[str, str]:
    """The key/value rows of ``table`` (``erp_meta``, ``world_meta``) in the SQLite file at
    ``path``, read-only; empty when the file is missing or holds no such table."""
    if not path.is_file():
        return {}
    try:
        with contextlib.closing(
            sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        ) as db:
            return {str(k): str(v) for k, v in db.execute(f"SELECT key, value FROM {table}")}
    except sqlite3.Error:
        return {}


def erp_file_in_use(config: RunConfig, dataset: Dataset) -> tuple[str, dict[str, str]] | None:
    """The URL and ``erp_meta`` of the SQLite ERP the run will serve, as the file is now; None
    for a running server, a PostgreSQL ERP, or a default ERP the runner is to (re)build."""
    from synthetic_erp._db import ErpDatabaseError, sqlite_path

    if config.erp_url:
        return None
    url = config.erp_db
    if url is None:
        url = default_erp_db_url()
        seed = dataset.header.generator_seed
        seed = DEFAULT_ERP_SEED if seed is None else seed
        expected = dataset.header.erp_snapshot_hash
        if not Path(url.removeprefix("sqlite:///")).exists() or _is_stale(url, expected, seed):
            return None
    try:
        path = sqlite_path(url)
    except ErpDatabaseError:
        return None  # check_erp_db says what is wrong with it
    meta = read_meta(path, "erp_meta") if path is not None else {}
    return (url, meta) if meta else None


def pairing_problem(
    config: RunConfig, dataset: Dataset, dataset_path: Path, questions: list[Question]
) -> str | None:
    """Why the dataset, the ERP and the world do not belong together (one line naming the
    mismatch and the fix), or None."""
    erp = erp_file_in_use(config, dataset)
    if erp is not None:
        url, meta = erp
        actual = meta.get("snapshot_hash")
        problem = snapshot_problem(dataset, dataset_path, actual, url, redact_url(url))
        if problem is not None:
            return problem
    if not config.world_db or not needs_world(dataset, questions, config):
        return None
    path = world_path_of(config.world_db)
    world = read_meta(path, "world_meta")
    if not world:
        return None  # world_db_problem says why it is no world
    problem = world_snapshot_problem(
        dataset, str(path), world.get("world_id"), world.get("snapshot_hash")
    )
    if problem is not None or erp is None:
        return problem
    url, meta = erp
    built_from, serving = world.get("erp_snapshot_hash"), meta.get("snapshot_hash")
    if built_from and serving and built_from != serving:
        return (
            f"--world-db {path} was generated from the ERP with snapshot {built_from[:16]}, but "
            f"the ERP in use ({redact_url(url)}) is snapshot {serving[:16]}: the world's filings "
            "describe another company's books; serve the ERP it came from (--erp-db), or "
            f"generate a world from this one: python -m synthetic_world generate --erp-db "
            f"{redact_url(url)} --db sqlite:///world.db"
        )
    return None
