"""The ERP a run talks to: a given MCP endpoint, or a server the runner starts for the run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesses._erp_process import (
    DEFAULT_ERP_RELATIVE_PATH,
    ErpServerProcess,
    ServerStartError,
    default_erp_db_url,
    ensure_default_erp,
    first_answer,
    start_erp_server,
)
from harnesses._protocol import ErpEndpoint
from harnesses._redact import error_detail, one_line, redact_url
from harnesses._run_config import RunConfig, RunConfigError
from harnesses._run_store import ErpFacts
from ledgerbench_core.dataset import Dataset
from ledgerbench_core.trajectory import RunManifest


@dataclass
class ErpInUse:
    endpoint: ErpEndpoint
    db_url: str | None
    info: dict[str, Any] = field(default_factory=dict)
    server: ErpServerProcess | None = None
    """The server the runner started for the run, when it did."""
    log_destination: Path | None = None
    """Where the server's log goes when it stops (the run directory, once it is open)."""
    shown_db: str = ""
    """How messages name the database the server serves."""

    async def ready(self) -> None:
        """Wait until the server the runner started listens: it boots while the world's does
        (no-op for ``--erp-url``)."""
        if self.server is None:
            return
        try:
            await self.server.until_listening()
        except ServerStartError as error:
            raise ServerStartError(f"the ERP server for {self.shown_db}: {error}") from None

    @property
    def snapshot_hash(self) -> str | None:
        value = self.info.get("snapshot_hash") or self.info.get("erp_snapshot_hash")
        return str(value) if value else None

    def facts(self) -> ErpFacts:
        return ErpFacts(url=self.endpoint.url, db_url=self.db_url, snapshot_hash=self.snapshot_hash)

    def keep_log_in(self, run_dir: Path) -> None:
        """Append the server's log to ``run_dir/erp_mcp.log`` when it stops. Until then it is
        written outside the run directory, so a start refused after the server came up (a wrong
        snapshot, a run with other settings) leaves no file behind."""
        self.log_destination = run_dir / ERP_LOG_FILE


ERP_LOG_FILE = "erp_mcp.log"


def servers_starting(erp: ErpInUse, world: Any = None) -> str:
    """Which of the run's servers are still starting, and at which step (for a slow start)."""
    waiting = []
    for name, in_use in (("the ERP server", erp), ("the world server", world)):
        watch = getattr(getattr(in_use, "server", None), "watch", None)
        if watch is not None:
            waiting.append(f"{name} at '{watch.step}'")
    return "waiting for " + " and ".join(waiting) if waiting else "checking the servers"


@contextlib.asynccontextmanager
async def serve_erp(
    config: RunConfig, log: Any, dataset: Dataset | None = None
) -> AsyncIterator[ErpInUse]:
    """The ERP endpoint for the run: the given ``--erp-url`` or a server started for the run.

    Without ``--erp-url``/``--erp-db`` the default ERP is used, rebuilt when it does not match the
    snapshot the dataset records. Nothing is written to the run directory here: the server logs to
    a temporary file, moved in by :meth:`ErpInUse.keep_log_in` when the run goes ahead.
    """
    if config.erp_url:
        token = config.erp_token.get_secret_value() if config.erp_token else None
        token = token or os.environ.get("ERP_MCP_TOKEN") or None
        endpoint = ErpEndpoint(url=config.erp_url, token=token, public_url=config.erp_public_url)
        yield ErpInUse(endpoint=endpoint, db_url=None)
        return
    db_url = config.erp_db
    if db_url is None:  # said only when it has to be generated (a first use takes seconds)
        header = dataset.header if dataset is not None else None
        db_url = await in_daemon_thread(
            ensure_default_erp,
            seed=(header.generator_seed if header and header.generator_seed is not None else 42),
            expected_snapshot=header.erp_snapshot_hash if header else None,
            announce=log,
        )
    else:
        check_erp_db(db_url)
    scratch = Path(tempfile.mkdtemp(prefix="ledgerbench-erp-"))
    in_use: ErpInUse | None = None
    try:
        # Started from the main thread: its parent-death signal is tied to the thread that forks.
        server = start_erp_server(
            db_url,
            log_path=scratch / ERP_LOG_FILE,
            public_url=config.erp_public_url,
            extra_args=fault_arguments(config.erp_fault_rate, config.erp_fault_seed),
            wait=False,
        )
        shown = redact_url(db_url) if config.erp_db else str(DEFAULT_ERP_RELATIVE_PATH)
        in_use = ErpInUse(endpoint=server.endpoint, db_url=db_url, server=server, shown_db=shown)
        yield in_use  # the caller awaits in_use.ready()
    finally:
        if in_use is not None and in_use.server is not None:
            await asyncio.shield(asyncio.to_thread(in_use.server.stop))
            keep_log(scratch / ERP_LOG_FILE, in_use.log_destination)
        shutil.rmtree(scratch, ignore_errors=True)


def fault_arguments(rate: float, seed: int) -> list[str]:
    """The ``erp_mcp`` arguments of the run's fault injection (none without faults): the runner's
    own server and every server a distributed executor starts get the same ones."""
    return ["--error-rate", str(rate), "--fault-seed", str(seed)] if rate else []


def keep_log(source: Path, destination: Path | None) -> None:
    """Append a server's scratch log to its place in the run directory (once there is one)."""
    if destination is None or not source.exists():
        return
    with contextlib.suppress(OSError), destination.open("ab") as target:
        target.write(source.read_bytes())


async def in_daemon_thread(function: Any, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` in a daemon thread. Cancelling the await (Ctrl-C, SIGTERM)
    returns at once; the thread is left to die with the process (``asyncio.to_thread`` would make
    the interpreter wait for it at exit, e.g. for a whole ERP generation)."""
    import threading

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any = None, error: BaseException | None = None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def target() -> None:
        try:
            result = function(*args, **kwargs)
        except BaseException as error:  # handed to the awaiting task
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, None, error)
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result)

    threading.Thread(target=target, name="ledgerbench-prepare", daemon=True).start()
    return await future


def check_erp_db(url: str) -> None:
    """Refuse an ``--erp-db`` the server could not serve, in one line, before anything starts:
    a URL that is not a database URL, a missing, unreadable or foreign SQLite file."""
    import sqlite3

    from synthetic_erp._db import ErpDatabaseError, normalize_url, sqlite_path

    shown = redact_url(url)
    try:
        normalize_url(url)
        path = sqlite_path(url)
    except ErpDatabaseError as error:
        raise RunConfigError(f"--erp-db {shown}: {error}") from None
    if path is None:
        return
    generate = f"python -m synthetic_erp generate --db {shown}"
    if not path.exists():
        raise RunConfigError(
            f"--erp-db {shown}: no such file {path.resolve()}; create it with `{generate}`, or "
            "leave out "
            "--erp-db to use the default ERP"
        )
    if path.is_dir():
        raise RunConfigError(f"--erp-db {shown}: {path} is a folder; give the ERP's SQLite file")
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except OSError as error:
        raise RunConfigError(
            f"--erp-db {shown}: cannot read {path} ({error.strerror}); check its permissions"
        ) from None
    if head != b"SQLite format 3\x00":
        raise RunConfigError(
            f"--erp-db {shown}: {path} is not an SQLite database; create an ERP with `{generate}`"
        )
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            connection.execute("SELECT count(*) FROM erp_meta").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise RunConfigError(
            f"--erp-db {shown}: {path} is not a LedgerBench ERP ({error}); create one with "
            f"`{generate}`"
        ) from None


ERP_INFO_RESOURCE = "erp://info"
"""The ERP server's facts as a resource: served whatever its toolset (``erp_mcp._resources``)."""


async def fetch_erp_info(
    endpoint: ErpEndpoint, server: ErpServerProcess | None = None, timeout: float = 30.0
) -> dict[str, Any]:
    """The ERP's facts (today, legal entities, snapshot hash, ...): the ``erp://info`` resource,
    or the ``erp_info`` tool's result from a server without that resource. The runner needs no
    particular tool: a server started with any ``--toolset`` is accepted.

    A server the runner started (``server``) is waited for while it lives and the machine makes
    progress (:meth:`ErpServerProcess.answer`); another one (``--erp-url``) for ``timeout``."""
    from fastmcp import Client

    from harnesses._erp_client import http_transport

    async def read(client: Any) -> Any:
        templates = {str(r.uri) for r in await client.list_resources()}
        if ERP_INFO_RESOURCE in templates:
            contents = await client.read_resource(ERP_INFO_RESOURCE)
            return json.loads(getattr(contents[0], "text", "") or "{}")
        result = await client.call_tool_mcp("erp_info", {})
        for attempt in range(3):  # a fault-injecting server may fail this call transiently
            if not (result.is_error and _tool_text(result).lstrip().startswith("TRANSIENT")):
                break
            await asyncio.sleep(0.2 * (attempt + 1))
            result = await client.call_tool_mcp("erp_info", {})
        return result

    async def contact() -> Any:
        async with Client(http_transport(endpoint)) as client:
            return await read(client)

    try:
        result = await first_answer(server, contact, "answering its first call (erp_info)", timeout)
        if isinstance(result, dict):
            return result
    except ServerStartError:
        raise
    except Exception as error:
        detail = error_detail(error, endpoint.token)
        if server is not None:  # the runner's own server: not the user's input
            message = f"{server.what} failed its first call (erp_info): {detail}"
            raise ServerStartError(message) from None
        raise RunConfigError(
            f"cannot reach the ERP MCP server at {endpoint.url} ({detail}); check --erp-url and "
            "--erp-token (or ERP_MCP_TOKEN), or use --erp-db to let the runner serve a database"
        ) from None
    if getattr(result, "is_error", False):
        raise RunConfigError(f"the ERP server at {endpoint.url} failed erp_info")
    structured = getattr(result, "structured_content", None)
    if isinstance(structured, dict):
        return structured.get("result", structured) if len(structured) == 1 else structured
    for block in getattr(result, "content", None) or []:
        text = getattr(block, "text", None)
        if text:
            with contextlib.suppress(json.JSONDecodeError):
                parsed = json.loads(text)
                if isinstance(parsed, dict):
                    return parsed
    return {}


def _origins(dataset: Dataset, dataset_path: Path, snapshot: str) -> list[str]:
    """How the dataset (or, for a directory, each file built on ``snapshot``) was made."""
    headers: list[tuple[str, dict[str, Any]]] = []
    if dataset_path.is_dir():
        import yaml

        for path in sorted(dataset_path.glob("*.y*ml")):
            with contextlib.suppress(Exception), path.open(encoding="utf-8") as handle:
                head = yaml.safe_load(handle)
                header = head.get("header") if isinstance(head, dict) else None
                if isinstance(header, dict) and header.get("erp_snapshot_hash") == snapshot:
                    headers.append((path.name, header))
    if not headers:
        headers = [("", dataset.header.model_dump())]
    origins = []
    for name, header in headers:
        parts = [name] if name else []
        if header.get("generator_seed") is not None:
            parts.append(f"generator seed {header['generator_seed']}")
        if header.get("created_by"):
            parts.append(f"made by: {one_line(str(header['created_by']))}")
        if parts:
            origins.append(", ".join(parts))
    return origins


def _tool_text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") or "" for block in result.content or [])


def check_snapshot(dataset: Dataset, dataset_path: Path, erp: ErpInUse) -> None:
    in_use = redact_url(erp.db_url) if erp.db_url else erp.endpoint.url
    problem = snapshot_problem(dataset, dataset_path, erp.snapshot_hash, erp.db_url, in_use)
    if problem is not None:
        raise RunConfigError(problem)


def snapshot_problem(
    dataset: Dataset, dataset_path: Path, actual: str | None, db_url: str | None, in_use: str
) -> str | None:
    """Why the ERP of snapshot ``actual`` (``db_url``, shown as ``in_use``) cannot answer the
    dataset's questions (one line with the fix), or None when the dataset was made from it."""
    expected = dataset.header.erp_snapshot_hash
    if not expected or expected == actual:
        return None
    origins = _origins(dataset, dataset_path, expected)
    where = f" ({'; '.join(origins)})" if origins else ""
    hint = ""
    if db_url and db_url == default_erp_db_url():
        seed = dataset.header.generator_seed if dataset.header.generator_seed is not None else 42
        hint = (
            f"; the default ERP ({DEFAULT_ERP_RELATIVE_PATH}) is left as it is: build the one "
            f"the dataset came from with python -m synthetic_erp generate --db sqlite:///erp-{seed}"
            f".db --seed {seed} (and the --customers/--vendors it was made with), then pass "
            f"--erp-db sqlite:///erp-{seed}.db"
        )
    return (
        f"dataset {dataset_path} was built from the ERP with snapshot hash {expected}{where}, "
        f"but the ERP in use ({in_use}) has snapshot {actual or 'unknown'}; serve that database "
        f"(--erp-db/--erp-url) or regenerate the dataset against this ERP{hint}"
    )


def check_erp_unchanged(previous: RunManifest | None, erp: ErpInUse, force_new: bool) -> None:
    if previous is None or force_new:
        return
    if previous.erp_snapshot_hash and previous.erp_snapshot_hash != erp.snapshot_hash:
        raise RunConfigError(
            f"the run was made against ERP snapshot {previous.erp_snapshot_hash}, but the ERP in "
            f"use has {erp.snapshot_hash}; serve the same ERP to resume or add --force-new"
        )
