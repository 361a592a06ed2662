"""The run store: one run directory's manifest, trajectory file and resume state.

Everything that reads or writes a run directory lives here, so that any executor (local or
distributed) resumes, fingerprints and records the same way. The driver alone writes records.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from harnesses._erp_process import project_root
from harnesses._instructions import instructions_hash
from harnesses._redact import (
    REDACTED,
    is_secret_key,
    one_line,
    public_harness_opts,
    redact_command,
    redact_url,
)
from harnesses._run_config import (
    RunConfig,
    RunConfigError,
    default_dataset_path,
    load_run_dataset,
    select_questions,
    work_order,
)
from ledgerbench_core.dataset import Dataset, Question
from ledgerbench_core.trajectory import RunManifest, TrajectoryRecord

TRAJECTORIES_FILE = "trajectories.jsonl"
MANIFEST_FILE = "manifest.json"
SCORES_DIR = "scores"
LOCK_FILE = ".runner.lock"


# --------------------------------------------------------------------------------------------------
# Fingerprints: what must match for a resume
# --------------------------------------------------------------------------------------------------


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
            "base_url": redact_url(config.base_url),
            "options": {
                key: value
                for key, value in sorted(config.harness_opts.items())
                if not is_secret_key(key)
            },
        },
        "budgets": {"timeout": config.timeout, "brief_timeout": config.brief_timeout},
        "instructions": instructions_hash(instructions),
        **({"limits": limits} if (limits := _set_limits(config)) else {}),
        **({"tools": list(config.tools)} if config.tools else {}),
        **(
            {"erp_faults": {"rate": config.erp_fault_rate, "seed": config.erp_fault_seed}}
            if config.erp_fault_rate
            else {}
        ),
        # conversations: who plays the user (only when not the default, so older runs resume)
        **(
            {"user": {"spec": config.user, "base_url": redact_url(config.user_base_url)}}
            if config.user != "scripted"
            else {}
        ),
        **(
            {
                "reviewer": {
                    "spec": config.reviewer,
                    "base_url": redact_url(config.reviewer_base_url),
                }
            }
            if config.reviewer != "rules"
            else {}
        ),
    }


def _set_limits(config: RunConfig) -> dict[str, Any]:
    """The sample limits and stall bound set for the run (they change verdicts); absent when none
    is, so the fingerprints of runs made before they existed do not change."""
    chosen = {
        "max_turns": config.max_turns,
        "max_tool_calls": config.max_tool_calls,
        "max_tokens": config.max_tokens,
        "max_cost_usd": config.max_cost_usd,
        "stall_timeout": config.stall_timeout,
    }
    return {key: value for key, value in chosen.items() if value is not None}


def fingerprint(parts: dict[str, Any]) -> str:
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def describe_changes(old: dict[str, Any], new: dict[str, Any]) -> str:
    labels = {
        "dataset": "dataset contents",
        "selection": "question selection",
        "harness": "harness settings",
        "budgets": "time budgets",
        "limits": "sample limits",
        "instructions": "system instructions",
        "erp": "ERP snapshot",
        "user": "simulated user (--user)",
        "reviewer": "reviewer of the simulated user (--reviewer)",
    }
    changes = []
    for key in labels:
        optional = key in ("limits", "user", "reviewer")  # absent when none is set / the default
        if key not in new and not optional:
            continue
        empty = {} if optional else None
        before, after = old.get(key, empty), new.get(key, empty)
        if before == after:
            continue
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
# Manifest and trajectories
# --------------------------------------------------------------------------------------------------


def write_json_atomic(path: Path, data: str) -> None:
    """``path`` holds ``data`` or what it held before, never a part; a failed write (a full disk)
    leaves no temporary file behind."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temp.open("w", encoding="utf-8") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except OSError as error:
        temp.unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(path)) from None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def read_manifest(run_dir: Path) -> RunManifest | None:
    path = run_dir / MANIFEST_FILE
    if not path.exists():
        return None
    try:
        return RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as error:
        raise RunConfigError(
            f"{path} is not a valid run manifest ({one_line(str(error))}); "
            "use another --out or --force-new"
        ) from None


def read_trajectories(path: Path, *, repair: bool = False) -> list[TrajectoryRecord]:
    """Records in a trajectory file, the last one per (question, trial), in first-seen order.

    A (question, trial) appears twice only when ``--retry-errors`` re-ran an infrastructure
    failure: the later record replaces it (and lists it in ``previous_attempts``). A last line
    without its newline is what ``kill -9`` mid-write leaves; it is ignored, and with
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
    records: dict[tuple[str, int], TrajectoryRecord] = {}
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            record = TrajectoryRecord.model_validate_json(line)
        except ValidationError:
            continue  # a damaged line: its (question, trial) counts as missing and runs again
        records[(record.question_id, record.trial)] = record
    return list(records.values())


class TrajectoryWriter:
    """Appends one JSON line per record, flushed and fsynced, with secrets scrubbed."""

    def __init__(self, path: Path, secrets: list[str]) -> None:
        self._path = path
        self._handle = path.open("ab", buffering=0)  # unbuffered: a failed write is undone here
        self._secrets = [secret for secret in secrets if secret]

    def write(self, record: TrajectoryRecord) -> None:
        """Append the record's line whole, or nothing: a write that fails part-way (a full
        disk) is cut back off before the error goes on."""
        line = record.model_dump_json(by_alias=True)
        for secret in self._secrets:
            if secret in line:
                line = line.replace(secret, REDACTED)
        fd = self._handle.fileno()
        start = os.fstat(fd).st_size
        try:
            remaining = memoryview((line + "\n").encode("utf-8"))
            while remaining:
                remaining = remaining[os.write(fd, remaining) :]
            os.fsync(fd)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise OSError(error.errno, error.strerror, str(self._path)) from None

    def close(self) -> None:
        self._handle.close()


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:40] or "run"


def default_run_dir(config: RunConfig, now: dt.datetime) -> Path:
    runs = config.runs_dir or project_root() / "runs"
    harness = config.harness.rsplit(":", 1)[-1]
    parts = [slug(harness)]
    if config.model:
        parts.append(slug(config.model))
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


def move_aside(run_dir: Path) -> Path | None:
    """Move the run's manifest, trajectories and scores (they belong to those answers) into
    ``replaced-<time>/``."""
    old_files = [run_dir / MANIFEST_FILE, run_dir / TRAJECTORIES_FILE, run_dir / SCORES_DIR]
    if not any(path.exists() for path in old_files):
        return None
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    aside = run_dir / f"replaced-{stamp}"
    aside.mkdir(exist_ok=True)
    for path in old_files:
        if path.exists():
            os.replace(path, aside / path.name)
    return aside


class RunLock:
    """One runner per run directory: an exclusive ``flock`` on ``.runner.lock``, which holds the
    owner's pid. The kernel drops the lock when the process dies, ``kill -9`` included. The judge
    takes its own (``.judge.lock``, ``role="judge"``): one judge per run at a time."""

    def __init__(
        self,
        run_dir: Path,
        file: str = LOCK_FILE,
        role: str = "runner",
        other_fix: str = "or choose another --out",
    ) -> None:
        self.path = run_dir / file
        self.role = role
        self.other_fix = other_fix
        self._handle: Any = None

    def acquire(self) -> None:
        import fcntl

        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            handle.close()
            raise RunConfigError(
                f"{self.path.parent} is in use by another {self.role} (pid {owner}); wait for it "
                f"to finish or stop it (kill {owner}){', ' if self.other_fix else ''}"
                f"{self.other_fix}"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.seek(0)
                self._handle.truncate()
            self._handle.close()  # closing the descriptor drops the flock
            self._handle = None


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


@dataclass(frozen=True)
class ErpFacts:
    """What the manifest records about the ERP in use."""

    url: str
    db_url: str | None
    snapshot_hash: str | None


# --------------------------------------------------------------------------------------------------
# Opening a run directory
# --------------------------------------------------------------------------------------------------


@dataclass
class RunPlan:
    """What a start will do, worked out without writing anything: the selection, the run
    directory (not created yet) and what it already holds. Bad input fails here, before any file
    is touched (:func:`plan_run`)."""

    dataset_path: Path
    dataset: Dataset
    dataset_hash: str
    pairs: list[tuple[Question, int]]
    parts: dict[str, Any]
    run_dir: Path
    previous: RunManifest | None
    """The manifest already in ``run_dir`` (None for a new run, or with ``--force-new``)."""


@dataclass
class PreparedRun(RunPlan):
    """The selection and the run directory's state before any question runs."""

    existing: list[TrajectoryRecord] = field(default_factory=list)
    """The records already in the run directory (the last one per question and trial)."""
    lock: RunLock | None = None
    """Held from :func:`open_run` until the driver releases it at the end of the run."""
    created: bool = False
    """This start created the run directory (it is removed again if nothing gets recorded)."""

    def pending(
        self, retry_errors: bool, retry_simulator_errors: bool = False
    ) -> list[tuple[Question, int]]:
        """Pairs still to run: the missing ones, with ``retry_errors`` the infrastructure
        failures, and with ``retry_simulator_errors`` the conversations the reviewer excluded."""
        kept = {
            (r.question_id, r.trial)
            for r in self.existing
            if not (retry_errors and r.infrastructure_failure)
            and not (retry_simulator_errors and excluded_by_review(r))
        }
        return [(q, t) for q, t in self.pairs if (q.id, t) not in kept]

    def earlier(self, question_id: str, trial: int) -> TrajectoryRecord | None:
        return next(
            (r for r in self.existing if (r.question_id, r.trial) == (question_id, trial)), None
        )


def excluded_by_review(record: TrajectoryRecord) -> bool:
    """A conversation the reviewer of its simulated user left out of every score."""
    return record.conversation is not None and record.conversation.excluded_by_review


def check_erp_flags(config: RunConfig) -> None:
    for flag, url in (
        ("--erp-url", config.erp_url),
        ("--world-url", config.world_url),
        ("--erp-public-url", config.erp_public_url),
        ("--world-public-url", config.world_public_url),
    ):
        if url and urlsplit(url).scheme not in ("http", "https"):
            raise RunConfigError(
                f"{flag} {url}: not an http(s) URL; give the server's MCP endpoint, e.g. "
                "http://127.0.0.1:8765/mcp"
            )
    if config.erp_url and config.erp_db:
        raise RunConfigError("--erp-url and --erp-db exclude each other; give one of them")
    if config.erp_url and config.erp_fault_rate:
        raise RunConfigError(
            "--erp-fault-rate needs a server the runner starts; use --erp-db (or no ERP flag) "
            "instead of --erp-url, or start that server with --error-rate"
        )


def plan_run(config: RunConfig, instructions: str, log: Any) -> RunPlan:
    """Load the dataset, select the pairs and find the run directory, writing nothing."""
    check_erp_flags(config)
    dataset_path = (config.dataset or default_dataset_path()).resolve()
    dataset, dataset_hash = load_run_dataset(dataset_path)
    questions = select_questions(dataset, config)
    pairs = work_order(questions, config)
    parts = fingerprint_parts(config, dataset_hash, instructions)
    run_dir = config.out
    if run_dir is None and not config.force_new:
        run_dir = find_resumable_run(config.runs_dir or project_root() / "runs", fingerprint(parts))
        if run_dir is not None:
            log(f"resuming {run_dir}")
    run_dir = (run_dir or default_run_dir(config, dt.datetime.now(dt.UTC))).resolve()
    if run_dir.exists() and not run_dir.is_dir():
        raise RunConfigError(f"--out {run_dir} is a file; give a directory")
    previous = _check_previous(config, run_dir, parts)
    return RunPlan(dataset_path, dataset, dataset_hash, pairs, parts, run_dir, previous)


def _check_previous(config: RunConfig, run_dir: Path, parts: dict[str, Any]) -> RunManifest | None:
    """The run already in ``run_dir`` if this start may resume it; refuses one it may not."""
    if config.force_new:
        return None
    previous = read_manifest(run_dir) if run_dir.is_dir() else None
    if previous is not None and previous.config_fingerprint != fingerprint(parts):
        changed = describe_changes(previous.fingerprint_parts or {}, parts)
        raise RunConfigError(
            f"{run_dir} holds a run with different settings: {changed}; rerun with the same "
            "settings to resume, choose another --out, or add --force-new to start over"
        )
    if previous is None and (run_dir / TRAJECTORIES_FILE).exists():
        raise RunConfigError(
            f"{run_dir} has trajectories but no manifest; choose another --out or add "
            "--force-new to start over"
        )
    return previous


def open_run(plan: RunPlan, config: RunConfig, log: Any) -> PreparedRun:
    """Create (or open) the run directory, take its lock, and read what it holds. Called once
    every input was checked: this is the first write of a start."""
    run_dir = plan.run_dir
    created = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = RunLock(run_dir)
    try:
        lock.acquire()
    except BaseException:
        if created:
            _remove_new_run_dir(run_dir)
        raise
    try:
        previous = _check_previous(config, run_dir, plan.parts)  # again, under the lock
        if config.force_new:
            aside = move_aside(run_dir)
            if aside is not None:
                log(f"--force-new: the previous run's files moved to {aside}")
        existing = read_trajectories(run_dir / TRAJECTORIES_FILE, repair=True)
    except BaseException:
        lock.release()
        if created:
            _remove_new_run_dir(run_dir)
        raise
    fields = {name: getattr(plan, name) for name in RunPlan.__dataclass_fields__}
    fields["previous"] = previous
    return PreparedRun(**fields, existing=existing, lock=lock, created=created)


def _remove_new_run_dir(run_dir: Path) -> None:
    """Remove a run directory this start created and that holds no record (no debris)."""
    import shutil

    if (run_dir / TRAJECTORIES_FILE).exists() and (run_dir / TRAJECTORIES_FILE).stat().st_size:
        return
    shutil.rmtree(run_dir, ignore_errors=True)


def discard_if_empty(prepared: PreparedRun) -> bool:
    """After a run: a directory this start created stays only if a record is in it."""
    if not prepared.created:
        return False
    path = prepared.run_dir / TRAJECTORIES_FILE
    if path.exists() and path.stat().st_size:
        return False
    _remove_new_run_dir(prepared.run_dir)
    return True


def build_manifest(
    config: RunConfig,
    prepared: PreparedRun,
    erp: ErpFacts,
    instructions: str,
    secrets: list[str],
    model: str | None,
    world: Any = None,
    tools: list[str] | None = None,
) -> RunManifest:
    previous = prepared.previous
    config_dump = config.model_dump(mode="json")
    config_dump["base_url"] = redact_url(config.base_url)
    config_dump["erp_db"] = redact_url(config.erp_db)
    config_dump["harness_opts"] = public_harness_opts(config.harness_opts)
    config_dump.pop("command", None)  # recorded once, redacted, as the manifest's command
    config_dump["erp_token"] = REDACTED if config.erp_token else None
    config_dump["world_token"] = REDACTED if config.world_token else None
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
        model=model or config.model,
        harness_options={
            "model": config.model,
            "reasoning_effort": config.reasoning_effort,
            "base_url": redact_url(config.base_url),
            **public_harness_opts(config.harness_opts),
        },
        timeouts=timeouts,
        dataset_path=str(prepared.dataset_path),
        dataset_hash=prepared.dataset_hash,
        question_count=len(prepared.pairs),
        erp_url=erp.url,
        erp_db_url=redact_url(erp.db_url),
        erp_snapshot_hash=erp.snapshot_hash,
        world_url=world.endpoint.url if world else None,
        world_db=str(world.path) if world and world.path else None,
        world_id=world.world_id if world else None,
        world_snapshot_hash=world.snapshot_hash if world else None,
        tools=tools,
        system_prompt_hash=instructions_hash(instructions),
        system_prompt=instructions,
        package_versions=package_versions(),
        git_revision=git_revision(project_root()),
        started_at=previous.started_at if previous else dt.datetime.now(dt.UTC),
        resume_count=(previous.resume_count + 1) if previous else 0,
        simulator_reruns=list(previous.simulator_reruns) if previous else [],
    )


def write_manifest(run_dir: Path, manifest: RunManifest, secrets: list[str]) -> None:
    text = manifest.model_dump_json(indent=2, by_alias=True)
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    write_json_atomic(run_dir / MANIFEST_FILE, text)


def sweep_secrets(run_dir: Path, secrets: list[str]) -> None:
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
