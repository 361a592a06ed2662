"""What a Ray worker does for ``harnesses.run --executor ray``: one (question, trial) per task.

The task builds the harness, runs the question under its own budget with the same
:class:`QuestionRunner` the local executor uses, and returns the record as JSON; the driver alone
writes it. The ERP the agent talks to is one of:

- the shared ``--erp-url`` server(s), reached directly (the driver checked the snapshot hash);
- a SQLite file shipped through Ray's object store, checked against its SHA-256 on arrival and
  served by an ``erp_mcp`` process this worker process starts once and reuses (it dies with the
  worker, so a killed worker leaves no ERP server behind);
- a PostgreSQL URL, served the same way.

A research run (``--research world``) reaches the world the same two ways: the shared
``--world-url`` server, or the world's SQLite file shipped like the ERP's and served by a
``synthetic_world serve`` process per worker process, with the run's fault injection. Either
server is waited for on its progress (as the local runner waits), not on a fixed clock.

Imported only on Ray workers and by the Ray executor.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnesses._protocol import AgentEnvironment, ErpEndpoint, HarnessOptions, McpEndpoint
from ledgerbench_core._ray import ShippedFile, materialize
from ledgerbench_core.dataset import Question


@dataclass(frozen=True)
class WorkerErp:
    """Where a worker finds the ERP: exactly one of the three is set."""

    endpoint: ErpEndpoint | None = None
    """A shared MCP server (``--erp-url``) every worker reaches."""
    sqlite_file: ShippedFile | None = None
    """The SQLite ERP, shipped to each node and served per worker process."""
    db_url: str | None = None
    """A database every worker can reach (PostgreSQL), served per worker process."""
    record_base_url: str | None = None
    """Base of the record URLs a worker's own server cites: the driver's server, so that records
    read as those of a local run."""
    server_args: tuple[str, ...] = ()
    """Extra ``erp_mcp`` arguments of the run (fault injection): a worker's own server injects
    the faults the manifest records, keyed by the same trial header, so they replay as locally."""


@dataclass(frozen=True)
class WorkerWorld:
    """Where a worker finds the research world: exactly one of the two is set."""

    endpoint: McpEndpoint | None = None
    """A shared world server (``--world-url``) every worker reaches."""
    sqlite_file: ShippedFile | None = None
    """The world file, shipped to each node and served per worker process."""
    server_args: tuple[str, ...] = ()
    """Extra ``synthetic_world serve`` arguments of the run (fault injection), as the driver's
    own world server gets them: the same trial key draws the same faults."""
    public_url: str | None = None
    """``--world-public-url``: what a remote provider is told, as for the driver's server."""


@dataclass(frozen=True)
class RunSpec:
    """Everything a task needs besides its (question, trial); put in the object store once."""

    harness: str
    options: HarnessOptions
    config_json: str
    """The run's RunConfig (budgets, retries, output limit), without secrets."""
    instructions: str
    erp: WorkerErp
    run_dir: str
    """The driver's run directory: used as the scratch parent when this node sees it too."""
    start_id: str = ""
    """Names this start of the run. A worker serves each start with a server of its own, as a
    local start has its own: the fault draws count a call's occurrences per server, so a second
    run in the same worker process replays the same faults as the first."""
    tools: tuple[str, ...] | None = None
    """The run's ``--tools`` (``AgentEnvironment.tools``)."""
    withheld_tools: tuple[str, ...] = ()
    world: WorkerWorld | None = None
    """The research world the agent reaches (``--research world`` with research questions)."""
    research: str = "world"
    """The run's ``--research`` (``AgentEnvironment.research``)."""


_SERVERS: dict[str, Any] = {}
_SERVERS_LOCK = threading.Lock()


def _stop_servers() -> None:
    for server in list(_SERVERS.values()):
        server.stop()
    _SERVERS.clear()


def _served(key: tuple[str, ...], start_id: str, start: Callable[[Path], Any]) -> ErpEndpoint:
    """The server named ``key`` owned by this worker process for the run's start ``start_id``,
    started with ``start(log_path)`` on first use (it waits on the server's progress); servers
    of earlier starts are stopped."""
    joined = "\0".join((start_id, *key))
    with _SERVERS_LOCK:
        server = _SERVERS.get(joined)
        if server is not None and server.process.poll() is None:
            return server.endpoint
        for old_key in [k for k in _SERVERS if not k.startswith(start_id + "\0")]:
            _SERVERS.pop(old_key).stop()
        if not _SERVERS:
            atexit.register(_stop_servers)
        log = Path(tempfile.gettempdir()) / "ledgerbench-ray" / f"{key[0]}-{os.getpid()}.log"
        server = start(log)
        _SERVERS[joined] = server
        return server.endpoint


def _served_erp(
    db_url: str, record_base_url: str | None, args: tuple[str, ...] = (), start_id: str = ""
) -> ErpEndpoint:
    """An ``erp_mcp`` server for ``db_url`` (with ``args``), one per worker process and start."""
    from harnesses._erp_process import start_erp_server

    def start(log: Path) -> Any:
        return start_erp_server(
            db_url, log_path=log, record_base_url=record_base_url, extra_args=args
        )

    return _served(("erp_mcp", db_url, *args), start_id, start)


def worker_endpoint(erp: WorkerErp, start_id: str = "") -> ErpEndpoint:
    if erp.endpoint is not None:
        return erp.endpoint
    if erp.sqlite_file is not None:
        db_url = f"sqlite:///{materialize(erp.sqlite_file)}"
        return _served_erp(db_url, erp.record_base_url, erp.server_args, start_id)
    assert erp.db_url is not None
    return _served_erp(erp.db_url, erp.record_base_url, erp.server_args, start_id)


class WorkerWorldError(RuntimeError):
    """This worker could not get or serve the research world (recorded as ``world_unavailable``,
    not as an ERP failure)."""


def worker_world(world: WorkerWorld, start_id: str = "") -> McpEndpoint:
    """The world endpoint of this worker: the shared server, or this process's own server of
    the shipped world file (started as the local runner starts its world server)."""
    if world.endpoint is not None:
        return world.endpoint
    assert world.sqlite_file is not None
    from harnesses._world_serving import start_world_server

    def start(log: Path) -> Any:
        return start_world_server(path, world.server_args, log, world.public_url, wait=True)

    try:
        path = materialize(world.sqlite_file)
        return _served(("world_mcp", str(path), *world.server_args), start_id, start)
    except (RuntimeError, OSError) as error:  # RayExecutorError, ServerStartError, a full disk
        raise WorkerWorldError(f"the research world on this worker: {error}") from error


def _work_dir(spec: RunSpec) -> str:
    shared = Path(spec.run_dir)
    if shared.is_dir():
        work = shared / "work"
    else:  # another machine: node-local scratch
        work = Path(tempfile.gettempdir()) / "ledgerbench-ray" / "work" / shared.name
    work.mkdir(parents=True, exist_ok=True)
    return str(work)


def run_on_worker(spec: RunSpec, question: Question, trial: int) -> str:
    """The Ray task: one TrajectoryRecord as JSON."""
    from harnesses._question_runner import QuestionRunner
    from harnesses._registry import create_harness
    from harnesses._run_config import RunConfig

    config = RunConfig.model_validate_json(spec.config_json)
    harness = create_harness(spec.harness, spec.options)
    env = AgentEnvironment(
        erp=worker_endpoint(spec.erp, spec.start_id),
        instructions=spec.instructions,
        work_dir=_work_dir(spec),
        world=worker_world(spec.world, spec.start_id) if spec.world is not None else None,
        research=spec.research,
        tools=spec.tools,
        withheld_tools=spec.withheld_tools,
    )

    async def run_one() -> Any:
        runner = QuestionRunner(harness, env, config)
        try:
            return await runner.run(question, trial)
        finally:
            await runner.aclose()  # closes the harness (on its own loop, for plug-ins)

    try:
        record = asyncio.run(run_one())
    finally:  # finished, failed or cancelled: the task leaves no process of its own behind
        kill_stray_children(keep={server.process.pid for server in _SERVERS.values()})
    return record.model_dump_json(by_alias=True)


def kill_stray_children(keep: set[int]) -> None:
    """SIGKILL this process's children except ``keep`` (Linux ``/proc``; elsewhere nothing).

    A harness cancelled by Ctrl-C on the driver may not finish its own clean-up in time (the
    Claude CLI's Node process); the worker process outlives the task, so it must not keep them.
    """
    me = os.getpid()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        pid = int(entry.name)
        if parent == me and pid not in keep:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
