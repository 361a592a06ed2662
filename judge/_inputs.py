"""The databases a judge reads, found by the snapshot hash the run recorded.

A run's manifest names the ERP (and research world) it used by snapshot hash, also when they were
served by URL (read from ``erp_info`` / ``world_info``). The judge looks for a database with that
hash: the one given (``--erp-db`` / ``--world-db``; another hash is refused), the path recorded
in the manifest, then the default workspace (``.ledgerbench/erp.db``, ``.ledgerbench/world.db``).
When none has it, :func:`resolve_inputs` raises :class:`InputsError` with one line naming the fix:
a judge never drops a check silently because it lacks the database the check reads.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ledgerbench_core.trajectory import RunManifest


class InputsError(ValueError):
    """The judge cannot find (or was given the wrong) database; the message names the fix."""


@dataclass(frozen=True)
class JudgeInputs:
    """The databases a judge reads and their snapshot hashes (None: not needed or none)."""

    erp_db: str | None = None
    erp_snapshot_hash: str | None = None
    world_db: str | None = None
    world_snapshot_hash: str | None = None


def erp_snapshot(db_url: str) -> str | None:
    """The ERP's snapshot hash; ValueError (one line) when it cannot be read."""
    if "***" in db_url:
        raise ValueError(f"{db_url} has its password redacted; pass the full URL")
    if db_url.startswith("sqlite:///") and not Path(db_url.removeprefix("sqlite:///")).is_file():
        raise ValueError(f"{db_url} does not exist")
    from synthetic_erp._db import open_engine, read_meta

    try:
        engine = open_engine(db_url, read_only=True)
        try:
            return read_meta(engine).get("snapshot_hash")
        finally:
            engine.dispose()
    except Exception as exc:
        raise ValueError(f"cannot read the ERP database {db_url}: {_one_line(exc)}") from None


def world_snapshot(path: str) -> str | None:
    """The world file's snapshot hash; ValueError (one line) when it cannot be read."""
    file = Path(path.removeprefix("sqlite:///"))
    if not file.is_file():
        raise ValueError(f"{path} does not exist")
    try:
        with contextlib.closing(sqlite3.connect(f"file:{file}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT value FROM world_meta WHERE key = 'snapshot_hash'").fetchone()
    except sqlite3.Error as exc:
        raise ValueError(f"cannot read the research world {path}: {_one_line(exc)}") from None
    return row[0] if row else None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def _default_erp() -> str:
    from harnesses._erp_process import default_erp_db_url

    return default_erp_db_url()


def _default_world() -> str:
    from harnesses._erp_process import project_root
    from harnesses._world_serving import DEFAULT_WORLD_RELATIVE_PATH

    return str(project_root() / DEFAULT_WORLD_RELATIVE_PATH)


def find_erp(given: str | None, manifest: RunManifest) -> tuple[str, str | None]:
    """The ERP database to judge ``manifest``'s run against and its snapshot hash."""
    expected = manifest.erp_snapshot_hash
    if given:
        try:
            found = erp_snapshot(given)
        except ValueError as exc:
            raise InputsError(f"--erp-db: {exc}") from None
        if expected and found != expected:
            raise InputsError(
                f"--erp-db {given} holds ERP snapshot {(found or 'unknown')[:12]}, but the run "
                f"used {expected[:12]}: pass the database the run was made against"
            )
        return given, found
    recorded = manifest.erp_db_url
    if not expected:
        if recorded and "***" not in recorded:
            with contextlib.suppress(ValueError):
                return recorded, erp_snapshot(recorded)
        raise InputsError(
            "the run's manifest names no ERP snapshot (a run from an older format, or a server "
            "whose erp_info reports none) and no readable database: pass --erp-db URL of the "
            "database the run was made against"
        )
    looked = []
    for candidate in dict.fromkeys(c for c in (recorded, _default_erp()) if c):
        try:
            found = erp_snapshot(candidate)
        except ValueError as exc:
            looked.append(str(exc))
            continue
        if found == expected:
            return candidate, found
        looked.append(f"{candidate} holds {(found or 'unknown')[:12]}")
    raise InputsError(
        f"no ERP database with the run's snapshot {expected[:12]} found ({'; '.join(looked)}): "
        "pass --erp-db URL of the database the run was made against"
    )


def find_world(given: str | None, expected: str | None, recorded: str | None) -> tuple[str, str]:
    """The research world to judge against (``expected``: the run's or the dataset's snapshot)."""
    if given:
        try:
            found = world_snapshot(given)
        except ValueError as exc:
            raise InputsError(f"--world-db: {exc}") from None
        if expected and found != expected:
            raise InputsError(
                f"--world-db {given} holds world snapshot {(found or 'unknown')[:12]}, but the "
                f"run's items are keyed on {expected[:12]}: pass the world the run used"
            )
        return given, found or ""
    looked = []
    for candidate in dict.fromkeys(c for c in (recorded, _default_world()) if c):
        try:
            found = world_snapshot(candidate)
        except ValueError as exc:
            looked.append(str(exc))
            continue
        if expected is None or found == expected:
            return candidate, found or ""
        looked.append(f"{candidate} holds {(found or 'unknown')[:12]}")
    wanted = f"snapshot {expected[:12]}" if expected else "any snapshot"
    raise InputsError(
        f"the run's research items need their world ({wanted}) and none was found "
        f"({'; '.join(looked)}): pass --world-db PATH of the world the run used"
    )


def resolve_inputs(
    manifest: RunManifest,
    *,
    erp_db: str | None,
    world_db: str | None,
    needs_erp: bool,
    needs_world: bool,
    dataset_world: str | None = None,
) -> JudgeInputs:
    """The databases the judge reads: found by hash, or one line saying why not (InputsError)."""
    erp, erp_hash = find_erp(erp_db, manifest) if needs_erp else (None, None)
    world, world_hash = None, None
    if needs_world:
        expected = manifest.world_snapshot_hash or dataset_world
        world, world_hash = find_world(world_db, expected, manifest.world_db)
    return JudgeInputs(erp, erp_hash, world, world_hash)


__all__ = ["InputsError", "JudgeInputs", "resolve_inputs"]
