"""Shared builders for the research-world tests: a small world beside the test ERP, built once
per test run (under xdist the first worker builds it, the others wait), and its question sets."""

from __future__ import annotations

import fcntl
import sqlite3
from pathlib import Path

import pytest

SMALL_SCALE = 0.2
"""100 companies, ~5,000 documents: enough for every question kind, quick to build (~5 s)."""


def shared_folder(tmp_path_factory: pytest.TempPathFactory, worker_id: str, name: str) -> Path:
    if worker_id == "master":
        return tmp_path_factory.mktemp(name)
    folder = tmp_path_factory.getbasetemp().parent / f"shared-{name}"
    folder.mkdir(exist_ok=True)
    return folder


def build_once(folder: Path, target: Path, build) -> Path:
    """``build(target)`` unless another worker already did (a lock file serialises them)."""
    with (folder / f"{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            build(target)
    return target


def small_world(erp_db_url: str, folder: Path) -> Path:
    from synthetic_world import generate_world

    return build_once(
        folder,
        folder / "world.db",
        lambda path: generate_world(erp_db_url, path, seed=42, scale=SMALL_SCALE),
    )


def question_set(
    world: Path,
    erp_db_url: str,
    folder: Path,
    task_type: str,
    n: int,
    analyst_share: float | None = None,
) -> Path:
    """A keyed set on ``world`` (question seed 3), built once per test run; ``analyst_share=0``
    draws single-fact items only."""
    from synthetic_world._cli import main

    share = [] if analyst_share is None else ["--analyst-share", str(analyst_share)]

    def build(path: Path) -> None:
        code = main(
            [
                "questions",
                "--db",
                f"sqlite:///{world}",
                "--erp-db",
                erp_db_url,
                "--task-type",
                task_type,
                "--n",
                str(n),
                "--seed",
                "3",
                *share,
                "--out",
                str(path),
            ]
        )
        assert code == 0

    suffix = "" if analyst_share is None else f"-analyst{analyst_share:g}"
    return build_once(folder, folder / f"{task_type}-{n}{suffix}.yaml", build)


def world_rows(world: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(f"file:{world}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def run_scripted(
    dataset: Path, world: Path, erp_db_url: str, out: Path, concurrency: int = 6
) -> Path:
    """The scripted agent over ``dataset`` on ``world``, in this process, into ``out``."""
    from harnesses import RunConfig
    from harnesses._runner import run

    config = RunConfig(
        dataset=dataset,
        harness="scripted",
        erp_db=erp_db_url,
        world_db=f"sqlite:///{world}",
        out=out,
        progress=False,
        concurrency=concurrency,
    )
    assert run(config, log=lambda _m: None) is not None
    return out


def scripted_run(dataset: Path, world: Path, erp_db_url: str, folder: Path) -> Path:
    """The scripted agent's run over ``dataset`` on ``world``, made once per test run and shared
    by the test files that read it: read it as it is, or copy it before writing into it (a judge
    writes its scores there)."""
    import shutil

    def build(out: Path) -> None:
        try:
            run_scripted(dataset, world, erp_db_url, out)
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)  # another worker must not take half a run
            raise

    return build_once(folder, folder / f"scripted-{dataset.stem}", build)
