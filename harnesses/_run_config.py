"""What a run is asked to do: :class:`RunConfig`, and the questions and trials it selects."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from harnesses._erp_process import project_root
from harnesses._protocol import DEFAULT_MAX_TOOL_CALLS, DEFAULT_OUTPUT_LIMIT, SampleLimits
from harnesses._redact import one_line
from ledgerbench_core.dataset import Dataset, Question, TaskType


class RunConfigError(ValueError):
    """A problem with the user's input (flags, dataset, run directory); the CLI prints it on one
    line and exits with code 2."""


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class RunConfig(StrictModel):
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
    timeout: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    """Budget in seconds for obligations and entity-performance questions."""
    brief_timeout: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    """Budget in seconds for business briefs."""
    stall_timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Seconds a provider may stay silent (no response headers, or no event of a streamed reply)
    before the request counts as hung: retried, then ``provider_unavailable``. None: a quarter of
    the question's budget, at least 1 s and at most 15 s."""
    max_turns: int | None = Field(default=None, ge=1)
    """At most this many model turns per question (the harness's own cap, if tighter, wins);
    over it the question ends as ``max_turns``. None: only the harness's cap."""
    max_tool_calls: int = Field(default=DEFAULT_MAX_TOOL_CALLS, ge=1)
    """The run's one tool-call cap per question, the same for every harness: calls the model asks
    for past it are not run (the Claude CLI is stopped), the question ends as ``max_turns`` and
    ``extra["tool_call_cap"]`` says how many calls were dropped."""
    max_tokens: int | None = Field(default=None, ge=1)
    """At most this many tokens (input + output, over every model call) per question; over it the
    question ends as ``token_limit``."""
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """At most this many US dollars of model calls per question (the provider's cost, or the price
    table's estimate); over it the question ends as ``cost_limit``."""
    user: str = "scripted"
    """Who plays the user in conversations (operations items): ``scripted``, the deterministic
    offline user (``harnesses._conversation.ScriptedUser``), or a model: ``chat:MODEL`` (Chat
    Completions) or ``anthropic:MODEL`` (Messages), see ``harnesses._llm_user``."""
    user_base_url: str | None = None
    """The user model's API base URL (None: the provider's default)."""
    reviewer: str = "rules"
    """Who reviews the simulated user's turns: ``rules`` (``harnesses._conversation.review_user``
    only) or, beside the rules, a model: ``chat:MODEL`` or ``anthropic:MODEL``
    (``harnesses._user_review``)."""
    reviewer_base_url: str | None = None
    """The reviewer model's API base URL (None: the provider's default)."""
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
    erp_fault_rate: float = Field(default=0.0, ge=0, le=1)
    """Share of ERP tool calls that fail with a TRANSIENT ERROR (``erp_mcp --error-rate``) on the
    server the runner starts; 0 = no injected faults."""
    erp_fault_seed: int = 0
    """Seed of the injected faults (``erp_mcp --fault-seed``)."""
    world_db: str | None = None
    """Research world file (``sqlite:///world.db``): the runner serves it itself. None: the
    default world beside the default ERP, when the questions need one."""
    world_url: str | None = None
    """MCP endpoint of a running research-world server."""
    world_token: SecretStr | None = Field(default=None, exclude=True)
    """Bearer token for ``world_url``; never written anywhere."""
    world_public_url: str | None = None
    """World MCP URL a remote provider can reach (openai ``mcp_mode=hosted``)."""
    research: Literal["world", "web", "none", "golden"] = "world"
    """Where public-company research goes: ``world`` (the research world's server, no web),
    ``web`` (the harnesses' live web tools, as the published benchmark ran), ``none`` (no
    research tools: a memorisation floor) or ``golden`` (each item's gold documents in its
    prompt, no research tools: a reasoning ceiling)."""
    tools: list[str] = Field(default_factory=list)
    """The MCP tools the agent is offered (``--tools``): names, globs and groups
    (``harnesses._tool_choice``); empty: every tool the run's servers offer."""
    out: Path | None = None
    """Run directory; None: ``runs/<harness>-<model>-<time>`` under the project root (or the
    latest unfinished run with the same settings, which is resumed)."""
    runs_dir: Path | None = None
    """Parent of default run directories (default: ``runs/`` under the project root)."""
    force_new: bool = False
    """Start over even if the run directory holds a run with different settings."""
    retries: int = Field(default=3, ge=0)
    """Retries of a question after a transient failure, while its budget lasts."""
    retry_errors: bool = False
    """On resume, run again the records that ended in an infrastructure failure (the earlier
    attempts are kept in the new record's ``previous_attempts``)."""
    retry_simulator_errors: bool = False
    """On resume, run again the conversations the reviewer excluded (a critical simulator error,
    or a reviewer model that could not review them); the earlier attempts are kept in the new
    record's ``previous_attempts`` and the re-runs are listed in the manifest."""
    max_consecutive_infra_failures: int = Field(default=5, ge=0)
    """Stop the run after this many infrastructure failures in a row (0: never stop)."""
    cancel_grace_s: float = Field(default=0.5, ge=0)
    """After the deadline, how long a cancelled harness may clean up before it is abandoned."""
    output_limit: int = Field(default=DEFAULT_OUTPUT_LIMIT, ge=100)
    """Tool outputs are truncated to this many characters in the record (hash and size kept)."""
    progress: bool = True
    """Show a progress bar on stderr."""
    command: list[str] = Field(default_factory=list)
    """The command line that started the run (recorded with secrets redacted)."""
    executor: Literal["local", "ray"] = "local"
    """``local``: questions run in this process; ``ray``: one Ray task per (question, trial)."""
    ray_address: str | None = None
    """Ray cluster address for ``executor="ray"``; None: RAY_ADDRESS or a local Ray instance."""
    ray_num_cpus: float = Field(default=1.0, gt=0)
    """CPUs one question's Ray task reserves."""
    ray_memory_mb: int | None = Field(default=None, ge=1)
    """Memory one question's Ray task reserves, in MiB (e.g. for the Claude CLI's Node process)."""

    def sample_limits(self) -> SampleLimits:
        return SampleLimits(
            max_turns=self.max_turns,
            max_tool_calls=self.max_tool_calls,
            max_tokens=self.max_tokens,
            max_cost_usd=self.max_cost_usd,
        )

    def budget_for(self, question: Question) -> float:
        if question.timeout is not None:
            return float(question.timeout)
        if question.task_type == TaskType.business_brief:
            return self.brief_timeout
        return self.timeout


def _dataset_functions() -> tuple[Any, Any]:
    from ledgerbench_core.dataset import dataset_hash, load_dataset

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
        problems = getattr(error, "problems", None) or [str(error)]
        shown = "; ".join(one_line(p).removeprefix(f"{path}: ") for p in problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise RunConfigError(f"--dataset {path}: {shown}{more}") from None
    return dataset, dataset_hash(dataset)


def select_questions(dataset: Dataset, config: RunConfig) -> list[Question]:
    """The questions the config selects, in dataset order."""
    if not dataset.items:
        raise RunConfigError(
            f"--dataset {config.dataset}: the dataset has no items (items: []); add questions "
            "to it (see docs/dataset-format.md) or pass another dataset"
        )
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
        types = ",".join(getattr(kind, "value", kind) for kind in config.task_types)
        given = [f"--task-type {types}"] if config.task_types else []
        given += [f"--ids {','.join(config.ids)}"] if config.ids else []
        raise RunConfigError(
            f"none of the dataset's {len(dataset.items)} questions match {' '.join(given)}; "
            "widen the selection"
        )
    return items


def work_order(questions: list[Question], config: RunConfig) -> list[tuple[Question, int]]:
    pairs = [(question, trial) for question in questions for trial in range(config.trials)]
    if config.seed is not None:
        random.Random(config.seed).shuffle(pairs)
    return pairs
