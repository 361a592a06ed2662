"""Scoring a run: ``runs/NAME/trajectories.jsonl`` -> ``runs/NAME/scores/<judge>.jsonl`` + manifest.

Records are appended one per trajectory as they finish, so an interrupted run resumes by skipping
the (question id, trial) pairs already in the file, as long as each score still belongs to its
answer: a score whose answer hash, status or termination reason no longer matches the trajectory
(the run was redone with ``--retry-errors`` or rewritten) is stale, dropped and re-judged, so a
plain resume re-judges every changed record; records with a ``judge_error`` dimension are judged
again on resume too. Trajectories that ended in an infrastructure failure
(``termination.infrastructure``: provider or ERP unavailable, harness error) are not judged
(``infra_error``); an empty answer (an agent failure) scores 0 on every assertion without a model
call.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from judge._base import (
    GRADING_FAILED,
    UNREACHABLE,
    Judge,
    JudgeAbort,
    JudgeItem,
    JudgeOutcome,
    JudgeUnreachable,
    answer_is_empty,
    dimension_from_assertions,
    overall_score,
    sha256_text,
    stable_hash,
    zero_dimensions,
)
from ledgerbench_core.dataset import Dataset, Question
from ledgerbench_core.scores import (
    DimensionScore,
    DimensionStatus,
    JudgeManifest,
    ScoreRecord,
    ScoreStatus,
)
from ledgerbench_core.trajectory import RunManifest, TerminationReason, TrajectoryRecord, Usage


class JudgeRunError(ValueError):
    """A problem with the run directory, dataset or options; the message names the fix."""


class JudgeRunConfig(BaseModel):
    """Everything ``python -m judge.run`` takes; tests call :func:`run_judge` with one of these."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    run_dir: Path
    judge: str = "rules"
    """``rules``, a DSPy model string (``openai/gpt-5.2``) or a plug-in ``pkg.module:factory``."""
    base_url: str | None = None
    api_key_env: str | None = None
    """Name of the environment variable holding the judge's API key (never the key itself)."""
    mode: Literal["per-dimension", "single-call"] = "per-dimension"
    with_rules: bool = False
    name: str | None = None
    erp_db: str | None = None
    world_db: str | None = None
    """The research world the run used (default: the run manifest's), for research citations."""
    dataset: str | None = None
    concurrency: int = 4
    retries: int = 2
    temperature: float | None = 0.0
    max_tokens: int | None = 4000
    evidence_chars: int = 60_000
    cache: bool = True
    cache_dir: str | None = None
    overwrite: bool = False
    price_per_mtok: tuple[float, float] | None = None
    adapter: Literal["chat", "json"] = "chat"
    program: str | None = None
    """A tuned DSPy program state saved with ``module.save(path)`` (demos, instructions)."""
    progress: bool = True
    preflight: bool = True
    """Call the judge model once before judging and stop with one line when it does not answer."""
    max_consecutive_infra_failures: int = Field(default=5, ge=0)
    """Stop after this many records in a row could not reach the judge model (0: never)."""
    executor: Literal["local", "ray"] = "local"
    """``local``: threads of this process; ``ray``: one Ray task per trajectory."""
    ray_address: str | None = None
    """Ray cluster address (``HOST:PORT``, ``ray://HOST:10001``, ``auto``); None: RAY_ADDRESS or
    a local Ray instance."""
    ray_num_cpus: float = 1.0
    ray_memory_mb: int | None = None


@dataclass
class JudgeRunResult:
    scores_path: Path
    manifest_path: Path
    judged: int = 0
    """Records written by this invocation."""
    resumed: int = 0
    """Records already in the file and skipped."""
    counts: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    """Model calls made by this invocation."""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    warnings: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------


def read_manifest(run_dir: Path) -> RunManifest:
    path = run_dir / "manifest.json"
    if not path.exists():
        raise JudgeRunError(
            f"{path} not found: pass a run directory written by python -m harnesses.run (runs/NAME)"
        )
    try:
        return RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise JudgeRunError(
            f"{path} is not a run manifest this version reads ({first}; a run folder of an "
            "older format?): re-run the questions with python -m harnesses.run --out NEW"
        ) from None


def read_trajectories(run_dir: Path) -> tuple[list[TrajectoryRecord], list[str]]:
    """The run's records, the last one per (question, trial) (a ``--retry-errors`` re-run
    replaces the earlier one)."""
    path = run_dir / "trajectories.jsonl"
    if not path.exists():
        raise JudgeRunError(f"{path} not found: the run has no trajectories yet")
    records: dict[tuple[str, int], TrajectoryRecord] = {}
    warnings = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = TrajectoryRecord.model_validate_json(line)
        except ValueError:
            warnings.append(f"{path.name} line {number}: not a trajectory record, skipped")
            continue
        records[(record.question_id, record.trial)] = record
    return list(records.values()), warnings


def score_matches(score: ScoreRecord, trajectory: TrajectoryRecord) -> bool:
    """Whether ``score`` was made for this trajectory's answer, status and termination (and,
    for a conversation, whether the review of its user excluded it).

    Scores written before the termination reason was stored are checked on hash and status."""
    if score.answer_sha256 != sha256_text(trajectory.answer):
        return False
    status = score.extra.get("trajectory_status")
    if status is not None and status != trajectory.status.value:
        return False
    reason = score.extra.get("termination_reason")
    if reason is not None and reason != trajectory.termination.reason.value:
        return False
    # A conversation re-run for its simulated user may say the same, but is judged again.
    excluded = trajectory.conversation is not None and trajectory.conversation.excluded_by_review
    return bool(score.extra.get("simulator_error")) == excluded


def load_run_dataset(config: JudgeRunConfig, manifest: RunManifest) -> tuple[Dataset, list[str]]:
    from ledgerbench_core.dataset import dataset_hash, find_run_dataset, load_dataset

    given = config.dataset or manifest.dataset_path
    override = Path(config.dataset) if config.dataset else None
    path = find_run_dataset(manifest.dataset_path, config.run_dir, override)
    if path is None:
        raise JudgeRunError(
            f"dataset {given} not found "
            f"(from {'--dataset' if config.dataset else 'the run manifest'}); "
            "pass --dataset PATH to the dataset file or folder the run used"
        )
    try:
        dataset = load_dataset(path)
    except Exception as exc:
        raise JudgeRunError(f"cannot load dataset {path}: {str(exc).splitlines()[0]}") from None
    warnings = []
    if manifest.dataset_hash and dataset_hash(dataset) != manifest.dataset_hash:
        warnings.append(
            f"dataset {path} differs from the one the run used "
            f"(hash {dataset_hash(dataset)[:12]} != "
            f"{manifest.dataset_hash[:12]}); answer keys may not match the answers"
        )
    return dataset, warnings


# ---------------------------------------------------------------------------------------------
# Judges
# ---------------------------------------------------------------------------------------------


class CombinedJudge:
    """``--with-rules``: the LLM judges everything; a rule replaces the LLM's verdict only for
    the assertions it decides with certainty (``AssertionScore.certain``).

    Both views are kept: every rule verdict in ``extra.rules`` and the LLM's own score for an
    overridden assertion in ``extra.llm_overridden``; ``judge.summary`` lists the disagreements.
    """

    def __init__(self, llm: Any, rules: Any) -> None:
        self.llm, self.rules = llm, rules
        self.name = f"{llm.name}+rules"
        self.model = llm.model
        self.mode = llm.mode

    def prepare(self) -> None:
        if hasattr(self.llm, "prepare"):
            self.llm.prepare()

    def preflight(self) -> None:
        if hasattr(self.llm, "preflight"):
            self.llm.preflight()

    @property
    def grading_version(self) -> str:
        from judge._grading import grading_version

        return f"{grading_version(self.llm)}+{grading_version(self.rules)}"

    def settings(self) -> dict[str, Any]:
        return {**self.llm.settings(), "with_rules": self.rules.settings()}

    def instructions_hash(self) -> str:
        return sha256_text(self.llm.instructions_hash() + self.rules.instructions_hash())

    def score(self, item: JudgeItem) -> JudgeOutcome:
        rules_outcome = self.rules.score(item)
        if rules_outcome.unscored:  # the rules cannot check it: no LLM verdict stands in
            return rules_outcome
        llm_outcome = self.llm.score(item)
        if llm_outcome.unscored:  # a conversation the model could not grade stays unscored
            return llm_outcome
        overridden: dict[str, dict[str, float | None]] = {}
        rules_view: dict[str, dict[str, dict[str, Any]]] = {}
        for dimension, rules_dim in rules_outcome.dimensions.items():
            decided = {a.assertion_id: a for a in rules_dim.assertions if a.decided_by}
            if not decided:
                continue
            rules_view[dimension.value] = {
                a.assertion_id: {"score": a.score, "certain": bool(a.certain), "reason": a.reason}
                for a in decided.values()
            }
            certain = {k: a for k, a in decided.items() if a.certain}
            llm_dim = llm_outcome.dimensions.get(dimension)
            if llm_dim is None or llm_dim.status is DimensionStatus.judge_error:
                if len(certain) == len(rules_dim.assertions):
                    llm_outcome.dimensions[dimension] = rules_dim
                continue
            merged = []
            for assertion in llm_dim.assertions:
                if assertion.assertion_id in certain:
                    overridden.setdefault(dimension.value, {})[assertion.assertion_id] = (
                        assertion.score
                    )
                    merged.append(certain[assertion.assertion_id])
                else:
                    merged.append(assertion)
            llm_outcome.dimensions[dimension] = dimension_from_assertions(
                merged, undecided_status=DimensionStatus.not_applicable
            )
        if overridden:
            llm_outcome.extra["llm_overridden"] = overridden
        if rules_view:
            llm_outcome.extra["rules"] = rules_view
        return llm_outcome

    def close(self) -> None:
        self.rules.close()


def build_judge(
    config: JudgeRunConfig, erp_db_url: str | None, world_db: str | None = None
) -> Judge:
    """The judge ``config`` names, reading the given databases (found by
    :func:`judge._inputs.resolve_inputs`)."""
    from judge._registry import create_judge

    rules_options = {"erp_db_url": erp_db_url, "world_db": world_db or config.world_db}
    if config.program and not Path(config.program).is_file():
        raise JudgeRunError(f"--program {config.program}: file not found")
    if config.judge == "rules":
        return create_judge("rules", name=config.name or "rules", **rules_options)
    judge = create_judge(
        config.judge,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        mode=config.mode,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        retries=config.retries,
        evidence_chars=config.evidence_chars,
        price_per_mtok=config.price_per_mtok,
        adapter=config.adapter,
        program_path=config.program,
    )
    if config.with_rules:
        judge = CombinedJudge(judge, create_judge("rules", **rules_options))
    if config.name:
        judge.name = config.name
    if config.cache:
        _set_cache(
            judge, config.cache_dir or str(config.run_dir / "scores" / ".cache" / judge.name)
        )
    return judge


def _set_cache(judge: Any, cache_dir: str | None) -> None:
    from judge._cache import DiskCache

    target = getattr(judge, "llm", judge)
    if hasattr(target, "cache"):
        target.cache = DiskCache(cache_dir) if cache_dir else None


# ---------------------------------------------------------------------------------------------
# Scoring one trajectory
# ---------------------------------------------------------------------------------------------


def score_trajectory(judge: Judge, question: Question, trajectory: TrajectoryRecord) -> ScoreRecord:
    """One ScoreRecord: infra_error for infrastructure failures (``termination.infrastructure``),
    zeros for empty answers, else the judge's."""
    base = {
        "question_id": trajectory.question_id,
        "trial": trajectory.trial,
        "task_type": question.task_type,
        "judge": judge.name,
        "answer_sha256": sha256_text(trajectory.answer),
        "judged_at": dt.datetime.now(dt.UTC),
    }
    extra: dict[str, Any] = {
        "trajectory_status": trajectory.status.value,
        "termination_reason": trajectory.termination.reason.value,
    }
    if trajectory.termination.reason is TerminationReason.answer_cut:  # judged as it stands
        extra["answer_cut"] = trajectory.termination.detail
    conversation = trajectory.conversation
    if conversation is not None and conversation.excluded_by_review:
        tags = "; ".join(f"{t.rule} (turn {t.turn})" for t in conversation.review)
        why = (
            f"the simulated user broke its scenario: {tags}"
            if conversation.critical_simulator_error
            else f"the simulated user was not reviewed: {conversation.review_error}"
        )
        extra["infra_error"] = f"simulator error: {why}"[:500]
        extra["simulator_error"] = True
        return ScoreRecord(status=ScoreStatus.infra_error, extra=extra, **base)
    if trajectory.infrastructure_failure:
        error = trajectory.error.message if trajectory.error else None
        extra["infra_error"] = (error or trajectory.termination.detail or "unknown error")[:500]
        return ScoreRecord(status=ScoreStatus.infra_error, extra=extra, **base)
    if answer_is_empty(trajectory.answer):
        reason = (
            f"empty answer (run ended with status {trajectory.status.value}): the user got nothing"
        )
        dimensions = zero_dimensions(question, reason)
        return ScoreRecord(
            status=ScoreStatus.scored,
            dimensions=dimensions,
            overall=overall_score(dimensions),
            extra=extra,
            **base,
        )
    try:
        outcome = judge.score(JudgeItem(question=question, trajectory=trajectory))
    except JudgeAbort:
        raise
    except Exception as exc:  # a judge bug must not lose the other records
        message = f"{type(exc).__name__}: {exc}"[:500]
        outcome = JudgeOutcome(
            dimensions={
                d: DimensionScore(status=DimensionStatus.judge_error, error=message)
                for d, a in question.tags.items()
                if a
            }
        )
    if outcome.unscored:
        extra.update(outcome.extra)  # e.g. the dimensions a model judge could not grade
        if outcome.calls:
            extra["calls"] = outcome.calls
        return ScoreRecord(
            status=ScoreStatus.unscored,
            unscored_reason=outcome.unscored,
            usage=outcome.usage,
            cost_usd=outcome.cost_usd,
            extra=extra,
            **base,
        )
    extra.update(outcome.extra)
    extra["calls"] = outcome.calls
    errors = [
        d.value for d, s in outcome.dimensions.items() if s.status is DimensionStatus.judge_error
    ]
    if errors:
        extra["judge_error_dimensions"] = errors
    cached = outcome.calls == 0 and outcome.cache_hits > 0
    return ScoreRecord(
        status=ScoreStatus.scored,
        dimensions=outcome.dimensions,
        overall=overall_score(outcome.dimensions),
        usage=outcome.usage,
        cost_usd=outcome.cost_usd,
        cached=cached,
        extra=extra,
        **base,
    )


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


def read_scores(path: str | Path) -> tuple[list[ScoreRecord], int]:
    """Valid records of a scores file and the number of unreadable lines (e.g. cut by a kill)."""
    path = Path(path)
    if not path.exists():
        return [], 0
    records, bad = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            records.append(ScoreRecord.model_validate_json(line))
        except ValueError:
            bad += 1
    return records, bad


def _drop_stale(
    scores: list[ScoreRecord], trajectories: list[TrajectoryRecord]
) -> tuple[list[ScoreRecord], int]:
    """The scores that still belong to their trajectory (one per question and trial, the last),
    and how many were dropped: a score whose record changed, or whose record cannot be read (a
    line cut by a kill, a damaged line) or is gone, no longer belongs to anything."""
    current = {(t.question_id, t.trial): t for t in trajectories}
    latest = {(s.question_id, s.trial): s for s in scores}
    kept = [
        score
        for key, score in latest.items()
        if key in current and score_matches(score, current[key])
    ]
    return kept, len(scores) - len(kept)


def _check_resume(manifest_path: Path, judge: Judge) -> None:
    from judge._grading import grading_version

    if not manifest_path.exists():
        return
    try:
        previous = JudgeManifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
    except ValueError:
        raise JudgeRunError(
            f"{manifest_path} is not a judge manifest this version reads (an older format?): "
            "pass --overwrite to re-score the run or --name NEW to score beside it"
        ) from None
    scores = manifest_path.parent / (previous.judge + ".jsonl")
    current = grading_version(judge)
    if previous.grading_version != current:
        raise JudgeRunError(
            f"{scores} holds scores of grading version {previous.grading_version or 'unknown'} "
            f"and this judge grades with {current}: pass --overwrite to re-score the run or "
            "--name NEW to score beside it"
        )
    if previous.instructions_hash != judge.instructions_hash() or previous.settings != _jsonable(
        judge.settings()
    ):
        raise JudgeRunError(
            f"{manifest_path.parent / (previous.judge + '.jsonl')} was scored with other "
            "judge settings "
            "or instructions: pass --overwrite to replace it or --name NEW to score beside it"
        )


def _check_grading(scores_path: Path, existing: list[ScoreRecord], current: str) -> None:
    """Refuse to add scores to a file holding another grading version's (never mixed)."""
    other = sorted({r.grading_version or "unknown" for r in existing} - {current})
    if other:
        raise JudgeRunError(
            f"{scores_path} holds scores of grading version {other[0]} and this judge grades "
            f"with {current}: pass --overwrite to re-score the run or --name NEW to score "
            "beside it"
        )


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _totals(records: list[ScoreRecord]) -> tuple[Counter[str], Usage, float | None]:
    counts: Counter[str] = Counter()
    usage = Usage()
    cost: float | None = 0.0
    for record in records:
        counts[record.status.value] += 1
        counts["cached"] += record.cached
        for dimension in record.dimensions.values():
            counts[f"dimension_{dimension.status.value}"] += 1
        usage = usage.add(record.usage)
        if record.cost_usd is None and record.status is ScoreStatus.scored and not record.cached:
            if record.extra.get("calls"):
                cost = None
        elif cost is not None:
            cost += record.cost_usd or 0.0
    counts["records"] = len(records)
    return counts, usage, cost


def _progress(enabled: bool, total: int):
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("[bold]judging"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
        transient=False,
    )
    return progress


def run_judge(
    config: JudgeRunConfig,
    *,
    judge: Judge | None = None,
    dataset: Dataset | None = None,
    on_record: Callable[[ScoreRecord], None] | None = None,
) -> JudgeRunResult:
    """Score every trajectory of ``config.run_dir`` not yet in the scores file."""
    if config.concurrency < 1:
        raise JudgeRunError("--concurrency must be at least 1")
    if config.executor == "ray" and config.ray_num_cpus <= 0:
        raise JudgeRunError("--ray-num-cpus must be above 0, e.g. --ray-num-cpus 0.5")
    manifest = read_manifest(config.run_dir)
    warnings: list[str] = []
    if dataset is None:
        dataset, dataset_warnings = load_run_dataset(config, manifest)
        warnings += dataset_warnings
    trajectories, trajectory_warnings = read_trajectories(config.run_dir)
    warnings += trajectory_warnings
    built = judge is None
    if judge is None:
        inputs = _resolve_inputs(config, manifest, dataset, trajectories)
        config = config.model_copy(update={"world_db": inputs.world_db})
        judge = build_judge(config, inputs.erp_db, inputs.world_db)
    else:
        if config.name:
            judge.name = config.name
        inputs = _given_judge_inputs(judge, manifest)
    manifest_path = config.run_dir / "scores" / f"{judge.name}.manifest.json"
    try:
        if not config.overwrite:
            _check_resume(manifest_path, judge)
        lock = _judge_lock(config.run_dir)  # every input checked: one judge per run from here on
    except JudgeRunError:
        if built and hasattr(judge, "close"):
            judge.close()
        raise
    try:
        return _judge_locked(
            config, judge, dataset, trajectories, inputs, warnings, on_record, built, manifest
        )
    finally:
        lock.release()


def _judge_locked(
    config: JudgeRunConfig,
    judge: Judge,
    dataset: Dataset,
    trajectories: list[TrajectoryRecord],
    inputs: Any,
    warnings: list[str],
    on_record: Callable[[ScoreRecord], None] | None,
    built: bool,
    manifest: RunManifest,
) -> JudgeRunResult:
    from judge._grading import grading_version, judge_version

    if hasattr(judge, "prepare"):
        judge.prepare()
    erp_db_url = inputs.erp_db
    scores_dir = config.run_dir / "scores"
    scores_path = scores_dir / f"{judge.name}.jsonl"
    manifest_path = scores_dir / f"{judge.name}.manifest.json"
    if not config.overwrite:
        _check_resume(manifest_path, judge)  # again, under the lock
    existing, bad_lines = read_scores(scores_path) if not config.overwrite else ([], 0)
    _check_grading(scores_path, existing, grading_version(judge))
    # A resume judges again the records with judge errors (the dimensions that were graded come
    # from the verdict cache, so only the failed ones cost calls).
    kept = [
        r
        for r in existing
        if not (r.extra.get("judge_error_dimensions") or r.extra.get(GRADING_FAILED))
    ]
    if bad_lines:  # a line cut by an interruption
        warnings.append(
            f"{bad_lines} unreadable line(s) dropped from {scores_path.name}; re-judged"
        )
    if len(kept) < len(existing):
        warnings.append(f"{len(existing) - len(kept)} record(s) with judge errors judged again")
    current, stale = _drop_stale(kept, trajectories)
    if stale:  # the answer behind these scores changed: keep only the scores that still match
        warnings.append(
            f"{stale} score(s) in {scores_path.name} no longer matched a readable trajectory "
            "(answer, status or termination changed, or the record cannot be read); dropped, "
            "and re-judged where the record is readable"
        )
    done = {(r.question_id, r.trial) for r in current}

    questions = {q.id: q for q in dataset.items}
    todo = []
    for trajectory in trajectories:
        if (trajectory.question_id, trajectory.trial) in done:
            continue
        if trajectory.question_id not in questions:
            warnings.append(f"question {trajectory.question_id} is not in the dataset; not judged")
            continue
        todo.append(trajectory)

    if todo and config.preflight and hasattr(judge, "preflight"):
        try:  # before anything is written: a dead endpoint leaves the scores as they were
            judge.preflight()
        except JudgeAbort:
            if hasattr(judge, "close"):
                judge.close()
            raise
    if config.overwrite:
        scores_path.unlink(missing_ok=True)
        manifest_path.unlink(missing_ok=True)
    elif bad_lines or len(current) < len(existing):
        scores_path.write_text(
            "".join(r.model_dump_json() + "\n" for r in current), encoding="utf-8"
        )

    started = dt.datetime.now(dt.UTC)
    judge_manifest = JudgeManifest(
        judge=judge.name,
        model=judge.model,
        mode=judge.mode,
        settings=_jsonable(judge.settings()),
        instructions_hash=judge.instructions_hash(),
        rubric_versions=sorted({dataset.header.rubric_version or "unversioned"}),
        run_dir=str(config.run_dir),
        started_at=started,
        dataset_hash=manifest.dataset_hash,
        judge_version=judge_version(judge),
        grading_version=grading_version(judge),
        erp_db=_redacted(inputs.erp_db),
        erp_snapshot_hash=inputs.erp_snapshot_hash,
        world_db=inputs.world_db,
        world_snapshot_hash=inputs.world_snapshot_hash,
    )
    stamp = {
        "judge_version": judge_manifest.judge_version,
        "grading_version": judge_manifest.grading_version,
        "erp_snapshot_hash": inputs.erp_snapshot_hash,
        "world_snapshot_hash": inputs.world_snapshot_hash,
    }

    def write_manifest() -> None:
        manifest_path.write_text(judge_manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")

    result = JudgeRunResult(scores_path=scores_path, manifest_path=manifest_path, resumed=len(done))
    result.warnings = warnings
    scores = ScoresFile(scores_path, on_create=write_manifest)
    try:
        with _score_executor(config, judge, erp_db_url, built=built) as executor, scores:
            _score_all(config, executor, questions, todo, scores, result, on_record, stamp)
        if executor.lost:
            result.warnings.append(
                f"{executor.lost} trajectories were not judged: their Ray worker was lost; "
                "run judge.run again to judge them"
            )
    finally:
        if hasattr(judge, "close"):
            judge.close()
        records, _ = read_scores(scores_path)
        counts, usage, cost = _totals(records)
        judge_manifest.finished_at = dt.datetime.now(dt.UTC)
        judge_manifest.counts = dict(counts)
        judge_manifest.usage = usage
        judge_manifest.cost_usd = cost
        if scores_path.exists():  # no scores file (nothing scored): no manifest either
            write_manifest()
        result.counts = counts
    return result


def _uses_rules(config: JudgeRunConfig) -> bool:
    return config.judge == "rules" or config.with_rules


def _resolve_inputs(
    config: JudgeRunConfig,
    manifest: RunManifest,
    dataset: Dataset,
    trajectories: list[TrajectoryRecord],
) -> Any:
    """The ERP and world the judge reads, found by the run's snapshot hashes (or refused)."""
    from judge._inputs import InputsError, resolve_inputs
    from judge._rules import databases_needed

    needs_world = False  # the world is looked up when an answer's check reads it
    if _uses_rules(config) and not config.world_db:
        questions = {q.id: q for q in dataset.items}
        world = frozenset({"world"})
        needs_world = any(
            databases_needed(questions[t.question_id], t.answer, world)
            for t in trajectories
            if t.question_id in questions
        )
    names_erp = bool(manifest.erp_snapshot_hash or manifest.erp_db_url or manifest.erp_url)
    try:
        return resolve_inputs(
            manifest,
            erp_db=config.erp_db,
            world_db=config.world_db,
            # A run that names an ERP is judged against it (found by hash) or refused; one that
            # names none is judged without, and answers whose checks read it are unscored.
            needs_erp=bool(config.erp_db) or (_uses_rules(config) and names_erp),
            needs_world=needs_world or bool(config.world_db),
            dataset_world=dataset.header.world_snapshot_hash,
        )
    except InputsError as exc:
        raise JudgeRunError(str(exc)) from None


def _given_judge_inputs(judge: Judge, manifest: RunManifest) -> Any:
    """The databases of a judge object given to :func:`run_judge`: its ERP must be the run's."""
    from judge._inputs import JudgeInputs

    rules = getattr(judge, "rules", judge)
    resolver = getattr(rules, "resolver", None)
    world = getattr(rules, "world", None)
    world_db = getattr(world, "path", None)
    if resolver is None:
        return JudgeInputs(world_db=world_db)
    from judge._inputs import erp_snapshot

    try:
        found = erp_snapshot(resolver.db_url)
    except ValueError as exc:
        raise JudgeRunError(str(exc)) from None
    expected = manifest.erp_snapshot_hash
    if expected and found != expected:
        raise JudgeRunError(
            f"the judge's ERP {resolver.db_url} holds snapshot {(found or 'unknown')[:12]}, but "
            f"the run used {expected[:12]}: give it the database the run was made against"
        )
    return JudgeInputs(resolver.db_url, found, world_db)


def _redacted(url: str | None) -> str | None:
    from harnesses._redact import redact_url

    return redact_url(url) if url else None


def _judge_lock(run_dir: Path) -> Any:
    """One judge per run at a time; a second says who holds it, in one line."""
    from harnesses._run_config import RunConfigError
    from harnesses._run_store import RunLock

    lock = RunLock(run_dir, file=JUDGE_LOCK_FILE, role="judge", other_fix="")
    try:
        lock.acquire()
    except RunConfigError as exc:
        raise JudgeRunError(str(exc)) from None
    return lock


JUDGE_LOCK_FILE = ".judge.lock"


class ScoreExecutor(Protocol):
    """Where trajectories are scored: this process's threads, or Ray tasks (``judge._ray``).

    ``submit`` returns a future of the ScoreRecord, or of None when the executor lost the work
    (a dead Ray worker): that trajectory stays unjudged and the next run scores it.
    """

    lost: int

    def submit(self, question: Question, trajectory: TrajectoryRecord) -> Future: ...

    def cancel(self, futures: set[Future]) -> None: ...

    def close(self) -> None: ...


class ThreadScoreExecutor:
    """The default executor: a pool of ``concurrency`` threads sharing one judge."""

    lost = 0

    def __init__(self, judge: Judge, concurrency: int) -> None:
        self._judge = judge
        self._pool = ThreadPoolExecutor(max_workers=concurrency)

    def submit(self, question: Question, trajectory: TrajectoryRecord) -> Future:
        return self._pool.submit(score_trajectory, self._judge, question, trajectory)

    def cancel(self, futures: set[Future]) -> None:
        for future in futures:
            future.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


@contextlib.contextmanager
def _score_executor(
    config: JudgeRunConfig, judge: Judge, erp_db_url: str | None, *, built: bool
) -> Iterator[ScoreExecutor]:
    if config.executor == "local":
        executor: ScoreExecutor = ThreadScoreExecutor(judge, config.concurrency)
        try:
            yield executor
        finally:
            executor.close()
        return
    from judge._ray import open_ray_executor

    with open_ray_executor(config, judge, erp_db_url, built=built) as executor:
        yield executor


class ScoresFile:
    """The scores file, appended to one record at a time. It is created (with its folder, and
    the judge manifest through ``on_create``) only when the first record is written: a judge
    that fails before scoring anything leaves no empty file behind for later stages to trip on."""

    def __init__(self, path: Path, on_create: Callable[[], None]) -> None:
        self.path = path
        self._on_create = on_create
        self._handle: Any = None

    def write(self, record: ScoreRecord) -> None:
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                self._on_create()
            self._handle = self.path.open("a", encoding="utf-8")
        self._handle.write(record.model_dump_json() + "\n")
        self._handle.flush()

    def __enter__(self) -> ScoresFile:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _score_all(
    config: JudgeRunConfig,
    executor: ScoreExecutor,
    questions: dict[str, Question],
    todo: list[TrajectoryRecord],
    out: ScoresFile,
    result: JudgeRunResult,
    on_record: Callable[[ScoreRecord], None] | None,
    stamp: dict[str, Any] | None = None,
) -> None:
    status = Counter()
    item_hashes: dict[str, str] = {}
    breaker = JudgeCircuitBreaker(config.max_consecutive_infra_failures)
    with _progress(config.progress, len(todo)) as progress:
        task = progress.add_task("judging", total=len(todo), status="")
        pending: set[Future[ScoreRecord | None]] = set()
        queue = iter(todo)
        try:
            while True:
                while len(pending) < config.concurrency * 2:
                    trajectory = next(queue, None)
                    if trajectory is None:
                        break
                    question = questions[trajectory.question_id]
                    pending.add(executor.submit(question, trajectory))
                if not pending:
                    break
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    record = future.result()
                    if record is None:  # its worker was lost: left for the next run
                        progress.update(task, advance=1)
                        continue
                    if record.question_id not in item_hashes:  # each item hashed once
                        item_hashes[record.question_id] = item_hash(questions[record.question_id])
                    record = _stamped(record, stamp or {}, item_hashes[record.question_id])
                    out.write(record)
                    _account(result, record, status)
                    if on_record is not None:
                        on_record(record)
                    progress.update(task, advance=1, status=_status_text(status, result))
                    if (stop := breaker.record(record)) is not None:
                        raise JudgeUnreachable(stop)
        except BaseException:
            executor.cancel(pending)
            raise


def _stamped(record: ScoreRecord, stamp: dict[str, Any], item_sha256: str) -> ScoreRecord:
    """The record with what made it: judge and grading version, item, ERP and world hashes."""
    return record.model_copy(update={**stamp, "item_sha256": item_sha256})


def item_hash(question: Question) -> str:
    """SHA-256 of the dataset item's canonical JSON (question, key, assertions)."""
    return stable_hash(question.model_dump(mode="json"))


class JudgeCircuitBreaker:
    """Counts records in a row whose judge model could not be reached (the runner's breaker
    for agents, ``harnesses._runner.CircuitBreaker``, for the judge); trips at ``limit``
    (0: never)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.streak = 0

    def record(self, record: ScoreRecord) -> str | None:
        """The reason to stop, once ``limit`` records in a row could not reach the judge."""
        error = record.extra.get(UNREACHABLE)
        if not error:
            self.streak = 0
            return None
        self.streak += 1
        if not self.limit or self.streak < self.limit:
            return None
        return (
            f"stopped after {self.streak} records in a row could not reach the judge model "
            f"({error})"
        )


def _account(result: JudgeRunResult, record: ScoreRecord, status: Counter[str]) -> None:
    result.judged += 1
    result.calls += int(record.extra.get("calls", 0) or 0)
    result.usage = result.usage.add(record.usage)
    if record.cost_usd is None and record.extra.get("calls"):
        result.cost_usd = None
    elif result.cost_usd is not None:
        result.cost_usd += record.cost_usd or 0.0
    status[record.status.value] += 1
    status["judge_error"] += len(record.extra.get("judge_error_dimensions", []))
    status["records_with_errors"] += bool(record.extra.get("judge_error_dimensions"))
    status["unreachable"] += bool(record.extra.get(UNREACHABLE))


def _status_text(status: Counter[str], result: JudgeRunResult) -> str:
    """The progress bar's counts: scored, failed runs not judged, records with judge errors
    (and their dimensions), records the judge model did not answer for, model calls."""
    parts = [f"{status['scored']} scored"]
    if status["infra_error"]:
        parts.append(f"{status['infra_error']} infra errors")
    if status["judge_error"]:
        parts.append(
            f"{status['records_with_errors']} with judge errors ({status['judge_error']} dims)"
        )
    if status["unreachable"]:
        parts.append(f"{status['unreachable']} judge model unreachable")
    parts.append(f"{result.calls} calls")
    return ", ".join(parts)


def print_warnings(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


__all__ = [
    "CombinedJudge",
    "JudgeRunConfig",
    "JudgeRunError",
    "JudgeRunResult",
    "build_judge",
    "read_scores",
    "run_judge",
    "score_trajectory",
]
