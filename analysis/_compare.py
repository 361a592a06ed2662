"""The typed API behind ``python -m analysis.compare``: load, compute, write the report."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from analysis._data import TASK_TYPES, InputError, ProviderData
from analysis._schema import (
    Correction,
    InfraFailures,
    ModelKind,
    Settings,
    StandardErrors,
    Stats,
)


class CompareConfig(BaseModel):
    """Everything ``compare`` needs; the CLI only fills this in."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    inputs: list[Path]
    """Run directories or published ``eval_results_*.json`` files, one per provider."""
    out: Path
    """Report folder (created)."""
    judge: str | None = None
    """Scores file name under ``scores/``; None picks the only one."""
    reference: str | None = None
    """Provider name, label or path; default: the first input."""
    labels: list[str] = Field(default_factory=list)
    """Labels in input order, or ``PATH=LABEL`` / ``NAME=LABEL``."""
    correction: Correction = Correction.none
    bootstrap: int = 1000
    seed: int = 0
    latency_budget: dict[str, float] = Field(default_factory=dict)
    pass_threshold: float = 1.0
    min_observations: int = 5
    viewer: str | None = None
    """Where ``ledgerbench view`` wrote its viewer (relative to ``out``, or a URL): the report
    links each task type, scenario and contrast to its questions there."""
    model: ModelKind = ModelKind.pairwise
    """``pairwise`` (each pair on its own data) or ``pooled`` (the paper's single model)."""
    infra_failures: InfraFailures = InfraFailures.exclude
    """``exclude`` infrastructure failures from the scores, or score them ``zero`` (the paper)."""
    allow_partly_judged: bool = False
    """Compare fully and partly judged runs side by side (refused otherwise)."""
    cluster: str = "auto"
    """What items are clustered by: ``auto`` (template, else research kind), ``none`` or a
    dataset metadata field."""
    se: StandardErrors = StandardErrors.observed
    """Mixed-model standard errors from the ``observed`` information (statsmodels') or the
    ``expected`` information ``(X' V^-1 X)^-1``."""


def compare(config: CompareConfig, progress: bool = False) -> Stats:
    """Load, compute, write ``stats.json``, ``report.md``, ``report.html`` and the plots."""
    from analysis._conversations import conversation_cells
    from analysis._load import load_provider
    from analysis._plots import all_plots
    from analysis._report import build_report, to_html, to_markdown
    from analysis._stats import combine, compute_stats

    with _Progress(progress) as bar:
        providers = []
        for path in config.inputs:
            providers.append(load_provider(path, config.judge))
            bar.step(f"loaded {path}")
        apply_labels(providers, config.inputs, config.labels)
        if not config.allow_partly_judged:
            check_judged_alike(providers)
        note_gradings(providers)
        reference = resolve_reference(providers, config.inputs, config.reference)
        settings = Settings(
            reference=reference,
            judge=config.judge or _judge_name(providers),
            correction=config.correction,
            bootstrap=config.bootstrap,
            seed=config.seed,
            latency_budget=config.latency_budget,
            pass_threshold=config.pass_threshold,
            min_observations=config.min_observations,
            model=config.model,
            infra_failures=config.infra_failures,
            se=config.se,
            cluster=config.cluster,
        )
        check_cluster_field(providers, config.cluster)
        combined = combine(providers, config.latency_budget, config.infra_failures)
        stats = compute_stats(providers, settings, progress=bar.step, combined=combined)
        stats.conversations = conversation_cells(
            [(p.info.name, Path(p.info.path)) for p in providers],
            reference,
            config.judge,
            metadata={q: m for p in providers for q, m in p.item_metadata.items()},
            cluster=config.cluster,
            confidence=settings.confidence,
            power=settings.power,
            minimum=config.min_observations,
        )
        images = all_plots(stats, combined.trajectories)
        bar.step("plots")
        config.out.mkdir(parents=True, exist_ok=True)
        for name, png in images.items():
            (config.out / name).write_bytes(png)
        report = build_report(stats, list(images), viewer=config.viewer)
        (config.out / "stats.json").write_text(stats.model_dump_json(indent=1), encoding="utf-8")
        items = [item.model_dump(mode="json") for item in stats.items]
        (config.out / "items.json").write_text(json.dumps(items, indent=1), encoding="utf-8")
        (config.out / "report.md").write_text(to_markdown(report), encoding="utf-8")
        (config.out / "report.html").write_text(to_html(report, images), encoding="utf-8")
        bar.step("report")
    return stats


def check_judged_alike(providers: list[ProviderData]) -> None:
    """Refuse a comparison of fully with partly judged runs (their figures rest on different
    shares of the answers) unless ``--allow-partly-judged``."""
    partly = [p.info for p in providers if p.info.partly_judged]
    if partly and len(partly) < len(providers):
        first = partly[0]
        raise InputError(
            f"{first.name} is partly judged ({first.judged}) and other inputs fully: finish "
            f"judging it (python -m judge.run {first.path} ...) or pass --allow-partly-judged"
        )


def note_gradings(providers: list[ProviderData]) -> None:
    """A caveat when the inputs were scored with different grading versions (each figure's is in
    the Judged column): their differences include the change of rules."""
    runs = [p.info for p in providers if p.info.source == "run"]
    gradings = {info.name: info.grading_version or "unknown" for info in runs}
    if len(set(gradings.values())) > 1:
        listed = ", ".join(f"{name} {g}" for name, g in gradings.items())
        providers[0].caveats.append(
            f"The inputs were scored with different grading versions ({listed}): differences "
            "between them include the change of the rules; re-score them with one version."
        )


def check_cluster_field(providers: list[ProviderData], cluster: str) -> None:
    """``--cluster FIELD`` must name a metadata field some dataset item has."""
    if cluster in ("auto", "none"):
        return
    fields = sorted({f for p in providers for m in p.item_metadata.values() for f in m})
    if cluster not in fields:
        known = ", ".join(fields) if fields else "none (no dataset metadata found)"
        raise InputError(
            f"--cluster {cluster}: no dataset item has a metadata field {cluster!r} (fields: "
            f"{known}); use auto, none or one of those"
        )


def _judge_name(providers: list[ProviderData]) -> str:
    judges = sorted({p.info.judge for p in providers if p.info.judge})
    return ", ".join(judges) or "unknown"


def apply_labels(providers: list[ProviderData], inputs: list[Path], labels: list[str]) -> None:
    """Rename providers from ``--label``; names must end up unique."""
    positional = [label for label in labels if "=" not in label]
    mapped = dict(label.split("=", 1) for label in labels if "=" in label)
    if positional and len(positional) > len(providers):
        raise InputError(
            f"{len(positional)} labels for {len(providers)} inputs; give one per input"
        )
    for i, (provider, path) in enumerate(zip(providers, inputs, strict=True)):
        for key in (str(path), str(path).rstrip("/"), provider.info.name, path.name):
            if key in mapped:
                provider.info.name = mapped.pop(key)
                break
        else:
            if i < len(positional):
                provider.info.name = positional[i]
    if mapped:
        raise InputError(f"--label {next(iter(mapped))}=...: no input has that path or name")
    name_research_modes(providers)
    names = [p.info.name for p in providers]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(
            f"two inputs are both called {duplicates[0]!r}; name them with --label (one per input)"
        )


def name_research_modes(providers: list[ProviderData]) -> None:
    """Runs that share a name but not a research mode (the same agent with ``--research world``
    and ``golden``) are told apart by it: ``scripted · world``, ``scripted · golden``."""
    groups: dict[str, list[ProviderData]] = {}
    for provider in providers:
        groups.setdefault(provider.info.name, []).append(provider)
    for name, group in groups.items():
        modes = [p.info.research for p in group]
        if len(group) > 1 and None not in modes and len(set(modes)) == len(modes):
            for provider in group:
                provider.info.name = f"{name} · {provider.info.research}"


def resolve_reference(
    providers: list[ProviderData], inputs: list[Path], reference: str | None
) -> str:
    if reference is None:
        return providers[0].info.name
    for provider, path in zip(providers, inputs, strict=True):
        if reference in (provider.info.name, str(path), str(path).rstrip("/"), path.name):
            return provider.info.name
    names = ", ".join(p.info.name for p in providers)
    raise InputError(f"--reference {reference!r} matches no provider; use one of: {names}")


PAPER_BUDGET = {"obligations": 60.0, "entity_performance": 60.0, "business_brief": 300.0}
"""The paper's time budgets (``--latency-budget paper``)."""


def parse_budget(text: str) -> dict[str, float]:
    """``obligations=60,entity_performance=60`` (or ``paper``) -> {task type: seconds}."""
    if text.strip() == "paper":
        return dict(PAPER_BUDGET)
    budget = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        task, _, seconds = part.partition("=")
        task = task.strip()
        if task not in TASK_TYPES:
            raise InputError(
                f"--latency-budget: unknown task type {task!r}; use {', '.join(TASK_TYPES)}"
            )
        try:
            value = float(seconds)
        except ValueError:
            raise InputError(f"--latency-budget: {part!r} needs seconds, e.g. {task}=60") from None
        if value <= 0:
            raise InputError(f"--latency-budget: {part!r} must be a positive number of seconds")
        budget[task] = value
    return budget


class _Progress:
    """A rich progress bar on stderr when asked for; otherwise does nothing."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._progress = None
        self._task = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("analysis", total=None)
        return self

    def step(self, description: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=description, advance=1)

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()
