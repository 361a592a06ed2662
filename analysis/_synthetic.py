"""Synthetic runs with known effects, written with the real record models (tests, bench, demos).

``score = base + provider effect (+ per-task-type effect) + question effect + noise``, clipped to
[0, 1] and optionally rounded to the judge's quarter steps. Dimensions apply as in the paper:
accuracy to obligations only, recency to the two research task types, the others everywhere.
With ``research_keys``, research items are keyed on a world (LedgerBench's extension): they get
an accuracy dimension too, and the rules judge's ``extra["research"]`` retrieval figures.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analysis._data import DIMENSIONS, RETRIEVAL_METRICS

DEFAULT_QUESTIONS = {"obligations": 100, "entity_performance": 126, "business_brief": 25}
SCENARIOS = ("Aged Balance", "Sales Orders", "Customer Setup", "Payment History", "Vendor Balance")
DEFAULT_TIMEOUTS = {"obligations": 60.0, "entity_performance": 60.0, "business_brief": 300.0}


SYNTHETIC_ANSWER = "synthetic answer"


def applies(dimension: str, task_type: str, research_keys: bool = False) -> bool:
    if dimension == "accuracy":
        return task_type == "obligations" or research_keys
    if dimension == "recency":
        return task_type != "obligations"
    return True


@dataclass
class ProviderSpec:
    name: str
    """Used as the harness name in the manifest (model None), so the provider is called ``name``."""
    effect: float = 0.0
    task_effects: dict[str, float] = field(default_factory=dict)
    """Extra effect per task type (on top of ``effect``)."""
    latency_scale: float = 20.0
    """Median latency in seconds."""
    tool_calls: float = 6.0
    """Mean tool calls per question."""
    cost_per_question: float | None = 0.02
    judge_error_rate: float = 0.0
    error_rate: float = 0.0
    """Share of trajectories with status error (unjudged)."""
    research: str | None = None
    """``manifest.config["research"]`` (world, web, none, golden); None leaves it out."""
    research_effect: float = 0.0
    """Extra effect on research items' accuracy and retrieval figures (``research_keys``)."""
    model: str | None = None
    harness: str | None = None
    """The manifest's harness when it is not ``name`` (runs of one agent in several modes)."""


@dataclass
class SyntheticConfig:
    providers: list[ProviderSpec]
    questions: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_QUESTIONS))
    trials: int = 1
    seed: int = 0
    base: float = 0.6
    question_sd: float = 0.12
    noise_sd: float = 0.08
    quantize: bool = False
    dimensions: tuple[str, ...] = DIMENSIONS
    judge: str = "rules"
    research_keys: bool = False
    """Research items keyed on a world: accuracy and ``extra["research"]`` on them."""
    template_size: int = 0
    """Items per generator template (``metadata.template`` in the dataset); 0: no templates."""
    provider_template_sd: float = 0.0
    """SD of each provider's own effect per template: items of one template then move together,
    so a provider's advantage is correlated within a template (what clustering accounts for)."""


def question_ids(questions: dict[str, int]) -> list[tuple[str, str, str]]:
    """(question_id, task_type, scenario) in a fixed order."""
    out = []
    for task_type, count in questions.items():
        for i in range(count):
            scenario = SCENARIOS[i % len(SCENARIOS)] if task_type == "obligations" else task_type
            out.append((f"{task_type[:3]}-{i:03d}", task_type, scenario))
    return out


def template_of(qid: str, template_size: int) -> str | None:
    """The synthetic template of a question: consecutive blocks of ``template_size`` items."""
    if not template_size:
        return None
    return f"{qid[:3]}-t{int(qid.split('-')[1]) // template_size}"


def write_dataset(path: Path, questions: dict[str, int], template_size: int = 0) -> Path:
    """A minimal dataset YAML (our format) so runs can name their questions' scenarios (and,
    with ``template_size``, their templates)."""
    import yaml

    items = [
        {
            "id": qid,
            "query": f"Synthetic question {qid}",
            "task_type": task_type,
            "segment": "AR" if task_type == "obligations" else "Synthetic",
            "scenario": scenario,
        }
        | ({"metadata": {"template": template_of(qid, template_size)}} if template_size else {})
        for qid, task_type, scenario in question_ids(questions)
    ]
    path.write_text(yaml.safe_dump({"header": {"name": "synthetic"}, "items": items}))
    return path


def write_runs(root: Path, config: SyntheticConfig) -> list[Path]:
    """One run directory per provider under ``root``; returns their paths (same order)."""
    root.mkdir(parents=True, exist_ok=True)
    dataset = write_dataset(root / "dataset.yaml", config.questions, config.template_size)
    rng = np.random.default_rng(config.seed)
    qids = question_ids(config.questions)
    question_effect = {
        (qid, dim): rng.normal(0.0, config.question_sd) for qid, _, _ in qids for dim in DIMENSIONS
    }
    effect_rng = np.random.default_rng([config.seed, 7])  # own stream: other draws unchanged
    question_effect.update(
        {
            (qid, metric): effect_rng.normal(0.0, config.question_sd)
            for qid, _, _ in qids
            for metric in RETRIEVAL_METRICS
        }
        if config.research_keys
        else {}
    )
    paths = []
    for spec in config.providers:
        run_dir = root / spec.name
        paths.append(run_dir)
        _write_run(run_dir, spec, config, qids, question_effect, dataset, rng)
    return paths


def _write_run(run_dir, spec, config, qids, question_effect, dataset, rng) -> None:
    from ledgerbench_core.scores import DimensionScore
    from ledgerbench_core.trajectory import RunManifest, ToolCall, TrajectoryRecord, Usage

    (run_dir / "scores").mkdir(parents=True, exist_ok=True)
    start = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
    trajectories, scores = [], []
    template_rng = np.random.default_rng([config.seed, 13, zlib.crc32(spec.name.encode())])
    template_effect: dict[str | None, float] = {None: 0.0}
    for qid, _, _ in qids:
        template = template_of(qid, config.template_size)
        if template not in template_effect:
            template_effect[template] = template_rng.normal(0.0, config.provider_template_sd)
    for qid, task_type, _scenario in qids:
        own = template_effect[template_of(qid, config.template_size)]
        for trial in range(config.trials):
            latency = float(spec.latency_scale * rng.lognormal(0.0, 0.5))
            timeout = DEFAULT_TIMEOUTS[task_type]
            status = "ok"
            if rng.random() < spec.error_rate:
                status = "error"
            elif latency > timeout:
                status, latency = "timeout", timeout
            calls = int(rng.poisson(spec.tool_calls))
            traj = TrajectoryRecord(
                question_id=qid,
                trial=trial,
                task_type=task_type,
                harness=spec.harness or spec.name,
                answer=SYNTHETIC_ANSWER,
                status=status,
                latency_s=latency,
                timeout_s=timeout,
                tool_calls=[ToolCall(name="get_customer") for _ in range(calls)],
                usage=Usage(input_tokens=int(rng.integers(500, 5000)), output_tokens=400),
                cost_usd=spec.cost_per_question,
                started_at=start,
                finished_at=start + dt.timedelta(seconds=latency),
            )
            trajectories.append(traj)
            if status == "error":
                scores.append(_score(qid, trial, task_type, config, {}, "infra_error"))
                continue
            dims = {}
            research = task_type != "obligations" and config.research_keys
            for dim in config.dimensions:
                if not applies(dim, task_type, config.research_keys):
                    continue
                if rng.random() < spec.judge_error_rate:
                    dims[dim] = DimensionScore(status="judge_error", error="synthetic failure")
                    continue
                extra = spec.research_effect if research and dim == "accuracy" else 0.0
                offset = question_effect[(qid, dim)] + extra + own
                value = _value(config, spec, task_type, offset, rng)
                dims[dim] = DimensionScore(status="scored", score=value)
            record = _score(qid, trial, task_type, config, dims, "scored")
            if research:
                figures = _research_figures(config, spec, task_type, qid, rng, question_effect)
                record.extra["research"] = figures
            scores.append(record)
    manifest = RunManifest(
        run_id=spec.name,
        command=["synthetic"],
        config={} if spec.research is None else {"research": spec.research},
        config_fingerprint="synthetic",
        harness=spec.harness or spec.name,
        model=spec.model,
        timeouts=DEFAULT_TIMEOUTS,
        dataset_path=str(dataset),
        dataset_hash="synthetic",
        question_count=len(qids),
        system_prompt_hash="synthetic",
        started_at=start,
        finished_at=start,
    )
    (run_dir / "manifest.json").write_text(manifest.model_dump_json(indent=1))
    _write_jsonl(run_dir / "trajectories.jsonl", trajectories)
    _write_jsonl(run_dir / "scores" / f"{config.judge}.jsonl", scores)


def _value(config, spec, task_type, offset, rng) -> float:
    value = (
        config.base
        + spec.effect
        + spec.task_effects.get(task_type, 0.0)
        + offset
        + rng.normal(0.0, config.noise_sd)
    )
    value = float(np.clip(value, 0.0, 1.0))
    return round(value * 4) / 4 if config.quantize else value


def _research_figures(config, spec, task_type, qid, rng, question_effect) -> dict:
    """``extra["research"]`` as the rules judge writes it (judge._research.ResearchMetrics)."""
    figures = {}
    for metric in RETRIEVAL_METRICS:
        offset = question_effect[(qid, metric)] + spec.research_effect
        figures[metric] = _value(config, spec, task_type, offset, rng)
    cited = int(rng.integers(0, 4))
    if cited == 0:  # nothing cited: no precision (None, as the judge records it)
        figures["citation_precision"] = None
    return {"gold": 2, "cited": cited, "searches": 3, "fetches": 2, **figures}


def _score(qid, trial, task_type, config, dims, status):
    from judge._grading import current_grading_version
    from ledgerbench_core.scores import ScoreRecord

    scored = [d.score for d in dims.values() if d.status == "scored"]
    return ScoreRecord(
        question_id=qid,
        trial=trial,
        task_type=task_type,
        judge=config.judge,
        status=status,
        dimensions=dims,
        overall=float(np.mean(scored)) if scored else None,
        # The analysis refuses scores made for another answer: hash the answer they were made for.
        answer_sha256=hashlib.sha256(SYNTHETIC_ANSWER.encode("utf-8")).hexdigest(),
        judged_at=dt.datetime(2026, 3, 2, tzinfo=dt.UTC),
        grading_version=current_grading_version(config.judge, None),  # as the judge grades now
    )


def _write_jsonl(path: Path, records: list) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.model_dump(mode="json", by_alias=True)) + "\n")
