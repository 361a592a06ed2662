"""The runner: puts every selected question to a harness under a hard wall-clock budget and records
everything the agent did.

``run(RunConfig(...))`` is the whole job; ``python -m harnesses.run`` only parses flags into a
:class:`RunConfig`. The run directory holds ``manifest.json`` (atomic rewrites) and
``trajectories.jsonl`` (one fsynced line per question and trial). Running the same configuration
again resumes: only the missing (question, trial) pairs run.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from harnesses._erp_process import (
    DEFAULT_ERP_RELATIVE_PATH,
    default_erp_db_url,
    ensure_default_erp,
    project_root,
    start_erp_server,
)
from harnesses._instructions import instructions_hash, system_instructions
from harnesses._protocol import (
    DEFAULT_OUTPUT_LIMIT,
    AgentEnvironment,
    AgentTask,
    ErpEndpoint,
    Harness,
    HarnessOptions,
    TrajectoryDraft,
    is_transient,
    retry_delay,
)
from harnesses._registry import HarnessLoadError, create_harness
from harnesses.records import (
    ErrorInfo,
    RunManifest,
    Status,
    Termination,
    TerminationReason,
    TrajectoryRecord,
)
from ledgerbench.dataset import Dataset, Question, TaskType

TRAJECTORIES_FILE = "trajectories.jsonl"
MANIFEST_FILE = "manifest.json"
SECRET_KEY_PATTERN = re.compile(r"key|token|secret|password|passwd|auth|credential|cookie", re.I)
REDACTED = "***"


class RunConfigError(ValueError):
    """A problem with the user's input (flags, dataset, run directory); the CLI prints it on one
    line and exits with code 2."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class RunConfig(_Strict):
    """Everything a run needs. The CLI builds one from its flags; tests and scripts build one
    directly and call :func:`run` or :func:`run_async`."""

    dataset: Path | None = None
    """Dataset file or directory; None means the project's ``datasets/`` directory."""
    task_types: list[TaskType] = Field(default_factory=list)
    """Only these task types (empty: all)."""
    ids: list[str] = Field(default_factory=list)
    """Only these question ids (empty: all)."""
    limit: int | None = Field(default=None, ge=1)
    """At most this many questions (the first ones in dataset order, after the filters)."""
    trials: int = Field(default=1, ge=1)
    """How many times each question is put to the agent."""
    seed: int | None = None
    """Shuffle the (question, trial) order with this seed; None keeps dataset order."""
    concurrency: int = Field(default=5, ge=1, le=256)
    """Questions in flight at once."""
    timeout: float = Field(default=60.0, gt=0)
    """Budget in seconds for obligations and entity-performance questions."""
    brief_timeout: float = Field(default=300.0, gt=0)
    """Budget in seconds for business briefs."""
    harness: str = "scripted"
    """Registry name (scripted, openai, custom, claude) or plug-in ``package.module:ClassName``."""
    model: str | None = None
    reasoning_effort: str | None = None
    base_url: str | None = None
    harness_opts: dict[str, str] = Field(default_factory=dict)
    """Harness-specific options (``--harness-opt key=value``)."""
    erp_url: str | None = None
    """MCP endpoint of a running ERP server."""
    erp_token: SecretStr | None = Field(default=None, exclude=True)
    """Bearer token for ``erp_url``; never written anywhere."""
    erp_db: str | None = None
    """Database URL: the runner serves it itself on a free loopback port."""
    erp_public_url: str | None = None
    """MCP URL a remote provider can reach (e.g. a tunnel), when different from the local one."""
    out: Path | None = None
    """Run directory; None: ``runs/<harness>-<model>-<time>`` under the project root (or the
    latest unfinished run with the same settings, which is resumed)."""
    runs_dir: Path | None = None
    """Parent of default run directories (default: ``runs/`` under the project root)."""
    force_new: bool = False
    """Start over even if the run directory holds a run with different settings."""
    retries: int = Field(default=3, ge=0)
    """Retries of a question after a transient failure, while its budget lasts."""
    cancel_grace_s: float = Field(default=0.5, ge=0)
    """After the deadline, how long a cancelled harness may clean up before it is abandoned."""
    output_limit: int = Field(default=DEFAULT_OUTPUT_LIMIT, ge=100)
    """Tool outputs are truncated to this many characters in the record (hash and size kept)."""
    progress: bool = True
    """Show a progress bar on stderr."""
    command: list[str] = Field(default_factory=list)
    """The command line that started the run (recorded with secrets redacted)."""

    def budget_for(self, question: Question) -> float:
        if question.timeout is not None:
            return float(question.timeout)
        if question.task_type == TaskType.business_brief:
            return self.brief_timeout
        return self.timeout


class TaskTypeSummary(_Strict):
    task_type: str
    total: int
    answered: int
    """Status ok."""
    timeouts: int
    max_turns: int
    errors: int
    latency_median_s: float | None
    latency_p90_s: float | None
    tool_calls: int
    """Total tool calls."""
    tool_calls_mean: float | None
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost_usd: float | None
    """Sum of known costs; None when no record had a cost."""


class RunSummary(_Strict):
    run_dir: Path
    run_id: str
    expected: int
    """(question, trial) pairs selected."""
    recorded: int
    """Records in the trajectory file now."""
    resumed: int
    """Records that were already there when this invocation started."""
    ran: int
    """Records this invocation wrote."""
    interrupted: bool
    by_status: dict[str, int]
    by_task_type: list[TaskTypeSummary]
    errors: dict[str, int] = Field(default_factory=dict)
    """Error class -> count."""


# --------------------------------------------------------------------------------------------------
# Dataset and selection
# --------------------------------------------------------------------------------------------------


def _dataset_functions() -> tuple[Any, Any]:
    from ledgerbench.dataset import dataset_hash, load_dataset

    return load_dataset, dataset_hash


def default_dataset_path() -> Path:
    return project_root() / "datasets"


def load_run_dataset(path: Path) -> tuple[Dataset, str]:
    load_dataset, dataset_hash = _dataset_functions()
    if not path.exists():
        raise RunConfigError(f"--dataset {path}: no such file or directory")
    try:
        dataset = load_dataset(path)
    except ValueError as error:
        raise RunConfigError(f"--dataset {path}: {_one_line(str(error))}") from None
    return dataset, dataset_hash(dataset)


def select_questions(dataset: Dataset, config: RunConfig) -> list[Question]:
    """The questions the config selects, in dataset order."""
    items = list(dataset.items)
    if config.task_types:
        wanted = set(config.task_types)
        items = [item for item in items if item.task_type in wanted]
    if config.ids:
        known = {item.id for item in dataset.items}
        unknown = [qid for qid in config.ids if qid not in known]
        if unknown:
            example = dataset.items[0].id if dataset.items else "none"
            raise RunConfigError(
                f"--ids: unknown question id(s) {', '.join(unknown[:5])}; "
                f"ids look like {example!r} (see the dataset file)"
            )
        wanted_ids = set(config.ids)
        items = [item for item in items if item.id in wanted_ids]
    if config.limit is not None:
        items = items[: config.limit]
    if not items:
        raise RunConfigError(
            "no questions match the selection (--task-type/--ids/--limit); widen the selection"
        )
    return items


def work_order(questions: list[Question], config: RunConfig) -> list[tuple[Question, int]]:
    pairs = [(question, trial) for question in questions for trial in range(config.trials)]
    if config.seed is not None:
        random.Random(config.seed).shuffle(pairs)
    return pairs


# --------------------------------------------------------------------------------------------------
# Secrets and fingerprints
# --------------------------------------------------------------------------------------------------


def is_secret_key(key: str) -> bool:
    return bool(SECRET_KEY_PATTERN.search(key))


def _redact_url(url: str | None) -> str | None:
    if url is None:
        return None
    return re.sub(r"(?<=://)([^/@\s:]+):([^/@\s]+)@", r"\1:***@", url)


def public_harness_opts(opts: dict[str, str]) -> dict[str, str]:
    return {key: (REDACTED if is_secret_key(key) else value) for key, value in sorted(opts.items())}


def redact_command(argv: Iterable[str], secret_values: Iterable[str]) -> list[str]:
    """argv with token values, secret harness options and URL passwords replaced by ``***``."""
    secrets = [value for value in secret_values if value]
    redacted: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            redacted.append(REDACTED)
            hide_next = False
            continue
        if arg in {"--erp-token", "--token", "--api-key"}:
            redacted.append(arg)
            hide_next = True
            continue
        if arg.startswith(("--erp-token=", "--token=", "--api-key=")):
            redacted.append(arg.split("=", 1)[0] + "=" + REDACTED)
            continue
        if "=" in arg and not arg.startswith("-") and is_secret_key(arg.split("=", 1)[0]):
            redacted.append(arg.split("=", 1)[0] + "=" + REDACTED)
            continue
        if arg.startswith("--harness-opt=") and is_secret_key(arg.split("=", 2)[1]):
            redacted.append("--harness-opt=" + arg.split("=", 2)[1] + "=" + REDACTED)
            continue
        clean = _redact_url(arg) or arg
        for secret in secrets:
            clean = clean.replace(secret, REDACTED)
        redacted.append(clean)
    return redacted


def environment_secrets() -> list[str]:
    """Values of API-key-like environment variables, scrubbed from everything the run writes."""
    return [
        value
        for name, value in os.environ.items()
        if len(value) >= 8 and re.search(r"(API_KEY|TOKEN|SECRET|PASSWORD)$", name.upper())
    ]


def fingerprint_parts(config: RunConfig, dataset_hash: str, instructions: str) -> dict[str, Any]:
    """What must match for a resume: dataset, selection, harness settings, budgets, instructions."""
    return {
        "dataset": dataset_hash,
        "selection": {
            "task_types": sorted(str(t) for t in config.task_types),
            "ids": sorted(config.ids),
            "limit": config.limit,
            "trials": config.trials,
        },
        "harness": {
            "name": config.harness,
            "model": config.model,
            "reasoning_effort": config.reasoning_effort,
            "base_url": _redact_url(config.base_url),
            "options": {
                key: value
                for key, value in sorted(config.harness_opts.items())
                if not is_secret_key(key)
            },
        },
        "budgets": {"timeout": config.timeout, "brief_timeout": config.brief_timeout},
        "instructions": instructions_hash(instructions),
    }


def fingerprint(parts: dict[str, Any]) -> str:
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def describe_changes(old: dict[str, Any], new: dict[str, Any]) -> str:
    labels = {
        "dataset": "dataset contents",
        "selection": "question selection",
        "harness": "harness settings",
        "budgets": "time budgets",
        "instructions": "system instructions",
        "erp": "ERP snapshot",
    }
    changes = []
    for key in labels:
        if key not in new or old.get(key) == new.get(key):
            continue
        before, after = old.get(key), new.get(key)
        if isinstance(before, dict) and isinstance(after, dict):
            keys = sorted(set(before) | set(after))
            detail = ", ".join(
                f"{k} {before.get(k)!r} -> {after.get(k)!r}"
                for k in keys
                if before.get(k) != after.get(k)
            )
        else:
            detail = f"{before} -> {after}"
        changes.append(f"{labels[key]} ({detail})")
    return "; ".join(changes) or "unknown settings"


# --------------------------------------------------------------------------------------------------
# Run directory: manifest and trajectories
# --------------------------------------------------------------------------------------------------


def write_json_atomic(path: Path, data: str) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temp.open("w", encoding="utf-8") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def read_manifest(run_dir: Path) -> RunManifest | None:
    path = run_dir / MANIFEST_FILE
    if not path.exists():
        return None
    try:
        return RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as error:
        raise RunConfigError(
            f"{path} is not a valid run manifest ({_one_line(str(error))}); "
            "use another --out or --force-new"
        ) from None


def read_trajectories(path: Path, *, repair: bool = False) -> list[TrajectoryRecord]:
    """Records in a trajectory file, first one per (question, trial).

    A last line without its newline is what ``kill -9`` mid-write leaves; it is ignored, and with
    ``repair=True`` cut off so that appending starts on a clean line.
    """
    if not path.exists():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        data = data[:cut]
        if repair:
            with path.open("r+b") as handle:
                handle.truncate(cut)
    records: list[TrajectoryRecord] = []
    seen: set[tuple[str, int]] = set()
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            record = TrajectoryRecord.model_validate_json(line)
        except ValidationError:
            continue  # a damaged line: its (question, trial) counts as missing and runs again
        key = (record.question_id, record.trial)
        if key not in seen:
            seen.add(key)
            records.append(record)
    return records


class TrajectoryWriter:
    """Appends one JSON line per record, flushed and fsynced, with secrets scrubbed."""

    def __init__(self, path: Path, secrets: list[str]) -> None:
        self._handle = path.open("a", encoding="utf-8")
        self._secrets = [secret for secret in secrets if secret]

    def write(self, record: TrajectoryRecord) -> None:
        line = record.model_dump_json(by_alias=True)
        for secret in self._secrets:
            if secret in line:
                line = line.replace(secret, REDACTED)
        self._handle.write(line + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:40] or "run"


def default_run_dir(config: RunConfig, now: dt.datetime) -> Path:
    runs = config.runs_dir or project_root() / "runs"
    harness = config.harness.rsplit(":", 1)[-1]
    parts = [_slug(harness)]
    if config.model:
        parts.append(_slug(config.model))
    parts.append(now.strftime("%Y%m%d-%H%M%S"))
    candidate = runs / "-".join(parts)
    suffix = 1
    while candidate.exists():
        suffix += 1
        candidate = runs / f"{'-'.join(parts)}-{suffix}"
    return candidate


def find_resumable_run(runs_dir: Path, config_fingerprint: str) -> Path | None:
    """The latest unfinished run under ``runs_dir`` made with the same settings."""
    if not runs_dir.is_dir():
        return None
    candidates = []
    for manifest_path in runs_dir.glob(f"*/{MANIFEST_FILE}"):
        try:
            manifest = RunManifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
        except (ValidationError, OSError):
            continue
        if manifest.config_fingerprint != config_fingerprint:
            continue
        if manifest.finished_at is not None and not manifest.interrupted:
            continue
        candidates.append((manifest.started_at, manifest_path.parent))
    return max(candidates)[1] if candidates else None


def _move_aside(run_dir: Path) -> Path | None:
    old_files = [run_dir / MANIFEST_FILE, run_dir / TRAJECTORIES_FILE]
    if not any(path.exists() for path in old_files):
        return None
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    aside = run_dir / f"replaced-{stamp}"
    aside.mkdir(exist_ok=True)
    for path in old_files:
        if path.exists():
            os.replace(path, aside / path.name)
    return aside


# --------------------------------------------------------------------------------------------------
# Provenance
# --------------------------------------------------------------------------------------------------

_VERSIONED_PACKAGES = (
    "ledgerbench",
    "pydantic",
    "mcp",
    "fastmcp",
    "openai",
    "anthropic",
    "dspy",
    "sqlalchemy",
    "sqlmodel",
    "faker",
    "rich",
)


def package_versions() -> dict[str, str]:
    from importlib import metadata

    versions = {"python": sys.version.split()[0]}
    for name in _VERSIONED_PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return versions


def git_revision(root: Path) -> str | None:
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    revision = result.stdout.strip()
    return revision if result.returncode == 0 and revision else None


# --------------------------------------------------------------------------------------------------
# The ERP
# --------------------------------------------------------------------------------------------------


@dataclass
class ErpInUse:
    endpoint: ErpEndpoint
    db_url: str | None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def snapshot_hash(self) -> str | None:
        value = self.info.get("snapshot_hash") or self.info.get("erp_snapshot_hash")
        return str(value) if value else None


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
    server = await asyncio.to_thread(
        start_erp_server, db_url, log_path=run_dir / "erp_mcp.log", public_url=config.erp_public_url
    )
    try:
        yield ErpInUse(endpoint=server.endpoint, db_url=db_url)
    finally:
        await asyncio.to_thread(server.stop)


async def fetch_erp_info(endpoint: ErpEndpoint, timeout: float = 30.0) -> dict[str, Any]:
    """The ``erp_info`` tool's result (today, legal entities, snapshot hash, ...)."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    transport = StreamableHttpTransport(endpoint.url, headers=endpoint.headers())
    try:
        async with asyncio.timeout(timeout), Client(transport) as client:
            result = await client.call_tool_mcp("erp_info", {})
            for attempt in range(3):  # a fault-injecting server may fail this call transiently
                if not (result.is_error and _tool_text(result).lstrip().startswith("TRANSIENT")):
                    break
                await asyncio.sleep(0.2 * (attempt + 1))
                result = await client.call_tool_mcp("erp_info", {})
    except Exception as error:
        detail = _one_line(f"{type(error).__name__}: {error}")
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
            parts.append(f"made by: {_one_line(str(header['created_by']))}")
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
    in_use = _redact_url(erp.db_url) if erp.db_url else erp.endpoint.url
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


# --------------------------------------------------------------------------------------------------
# One question
# --------------------------------------------------------------------------------------------------


@dataclass
class _Attempt:
    status: Status
    answer: str
    error: ErrorInfo | None = None

    def termination(self) -> Termination:
        if self.status is Status.ok:
            return Termination.of(TerminationReason.completed)
        if self.status is Status.timeout:
            return Termination.of(TerminationReason.time_limit)
        if self.status is Status.max_turns:
            return Termination.of(TerminationReason.max_turns)
        if self.error is not None and self.error.class_ == "EmptyAnswer":
            return Termination.of(TerminationReason.empty_answer)
        return Termination.of(TerminationReason.harness_error)


class QuestionRunner:
    """Runs one (question, trial) under its budget and turns the draft into a record."""

    def __init__(self, harness: Harness, env: AgentEnvironment, config: RunConfig) -> None:
        self.harness = harness
        self.env = env
        self.config = config
        self.harness_name = getattr(harness, "name", None) or config.harness
        self.model = getattr(harness, "model", None) or config.model

    async def run(self, question: Question, trial: int) -> TrajectoryRecord:
        budget = self.config.budget_for(question)
        started_at = dt.datetime.now(dt.UTC)
        start = time.monotonic()
        draft = TrajectoryDraft(started_monotonic=start, output_limit=self.config.output_limit)
        task = AgentTask(
            question_id=question.id,
            trial=trial,
            query=question.query,
            task_type=question.task_type,
            timeout_s=budget,
            deadline=start + budget,
        )
        outcome = await self._attempts(task, draft)
        return self._record(question, trial, budget, started_at, draft, outcome)

    async def _attempts(self, task: AgentTask, draft: TrajectoryDraft) -> _Attempt:
        attempt = 0
        while True:
            attempt += 1
            if attempt > 1:
                draft.extra["attempts"] = attempt
            result, error = await self._one_attempt(task, draft)
            if result is not None:
                return result
            assert error is not None
            delay = retry_delay(attempt, error)
            retryable = is_transient(error) and attempt <= self.config.retries
            if retryable and time.monotonic() + delay < task.deadline:
                draft.extra.setdefault("retried_errors", []).append(
                    f"{type(error).__name__}: {_one_line(str(error))[:300]}"
                )
                await asyncio.sleep(delay)
                continue
            return _Attempt(
                Status.error,
                draft.answer,
                ErrorInfo(**{"class": type(error).__name__, "message": _error_message(error)}),
            )

    async def _one_attempt(
        self, task: AgentTask, draft: TrajectoryDraft
    ) -> tuple[_Attempt | None, BaseException | None]:
        remaining = task.deadline - time.monotonic()
        if remaining <= 0:
            return _Attempt(Status.timeout, draft.answer), None
        agent = asyncio.create_task(self.harness.run(task, self.env, draft))
        try:
            done, _ = await asyncio.wait({agent}, timeout=remaining)
        except asyncio.CancelledError:
            await self._stop(agent)
            raise
        if not done:
            await self._stop(agent)
            return _Attempt(Status.timeout, draft.answer), None
        if agent.cancelled():
            return None, asyncio.CancelledError("the harness task was cancelled")
        error = agent.exception()
        if error is not None:
            return None, error
        outcome = agent.result()
        answer = (getattr(outcome, "answer", None) or draft.answer or "").strip()
        if getattr(outcome, "max_turns_reached", False):
            return _Attempt(Status.max_turns, answer), None
        if not answer:
            empty = ErrorInfo(
                **{"class": "EmptyAnswer", "message": "the harness finished without an answer"}
            )
            return _Attempt(Status.error, "", empty), None
        return _Attempt(Status.ok, answer), None

    async def _stop(self, agent: asyncio.Task) -> None:
        """Cancel the harness and give it a moment to clean up (subprocesses, connections)."""
        agent.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait({agent}, timeout=self.config.cancel_grace_s)
        if agent.done() and not agent.cancelled():
            agent.exception()  # retrieved, so asyncio does not log "never retrieved"

    def _record(
        self,
        question: Question,
        trial: int,
        budget: float,
        started_at: dt.datetime,
        draft: TrajectoryDraft,
        outcome: _Attempt,
    ) -> TrajectoryRecord:
        latency = draft.elapsed()
        return TrajectoryRecord(
            question_id=question.id,
            trial=trial,
            task_type=question.task_type,
            harness=self.harness_name,
            model=self.model,
            answer=outcome.answer,
            status=outcome.status,
            termination=outcome.termination(),
            error=outcome.error,
            latency_s=round(latency, 4),
            timeout_s=budget,
            tool_calls=list(draft.tool_calls),
            sources=list(draft.sources),
            usage=draft.usage,
            cost_usd=draft.cost_usd,
            turns=draft.turns,
            started_at=started_at,
            finished_at=started_at + dt.timedelta(seconds=latency),
            extra=_jsonable(dict(draft.extra)),
            input=question.query,
            system_prompt_hash=instructions_hash(self.env.instructions),
            messages=list(draft.messages),
            events=list(draft.events),
            working_time_s=round(max(0.0, latency - draft.excluded_s), 4),
        )


def _error_message(error: BaseException) -> str:
    message = _one_line(str(error)) or repr(error)
    return message[:2000]


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------------
# Progress and summary
# --------------------------------------------------------------------------------------------------


class _Progress:
    def __init__(self, enabled: bool, total: int, already: int, counts: dict[str, int]) -> None:
        self.counts = counts
        self._progress = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]questions"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "[green]ok {task.fields[ok]}[/] [yellow]timeout {task.fields[timeout]}[/] "
                "[red]error {task.fields[error]}[/]"
            ),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._progress.add_task(
            "run", total=total, completed=already, **self._fields()
        )

    def _fields(self) -> dict[str, int]:
        return {
            "ok": self.counts.get("ok", 0),
            "timeout": self.counts.get("timeout", 0) + self.counts.get("max_turns", 0),
            "error": self.counts.get("error", 0),
        }

    def __enter__(self) -> _Progress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, status: Status) -> None:
        self.counts[status.value] = self.counts.get(status.value, 0) + 1
        if self._progress is not None:
            self._progress.update(self._task, advance=1, **self._fields())


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return round(ordered[index], 3)


def summarize_records(records: list[TrajectoryRecord]) -> list[TaskTypeSummary]:
    rows = []
    for task_type in [t.value for t in TaskType]:
        group = [r for r in records if r.task_type == task_type]
        if not group:
            continue
        latencies = [r.latency_s for r in group]
        costs = [r.cost_usd for r in group if r.cost_usd is not None]
        calls = sum(len(r.tool_calls) for r in group)
        rows.append(
            TaskTypeSummary(
                task_type=task_type,
                total=len(group),
                answered=sum(r.status == Status.ok for r in group),
                timeouts=sum(r.status == Status.timeout for r in group),
                max_turns=sum(r.status == Status.max_turns for r in group),
                errors=sum(r.status == Status.error for r in group),
                latency_median_s=round(statistics.median(latencies), 3),
                latency_p90_s=_percentile(latencies, 0.9),
                tool_calls=calls,
                tool_calls_mean=round(calls / len(group), 2),
                input_tokens=sum(r.usage.input_tokens for r in group),
                output_tokens=sum(r.usage.output_tokens for r in group),
                reasoning_tokens=sum(r.usage.reasoning_tokens for r in group),
                cost_usd=round(sum(costs), 6) if costs else None,
            )
        )
    return rows


def summary_table(summary: RunSummary) -> Any:
    """A rich Table of the summary by task type."""
    from rich.table import Table

    title = f"{summary.run_dir}  ({summary.recorded}/{summary.expected} recorded"
    title += ", interrupted)" if summary.interrupted else ")"
    table = Table(title=title)
    for header in (
        "task type",
        "answered",
        "timeout",
        "max turns",
        "error",
        "p50 s",
        "p90 s",
        "tools/q",
        "tokens in/out",
        "cost $",
    ):
        table.add_column(header, justify="left" if header == "task type" else "right")
    for row in summary.by_task_type:
        table.add_row(
            row.task_type,
            f"{row.answered}/{row.total}",
            str(row.timeouts),
            str(row.max_turns),
            str(row.errors),
            _fmt(row.latency_median_s),
            _fmt(row.latency_p90_s),
            _fmt(row.tool_calls_mean),
            f"{row.input_tokens:,}/{row.output_tokens:,}",
            "-" if row.cost_usd is None else f"{row.cost_usd:.4f}",
        )
    return table


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


# --------------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------------


@dataclass
class _Prepared:
    dataset_path: Path
    dataset: Dataset
    dataset_hash: str
    pairs: list[tuple[Question, int]]
    parts: dict[str, Any]
    run_dir: Path
    previous: RunManifest | None
    existing: list[TrajectoryRecord]


def _prepare(config: RunConfig, instructions: str, log: Any) -> _Prepared:
    if config.erp_url and config.erp_db:
        raise RunConfigError("--erp-url and --erp-db exclude each other; give one of them")
    dataset_path = (config.dataset or default_dataset_path()).resolve()
    dataset, dataset_hash = load_run_dataset(dataset_path)
    questions = select_questions(dataset, config)
    pairs = work_order(questions, config)
    parts = fingerprint_parts(config, dataset_hash, instructions)
    config_fp = fingerprint(parts)
    run_dir = config.out
    if run_dir is None and not config.force_new:
        run_dir = find_resumable_run(config.runs_dir or project_root() / "runs", config_fp)
        if run_dir is not None:
            log(f"resuming {run_dir}")
    run_dir = (run_dir or default_run_dir(config, dt.datetime.now(dt.UTC))).resolve()
    if run_dir.exists() and not run_dir.is_dir():
        raise RunConfigError(f"--out {run_dir} is a file; give a directory")
    previous = read_manifest(run_dir)
    if previous is not None and previous.config_fingerprint != config_fp and not config.force_new:
        changed = describe_changes(previous.fingerprint_parts or {}, parts)
        raise RunConfigError(
            f"{run_dir} holds a run with different settings: {changed}; rerun with the same "
            "settings to resume, choose another --out, or add --force-new to start over"
        )
    if previous is not None and config.force_new:
        aside = _move_aside(run_dir)
        log(f"--force-new: the previous run's files moved to {aside}")
        previous = None
    elif previous is None and (run_dir / TRAJECTORIES_FILE).exists():
        if not config.force_new:
            raise RunConfigError(
                f"{run_dir} has trajectories but no manifest; choose another --out or add "
                "--force-new to start over"
            )
        _move_aside(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    existing = read_trajectories(run_dir / TRAJECTORIES_FILE, repair=True)
    return _Prepared(dataset_path, dataset, dataset_hash, pairs, parts, run_dir, previous, existing)


def _manifest(
    config: RunConfig,
    prepared: _Prepared,
    erp: ErpInUse,
    instructions: str,
    secrets: list[str],
    harness: Harness,
) -> RunManifest:
    previous = prepared.previous
    config_dump = config.model_dump(mode="json")
    config_dump["base_url"] = _redact_url(config.base_url)
    config_dump["erp_db"] = _redact_url(config.erp_db)
    config_dump["harness_opts"] = public_harness_opts(config.harness_opts)
    config_dump.pop("command", None)  # recorded once, redacted, as the manifest's command
    config_dump["erp_token"] = REDACTED if config.erp_token else None
    timeouts = {
        "obligations": config.timeout,
        "entity_performance": config.timeout,
        "business_brief": config.brief_timeout,
    }
    return RunManifest(
        run_id=previous.run_id if previous else prepared.run_dir.name,
        command=redact_command(config.command or sys.argv, secrets),
        config=config_dump,
        config_fingerprint=fingerprint(prepared.parts),
        fingerprint_parts={**prepared.parts, "erp": erp.snapshot_hash},
        harness=config.harness,
        model=getattr(harness, "model", None) or config.model,
        harness_options={
            "model": config.model,
            "reasoning_effort": config.reasoning_effort,
            "base_url": _redact_url(config.base_url),
            **public_harness_opts(config.harness_opts),
        },
        timeouts=timeouts,
        dataset_path=str(prepared.dataset_path),
        dataset_hash=prepared.dataset_hash,
        question_count=len(prepared.pairs),
        erp_url=erp.endpoint.url,
        erp_db_url=_redact_url(erp.db_url),
        erp_snapshot_hash=erp.snapshot_hash,
        system_prompt_hash=instructions_hash(instructions),
        system_prompt=instructions,
        package_versions=package_versions(),
        git_revision=git_revision(project_root()),
        started_at=previous.started_at if previous else dt.datetime.now(dt.UTC),
        resume_count=(previous.resume_count + 1) if previous else 0,
    )


def _write_manifest(run_dir: Path, manifest: RunManifest, secrets: list[str]) -> None:
    text = manifest.model_dump_json(indent=2, by_alias=True)
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    write_json_atomic(run_dir / MANIFEST_FILE, text)


def _sweep_secrets(run_dir: Path, secrets: list[str]) -> None:
    """Last line of defence: no file in the run directory keeps a secret (harness scratch files)."""
    if not secrets:
        return
    for path in run_dir.rglob("*"):
        if not path.is_file() or path.stat().st_size > 200_000_000:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        cleaned = data
        for secret in secrets:
            cleaned = cleaned.replace(secret.encode(), REDACTED.encode())
        if cleaned != data:
            path.write_bytes(cleaned)


def _check_erp_unchanged(previous: RunManifest | None, erp: ErpInUse, force_new: bool) -> None:
    if previous is None or force_new:
        return
    if previous.erp_snapshot_hash and previous.erp_snapshot_hash != erp.snapshot_hash:
        raise RunConfigError(
            f"the run was made against ERP snapshot {previous.erp_snapshot_hash}, but the ERP in "
            f"use has {erp.snapshot_hash}; serve the same ERP to resume or add --force-new"
        )


async def run_async(config: RunConfig, *, log: Any = None) -> RunSummary:
    """Run the configured questions and return the summary (see the module docstring).

    Raises :class:`RunConfigError` for problems with the input. Cancelling the task (Ctrl-C) stops
    cleanly: the questions in flight are cancelled, the manifest is marked interrupted, and the
    summary returned says so.
    """
    log = log or (lambda message: print(message, file=sys.stderr))
    instructions = system_instructions()
    options = HarnessOptions(
        model=config.model,
        reasoning_effort=config.reasoning_effort,
        base_url=config.base_url,
        extra=dict(config.harness_opts),
    )
    try:
        harness = create_harness(config.harness, options)
    except (HarnessLoadError, ValueError) as error:
        raise RunConfigError(_one_line(str(error))) from None
    try:
        prepared = _prepare(config, instructions, log)
        return await _run_with_harness(config, prepared, harness, instructions, log)
    finally:
        closer = getattr(harness, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()


async def _run_with_harness(
    config: RunConfig, prepared: _Prepared, harness: Harness, instructions: str, log: Any
) -> RunSummary:
    run_dir = prepared.run_dir
    done = {(r.question_id, r.trial) for r in prepared.existing}
    pending = [(q, t) for q, t in prepared.pairs if (q.id, t) not in done]
    secrets = [s for s in [config.erp_token.get_secret_value() if config.erp_token else None] if s]
    secrets += [v for k, v in config.harness_opts.items() if is_secret_key(k) and v]
    secrets += environment_secrets()
    interrupted = False
    ran: list[TrajectoryRecord] = []
    async with serve_erp(config, run_dir, log, prepared.dataset) as erp:
        if erp.endpoint.token:
            secrets.append(erp.endpoint.token)
        erp.info = await fetch_erp_info(erp.endpoint)
        check_snapshot(prepared.dataset, prepared.dataset_path, erp)
        _check_erp_unchanged(prepared.previous, erp, config.force_new)
        manifest = _manifest(config, prepared, erp, instructions, secrets, harness)
        _write_manifest(run_dir, manifest, secrets)
        work_dir = run_dir / "work"
        work_dir.mkdir(exist_ok=True)
        env = AgentEnvironment(erp=erp.endpoint, instructions=instructions, work_dir=str(work_dir))
        writer = TrajectoryWriter(run_dir / TRAJECTORIES_FILE, secrets)
        try:
            interrupted = await _execute(config, pending, prepared, harness, env, writer, ran)
        finally:
            writer.close()
            manifest.finished_at = dt.datetime.now(dt.UTC)
            manifest.interrupted = interrupted
            _write_manifest(run_dir, manifest, secrets)
    _sweep_secrets(run_dir, secrets)
    return _summary(prepared, manifest, ran, interrupted)


async def _execute(
    config: RunConfig,
    pending: list[tuple[Question, int]],
    prepared: _Prepared,
    harness: Harness,
    env: AgentEnvironment,
    writer: TrajectoryWriter,
    ran: list[TrajectoryRecord],
) -> bool:
    """Run the pending pairs; returns True when interrupted (Ctrl-C, SIGTERM, cancellation)."""
    runner = QuestionRunner(harness, env, config)
    queue: asyncio.Queue[tuple[Question, int]] = asyncio.Queue()
    for pair in pending:
        queue.put_nowait(pair)
    counts: dict[str, int] = {}
    for record in prepared.existing:
        counts[record.status.value] = counts.get(record.status.value, 0) + 1
    total = len(prepared.pairs)
    already = total - len(pending)

    async def worker() -> None:
        while True:
            try:
                question, trial = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            record = await runner.run(question, trial)
            writer.write(record)
            ran.append(record)
            progress.advance(record.status)

    with _Progress(config.progress, total, already, counts) as progress, _terminate_as_cancel():
        workers = [
            asyncio.create_task(worker()) for _ in range(min(config.concurrency, len(pending)))
        ]
        try:
            await asyncio.gather(*workers)
        except asyncio.CancelledError:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            return True
    return False


@contextlib.contextmanager
def _terminate_as_cancel() -> Any:
    """SIGTERM stops the run like Ctrl-C does (cancels the main task), where signals exist."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    installed = False
    if main is not None and hasattr(signal, "SIGTERM"):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, main.cancel)
            installed = True
    try:
        yield
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGTERM)


def _summary(
    prepared: _Prepared, manifest: RunManifest, ran: list[TrajectoryRecord], interrupted: bool
) -> RunSummary:
    selected = {(q.id, t) for q, t in prepared.pairs}
    records = [
        r
        for r in read_trajectories(prepared.run_dir / TRAJECTORIES_FILE)
        if (r.question_id, r.trial) in selected
    ]
    by_status: dict[str, int] = {}
    errors: dict[str, int] = {}
    for record in records:
        by_status[record.status.value] = by_status.get(record.status.value, 0) + 1
        if record.error is not None:
            errors[record.error.class_] = errors.get(record.error.class_, 0) + 1
    return RunSummary(
        run_dir=prepared.run_dir,
        run_id=manifest.run_id,
        expected=len(prepared.pairs),
        recorded=len(records),
        resumed=len(prepared.existing),
        ran=len(ran),
        interrupted=interrupted,
        by_status=by_status,
        by_task_type=summarize_records(records),
        errors=errors,
    )


def run(config: RunConfig, *, log: Any = None) -> RunSummary:
    """Synchronous :func:`run_async`. Ctrl-C stops cleanly and returns an interrupted summary."""
    return asyncio.run(run_async(config, log=log))
