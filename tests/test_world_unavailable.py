"""A research world server that dies in the middle of a run is named as such in the records
(``world_unavailable``), not blamed on the ERP: an infrastructure failure, out of every score."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harnesses import RunConfig
from harnesses._runner import run_async
from ledgerbench_core.dataset import load_dataset
from ledgerbench_core.trajectory import TerminationReason, TrajectoryRecord
from tests.conftest import start_world_server, stop_process
from tests.world_fixtures import question_set, shared_folder, small_world

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return shared_folder(tmp_path_factory, worker_id, "world")


async def test_a_world_server_that_dies_mid_run_is_world_unavailable(
    erp_server, erp_db_url: str, folder: Path, tmp_path: Path
) -> None:
    world = small_world(erp_db_url, folder)
    entity_set = question_set(world, erp_db_url, folder, "entity_performance", 50)
    ids = [item.id for item in load_dataset(entity_set).items[:4]]
    world_server, _ = start_world_server(f"sqlite:///{world}")
    out = tmp_path / "run"
    config = RunConfig(
        dataset=entity_set,
        ids=ids,
        erp_url=erp_server.url,
        world_url=world_server.url,
        out=out,
        progress=False,
        concurrency=1,
        retries=0,
        max_consecutive_infra_failures=0,
    )
    task = asyncio.create_task(run_async(config, log=lambda _m: None))
    trajectories = out / "trajectories.jsonl"
    try:
        while not (trajectories.exists() and trajectories.read_text().strip()):
            assert not task.done(), "the run ended before its first record"
            await asyncio.sleep(0.05)
        stop_process(world_server.process)  # the world goes away after the first question
        await task
    finally:
        stop_process(world_server.process)
    records = [TrajectoryRecord.model_validate_json(line) for line in trajectories.open()]
    assert records[0].termination.reason == TerminationReason.completed
    reasons = [(r.termination.reason, r.termination.detail) for r in records]
    failed = [r for r in records if r.termination.infrastructure]
    assert failed, reasons  # the questions after the world went away
    for record in failed:
        assert record.termination.reason == TerminationReason.world_unavailable, reasons
        assert "research world" in (record.termination.detail or ""), reasons
    others = {r.termination.reason for r in records if not r.termination.infrastructure}
    assert others <= {TerminationReason.completed}, reasons  # a question done before it went


def test_a_research_run_on_ray_whose_world_cannot_be_served_is_refused_before_ray_starts(
    tmp_path: Path,
) -> None:
    """Ray workers serve the world they are shipped; a world that cannot be served (here an
    ERP file given as --world-db) is said in one line before any Ray connection (the address
    given here answers nothing, so reaching for it would fail otherwise)."""
    import sqlite3
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    not_a_world = tmp_path / "erp.db"
    with sqlite3.connect(not_a_world) as conn:
        conn.execute("CREATE TABLE erp_meta (key TEXT, value TEXT)")
    command = [sys.executable, "-m", "harnesses.run", "--harness", "scripted", "--limit", "1"]
    command += ["--dataset", str(REPO_ROOT / "datasets" / "entity_performance.yaml")]
    command += ["--world-db", str(not_a_world)]
    command += ["--executor", "ray", "--ray-address", "127.0.0.1:1", "--out", str(tmp_path / "r")]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"--world-db {not_a_world} is not a research world" in line
    assert not (tmp_path / "r").exists()


def test_a_ray_worker_that_cannot_serve_the_world_says_so_as_the_world(tmp_path: Path) -> None:
    """A worker whose world server cannot start raises WorkerWorldError (recorded by the driver
    as ``world_unavailable``, not as an ERP failure), naming the step the server stopped at."""
    import shutil
    import sqlite3

    from harnesses._ray_worker import WorkerWorld, WorkerWorldError, worker_world
    from ledgerbench_core._ray import NODE_CACHE_DIR, ShippedFile, file_sha256

    not_a_world = tmp_path / "world.db"
    with sqlite3.connect(not_a_world) as conn:  # unique bytes per test: its own cache entry
        conn.execute("CREATE TABLE erp_meta (key TEXT, value TEXT)")
        conn.execute("INSERT INTO erp_meta VALUES ('test', ?)", (str(tmp_path),))
    digest = file_sha256(not_a_world)
    cached = NODE_CACHE_DIR / f"world-{digest[:16]}.db"  # already on this node: no Ray needed
    NODE_CACHE_DIR.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(not_a_world, cached)
    shipped = ShippedFile(ref=None, sha256=digest, name="world.db", size=cached.stat().st_size)
    try:
        stopped_at = r"on this worker: .* at step 'loading the world'"
        with pytest.raises(WorkerWorldError, match=stopped_at):
            worker_world(WorkerWorld(sqlite_file=shipped), start_id=tmp_path.name)
    finally:
        cached.unlink(missing_ok=True)
