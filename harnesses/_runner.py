"""The runner: puts every selected question to a harness under a hard wall-clock budget and records
everything the agent did.

``run(RunConfig(...))`` is the whole job; ``python -m harnesses.run`` only parses flags into a
:class:`RunConfig`. The run directory holds ``manifest.json`` (atomic rewrites) and
``trajectories.jsonl`` (one fsynced line per question and trial). Running the same configuration
again resumes: only the missing (question, trial) pairs run.

This module is the driver; the parts live beside it:

- :mod:`harnesses._run_config`: :class:`RunConfig` and the selection of (question, trial) pairs;
- :mod:`harnesses._run_store`: the run directory (manifest, trajectories, resume, fingerprints);
- :mod:`harnesses._erp_serving`: the ERP endpoint (given, or a server started for the run);
- :mod:`harnesses._question_runner`: one pair under its budget, turned into a record;
- :mod:`harnesses._executor`: what runs the pairs concurrently (swappable);
- :mod:`harnesses._progress`, :mod:`harnesses._run_summary`, :mod:`harnesses._redact`.

The driver alone writes records: executors yield them.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import shlex
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesses._conversation import conversation_problem, user_model_problem
from harnesses._erp_serving import (
    ErpInUse,
    check_erp_unchanged,
    check_snapshot,
    fetch_erp_info,
    serve_erp,
    servers_starting,
)
from harnesses._executor import Executor, LocalExecutor, Pair
from harnesses._golden import golden_pairs
from harnesses._instructions import system_instructions
from harnesses._pairing import pairing_problem
from harnesses._preflight import ModelContextError, PreflightError, check_endpoint
from harnesses._progress import PreparationWatch, RunProgress
from harnesses._protocol import (
    AgentEnvironment,
    ErpUnavailableError,
    Harness,
    HarnessOptions,
    McpEndpoint,
    stall_timeout_s,
)
from harnesses._question_runner import UNENFORCEABLE_LIMIT, QuestionRunner
from harnesses._redact import (
    REDACTED,
    environment_secrets,
    is_secret_key,
    one_line,
    public_harness_opts,
    redact_command,
)
from harnesses._registry import HarnessLoadError, create_harness
from harnesses._run_config import (
    RunConfig,
    RunConfigError,
    default_dataset_path,
    load_run_dataset,
    select_questions,
    work_order,
)
from harnesses._run_store import (
    MANIFEST_FILE,
    TRAJECTORIES_FILE,
    PreparedRun,
    RunPlan,
    TrajectoryWriter,
    build_manifest,
    check_erp_flags,
    default_run_dir,
    describe_changes,
    discard_if_empty,
    find_resumable_run,
    fingerprint,
    fingerprint_parts,
    git_revision,
    open_run,
    package_versions,
    plan_run,
    read_manifest,
    read_trajectories,
    sweep_secrets,
    write_json_atomic,
    write_manifest,
)
from harnesses._run_summary import (
    RunSummary,
    TaskTypeSummary,
    build_run_summary,
    summarize_records,
    summary_table,
)
from harnesses._tool_choice import (
    RunTools,
    ToolChoiceError,
    check_tool_patterns,
    choose_run_tools,
    offered_tools,
)
from harnesses._world_serving import (
    check_world_snapshot,
    research_mode_problem,
    world_db_problem,
    world_for_run,
)
from ledgerbench_core.trajectory import ModelEndpointCheck, PreviousAttempt, TrajectoryRecord

__all__ = [
    "MANIFEST_FILE",
    "REDACTED",
    "TRAJECTORIES_FILE",
    "ErpInUse",
    "Executor",
    "LocalExecutor",
    "QuestionRunner",
    "RunConfig",
    "RunConfigError",
    "RunInterrupted",
    "RunSummary",
    "TaskTypeSummary",
    "TrajectoryWriter",
    "default_dataset_path",
    "default_run_dir",
    "describe_changes",
    "environment_secrets",
    "find_resumable_run",
    "fingerprint",
    "fingerprint_parts",
    "git_revision",
    "is_secret_key",
    "load_run_dataset",
    "package_versions",
    "public_harness_opts",
    "read_manifest",
    "read_trajectories",
    "redact_command",
    "run",
    "run_async",
    "select_questions",
    "summarize_records",
    "summary_table",
    "work_order",
    "write_json_atomic",
]


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM before the first question started (while the ERP was being prepared):
    nothing was recorded. The message is the one line the CLI prints."""


async def run_async(
    config: RunConfig, *, log: Any = None, executor: Executor | None = None
) -> RunSummary:
    """Run the configured questions and return the summary (see the module docstring).

    ``executor`` runs the pairs (default: :class:`LocalExecutor` with ``config.concurrency``).
    Raises :class:`RunConfigError` for problems with the input, before anything is written: the
    dataset, the selection, the run directory and the ERP are all checked before the run
    directory is created or opened. Cancelling the task (Ctrl-C, SIGTERM) stops cleanly: the
    questions in flight are cancelled, the manifest is marked interrupted, and the summary
    returned says so; before the first question it raises :class:`RunInterrupted`.
    """
    log = log or (lambda message: print(message, file=sys.stderr))
    with _terminate_as_cancel():
        try:
            return await _run(config, log, executor)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            raise RunInterrupted(
                "interrupted while preparing the run (before the first question); nothing was "
                "recorded"
            ) from None


async def _run(config: RunConfig, log: Any, executor: Executor | None) -> RunSummary:
    preparing = PreparationWatch(log, enabled=config.progress).start()
    try:
        return await _prepare_and_run(config, log, executor, preparing)
    finally:
        preparing.stop()


async def _prepare_and_run(
    config: RunConfig, log: Any, executor: Executor | None, preparing: PreparationWatch
) -> RunSummary:
    preparing.step("loading the harness")
    instructions = system_instructions(config.research)
    check_erp_flags(config)
    check_tools_flag(config)
    options = HarnessOptions(
        model=config.model,
        reasoning_effort=config.reasoning_effort,
        base_url=config.base_url,
        extra=dict(config.harness_opts),
    )
    try:
        harness = create_harness(config.harness, options)
    except (HarnessLoadError, ValueError) as error:
        raise RunConfigError(one_line(str(error))) from None
    problem = research_mode_problem(config, harness) or world_db_problem(config)
    if problem is not None:
        await _close_harness(harness)
        raise RunConfigError(problem)
    try:
        preparing.step("reading and checking the dataset and the run folder")
        plan = plan_run(config, instructions, log)
        questions = list({question.id: question for question, _ in plan.pairs}.values())
        if problem := pairing_problem(config, plan.dataset, plan.dataset_path, questions):
            raise RunConfigError(problem)
        if (problem := conversation_problem(config, harness, plan.pairs)) is not None:
            raise RunConfigError(problem)
        if (problem := await user_model_problem(config, plan.pairs)) is not None:
            raise RunConfigError(problem)
        if config.research == "golden" and not any(q.gold_documents for q, _ in plan.pairs):
            raise RunConfigError(
                f"--research golden: none of the {len({q.id for q, _ in plan.pairs})} selected "
                "questions has gold documents to put in its prompt (only entity and brief "
                "questions keyed on a world do), so it would run as --research none; select "
                "research questions or use --research none"
            )
        executor = executor or _executor_for(config)
    except BaseException:
        await _close_harness(harness)
        raise
    return await _run_with_harness(config, plan, harness, instructions, log, executor, preparing)


MODEL_FREE_HARNESSES = frozenset({"scripted", "nothing", "guess"})
"""Built-in agents that call no model: no pre-flight, and nothing to say about it."""


async def check_model_endpoint(
    harness: Harness, env: AgentEnvironment, config: RunConfig, log: Any
) -> ModelEndpointCheck | None:
    """The pre-flight of the harness's model server (``harnesses._preflight``), for harnesses
    that say what they send (``model_endpoint(env)``); :class:`RunConfigError` in one line when
    the run cannot work. Nothing is written: it runs before the run folder is opened."""
    describe = getattr(harness, "model_endpoint", None)
    if describe is None:
        if config.harness not in MODEL_FREE_HARNESSES:
            log(
                f"model server pre-flight: nothing checked ({config.harness} has no "
                "model_endpoint(env) hook to say what it sends where)"
            )
        return None
    try:
        endpoint = await describe(env)
    except ErpUnavailableError as error:  # listing the tools the harness sends
        raise RunConfigError(one_line(str(error))) from None
    if endpoint is None:
        log(f"model server pre-flight: nothing checked ({config.harness} named no endpoint)")
        return None
    default = config.stall_timeout or stall_timeout_s(config.timeout)
    usage_needed_by = f"--max-tokens {config.max_tokens}" if config.max_tokens else None
    try:
        check = await check_endpoint(endpoint, default, usage_needed_by)
    except PreflightError as error:
        raise RunConfigError(str(error)) from None
    if config.stall_timeout:  # --stall-timeout is used as given
        check = check.model_copy(update={"stall_bound_s": config.stall_timeout})
    context = f"{check.context_tokens:,}" if check.context_tokens else "not stated"
    log(
        f"model server {check.base_url} ({check.server}): {check.model}, context {context}, "
        f"prompt before the question {check.prompt_tokens:,} tokens, first byte "
        f"{check.first_byte_s:.2f} s, stall bound {check.stall_bound_s:g} s"
    )
    return check


def _stall_bound(check: ModelEndpointCheck | None) -> float | None:
    """The run's stall bound: ``--stall-timeout`` when given (the runner's config), else the one
    the pre-flight measured for the endpoint."""
    return check.stall_bound_s if check is not None else None


def _executor_for(config: RunConfig) -> Executor:
    if config.executor == "ray":
        from harnesses._ray_executor import RayExecutor

        return RayExecutor(config)
    return LocalExecutor(config.concurrency)


def _run_secrets(config: RunConfig) -> list[str]:
    tokens = (config.erp_token, config.world_token)
    secrets = [t.get_secret_value() for t in tokens if t and t.get_secret_value()]
    secrets += [v for k, v in config.harness_opts.items() if is_secret_key(k) and v]
    return secrets + environment_secrets()


async def _close_harness(harness: Harness) -> None:
    closer = getattr(harness, "aclose", None)
    if closer is not None:
        with contextlib.suppress(Exception):
            await closer()


async def _run_with_harness(
    config: RunConfig,
    plan: RunPlan,
    harness: Harness,
    instructions: str,
    log: Any,
    executor: Executor,
    preparing: PreparationWatch,
) -> RunSummary:
    secrets = _run_secrets(config)
    outcome = _Outcome()
    runner: QuestionRunner | None = None
    prepared: PreparedRun | None = None
    try:
        questions = list({question.id: question for question, _ in plan.pairs}.values())
        if (connect := getattr(executor, "connect", None)) is not None:  # before any slow work
            connect()
        preparing.step("preparing the ERP (and the research world, if the questions need it)")
        async with (
            serve_erp(config, log, plan.dataset) as erp,
            world_for_run(config, log, plan.dataset, questions, erp.db_url) as world,
        ):
            secrets += [e.token for e in (erp.endpoint, world and world.endpoint) if e and e.token]
            preparing.step(lambda: servers_starting(erp, world))
            started = [erp.ready(), *([world.ready()] if world else [])]  # they boot side by side
            for result in await asyncio.gather(*started, return_exceptions=True):
                if isinstance(result, BaseException):
                    raise result
            if world is not None:
                check_world_snapshot(plan.dataset, world)
            erp.info = await fetch_erp_info(erp.endpoint, erp.server)
            check_snapshot(plan.dataset, plan.dataset_path, erp)
            check_erp_unchanged(plan.previous, erp, config.force_new)
            agent_world = world.endpoint if world and config.research == "world" else None
            tools = await _run_tools(config, harness, erp, agent_world)
            env = AgentEnvironment(
                erp=erp.endpoint,
                instructions=instructions,
                work_dir=str(plan.run_dir / "work"),
                world=agent_world,
                research=config.research,
                tools=tools.chosen,
                withheld_tools=tools.withheld,
            )
            preparing.step("checking the model server (pre-flight)")
            endpoint_check = await check_model_endpoint(harness, env, config, log)
            if (bind := getattr(executor, "bind", None)) is not None:  # a distributed executor
                bind(
                    erp=erp,
                    instructions=instructions,
                    run_dir=plan.run_dir,
                    harness=harness,
                    tools=tools,
                    world=world if agent_world is not None else None,
                )
            prepared = open_run(plan, config, log)  # every input checked: the first write
            erp.keep_log_in(prepared.run_dir)
            if world is not None:
                world.keep_log_in(prepared.run_dir)
            check_erp_unchanged(prepared.previous, erp, config.force_new)
            model = getattr(harness, "model", None)
            facts = erp.facts()
            manifest = build_manifest(
                config, prepared, facts, instructions, secrets, model, world, list(tools.visible)
            )
            manifest.model_endpoint = endpoint_check
            write_manifest(prepared.run_dir, manifest, secrets)
            (prepared.run_dir / "work").mkdir(exist_ok=True)
            preparing.stop()
            stall = _stall_bound(endpoint_check)
            runner = QuestionRunner(harness, env, config, stall_timeout=stall)
            writer = TrajectoryWriter(prepared.run_dir / TRAJECTORIES_FILE, secrets)
            try:
                pending = prepared.pending(config.retry_errors, config.retry_simulator_errors)
                if config.research == "golden" and world is not None:
                    pending = await golden_pairs(pending, world.endpoint)
                await _execute(config, pending, prepared, runner, executor, writer, outcome)
            finally:
                writer.close()
                manifest.finished_at = dt.datetime.now(dt.UTC)
                manifest.simulator_reruns += simulator_reruns(outcome.ran)
                manifest.interrupted = outcome.interrupted or outcome.stopped is not None
                if manifest.model is None:  # e.g. claude without --model: what it reported
                    manifest.model = next((r.model for r in outcome.ran if r.model), None)
                write_manifest(prepared.run_dir, manifest, secrets)
    except BaseException:  # e.g. a full disk at the manifest: a folder this start made goes
        if prepared is not None:  # (the servers' logs were moved in as they stopped)
            discard_if_empty(prepared)
        raise
    finally:
        if runner is not None:
            await runner.aclose()
        else:
            await _close_harness(harness)
        if (close := getattr(executor, "close", None)) is not None:
            close()
        if prepared is not None and prepared.lock is not None:
            prepared.lock.release()
    sweep_secrets(prepared.run_dir, secrets)
    if outcome.misconfigured is not None:
        discard_if_empty(prepared)
        raise RunConfigError(outcome.misconfigured)
    if outcome.stopped is not None:
        if not outcome.unresumable:
            outcome.stopped += "; resume with: " + resume_command(manifest, prepared.run_dir)
        log(outcome.stopped)
    summary = build_run_summary(prepared, manifest, outcome.ran, outcome.interrupted)
    summary.stopped = outcome.stopped
    summary.kept = not discard_if_empty(prepared)
    return summary


def check_tools_flag(config: RunConfig) -> None:
    """``--tools`` names only real tools and groups (checked before any server starts)."""
    if not config.tools:
        return
    try:
        check_tool_patterns(config.tools)
    except ToolChoiceError as error:
        raise RunConfigError(f"--tools {','.join(config.tools)}: {error}") from None


async def _run_tools(
    config: RunConfig, harness: Harness, erp: ErpInUse, world: McpEndpoint | None
) -> RunTools:
    """What the run's servers offer and what the agent sees of it (``--tools``), checked against
    the tools the harness needs, before anything is written."""
    try:
        offered = await offered_tools(erp.endpoint, world)
    except ErpUnavailableError as error:
        raise RunConfigError(one_line(str(error))) from None
    try:
        return choose_run_tools(config.tools, offered, harness)
    except ToolChoiceError as error:
        raise RunConfigError(str(error)) from None


@dataclass
class _Outcome:
    ran: list[TrajectoryRecord] = field(default_factory=list)
    interrupted: bool = False
    """Ctrl-C, SIGTERM or cancellation."""
    stopped: str | None = None
    """Why the circuit breaker stopped the run."""
    unresumable: bool = False
    """The stop needs a change of configuration, not a resume."""
    misconfigured: str | None = None
    """Why the agent cannot run at all (a prompt over the model's context): the one line."""


class CircuitBreaker:
    """Counts infrastructure failures in a row; trips at ``limit`` (0: never)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.streak: list[TrajectoryRecord] = []
        self.unresumable = False
        """The stop is a configuration the run cannot serve: resuming as it is cannot help."""

    def record(self, record: TrajectoryRecord) -> str | None:
        """The reason to stop the run, once ``limit`` failures came in a row, else None."""
        if not record.infrastructure_failure:
            self.streak.clear()
            return None
        if record.error is not None and record.error.class_ == UNENFORCEABLE_LIMIT:
            self.unresumable = True  # no later question (nor a retry) could keep the limit
            return f"stopped: {record.error.message}"
        self.streak.append(record)
        if not self.limit or len(self.streak) < self.limit:
            return None
        termination = record.termination
        detail = f": {termination.detail}" if termination.detail else ""
        return (
            f"stopped after {len(self.streak)} infrastructure failures in a row "
            f"({termination.reason.value}{detail}); fix the cause"
        )


def resume_command(manifest: Any, run_dir: Path) -> str:
    """The command that resumes this run and re-runs its infrastructure failures."""
    command = list(manifest.command)
    if not command or command[:3] != ["python", "-m", "harnesses.run"]:
        return "the same configuration with --retry-errors (RunConfig(retry_errors=True))"
    if "--retry-errors" not in command:
        command.append("--retry-errors")
    if "--out" not in command and not any(arg.startswith("--out=") for arg in command):
        command += ["--out", str(run_dir)]
    text = shlex.join(command)
    if REDACTED in text:
        text += "  (secrets shown as *** come from your environment or your own copy)"
    return text


async def _execute(
    config: RunConfig,
    pending: list[Pair],
    prepared: PreparedRun,
    runner: QuestionRunner,
    executor: Executor,
    writer: TrajectoryWriter,
    outcome: _Outcome,
) -> None:
    """Run the pending pairs and write each record as it comes. Sets ``outcome.interrupted`` on
    Ctrl-C, SIGTERM or cancellation, ``outcome.stopped`` when the circuit breaker trips."""
    counts: dict[str, int] = {}
    retried = {(q.id, t) for q, t in pending}
    for record in prepared.existing:
        if (record.question_id, record.trial) not in retried:
            counts[record.status.value] = counts.get(record.status.value, 0) + 1
    total = len(prepared.pairs)
    already = total - len(pending)
    breaker = CircuitBreaker(config.max_consecutive_infra_failures)
    with RunProgress(config.progress, total, already, counts) as progress:
        try:
            async with contextlib.aclosing(executor.execute(pending, runner.run)) as records:
                async for record in records:
                    record = _with_earlier_attempts(record, prepared)
                    writer.write(record)
                    outcome.ran.append(record)
                    progress.advance(record.status)
                    outcome.stopped = breaker.record(record)
                    if outcome.stopped is not None:
                        outcome.unresumable = breaker.unresumable
                        break
        except ModelContextError as error:
            outcome.misconfigured = str(error)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            outcome.interrupted = True


def _with_earlier_attempts(record: TrajectoryRecord, prepared: PreparedRun) -> TrajectoryRecord:
    """A re-run of an infrastructure failure keeps the earlier attempts in the new record."""
    earlier = prepared.earlier(record.question_id, record.trial)
    if earlier is None:
        return record
    attempt = PreviousAttempt(
        status=earlier.status,
        termination=earlier.termination,
        error=earlier.error,
        answer=earlier.answer,
        latency_s=earlier.latency_s,
        started_at=earlier.started_at,
        finished_at=earlier.finished_at,
        tool_call_count=len(earlier.tool_calls),
        simulator_error=_simulator_error(earlier),
    )
    return record.model_copy(update={"previous_attempts": [*earlier.previous_attempts, attempt]})


def _simulator_error(record: TrajectoryRecord) -> str | None:
    """Why the reviewer excluded an earlier conversation (its tags, or the reviewer's failure)."""
    log = record.conversation
    if log is None or not log.excluded_by_review or record.infrastructure_failure:
        return None
    if log.review_error is not None:
        return log.review_error
    tags = [t for t in log.review if t.severity != "minor"]
    return "; ".join(f"{t.rule} (turn {t.turn}, {t.by})" for t in tags)[:500]


def simulator_reruns(ran: list[TrajectoryRecord]) -> list[str]:
    """``QUESTION#TRIAL`` of the records of this start that replaced an excluded conversation."""
    return [
        f"{r.question_id}#{r.trial}"
        for r in ran
        if r.previous_attempts and r.previous_attempts[-1].simulator_error
    ]


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


def run(config: RunConfig, *, log: Any = None, executor: Executor | None = None) -> RunSummary:
    """Synchronous :func:`run_async`. Ctrl-C stops cleanly and returns an interrupted summary."""
    return asyncio.run(run_async(config, log=log, executor=executor))
