"""Reading providers: LedgerBench run directories and published FORCE-Bench evaluation files.

Each provider becomes two tables:

* ``scores``: one row per trajectory (question, trial) and metric, with the dimension ``status``
  (``scored``, ``not_applicable``, ``needs_llm``, ``judge_error``, ``infra_error``,
  ``no_score_record``) and ``score`` (NaN unless scored).
  Accuracy of research items (keyed on a world) becomes ``research_accuracy``, and their
  ``extra["research"]`` figures become ``shown_recall``, ``fetched_recall``,
  ``citation_precision`` and ``citation_recall`` (``not_applicable`` where the judge gave None):
  LedgerBench's extension, never part of the paper's accuracy rows or Overall.
* ``trajectories``: one row per question and trial with status, latency, budget, tool calls, tokens,
  cost.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from analysis._data import (
    METRICS,
    RESEARCH_ACCURACY,
    RESEARCH_METRICS,
    RESEARCH_MODES,
    RESEARCH_TASK_TYPES,
    RETRIEVAL_METRICS,
    SCORE_COLUMNS,
    TRAJECTORY_COLUMNS,
    InputError,
    ProviderData,
)
from analysis._published import load_published
from analysis._schema import ProviderInfo
from ledgerbench_core.dataset._scenarios import dataset_scenarios


def load_provider(path: str | Path, judge: str | None) -> ProviderData:
    """A run directory (``manifest.json`` + ``trajectories.jsonl`` + ``scores/<judge>.jsonl``) or a
    published ``eval_results_*.json`` file."""
    path = Path(path)
    if path.is_file() and path.suffix == ".json":
        return load_published(path)
    if path.is_dir():
        return load_run(path, judge)
    if not path.exists():
        raise InputError(
            f"{path} does not exist; pass a run directory or an eval_results_*.json file"
        )
    raise InputError(f"{path} is neither a run directory nor an eval_results_*.json file")


def load_run(run_dir: Path, judge: str | None) -> ProviderData:
    from ledgerbench_core.scores import ScoreRecord
    from ledgerbench_core.trajectory import RunManifest, TrajectoryRecord

    manifest = _read_model(run_dir / "manifest.json", RunManifest, "a run directory")
    records = _read_jsonl(run_dir / "trajectories.jsonl", TrajectoryRecord)
    if not records:
        raise InputError(f"{run_dir}/trajectories.jsonl has no records; run the harness first")
    # A resumed run may hold a question and trial twice: the last record is the one that counts.
    trajectories = list({(r.question_id, r.trial): r for r in records}.values())
    scores_path = _scores_path(run_dir, judge)
    score_records = {(s.question_id, s.trial): s for s in _read_jsonl(scores_path, ScoreRecord)}
    _check_scores_belong(run_dir, scores_path, trajectories, score_records)
    traj_rows, score_rows = [], []
    for record in trajectories:
        traj_rows.append(_trajectory_row(record))
        score_rows.extend(
            _score_rows(record, score_records.get((record.question_id, record.trial)))
        )
    traj_df = pd.DataFrame(traj_rows, columns=[*TRAJECTORY_COLUMNS, "termination"])
    scenarios, caveats, metadata = dataset_scenarios(manifest.dataset_path, run_dir)
    judged = _coverage(scores_path.stem, list(score_records.values()), trajectories)
    if len(trajectories) < len(records):
        caveats.append(
            f"{run_dir}: {len(records) - len(trajectories)} repeated trajectory record(s); "
            "the last one of each question and trial was used."
        )
    info = ProviderInfo(
        name=default_name(manifest.harness, manifest.model),
        source="run",
        path=str(run_dir),
        harness=manifest.harness,
        model=manifest.model,
        judge=scores_path.stem,
        trajectories=len(traj_df),
        questions=traj_df["question_id"].nunique(),
        trials=int(traj_df.groupby("question_id").size().max()),
        dataset_path=manifest.dataset_path,
        dataset_hash=manifest.dataset_hash,
        research=research_mode(manifest),
        judged=judged.label(),
        partly_judged=judged.partial,
        grading_version=judged.grading_version,
        tools=tools_label(manifest),
    )
    if judged.partial or judged.outdated:
        caveats.append(f"{info.name}: judge {info.judge}: {judged.label()}.")
    fault_rate = (manifest.config or {}).get("erp_fault_rate")
    if fault_rate:
        seed = manifest.config.get("erp_fault_seed")
        caveats.append(
            f"{run_dir.name}: the ERP failed {fault_rate:.0%} of tool calls transiently on "
            f"purpose (injected faults, seed {seed})."
        )
    if manifest.interrupted or manifest.finished_at is None:
        caveats.append(
            f"{info.name}: the run did not finish ({len(traj_df)} of "
            f"{manifest.question_count} questions recorded)."
        )
    scores_df = pd.DataFrame(score_rows, columns=SCORE_COLUMNS)
    return ProviderData(info, scores_df, traj_df, scenarios, caveats, metadata)


def _coverage(name: str, scores: list[Any], trajectories: list[Any]) -> Any:
    """How much of the run the judge scored, and its grading version
    (``ledgerbench_core._coverage``)."""
    from ledgerbench_core._coverage import coverage

    return coverage(name, scores, [(t.question_id, t.trial) for t in trajectories])


def _score_mismatch(trajectory: Any, score: Any) -> str | None:
    """What differs between a trajectory and the score made for it, or None when it matches."""
    if score.answer_sha256 != hashlib.sha256(trajectory.answer.encode("utf-8")).hexdigest():
        return "the answer changed"
    status = score.extra.get("trajectory_status")
    if status is not None and status != str(trajectory.status):
        return f"status {status} -> {trajectory.status}"
    reason = score.extra.get("termination_reason")
    if reason is not None and reason != str(trajectory.termination.reason):
        return f"termination {reason} -> {trajectory.termination.reason}"
    return None


def _check_scores_belong(
    run_dir: Path, scores_path: Path, trajectories: list[Any], scores: dict[Any, Any]
) -> None:
    """Refuse scores that were made for other answers than the run holds now (never reuse them)."""
    mismatches = []
    for record in trajectories:
        score = scores.get((record.question_id, record.trial))
        problem = None if score is None else _score_mismatch(record, score)
        if problem is not None:
            mismatches.append(f"{record.question_id} trial {record.trial}: {problem}")
    if mismatches:
        raise InputError(
            f"run {run_dir}, judge {scores_path.stem}: {len(mismatches)} score(s) do not match "
            f"the trajectories they were made for (first: {mismatches[0]}); re-judge the run "
            f"(python -m judge.run {run_dir} --judge ... with the same options: a resume "
            "re-judges exactly the changed records)"
        )


def research_mode(manifest: Any) -> str:
    """The run's ``--research`` setting; manifests older than the switch: ``world`` when the run
    served a research world, else ``web``."""
    mode = (manifest.config or {}).get("research")
    if mode is not None:
        return str(mode)
    return RESEARCH_MODES[0] if manifest.world_id else "web"


def tools_label(manifest: Any) -> str | None:
    """The run's ``--tools`` and the number of tools it gave the agent, e.g. ``finance (25)``;
    None for a run made before the runner recorded its tools."""
    offered = getattr(manifest, "tools", None)
    if offered is None:
        return None
    chosen = (manifest.config or {}).get("tools") or ["all"]
    return f"{','.join(chosen)} ({len(offered)})"


def default_name(harness: str, model: str | None) -> str:
    return f"{harness}:{model}" if model else harness


def _scores_path(run_dir: Path, judge: str | None) -> Path:
    scores_dir = run_dir / "scores"
    available = sorted(p.stem for p in scores_dir.glob("*.jsonl")) if scores_dir.is_dir() else []
    if judge is None:
        if len(available) == 1:
            return scores_dir / f"{available[0]}.jsonl"
        if not available:
            raise InputError(f"{run_dir} has no scores/*.jsonl; judge the run first")
        raise InputError(
            f"{run_dir} has scores from several judges ({', '.join(available)}); pass --judge"
        )
    path = scores_dir / f"{judge}.jsonl"
    if not path.exists():
        hint = f"available: {', '.join(available)}" if available else "judge the run first"
        raise InputError(
            f"{path} not found; pass --judge with a judge that scored this run ({hint})"
        )
    return path


def _read_model(path: Path, model: type, what: str) -> Any:
    if not path.exists():
        raise InputError(f"{path} not found; {path.parent} is not {what}")
    try:
        return model.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise InputError(f"{path}: not a valid {model.__name__} ({_first_error(exc)})") from None


def _read_jsonl(path: Path, model: type) -> list[Any]:
    if not path.exists():
        raise InputError(f"{path} not found")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(model.model_validate_json(line))
        except ValidationError as exc:
            raise InputError(
                f"{path}:{number}: not a valid {model.__name__} ({_first_error(exc)})"
            ) from None
    return records


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error.get("loc", ())) or "record"
    return f"{where}: {error.get('msg', 'invalid')}"


def _trajectory_row(record: Any) -> dict[str, Any]:
    usage = record.usage  # None: the provider reported no usage (unknown, like 0 here: nan)
    tokens = usage.input_tokens + usage.output_tokens if usage is not None else 0
    return {
        "question_id": record.question_id,
        "trial": record.trial,
        "task_type": str(record.task_type),
        "status": str(record.status),
        "termination": str(record.termination.reason),
        "latency_s": record.latency_s,
        "timeout_s": record.timeout_s,
        "tool_calls": len(record.tool_calls),
        "tokens": float(tokens) if tokens else math.nan,
        "cost_usd": record.cost_usd if record.cost_usd is not None else math.nan,
    }


def _score_rows(trajectory: Any, score: Any | None) -> list[dict[str, Any]]:
    task_type = str(trajectory.task_type)
    base = {
        "question_id": trajectory.question_id,
        "trial": trajectory.trial,
        "task_type": task_type,
    }
    # A research item's extension metrics are missing with the rest when it was never judged.
    metrics = [*METRICS, *(RESEARCH_METRICS if task_type in RESEARCH_TASK_TYPES else ())]
    if trajectory.infrastructure_failure:  # never judged, out of every denominator
        return [{**base, "metric": m, "status": "infra_error", "score": math.nan} for m in metrics]
    if score is None or str(score.status) == "unscored":  # unscored: neither right nor wrong
        status = "no_score_record"
        return [{**base, "metric": m, "status": status, "score": math.nan} for m in metrics]
    if str(score.status) == "infra_error":
        return [{**base, "metric": m, "status": "infra_error", "score": math.nan} for m in metrics]
    rows = []
    statuses = []
    for dimension, dim_score in score.dimensions.items():
        status = str(dim_score.status)
        statuses.append(status)
        value = dim_score.score if status == "scored" and dim_score.score is not None else math.nan
        if status == "scored" and dim_score.score is None:
            status = "judge_error"
        metric = _metric(str(dimension), task_type)
        rows.append({**base, "metric": metric, "status": status, "score": value})
    rows.append({**base, **_overall(score.overall, statuses)})
    rows.extend(_retrieval_rows(base, score.extra.get("research")))
    return rows


def _metric(dimension: str, task_type: str) -> str:
    """The report's metric for a judge dimension: research items' accuracy is the extension's."""
    from ledgerbench_core._overall import EXTENSION_CELLS

    return RESEARCH_ACCURACY if (dimension, task_type) in EXTENSION_CELLS else dimension


def _retrieval_rows(base: dict[str, Any], research: Any) -> list[dict[str, Any]]:
    """Rows of the rules judge's ``extra["research"]`` figures (none for items without one)."""
    if not isinstance(research, dict):
        return []
    rows = []
    for metric in RETRIEVAL_METRICS:
        value = research.get(metric)
        if isinstance(value, int | float) and math.isfinite(value):
            rows.append({**base, "metric": metric, "status": "scored", "score": float(value)})
        else:
            rows.append({**base, "metric": metric, "status": "not_applicable", "score": math.nan})
    return rows


def _overall(overall: float | None, statuses: list[str]) -> dict[str, Any]:
    if overall is not None:
        return {"metric": "overall", "status": "scored", "score": float(overall)}
    for status in ("judge_error", "needs_llm"):
        if status in statuses:
            return {"metric": "overall", "status": status, "score": math.nan}
    return {"metric": "overall", "status": "not_applicable", "score": math.nan}
