"""``harnesses.run --executor ray``: each (question, trial) is one Ray task with its own budget.

The driver keeps at most ``--concurrency`` tasks in flight and writes every record itself, through
the same writer as the local executor, so the trajectory file, fsync, resume and the manifest are
the same. What differs is only where a question runs:

- a task's result is the record the worker's :class:`QuestionRunner` built (budget, retries and
  cancellation are enforced on the worker, as locally);
- a task whose worker process or node died becomes a ``worker_lost`` record (an infrastructure
  failure, never judged; ``--retry-errors`` runs it again); Ray's own task retries are off so that
  the loss is visible;
- Ctrl-C or SIGTERM cancels the tasks in flight: first a KeyboardInterrupt inside each task (the
  harness is cancelled and cleans up, as locally), then, after a grace period, the worker process
  is killed. The interrupted questions are not recorded and run again on resume.

Imported only when ``--executor ray`` is chosen.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harnesses._erp_process import ErpServerError
from harnesses._erp_serving import ErpInUse, fault_arguments
from harnesses._executor import Pair, PairRunner
from harnesses._protocol import HarnessOptions
from harnesses._ray_worker import (
    RunSpec,
    WorkerErp,
    WorkerWorld,
    WorkerWorldError,
    run_on_worker,
)
from harnesses._registry import HarnessLoadError
from harnesses._run_config import RunConfig
from harnesses._world_serving import WorldInUse
from ledgerbench_core._ray import (
    RayExecutorError,
    RayOptions,
    check_fits,
    error_detail,
    is_lost_worker,
    ray_session,
    ship_file,
    sqlite_path,
)
from ledgerbench_core.dataset import Question
from ledgerbench_core.trajectory import (
    ErrorInfo,
    Message,
    Status,
    Termination,
    TerminationReason,
    TrajectoryRecord,
)
from synthetic_erp._catalog import STABLE_RECORD_BASE

CANCEL_GRACE_S = 5.0
"""After Ctrl-C, how long tasks get to stop on their own before their worker is killed."""


@dataclass
class _InFlight:
    ref: Any
    question: Question
    trial: int
    submitted: float
    submitted_at: dt.datetime


def worker_erp(ray: Any, config: RunConfig, erp: ErpInUse) -> WorkerErp:
    """How workers reach the ERP the driver checked: the shared URL, the SQLite file shipped
    through the object store (verified by hash on each node), or a database URL they can reach.
    Servers the workers start get the run's fault injection, as the driver's own server does."""
    if config.erp_url:
        return WorkerErp(endpoint=erp.endpoint)
    assert erp.db_url is not None
    base = STABLE_RECORD_BASE  # the driver's server cites the same stable links
    args = tuple(fault_arguments(config.erp_fault_rate, config.erp_fault_seed))
    path = sqlite_path(erp.db_url)
    if path is not None:
        if not path.is_file():
            raise RayExecutorError(f"--erp-db {erp.db_url}: file not found")
        shipped = ship_file(ray, path)
        return WorkerErp(sqlite_file=shipped, record_base_url=base, server_args=args)
    return WorkerErp(db_url=erp.db_url, record_base_url=base, server_args=args)


def worker_world(ray: Any, config: RunConfig, world: WorldInUse) -> WorkerWorld:
    """How workers reach the research world the driver checked: the shared ``--world-url``, or
    the world file shipped through the object store (verified by hash on each node) and served
    per worker process with the run's fault injection, as the driver's own server is."""
    if world.path is None:
        return WorkerWorld(endpoint=world.endpoint)
    if not world.path.is_file():
        raise RayExecutorError(f"the research world {world.path}: file not found")
    return WorkerWorld(
        sqlite_file=ship_file(ray, world.path),
        server_args=tuple(fault_arguments(config.erp_fault_rate, config.erp_fault_seed)),
        public_url=config.world_public_url,
    )


def loopback_flags(config: RunConfig) -> list[tuple[str, str]]:
    """The shared servers the workers would reach at this machine's loopback address: ``--erp-url``
    always, ``--world-url`` when the agent reaches the world (``--research world``; golden
    documents are fetched by the driver)."""
    urls = [("--erp-url", config.erp_url)]
    if config.research == "world":
        urls.append(("--world-url", config.world_url))
    return [(flag, url) for flag, url in urls if url and _is_loopback(urlsplit(url).hostname)]


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host).is_loopback
    return False


def is_this_machine(host: str) -> bool:
    """Whether ``host`` names this machine: it resolves to an address a socket can bind here."""
    if _is_loopback(host):
        return True
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)}
    except OSError:
        return False
    for address in addresses:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
            return True
    return False


def cluster_host(address: str | None) -> str | None:
    """The host of a Ray address (``HOST:PORT``, ``ray://HOST:PORT``); None for a new local
    instance or ``auto`` (a cluster started on this machine)."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None or address in ("auto", "local"):
        return None
    return urlsplit(address if "://" in address else f"ray://{address}").hostname


def loopback_problem(config: RunConfig, *, other_nodes: int = 0) -> str | None:
    """Why the workers cannot reach a shared server the run names at loopback (one line), or
    None. Known before connecting when the cluster's address is another machine's, and after
    connecting when the cluster has nodes besides this one: a loopback URL on those nodes is
    that node itself, where no server listens."""
    flags = loopback_flags(config)
    if not flags:
        return None
    host = cluster_host(config.ray_address)
    if other_nodes:
        where = f"{other_nodes} node(s) of the Ray cluster besides this machine"
    elif host is not None and not is_this_machine(host):
        where = f"the Ray cluster at {host}, another machine"
    else:
        return None
    flag, url = flags[0]
    instead = "--erp-db URL" if flag == "--erp-url" else "--world-db PATH"
    return (
        f"{flag} {url} is this machine's loopback address, which Ray workers on {where} cannot "
        f"reach; pass a URL they reach (a server bound to a routable address), or {instead}, "
        "which the run ships to every worker"
    )


def failure_record(
    flight: _InFlight,
    reason: TerminationReason,
    error: BaseException,
    config: RunConfig,
    labels: tuple[str, str | None],
    instructions_hash: str,
) -> TrajectoryRecord:
    """The record of a question whose task failed outside its harness (``worker_lost``, or the
    worker could not serve the ERP): an infrastructure failure, never judged."""
    detail = error_detail(error)
    elapsed = time.monotonic() - flight.submitted
    return TrajectoryRecord(
        question_id=flight.question.id,
        trial=flight.trial,
        task_type=flight.question.task_type,
        harness=labels[0],
        model=labels[1],
        answer="",
        status=Status.error,
        termination=Termination.of(reason, detail),
        error=ErrorInfo(**{"class": type(error).__name__, "message": detail}),
        latency_s=round(elapsed, 4),
        timeout_s=config.budget_for(flight.question),
        started_at=flight.submitted_at,
        finished_at=flight.submitted_at + dt.timedelta(seconds=elapsed),
        input=flight.question.query,
        system_prompt_hash=instructions_hash,
        messages=[Message(role="user", content=flight.question.query, started_s=0.0)],
    )


class RayExecutor:
    """The :class:`harnesses._executor.Executor` for ``--executor ray``.

    The driver calls :meth:`bind` once the ERP is known (this connects to the cluster and ships
    the ERP), then iterates :meth:`execute`, which keeps ``concurrency`` tasks in flight and yields
    each record as its task ends. ``run_pair`` (the driver's local runner) is not used: workers
    build their own harness and :class:`QuestionRunner`.
    """

    def __init__(self, config: RunConfig) -> None:
        self._config = config
        self._options = RayOptions(
            address=config.ray_address,
            num_cpus=config.ray_num_cpus,
            memory_mb=config.ray_memory_mb,
        )
        self._session: contextlib.AbstractContextManager | None = None
        self._ray: Any = None
        self._spec_ref: Any = None
        self._instructions_hash = ""
        self._labels: tuple[str, str | None] = (config.harness, config.model)
        if (problem := loopback_problem(config)) is not None:
            raise RayExecutorError(problem)

    def connect(self) -> None:
        """Connect to the cluster and check that a task fits on some node. The driver calls it
        before the ERP is served or generated, so a cluster that refuses the driver (a missing
        token, no such address, too small) is said before any slow work; :meth:`bind` calls it
        when it was not called."""
        if self._session is not None:
            return
        self._session = ray_session(self._options)
        self._ray = self._session.__enter__()
        try:
            check_fits(self._ray, self._options)
            other_nodes = _other_nodes(self._ray)
            if (problem := loopback_problem(self._config, other_nodes=other_nodes)) is not None:
                raise RayExecutorError(problem)
        except BaseException:
            self._disconnect()
            raise

    def bind(
        self,
        *,
        erp: ErpInUse,
        instructions: str,
        run_dir: Path,
        harness: Any,
        tools: Any = None,
        world: WorldInUse | None = None,
    ) -> None:
        """Connect (unless :meth:`connect` did) and put the run's spec in the store.

        ``harness`` is the driver's instance: its name and model label the records of lost
        workers as the workers' own records are labelled. ``world``: the research world the
        agent reaches (``--research world``), None when the agent reaches none."""
        self.connect()
        try:
            config = self._config
            spec = RunSpec(
                harness=config.harness,
                options=HarnessOptions(
                    model=config.model,
                    reasoning_effort=config.reasoning_effort,
                    base_url=config.base_url,
                    extra=dict(config.harness_opts),
                ),
                config_json=config.model_dump_json(),
                instructions=instructions,
                erp=worker_erp(self._ray, config, erp),
                run_dir=str(run_dir),
                start_id=uuid.uuid4().hex,
                tools=tools.chosen if tools is not None else None,
                withheld_tools=tools.withheld if tools is not None else (),
                world=worker_world(self._ray, config, world) if world is not None else None,
                research=config.research,
            )
            self._spec_ref = self._ray.put(spec)
        except BaseException:
            self._disconnect()
            raise
        self._instructions_hash = _instructions_hash(instructions)
        self._labels = (
            getattr(harness, "name", None) or self._config.harness,
            getattr(harness, "model", None) or self._config.model,
        )

    def close(self) -> None:
        """Disconnect from the cluster (the driver calls it when the run ends, ran or not)."""
        self._disconnect()

    def _disconnect(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            session.__exit__(None, None, None)

    async def execute(
        self, pairs: Sequence[Pair], run_pair: PairRunner
    ) -> AsyncIterator[TrajectoryRecord]:
        if self._spec_ref is None:
            raise RuntimeError("RayExecutor.bind() must be called before execute()")
        remote = self._ray.remote(run_on_worker).options(
            **self._options.task_options(max_retries=0)
        )
        waiting: Iterator[Pair] = iter(pairs)
        in_flight: dict[asyncio.Future, _InFlight] = {}

        def submit_next() -> None:
            pair = next(waiting, None)
            if pair is None:
                return
            question, trial = pair
            ref = remote.remote(self._spec_ref, question, trial)
            flight = _InFlight(ref, question, trial, time.monotonic(), dt.datetime.now(dt.UTC))
            in_flight[asyncio.wrap_future(ref.future())] = flight

        try:
            for _ in range(self._config.concurrency):
                submit_next()
            while in_flight:
                done, _ = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                finished = [(future, in_flight.pop(future)) for future in done]
                for _ in finished:
                    submit_next()
                for future, flight in finished:
                    yield self._record(future, flight)
        finally:
            try:
                await self._cancel(in_flight)
            finally:
                self._disconnect()

    def _record(self, future: asyncio.Future, flight: _InFlight) -> TrajectoryRecord:
        error = future.exception()
        if error is None:
            return TrajectoryRecord.model_validate_json(future.result())
        labels = (self._config, self._labels, self._instructions_hash)
        if is_lost_worker(error):
            return failure_record(flight, TerminationReason.worker_lost, error, *labels)
        cause = getattr(error, "cause", None)
        if isinstance(cause, ImportError | HarnessLoadError):
            raise RayExecutorError(
                f"question {flight.question.id}: a Ray worker cannot load the harness "
                f"({type(cause).__name__}: {' '.join(str(cause).split())[:300]}); install "
                "ledgerbench and the harness plug-in on the workers (docs/distributed.md)"
            )
        if isinstance(cause, WorkerWorldError):
            return failure_record(flight, TerminationReason.world_unavailable, cause, *labels)
        if cause is not None:  # the worker could not get the ERP or build the harness
            erp_problem = isinstance(cause, ErpServerError | RayExecutorError | OSError)
            reason = (
                TerminationReason.erp_unavailable
                if erp_problem
                else (TerminationReason.harness_error)
            )
            return failure_record(flight, reason, cause, *labels)
        raise RayExecutorError(f"question {flight.question.id}: {error_detail(error)}")

    async def _cancel(self, in_flight: dict[asyncio.Future, _InFlight]) -> None:
        """KeyboardInterrupt in every task (its harness is cancelled and cleans up), then kill
        the workers of the tasks that did not stop within the grace period."""
        if not in_flight:
            return
        for flight in in_flight.values():
            self._ray.cancel(flight.ref, force=False)
        grace = CANCEL_GRACE_S + self._config.cancel_grace_s
        _, still_running = await _wait_shielded(set(in_flight), grace)
        for future in still_running:
            self._ray.cancel(in_flight[future].ref, force=True)
        if still_running:
            await _wait_shielded(still_running, grace)
        for future in in_flight:  # retrieved, so asyncio does not log "never retrieved"
            if future.done() and not future.cancelled():
                future.exception()


def _other_nodes(ray: Any) -> int:
    """Alive nodes of the cluster other than the driver's."""
    here = ray.get_runtime_context().get_node_id()
    return sum(1 for node in ray.nodes() if node.get("Alive") and node.get("NodeID") != here)


async def _wait_shielded(
    futures: set[asyncio.Future], timeout: float
) -> tuple[set[asyncio.Future], set[asyncio.Future]]:
    """asyncio.wait that still waits when the calling task was just cancelled (Ctrl-C)."""
    waiter = asyncio.ensure_future(asyncio.wait(futures, timeout=timeout))
    while True:
        try:
            return await asyncio.shield(waiter)
        except asyncio.CancelledError:
            if waiter.done():
                return waiter.result()


def _instructions_hash(instructions: str) -> str:
    from harnesses._instructions import instructions_hash

    return instructions_hash(instructions)
