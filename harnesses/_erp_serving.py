"""The ERP a run talks to: a given MCP endpoint, or a server the runner starts for the run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesses._erp_process import (
    DEFAULT_ERP_RELATIVE_PATH,
    default_erp_db_url,
    ensure_default_erp,
    start_erp_server,
)
from harnesses._protocol import ErpEndpoint
from harnesses._redact import REDACTED, one_line, redact_url
from harnesses._run_config import RunConfig, RunConfigError
from harnesses._run_store import ErpFacts
from harnesses.records import RunManifest
from ledgerbench.dataset import Dataset


@dataclass
class ErpInUse:
    endpoint: ErpEndpoint
    db_url: str | None
    info: dict[str, Any] = field(default_factory=dict)
    server: Any = None
    """The server process the runner started (None for ``--erp-url``)."""

    async def ready(self) -> None:
        """Wait until the server the runner started listens (it boots while others start)."""
        if self.server is not None:
            await asyncio.to_thread(self.server.wait_until_listening)

    @property
    def snapshot_hash(self) -> str | None:
        value = self.info.get("snapshot_hash") or self.info.get("erp_snapshot_hash")
        return str(value) if value else None

    def facts(self) -> ErpFacts:
        return ErpFacts(url=self.endpoint.url, db_url=self.db_url, snapshot_hash=self.snapshot_hash)


@contextlib.asynccontextmanager
async def serve_erp(
    config: RunConfig, run_dir: Path, log: Any, dataset: Dataset | None = None
) -> AsyncIterator[ErpInUse]:
    """The ERP endpoint for the run: the given ``--erp-url`` or a server started for the run.

    Without ``--erp-url``/``--erp-db`` the default ERP is used, rebuilt when it does not match the
    snapshot the dataset records.
    """
    if config.erp_url:
        token = config.erp_token.get_secret_value() if config.erp_token else None
        token = token or os.environ.get("ERP_MCP_TOKEN") or None
        endpoint = ErpEndpoint(url=config.erp_url, token=token, public_url=config.erp_public_url)
        yield ErpInUse(endpoint=endpoint, db_url=None)
        return
    db_url = config.erp_db
    if db_url is None:
        log("preparing the default ERP (.ledgerbench/erp.db; generated on first use)")
        header = dataset.header if dataset is not None else None
        db_url = await asyncio.to_thread(
            ensure_default_erp,
            seed=(header.generator_seed if header and header.generator_seed is not None else 42),
            expected_snapshot=header.erp_snapshot_hash if header else None,
        )
    faults = (
        ["--error-rate", str(config.erp_fault_rate), "--fault-seed", str(config.erp_fault_seed)]
        if config.erp_fault_rate
        else []
    )
    # Started from the main thread: its parent-death signal is tied to the thread that forks it.
    server = start_erp_server(
        db_url,
        log_path=run_dir / "erp_mcp.log",
        public_url=config.erp_public_url,
        extra_args=faults,
        wait=False,
    )
    try:
        yield ErpInUse(endpoint=server.endpoint, db_url=db_url, server=server)
    finally:
        await asyncio.to_thread(server.stop)


async def fetch_erp_info(endpoint: ErpEndpoint, timeout: float = 30.0) -> dict[str, Any]:
    """The ``erp_info`` tool's result (today, legal entities, snapshot hash, ...)."""
    from fastmcp import Client

    from harnesses._erp_client import http_transport

    transport = http_transport(endpoint)
    try:
        async with asyncio.timeout(timeout), Client(transport) as client:
            result = await client.call_tool_mcp("erp_info", {})
            for attempt in range(3):  # a fault-injecting server may fail this call transiently
                if not (result.is_error and _tool_text(result).lstrip().startswith("TRANSIENT")):
                    break
                await asyncio.sleep(0.2 * (attempt + 1))
                result = await client.call_tool_mcp("erp_info", {})
    except Exception as error:
        detail = one_line(f"{type(error).__name__}: {error}")
        if endpoint.token:
            detail = detail.replace(endpoint.token, REDACTED)
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
    expected = dataset.header.erp_snapshot_hash
    actual = erp.snapshot_hash
    if not expected or expected == actual:
        return
    origins = _origins(dataset, dataset_path, expected)
    where = f" ({'; '.join(origins)})" if origins else ""
    in_use = redact_url(erp.db_url) if erp.db_url else erp.endpoint.url
    hint = ""
    if erp.db_url and erp.db_url == default_erp_db_url():
        hint = (
            "; the default ERP may come from an older generator: delete "
            f"{DEFAULT_ERP_RELATIVE_PATH} to regenerate it"
        )
    raise RunConfigError(
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
