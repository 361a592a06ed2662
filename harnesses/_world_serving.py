"""The research world a run talks to: a given MCP endpoint, or a world server the runner starts.

A run needs the world when it puts entity-performance or brief questions keyed on a world (their
dataset header records the world's snapshot). ``--world-db PATH`` serves that world file;
``--world-url URL`` uses a running world server; with neither, the runner builds the default world
beside the default ERP (``.ledgerbench/world.db``, generated from ``.ledgerbench/erp.db``) when it
is missing or does not match the dataset, and serves it. Like the ERP server, the world server is a
subprocess on a free loopback port with a fresh token, stopped when the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesses._erp_process import (
    ErpServerProcess,
    ServerStartError,
    first_answer,
    project_root,
    start_mcp_server,
)
from harnesses._erp_serving import fault_arguments, keep_log
from harnesses._protocol import McpEndpoint
from harnesses._redact import error_detail, one_line
from harnesses._run_config import RunConfig, RunConfigError
from ledgerbench_core.dataset import Dataset, Question, TaskType

DEFAULT_WORLD_RELATIVE_PATH = Path(".ledgerbench") / "world.db"
DEFAULT_WORLD_SEED = 42
RESEARCH_TASK_TYPES = frozenset({TaskType.entity_performance, TaskType.business_brief})


WORLD_LOG_FILE = "world_mcp.log"


@dataclass
class WorldInUse:
    endpoint: McpEndpoint
    path: Path | None
    info: dict[str, Any] = field(default_factory=dict)
    log_destination: Path | None = None
    """Where the server's log goes when it stops (the run directory, once it is open)."""
    server: Any = None
    """The server process the runner started (None for ``--world-url``)."""

    async def ready(self) -> None:
        """Wait until the world server listens (it boots while the ERP's does), then read and
        keep its ``world_info``."""
        if self.server is not None:
            try:
                await self.server.until_listening()
            except ServerStartError as error:
                raise ServerStartError(f"the research world {self.path}: {error}") from None
        self.info = await fetch_world_info(self.endpoint, self.server)

    def keep_log_in(self, run_dir: Path) -> None:
        """Append the server's log to ``run_dir/world_mcp.log`` when it stops (as the ERP's:
        a start refused after the server came up leaves no file behind)."""
        self.log_destination = run_dir / WORLD_LOG_FILE

    @property
    def snapshot_hash(self) -> str | None:
        value = self.info.get("snapshot_hash")
        return str(value) if value else None

    @property
    def world_id(self) -> str | None:
        value = self.info.get("world_id")
        return str(value) if value else None


def needs_world(dataset: Dataset, questions: list[Question], config: RunConfig) -> bool:
    """Whether the run serves a world: research goes to it (``world``) or its documents go into
    prompts (``golden``), and it was asked for or research questions are keyed on one."""
    if config.research not in WORLD_MODES:
        return False
    if config.world_db or config.world_url:
        return True
    keyed = bool(dataset.header.world_snapshot_hash)
    return keyed and any(q.task_type in RESEARCH_TASK_TYPES for q in questions)


WORLD_MODES = frozenset({"world", "golden"})


def research_mode_problem(config: RunConfig, harness: Any) -> str | None:
    """Why the run cannot use ``config.research`` (one line), or None."""
    world_flags = [
        flag
        for flag, value in (("--world-db", config.world_db), ("--world-url", config.world_url))
        if value
    ]
    if config.research not in WORLD_MODES and world_flags:
        return (
            f"{' and '.join(world_flags)} has no use with --research {config.research} (no world "
            "is served); drop it or use --research world"
        )
    modes = getattr(harness, "research_modes", None)
    if modes is not None and config.research not in modes:
        return (
            f"--research {config.research}: the {config.harness} harness supports "
            f"{', '.join(modes)}; {getattr(harness, 'research_note', '')}".rstrip("; ")
        )
    return None


def world_path_of(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else Path(url)


def world_db_problem(config: RunConfig) -> str | None:
    """Why ``--world-db`` cannot be served (missing, not a world, e.g. an ERP file, or another
    world format), or None: checked before the ERP is prepared, so a wrong file costs nothing."""
    if not config.world_db or config.research not in WORLD_MODES:
        return None
    from synthetic_world._runtime import WorldUnavailable, connect_read_only

    path = world_path_of(config.world_db)
    if not path.exists():
        return (
            f"--world-db {path}: no such world; create it with: python -m synthetic_world "
            f"generate --erp-db sqlite:///erp.db --db sqlite:///{path}"
        )
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as error:
        tables = set()
        if "not a database" not in str(error):
            return f"--world-db {path}: cannot be read ({error})"
    if "world_meta" not in tables:
        return (
            f"--world-db {path} is not a research world (an ERP file or another database); "
            "pass the world's file, e.g. .ledgerbench/world.db, or build one from an ERP with: "
            f"python -m synthetic_world generate --erp-db sqlite:///{path} --db sqlite:///world.db"
        )
    try:
        connect_read_only(path).close()
    except WorldUnavailable as error:
        return f"--world-db {one_line(str(error))}"
    return None


def ensure_default_world(
    erp_db_url: str,
    *,
    seed: int,
    expected_snapshot: str | None,
    log: Callable[[str], None] = lambda _message: None,
    root: Path | None = None,
) -> Path:
    """The default world's file, generated from ``erp_db_url`` when it is missing or is not the
    world ``expected_snapshot`` names (a world passed with ``--world-db`` is never touched).
    ``log`` is told which of the two happened and why."""
    from synthetic_world import generate_world
    from synthetic_world._runtime import WorldUnavailable, connect_read_only

    path = (root or project_root()) / DEFAULT_WORLD_RELATIVE_PATH
    why = "none there yet"
    if path.exists():
        try:
            conn = connect_read_only(path)
            with contextlib.closing(conn):
                meta = dict(conn.execute("SELECT key, value FROM world_meta"))
            found = meta.get("snapshot_hash")
            if expected_snapshot is None or found == expected_snapshot:
                log(f"using the default research world {path} (snapshot {str(found)[:12]})")
                return path
            why = f"the one there is snapshot {str(found)[:12]}, "
            why += f"the dataset is keyed on {expected_snapshot[:12]}"
        except WorldUnavailable:
            why = "the file there is not a readable world"
    log(f"generating the default research world {path} ({why}; about 30 s)")
    path.parent.mkdir(parents=True, exist_ok=True)
    generate_world(erp_db_url, path, seed=seed, overwrite=True)
    return path


@contextlib.asynccontextmanager
async def serve_world(
    config: RunConfig,
    log: Any,
    dataset: Dataset,
    erp_db_url: str | None,
) -> AsyncIterator[WorldInUse]:
    """The world endpoint for the run: the given ``--world-url`` or a server started for it.

    Nothing is written to the run directory here: the server logs to a temporary file, moved in by
    :meth:`WorldInUse.keep_log_in` when the run goes ahead."""
    if config.world_url:
        token = config.world_token.get_secret_value() if config.world_token else None
        token = token or os.environ.get("WORLD_MCP_TOKEN") or None
        endpoint = McpEndpoint(
            url=config.world_url, token=token, public_url=config.world_public_url
        )
        yield WorldInUse(endpoint=endpoint, path=None)
        return
    if config.world_db:
        path = world_path_of(config.world_db)
        if (problem := world_db_problem(config)) is not None:
            raise RunConfigError(problem)
    elif erp_db_url is None:
        raise RunConfigError(
            "the research questions need a world, and the ERP came as --erp-url: pass "
            "--world-db PATH (python -m synthetic_world generate ...) or --world-url URL"
        )
    else:
        header = dataset.header
        path = await asyncio.to_thread(
            ensure_default_world,
            erp_db_url,
            seed=header.world_seed if header.world_seed is not None else DEFAULT_WORLD_SEED,
            expected_snapshot=header.world_snapshot_hash,
            log=log,
        )
    faults = fault_arguments(config.erp_fault_rate, config.erp_fault_seed)
    scratch = Path(tempfile.mkdtemp(prefix="ledgerbench-world-"))
    try:
        # Started from the main thread: its parent-death signal is tied to the thread that forks.
        server = start_world_server(
            path, faults, scratch / WORLD_LOG_FILE, config.world_public_url, wait=False
        )
        in_use = WorldInUse(endpoint=server.endpoint, path=path, server=server)
        try:
            yield in_use  # the caller awaits in_use.ready()
        finally:
            await asyncio.shield(asyncio.to_thread(server.stop))
            keep_log(scratch / WORLD_LOG_FILE, in_use.log_destination)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def start_world_server(
    path: Path,
    faults: Sequence[str],
    log_path: Path,
    public_url: str | None,
    *,
    wait: bool,
) -> ErpServerProcess:
    """``synthetic_world serve --db PATH`` with the run's fault arguments on a free loopback port
    with a fresh token: the runner's own world server and each Ray worker's alike, so the same
    trial key meets the same faults on either. ``wait=True`` waits on the server's progress."""
    return start_mcp_server(
        ["synthetic_world", "serve", "--db", str(path), *faults],
        token_env="WORLD_MCP_TOKEN",
        what="the research world's MCP server",
        log_path=log_path,
        public_url=public_url,
        stdio_args=("synthetic_world", "serve", "--db", str(path), "--transport", "stdio"),
        db_url=f"sqlite:///{path}",
        wait=wait,
    )


async def fetch_world_info(
    endpoint: McpEndpoint, server: ErpServerProcess | None = None, timeout: float = 30.0
) -> dict[str, Any]:
    """The ``world_info`` tool's result (today, world id, snapshot hash, ...). A server the
    runner started (``server``) is waited for while it lives and the machine makes progress
    (:meth:`ErpServerProcess.answer`); another one (``--world-url``) for ``timeout``."""
    from fastmcp import Client

    from harnesses._erp_client import http_transport

    async def contact() -> Any:
        async with Client(http_transport(endpoint)) as client:
            for attempt in range(4):  # a fault-injecting server may fail it transiently
                result = await client.call_tool_mcp("world_info", {})
                if not result.is_error:
                    break
                await asyncio.sleep(0.2 * (attempt + 1))
            return result

    try:
        result = await first_answer(
            server, contact, "answering its first call (world_info)", timeout
        )
    except ServerStartError:
        raise
    except Exception as error:
        detail = error_detail(error, endpoint.token)
        if server is not None:  # the runner's own server: not the user's input
            message = f"{server.what} failed its first call (world_info): {detail}"
            raise ServerStartError(message) from None
        raise RunConfigError(
            f"cannot reach the research world's MCP server at {endpoint.url} ({detail}); check "
            "--world-url and --world-token (or WORLD_MCP_TOKEN), or use --world-db"
        ) from None
    if result.is_error:
        raise RunConfigError(f"the research world's server at {endpoint.url} failed world_info")
    structured = result.structured_content or {}
    return structured.get("result", structured) if len(structured) == 1 else structured


def check_world_snapshot(dataset: Dataset, world: WorldInUse) -> None:
    where = str(world.path or world.endpoint.url)
    problem = world_snapshot_problem(dataset, where, world.world_id, world.snapshot_hash)
    if problem is not None:
        raise RunConfigError(problem)


def world_snapshot_problem(
    dataset: Dataset, where: str, world_id: str | None, snapshot: str | None
) -> str | None:
    """Why the world ``world_id`` of ``snapshot`` (at ``where``) cannot key the dataset's research
    questions (one line with the fix), or None when they were keyed on it."""
    expected = dataset.header.world_snapshot_hash
    if not expected or expected == snapshot:
        return None
    return (
        f"the dataset's research questions were keyed on world {dataset.header.world_id} "
        f"(snapshot {expected[:16]}), but the world in use ({where}) is "
        f"{world_id} (snapshot {(snapshot or 'unknown')[:16]}); serve that "
        "world (--world-db/--world-url) or regenerate the questions on this one "
        "(python -m synthetic_world questions ...)"
    )


@contextlib.asynccontextmanager
async def world_for_run(
    config: RunConfig, log: Any, dataset: Dataset, questions: list[Question],
    erp_db_url: str | None,
) -> AsyncIterator[WorldInUse | None]:  # fmt: skip
    """The run's world, checked against the dataset (None when no selected question needs one)."""
    if not needs_world(dataset, questions, config):
        yield None
        return
    async with serve_world(config, log, dataset, erp_db_url) as world:
        yield world  # the caller awaits world.ready() (the ERP boots meanwhile), then checks it
