"""One command from a fresh clone to a report: ``ledgerbench`` (or ``python -m ledgerbench``).

The pipeline chains the documented stage commands, each as its own process, exactly as a user
would type them: generate the ERP -> generate the research world around it -> draw the questions of
all three task types (obligations from the ERP; entity performance and briefs on the world, with
computed keys) -> run each agent against the ERP's and the world's MCP servers -> judge -> the
trajectory viewer of every run (``ledgerbench view``) -> compare and report, linking each task
type, scenario and contrast to its questions in the viewer. Every stage is skipped when its output
is already there and still valid, so a second run costs almost nothing; ``--fresh`` redoes
everything.

Agents come from ``--agent SPEC`` (repeatable). With none, the offline demo runs two: the scripted
agent against the clean ERP, and the same agent against the ERP with injected transient tool
failures (fixed rate and seed, recorded in the run's manifest); the report is then a robustness
comparison with tested contrasts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from ledgerbench_core._cli import QUIET_STOP_ENV, OneLineParser, Terminated, run_cli
from ledgerbench_core._startup import parent_death_signal

if TYPE_CHECKING:
    from ledgerbench_core.dataset import DatasetHeader

EXAMPLES = """\
examples:
  ledgerbench                                   # offline demo: scripted agent on clean servers
                                                # vs with faults injected into the ERP and world
  ledgerbench --workspace runs/pipeline --fresh # redo every stage
  ledgerbench view runs/pipeline/runs/scripted --out runs/viewer   # trajectory viewer (view --help)
  ledgerbench runs                              # one line per run under runs/ (runs --help)
  ledgerbench compare runs/A runs/B --out reports/ab   # two runs: differences, MDE (compare --help)
  ledgerbench --agent openai:gpt-5.2 --agent claude:claude-haiku-4-5,effort=low \\
              --judge openai/gpt-5.2            # two agents compared (needs API keys)
  ledgerbench --agent scripted --agent scripted,faults=0.5,fault_seed=3,label=flaky
  ledgerbench --agent custom:qwen3,base_url=http://127.0.0.1:8000/v1   # local server

agent SPEC: HARNESS[:MODEL][,KEY=VALUE...]; keys: label (name in the report), effort (reasoning
effort), base_url, faults (share of the ERP's and the research world's tool calls that fail
transiently), fault_seed, the sample limits max_turns, max_tool_calls, max_tokens, max_cost_usd
(the runner's --max-turns ...), tools (the runner's --tools: names, globs, groups
finance|generic|world|erp|all, e.g. tools=finance,world or tools=erp_info,list_*: the items after
tools= up to the next KEY=VALUE); any other key is a harness option (--harness-opt KEY=VALUE),
e.g. web=false. A plug-in harness is package.module:Class (give its model as model=NAME).
  ledgerbench --executor ray --ray-address head:6379   # run and judge on a Ray cluster
"""

DEMO_FAULT_RATE = 0.5
"""Share of ERP tool calls that fail transiently for the demo's second agent."""
DEMO_FAULT_SEED = 36


FAULTY_SUFFIX = "-faulty-erp-world"
"""Ends the default label of an agent with ``faults=``: the rate fails the ERP's and the research
world's tool calls alike (``harnesses.run --erp-fault-rate``)."""

SAMPLE_LIMITS = {"max_turns": int, "max_tool_calls": int, "max_tokens": int, "max_cost_usd": float}
"""Spec keys that are the runner's sample limits (``--max-turns`` ...), not harness options."""


class SpecError(ValueError):
    """An ``--agent`` spec that cannot be read; the message says how to write it."""


@dataclass(frozen=True)
class AgentSpec:
    """One agent of the pipeline: a harness, its model and options, and the ERP it meets."""

    harness: str
    model: str | None = None
    label: str = ""
    reasoning_effort: str | None = None
    base_url: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    """Harness options (``--harness-opt KEY=VALUE``)."""
    fault_rate: float = 0.0
    fault_seed: int = 0
    limits: tuple[tuple[str, str], ...] = ()
    """Sample limits (``max_turns``, ``max_tool_calls``, ``max_tokens``, ``max_cost_usd``): the
    runner's ``--max-turns`` etc., which every harness honours."""
    tools: tuple[str, ...] = ()
    """The tools the agent is offered (the runner's ``--tools``); empty: all."""

    @classmethod
    def parse(cls, text: str) -> AgentSpec:
        head, *pairs = [part.strip() for part in text.split(",")]
        if not head:
            raise SpecError(f"--agent {text!r}: name a harness first, e.g. openai:gpt-5.2")
        harness, model = head, None
        prefix, sep, rest = head.partition(":")
        if sep and "." not in prefix:  # package.module:Class is a plug-in, not harness:model
            harness, model = prefix, rest or None
        fields: dict = {"harness": harness, "model": model}
        options, limits, tools = [], [], []
        key = ""
        for pair in pairs:
            if key == "tools" and "=" not in pair and pair:  # tools=erp_info,list_*: a list
                tools.append(pair)
                continue
            key, eq, value = pair.partition("=")
            key = key.strip().replace("-", "_")
            if not eq or not key or not value.strip():
                raise SpecError(f"--agent {text!r}: {pair!r} is not KEY=VALUE, e.g. effort=low")
            value = value.strip()
            if key == "tools":
                tools.append(value)
            elif key in ("label", "base_url", "model"):
                fields[key] = value
            elif key in ("effort", "reasoning_effort"):
                fields["reasoning_effort"] = value
            elif key in ("faults", "fault_rate"):
                fields["fault_rate"] = _number(text, key, value, float)
                if not 0 <= fields["fault_rate"] <= 1:
                    raise SpecError(f"--agent {text!r}: faults must be between 0 and 1")
            elif key == "fault_seed":
                fields["fault_seed"] = _number(text, key, value, int)
            elif key in SAMPLE_LIMITS:
                number = _number(text, key, value, SAMPLE_LIMITS[key])
                if number <= 0:
                    raise SpecError(f"--agent {text!r}: {key} must be above 0")
                limits.append((key, value))
            else:
                options.append((key, value))
        if tools:
            fields["tools"] = tuple(_checked_tools(text, tools))
        spec = cls(**fields, options=tuple(options), limits=tuple(limits))
        return spec if spec.label else replace(spec, label=spec.default_label())

    def default_label(self) -> str:
        label = self.harness.replace(":", "-").replace("/", "-")
        if self.model:
            label += "-" + self.model.replace("/", "-")
        if self.fault_rate:
            label += FAULTY_SUFFIX
        return label

    def run_args(self) -> list[str]:
        args = ["--harness", self.harness]
        if self.model:
            args += ["--model", self.model]
        if self.reasoning_effort:
            args += ["--reasoning-effort", self.reasoning_effort]
        if self.base_url:
            args += ["--base-url", self.base_url]
        for key, value in self.options:
            args += ["--harness-opt", f"{key}={value}"]
        if self.fault_rate:
            args += ["--erp-fault-rate", f"{self.fault_rate:g}", "--erp-fault-seed"]
            args.append(str(self.fault_seed))
        for key, value in self.limits:
            args += ["--" + key.replace("_", "-"), value]
        if self.tools:
            args += ["--tools", ",".join(self.tools)]
        return args


def _checked_tools(text: str, values: list[str]) -> list[str]:
    """The spec's ``tools=`` patterns, each naming a real tool, glob or group."""
    from harnesses._tool_choice import ToolChoiceError, check_tool_patterns, parse_tool_patterns

    patterns = parse_tool_patterns(values)
    try:
        check_tool_patterns(patterns)
    except ToolChoiceError as error:
        raise SpecError(f"--agent {text!r}: tools={','.join(values)}: {error}") from None
    return patterns


def _number(text: str, key: str, value: str, kind: type) -> float | int:
    try:
        return kind(value)
    except ValueError:
        raise SpecError(f"--agent {text!r}: {key}={value!r} is not a number") from None


def demo_agents() -> list[AgentSpec]:
    """The offline demo: the scripted agent on clean servers, and with faulty ERP and world."""
    return [
        AgentSpec("scripted", label="scripted"),
        AgentSpec(
            "scripted",
            label="scripted" + FAULTY_SUFFIX,
            fault_rate=DEMO_FAULT_RATE,
            fault_seed=DEMO_FAULT_SEED,
        ),
    ]


class PipelineError(RuntimeError):
    """A stage failed; the message names the stage and the command to re-run it alone."""


@dataclass
class PipelineConfig:
    workspace: Path
    customers: int = 1000
    vendors: int = 1000
    seed: int = 42
    questions: int = 100
    entity_questions: int = 40
    """Entity-performance questions drawn on the research world (0: none)."""
    brief_questions: int = 10
    """Business-brief questions drawn on the research world (0: none)."""
    conversations: int = 8
    """Operations scenarios (conversations with the scripted user) generated from the ERP (0:
    none); the report's conversations section shows them."""
    research: str = "world"
    """``harnesses.run --research`` for every agent."""
    dataset: Path | None = None
    agents: list[AgentSpec] = field(default_factory=demo_agents)
    base_url: str | None = None
    """The judge's OpenAI-compatible server (an agent's own is in its spec)."""
    judge: str = "rules"
    timeout: float = 60.0
    concurrency: int = 5
    fresh: bool = False
    extra_run_args: list[str] = field(default_factory=list)
    executor_args: list[str] = field(default_factory=list)
    """``--executor ray`` and ``--ray-*`` flags, passed to the run and judge stages alike."""

    @property
    def erp_db(self) -> Path:
        return self.workspace / "erp.db"

    @property
    def erp_url(self) -> str:
        return f"sqlite:///{self.erp_db}"

    @property
    def world_db(self) -> Path:
        return self.workspace / "world.db"

    @property
    def generated_dataset(self) -> Path:
        """The generated question sets, one file per task type (a dataset folder)."""
        return self.workspace / "questions"

    @property
    def obligations_file(self) -> Path:
        return self.generated_dataset / "obligations.yaml"

    @property
    def operations_file(self) -> Path:
        return self.generated_dataset / "operations.yaml"

    @property
    def research_files(self) -> dict[str, tuple[Path, int]]:
        """Research task type -> (its question file, how many items), for the wanted sets."""
        sets = {
            "entity_performance": (
                self.generated_dataset / "entity_performance.yaml",
                self.entity_questions,
            ),
            "business_brief": (
                self.generated_dataset / "business_briefs.yaml",
                self.brief_questions,
            ),
        }
        return {task: spec for task, spec in sets.items() if spec[1] > 0}

    def run_dir(self, agent: AgentSpec) -> Path:
        return self.workspace / "runs" / agent.label.replace("/", "-").replace(":", "-")

    @property
    def report_dir(self) -> Path:
        return self.workspace / "report"

    @property
    def viewer_dir(self) -> Path:
        """The trajectory viewer of the agents' runs (``ledgerbench view``), which the report
        links to: inside the report's folder, so a report kept aside keeps its own viewer."""
        return self.report_dir / "viewer"

    @property
    def judge_name(self) -> str:
        from judge import judge_slug

        return judge_slug(self.judge)


@dataclass(frozen=True)
class StageResult:
    name: str
    skipped: bool
    seconds: float
    detail: str = ""


def _python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def _run_stage_command(
    stage: str, command: list[str], console: Console, *, show_stdout: bool = True
) -> None:
    """Run one stage's command with its output (progress, summary tables) on the terminal;
    ``show_stdout=False`` keeps its standard output back (its errors still show)."""
    shown = " ".join(_display_arg(arg) for arg in command[1:])
    # One line however wide (pasteable), and a "[" in a path is text, not markup.
    console.print(Text(f"$ python {shown}", style="dim"), soft_wrap=True)
    env = dict(os.environ, FASTMCP_LOG_LEVEL="WARNING", FASTMCP_SHOW_SERVER_BANNER="false")
    env[QUIET_STOP_ENV] = "1"  # a stopped stage leaves the one line to the pipeline
    # The stage ignores Ctrl-C (it would reach the whole process group, even mid-import where
    # Python can only print a traceback): the pipeline passes every stop on as SIGTERM instead.
    # A stop that lands while Popen forks would leave the stage running unseen: hold the signals
    # until the stage's process is known (the stage unblocks them for itself).
    stops = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        stdout = None if show_stdout else subprocess.DEVNULL
        process = subprocess.Popen(command, env=env, stdout=stdout, preexec_fn=_stage_preexec())
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
        raise
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)  # a held stop arrives here
        returncode = process.wait()
    except KeyboardInterrupt:
        _stop_stage(process)
        raise
    if returncode != 0:
        raise PipelineError(
            f"stage {stage!r} failed (exit {returncode}); re-run it alone with: python {shown}"
        )


def _stage_preexec() -> Callable[[], None]:
    """What a stage's process does before it runs: die with the pipeline (``kill -9``
    included, so no stage nor its servers outlive it), and ignore Ctrl-C."""
    die_with_pipeline = parent_death_signal()  # made here: it names this process as the parent

    def prepare() -> None:
        if die_with_pipeline is not None:
            die_with_pipeline()
        _ignore_ctrl_c()

    return prepare


def _ignore_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _stop_stage(process: subprocess.Popen) -> None:
    """Stop the stage as SIGTERM stops it alone (it writes what it has, then exits); after a
    minute, or a second Ctrl-C, it is killed."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=60)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        process.kill()
        process.wait()


def _display_arg(arg: str) -> str:
    return arg if arg and " " not in arg else json.dumps(arg)


def _erp_stats(config: PipelineConfig) -> dict | None:
    if not config.erp_db.exists():
        return None
    command = _python_module("synthetic_erp", "stats", "--db", config.erp_url, "--json")
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        return None
    try:
        return json.loads(completed.stdout)
    except json.JSONDecodeError:
        return None


def _erp_is_valid(config: PipelineConfig) -> bool:
    stats = _erp_stats(config)
    return bool(
        stats
        and stats.get("customers") == config.customers
        and stats.get("vendors") == config.vendors
        and str(stats.get("seed", config.seed)) == str(config.seed)
    )


def _dataset_matches_erp(dataset: Path, config: PipelineConfig) -> bool:
    if not dataset.exists():
        return False
    stats = _erp_stats(config)
    if not stats:
        return False
    from ledgerbench_core.dataset import load_dataset

    try:
        header = load_dataset(dataset).header
    except Exception:
        return False
    return header.erp_snapshot_hash == stats.get("snapshot_hash") and (
        header.generator_seed == config.seed
    )


def stage_generate(config: PipelineConfig, console: Console) -> StageResult:
    started = time.monotonic()
    if not config.fresh and _erp_is_valid(config):
        return StageResult("generate ERP", True, time.monotonic() - started, str(config.erp_db))
    config.workspace.mkdir(parents=True, exist_ok=True)
    command = _python_module(
        "synthetic_erp",
        "generate",
        "--db",
        config.erp_url,
        "--customers",
        str(config.customers),
        "--vendors",
        str(config.vendors),
        "--seed",
        str(config.seed),
        "--overwrite",
    )
    _run_stage_command("generate ERP", command, console)
    return StageResult("generate ERP", False, time.monotonic() - started, str(config.erp_db))


def _world_matches_erp(config: PipelineConfig) -> bool:
    """The workspace's world exists, opens and was generated from this ERP with this seed."""
    if not config.world_db.exists() or not config.erp_db.exists():
        return False
    stats = _erp_stats(config)
    try:
        with contextlib.closing(sqlite3.connect(f"file:{config.world_db}?mode=ro", uri=True)) as db:
            meta = dict(db.execute("SELECT key, value FROM world_meta"))
    except sqlite3.Error:
        return False
    return (
        bool(stats)
        and meta.get("erp_snapshot_hash") == stats.get("snapshot_hash")
        and (str(meta.get("seed")) == str(config.seed))
    )


def stage_world(config: PipelineConfig, console: Console) -> StageResult:
    started = time.monotonic()
    if config.dataset is not None or not config.research_files:
        return StageResult("research world", True, 0.0, "not needed")
    if not config.fresh and _world_matches_erp(config):
        return StageResult("research world", True, time.monotonic() - started, str(config.world_db))
    command = _python_module(
        "synthetic_world",
        "generate",
        "--erp-db",
        config.erp_url,
        "--db",
        f"sqlite:///{config.world_db}",
        "--seed",
        str(config.seed),
        "--overwrite",
    )
    _run_stage_command("research world", command, console)
    return StageResult("research world", False, time.monotonic() - started, str(config.world_db))


def _research_set_matches(path: Path, count: int, config: PipelineConfig) -> bool:
    if not path.exists() or not config.world_db.exists():
        return False
    from ledgerbench_core.dataset import load_dataset

    try:
        dataset = load_dataset(path)
        with contextlib.closing(sqlite3.connect(f"file:{config.world_db}?mode=ro", uri=True)) as db:
            snapshot = dict(db.execute("SELECT key, value FROM world_meta")).get("snapshot_hash")
    except Exception:
        return False
    return dataset.header.world_snapshot_hash == snapshot and len(dataset.items) == count


def _operations_match(path: Path, config: PipelineConfig) -> bool:
    if not _dataset_matches_erp(path, config):
        return False
    from ledgerbench_core.dataset import load_dataset

    return len(load_dataset(path).items) == config.conversations


def stage_questions(config: PipelineConfig, console: Console) -> StageResult:
    started = time.monotonic()
    if config.dataset is not None:
        return StageResult("questions", True, 0.0, f"using {config.dataset}")
    target = config.generated_dataset
    target.mkdir(parents=True, exist_ok=True)
    made = []
    if config.fresh or not _dataset_matches_erp(config.obligations_file, config):
        command = _python_module(
            "synthetic_erp",
            "questions",
            "--db",
            config.erp_url,
            "--n",
            str(config.questions),
            "--seed",
            str(config.seed),
            "--out",
            str(config.obligations_file),
        )
        _run_stage_command("questions", command, console)
        made.append("obligations")
    if config.conversations > 0 and (
        config.fresh or not _operations_match(config.operations_file, config)
    ):
        command = _python_module(
            "synthetic_erp",
            "questions",
            "--task-type",
            "operations",
            "--db",
            config.erp_url,
            "--n",
            str(config.conversations),
            "--seed",
            str(config.seed),
            "--out",
            str(config.operations_file),
        )
        _run_stage_command("questions", command, console)
        made.append("operations")
    for task_type, (path, count) in config.research_files.items():
        if not config.fresh and _research_set_matches(path, count, config):
            continue
        command = _python_module(
            "synthetic_world",
            "questions",
            "--db",
            f"sqlite:///{config.world_db}",
            "--erp-db",
            config.erp_url,
            "--task-type",
            task_type,
            "--n",
            str(count),
            "--seed",
            str(config.seed),
            "--out",
            str(path),
            "--overwrite",
        )
        _run_stage_command("questions", command, console)
        made.append(task_type)
    wanted = {config.obligations_file, *(path for path, _ in config.research_files.values())}
    if config.conversations > 0:
        wanted.add(config.operations_file)
    for stale in set(target.glob("*.yaml")) - wanted:  # a set this configuration no longer asks for
        stale.unlink()
    elapsed = time.monotonic() - started
    return StageResult("questions", not made, elapsed, str(target))


def stage_run(config: PipelineConfig, console: Console) -> StageResult:
    started = time.monotonic()
    dataset = config.dataset or config.generated_dataset
    for agent in config.agents:
        run_dir = config.run_dir(agent)
        if config.fresh and run_dir.exists():
            shutil.rmtree(run_dir)
        command = _python_module(
            "harnesses.run",
            *agent.run_args(),
            "--dataset",
            str(dataset),
            "--erp-db",
            config.erp_url,
            "--out",
            str(run_dir),
            "--timeout",
            str(config.timeout),
            "--concurrency",
            str(config.concurrency),
            "--research",
            config.research,
        )
        if config.research in ("world", "golden") and config.world_db.exists():
            command += ["--world-db", f"sqlite:///{config.world_db}"]
        command += config.extra_run_args + config.executor_args
        _run_stage_command("run agent", command, console)  # the command names the agent
    runs = ", ".join(str(config.run_dir(a)) for a in config.agents)
    return StageResult("run agents", False, time.monotonic() - started, runs)


def stage_judge(config: PipelineConfig, console: Console) -> StageResult:
    started = time.monotonic()
    for agent in config.agents:
        command = _python_module("judge.run", str(config.run_dir(agent)), "--judge", config.judge)
        command += ["--erp-db", config.erp_url]  # the workspace's: checked against the run's hash
        if config.world_db.exists():
            command += ["--world-db", f"sqlite:///{config.world_db}"]
        if config.fresh:
            command.append("--overwrite")
        if config.base_url and config.judge != "rules":
            command += ["--base-url", config.base_url]
        command += config.executor_args
        _run_stage_command("judge", command, console)
    return StageResult("judge", False, time.monotonic() - started, config.judge)


def _judged_runs(config: PipelineConfig) -> list[Path]:
    """Every agent's trajectories and scores: what the viewer and the report are built from."""
    return [
        path
        for agent in config.agents
        for path in (
            config.run_dir(agent) / "trajectories.jsonl",
            config.run_dir(agent) / "scores" / f"{config.judge_name}.jsonl",
        )
    ]


def _viewer_is_current(config: PipelineConfig) -> bool:
    page, inputs = config.viewer_dir / "index.html", _judged_runs(config)
    if not page.exists() or not all(path.exists() for path in inputs):
        return False
    return page.stat().st_mtime > max(path.stat().st_mtime for path in inputs)


def stage_viewer(config: PipelineConfig, console: Console) -> StageResult:
    """The trajectory viewer of every agent's run: each question's answers, verdicts and
    conversations, with the cited and read records and documents carried in the page."""
    started = time.monotonic()
    page = config.viewer_dir / "index.html"
    if not config.fresh and _viewer_is_current(config):
        return StageResult("viewer", True, time.monotonic() - started, str(page))
    keep_other_agents_report(config, console)  # with its viewer, before this one replaces it
    runs = [str(config.run_dir(agent)) for agent in config.agents]
    dataset = config.dataset or config.generated_dataset
    command = _python_module("ledgerbench.viewer", *runs, "--out", str(config.viewer_dir))
    command += ["--dataset", str(dataset), "--erp-db", config.erp_url]
    if config.world_db.exists():
        command += ["--world-db", str(config.world_db)]
    _run_stage_command("viewer", command, console, show_stdout=False)
    return StageResult("viewer", False, time.monotonic() - started, str(page))


def _report_is_current(config: PipelineConfig) -> bool:
    stats = config.report_dir / "stats.json"
    inputs = [*_judged_runs(config), config.viewer_dir / "index.html"]
    if not stats.exists() or not all(path.exists() for path in inputs):
        return False
    try:
        providers = [p["name"] for p in json.loads(stats.read_text()).get("providers", [])]
    except (json.JSONDecodeError, OSError):
        return False
    if providers != [agent.label for agent in config.agents]:
        return False
    return stats.stat().st_mtime > max(path.stat().st_mtime for path in inputs)


def keep_other_agents_report(config: PipelineConfig, console: Console) -> Path | None:
    """Move a report of another set of agents aside (``report-<labels>``) instead of replacing
    it, and say so; the folder it went to, or None when there was none to keep."""
    try:
        stats = json.loads((config.report_dir / "stats.json").read_text())
        earlier = [provider["name"] for provider in stats.get("providers", [])]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    current = [agent.label for agent in config.agents]
    if not earlier or earlier == current:
        return None
    stem = f"{config.report_dir.name}-" + re.sub(r"[^A-Za-z0-9._+-]+", "-", "+".join(earlier))
    aside, number = config.report_dir.with_name(stem[:120]), 2
    while aside.exists():
        aside, number = config.report_dir.with_name(f"{stem[:120]}-{number}"), number + 1
    config.report_dir.rename(aside)
    console.print(
        Text(
            f"report: the earlier report (agents {', '.join(earlier)}) is kept in {aside}; "
            f"{config.report_dir} now compares {', '.join(current)}"
        ),
        soft_wrap=True,
    )
    return aside


def stage_report(config: PipelineConfig, console: Console) -> StageResult:
    started = time.monotonic()
    if not config.fresh and _report_is_current(config):
        return StageResult("report", True, time.monotonic() - started, str(config.report_dir))
    keep_other_agents_report(config, console)
    command = _python_module(
        "analysis.compare",
        *[str(config.run_dir(agent)) for agent in config.agents],
        "--judge",
        config.judge_name,
        "--out",
        str(config.report_dir),
        "--viewer",
        os.path.relpath(config.viewer_dir, config.report_dir),
    )
    for agent in config.agents:
        command += ["--label", f"{config.run_dir(agent)}={agent.label}"]
    # analysis.compare's own "Report:" lines would repeat the headline main() prints at the end.
    _run_stage_command("report", command, console, show_stdout=False)
    return StageResult("report", False, time.monotonic() - started, str(config.report_dir))


STAGES: tuple[Callable[[PipelineConfig, Console], StageResult], ...] = (
    stage_generate,
    stage_world,
    stage_questions,
    stage_run,
    stage_judge,
    stage_viewer,
    stage_report,
)


def run_pipeline(config: PipelineConfig, console: Console | None = None) -> list[StageResult]:
    """Run every stage in order; raises :class:`PipelineError` naming the stage that failed."""
    console = console or Console(stderr=True)
    results = []
    for stage in STAGES:
        result = stage(config, console)
        state = "cached" if result.skipped else f"{result.seconds:.1f} s"
        console.print(f"[bold green]✓[/bold green] {result.name}: {result.detail} ({state})")
        results.append(result)
    return results


def headline(report_dir: Path) -> list[str]:
    """Lines with where the report is and its headline numbers (from ``stats.json``)."""
    lines = [f"Report: {report_dir / 'report.html'} (also report.md)"]
    viewer = report_dir / "viewer" / "index.html"
    if viewer.exists():
        lines.append(f"Viewer: {viewer} (every question, answer and conversation)")
    stats_path = report_dir / "stats.json"
    if not stats_path.exists():
        return lines
    from ledgerbench_core._overall import overall_text

    stats = json.loads(stats_path.read_text())
    partly = {
        p.get("name"): p.get("judged") for p in stats.get("providers", []) if p.get("partly_judged")
    }
    for provider in stats.get("headline", []):
        name = provider.get("provider", "?")
        parts = [partly[name]] if name in partly else []  # "14/100 scored": a partly judged run
        for metric in ("overall", "accuracy", "citations", "structure"):
            cell = provider.get(metric)
            if isinstance(cell, dict) and cell.get("score") is not None:
                low, high = cell.get("ci_low"), cell.get("ci_high")
                interval = f" [{low:.2f}, {high:.2f}]" if low is not None else ""
                if metric == "overall":  # the Overall, printed as every tool prints it
                    parts.append(f"Overall {overall_text(cell['score'])}{interval}")
                else:
                    parts.append(f"{metric} {cell['score']:.2f}{interval}")
        lines.append(f"  {name}: " + ("; ".join(parts) if parts else "no scored metrics"))
        lines.extend(_research_lines(stats, name))
    lines.extend(_contrast_lines(stats))
    return lines


_TASK_ACCURACY = (
    ("accuracy", "obligations", "obligations"),
    ("research_accuracy", "entity_performance", "entity"),
    ("research_accuracy", "business_brief", "briefs"),
)
_RETRIEVAL = (
    ("shown_recall", "gold shown"),
    ("fetched_recall", "gold read"),
    ("citation_precision", "citation precision"),
    ("citation_recall", "citation recall"),
)


def _research_lines(stats: dict, provider: str) -> list[str]:
    """Accuracy of each task type (entity and brief: LedgerBench's extension, not in the Overall)
    and the retrieval figures of one provider, from ``stats.json``'s score cells."""
    cells = {
        (c["metric"], c["scope"]): c["score"]
        for c in stats.get("scores", [])
        if c.get("provider") == provider and isinstance(c.get("score"), dict)
    }

    def text(metric: str, scope: str, label: str) -> str | None:
        cell = cells.get((metric, scope))
        if not cell or cell.get("estimate") is None:
            return None
        interval = ""
        if cell.get("ci_low") is not None:
            interval = f" [{cell['ci_low']:.2f}, {cell['ci_high']:.2f}]"
        return f"{label} {cell['estimate']:.2f}{interval}"

    accuracy = [t for m, s, label in _TASK_ACCURACY if (t := text(m, s, label))]
    retrieval = [t for m, label in _RETRIEVAL if (t := text(m, "equal_weight", label))]
    lines = []
    if len(accuracy) > 1:
        lines.append(
            "    accuracy by task type: " + "; ".join(accuracy) + " (entity, briefs: extension)"
        )
    if retrieval:
        lines.append("    research: " + "; ".join(retrieval))
    return lines


def _contrast_lines(stats: dict) -> list[str]:
    """One line per pair: the Overall and accuracy differences with their intervals and p."""
    lines = []
    contrasts = [
        c
        for model in stats.get("models", [])
        for c in model.get("contrasts", [])
        if c.get("scope") == "equal_weight" and c.get("metric") in ("overall", "accuracy")
    ]
    pairs = dict.fromkeys((c["provider"], c["reference"]) for c in contrasts)
    for provider, reference in pairs:
        parts = []
        for c in contrasts:
            if (c["provider"], c["reference"]) != (provider, reference):
                continue
            boot = c.get("bootstrap") or {}
            if boot.get("estimate") is None:
                continue
            label = "Overall" if c["metric"] == "overall" else c["metric"]
            text = f"{label} {boot['estimate']:+.2f}"
            if boot.get("ci_low") is not None:
                text += f" [{boot['ci_low']:+.2f}, {boot['ci_high']:+.2f}]"
            p = c.get("p_value")
            if not c.get("tested"):
                text += f", not tested ({c.get('not_tested_reason') or 'see the report'})"
            elif c.get("distinguishable") is False:
                text += f", MDE {c['mdd']:.2f}: not distinguishable at this size"
            elif p is not None:
                verdict = "significant" if p < 0.05 else "not significant"
                text += f", {'p < 0.001' if p < 0.001 else f'p = {p:.3f}'} ({verdict})"
            parts.append(text)
        if parts:
            lines.append(f"  {provider} vs {reference}: " + "; ".join(parts))
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ledgerbench",
        description=(
            "Run the whole LedgerBench pipeline: generate the synthetic ERP and the research world "
            "around it, draw questions of all three task types (obligations, entity performance, "
            "business briefs; every one with an answer key), put them to each agent through the "
            "ERP's and the world's MCP servers, judge the answers and write a report. Stages whose "
            "output is already valid are skipped."
        ),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--workspace",
        type=Path,
        default=Path("runs/pipeline"),
        help="folder for the ERP, questions, run and report (default: runs/pipeline)",
    )
    parser.add_argument("--customers", type=int, default=1000, help="ERP customers (default 1000)")
    parser.add_argument("--vendors", type=int, default=1000, help="ERP vendors (default 1000)")
    parser.add_argument("--seed", type=int, default=42, help="ERP and question seed (default 42)")
    parser.add_argument(
        "--questions", type=int, default=100, help="obligation questions to generate (default 100)"
    )
    parser.add_argument(
        "--entity-questions",
        type=int,
        default=40,
        help="entity-performance questions to draw on the research world (default 40; 0: none)",
    )
    parser.add_argument(
        "--brief-questions",
        type=int,
        default=10,
        help="business-brief questions to draw on the research world (default 10; 0: none)",
    )
    parser.add_argument(
        "--conversations",
        type=int,
        default=8,
        help="operations scenarios (conversations with the scripted user) to generate from the "
        "ERP (default 8; 0: none); every agent must converse",
    )
    parser.add_argument(
        "--research",
        choices=("world", "web", "none", "golden"),
        default="world",
        help="where the agents' public-company research goes (harnesses.run --research): the "
        "research world (default), the live web, nowhere, or the gold documents in the prompt",
    )
    parser.add_argument(
        "--dataset",
        type=Path,
        help="use this dataset instead of generating questions (e.g. datasets/)",
    )
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        dest="agents",
        metavar="SPEC",
        help="an agent to run and compare (repeatable): HARNESS[:MODEL][,KEY=VALUE...], e.g. "
        "--agent openai:gpt-5.2 --agent claude:claude-haiku-4-5,effort=low; default: the "
        "offline demo (scripted agent on clean servers vs with faults injected into the ERP's and "
        "the research world's MCP servers)",
    )
    parser.add_argument(
        "--harness",
        help="a single agent, the old way: scripted, openai, custom, claude or "
        "package.module:Class (same as --agent HARNESS[:MODEL])",
    )
    parser.add_argument("--model", help="model for --harness, e.g. gpt-5.2")
    parser.add_argument("--base-url", help="OpenAI-compatible server for --harness and the judge")
    parser.add_argument(
        "--judge",
        default="rules",
        help="rules (offline deterministic checks) or a DSPy model string, e.g. openai/gpt-5.2",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per question (default 60)"
    )
    parser.add_argument("--concurrency", type=int, default=5, help="questions at once (default 5)")
    parser.add_argument("--fresh", action="store_true", help="redo every stage")
    from ledgerbench_core._ray import add_executor_arguments

    add_executor_arguments(parser, unit="question (and judged trajectory)")
    return parser


def _executor_args(args: argparse.Namespace) -> list[str]:
    if args.executor == "local":
        return []
    forwarded = ["--executor", args.executor, "--ray-num-cpus", f"{args.ray_num_cpus:g}"]
    if args.ray_address:
        forwarded += ["--ray-address", args.ray_address]
    if args.ray_memory_mb:
        forwarded += ["--ray-memory-mb", str(args.ray_memory_mb)]
    return forwarded


def _validate(args: argparse.Namespace) -> str | None:
    from ledgerbench_core._ray import check_executor_arguments

    if (problem := check_executor_arguments(args)) is not None:
        return problem
    if args.executor == "ray" and not _installed("ray"):  # else found after the ERP and world
        from ledgerbench_core._ray import INSTALL_HINT

        return f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}"
    for name in ("customers", "vendors", "questions", "concurrency"):
        if getattr(args, name) <= 0:
            return f"--{name} must be a positive integer, got {getattr(args, name)}"
    for name in ("entity_questions", "brief_questions", "conversations"):
        if getattr(args, name) < 0:
            flag = "--" + name.replace("_", "-")
            return f"{flag} must be 0 or a positive integer, got {getattr(args, name)}"
    if args.timeout <= 0:
        return f"--timeout must be positive, got {args.timeout}"
    if args.dataset is not None and not args.dataset.exists():
        return f"--dataset {args.dataset} does not exist"
    if args.agents and (args.harness or args.model):
        return "give agents with --agent, or one with --harness/--model, not both"
    if args.model and not args.harness:
        return "--model needs --harness (or use --agent HARNESS:MODEL)"
    from judge._registry import JudgeLoadError, check_judge_spec

    try:
        check_judge_spec(args.judge)
    except JudgeLoadError as error:
        return str(error)
    return _judge_key_problem(args.judge, args.base_url)


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: blocked in sys.modules (None)
        return False


JUDGE_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""The key an LLM judge of each provider reads when no --base-url points it at a local server."""


def _judge_key_problem(judge: str, base_url: str | None) -> str | None:
    """A DSPy judge of a hosted provider without its API key would fail only at the judge stage,
    after every agent ran: refused here instead."""
    variable = JUDGE_KEY_ENV.get(judge.split("/", 1)[0]) if "/" in judge else None
    if variable is None or base_url or os.environ.get(variable, "").strip():
        return None
    return (
        f"--judge {judge} needs an API key: set {variable}, or point --base-url at an "
        "OpenAI-compatible server, or use --judge rules"
    )


SPEC_KEYS = (
    "label",
    "model",
    "base_url",
    "effort",
    "reasoning_effort",
    "faults",
    "fault_rate",
    "fault_seed",
    *SAMPLE_LIMITS,
)
"""The ``--agent`` keys the pipeline reads itself; any other key is a harness option."""


def research_problem(config: PipelineConfig) -> str | None:
    """Why an agent cannot do ``--research`` as asked (one line), or None: a harness that lists
    its ``research_modes`` supports those alone (the scripted agent reads no prompt documents)."""
    from harnesses._registry import resolve_factory

    for agent in config.agents:
        factory = resolve_factory(agent.harness)  # loaded already by check_agent
        modes = getattr(factory, "research_modes", None)
        if modes is not None and config.research not in modes:
            note = getattr(factory, "research_note", "")
            return (
                f"--research {config.research}: agent {agent.label} ({agent.harness}) supports "
                f"{', '.join(modes)}; {note}".rstrip("; ")
            )
    return None


def dataset_pairing_problem(config: PipelineConfig) -> str | None:
    """Why ``--dataset`` cannot run in this workspace (one line naming the mismatch and the fix),
    or None: it must load, and its answer keys must have been computed on the ERP (and research
    keys on the world) the workspace keeps or will generate. Read from the files, before the
    first stage: a mismatch found by the run stage would come after the ERP was generated."""
    if config.dataset is None:
        return None
    from harnesses._pairing import read_meta
    from ledgerbench_core.dataset import DatasetError, load_dataset

    try:
        dataset = load_dataset(config.dataset)
    except DatasetError as error:
        return f"--dataset {error}"
    if not dataset.items:
        return (
            f"--dataset {config.dataset}: the dataset has no items (items: []); add questions "
            "to it (see docs/dataset-format.md) or pass another dataset"
        )
    if config.research == "golden" and not any(item.gold_documents for item in dataset.items):
        return (
            f"--research golden: none of the {len(dataset.items)} questions of --dataset "
            f"{config.dataset} has gold documents to put in its prompt (only entity and brief "
            "questions keyed on a world do); use --research world or none"
        )
    header = dataset.header
    erp = read_meta(config.erp_db, "erp_meta")
    kept = not config.fresh and _meta_fits(erp, config)
    made_with = header.generator_seed
    if header.erp_snapshot_hash and kept and erp.get("snapshot_hash") != header.erp_snapshot_hash:
        return (
            f"--dataset {config.dataset} was made from the ERP of snapshot "
            f"{header.erp_snapshot_hash[:12]} (generator seed {made_with}), but this "
            f"workspace's ERP {config.erp_db} is snapshot {erp.get('snapshot_hash', '?')[:12]}; "
            "run it in the workspace it was made in (--workspace), or in a new one with the "
            f"seed and size it was made with (--workspace runs/seed-{made_with} --seed "
            f"{made_with} --customers N --vendors N)"
        )
    if header.erp_snapshot_hash and not kept and made_with not in (None, config.seed):
        return (
            f"--dataset {config.dataset} was made from an ERP of seed {made_with}, but this "
            f"workspace would generate one of seed {config.seed}; add --seed {made_with} (and "
            "the --customers/--vendors it was made with), or leave out --dataset"
        )
    if header.erp_snapshot_hash and not kept and _size_differs(header, config):
        return (
            f"--dataset {config.dataset} was made from an ERP of {header.erp_customers} "
            f"customers and {header.erp_vendors} vendors, but this workspace would generate one "
            f"of {config.customers} and {config.vendors}; add --customers "
            f"{header.erp_customers} --vendors {header.erp_vendors}, or leave out --dataset"
        )
    return _dataset_world_problem(config, header, kept)


def _size_differs(header: DatasetHeader, config: PipelineConfig) -> bool:
    """The dataset records the size of its ERP, and it is not the size this workspace makes."""
    recorded = (header.erp_customers, header.erp_vendors)
    return None not in recorded and recorded != (config.customers, config.vendors)


def _meta_fits(meta: dict[str, str], config: PipelineConfig) -> bool:
    """The ERP described by ``meta`` is the one this configuration generates (it is kept)."""
    wanted = {"seed": config.seed, "customers": config.customers, "vendors": config.vendors}
    return bool(meta) and all(meta.get(key) == str(value) for key, value in wanted.items())


def _dataset_world_problem(config: PipelineConfig, header: DatasetHeader, kept: bool) -> str | None:
    """The workspace's world, which the run stage serves, is the one the dataset's research
    questions were keyed on."""
    from harnesses._pairing import read_meta

    expected = header.world_snapshot_hash
    if not expected or not kept or config.research not in ("world", "golden"):
        return None
    world = read_meta(config.world_db, "world_meta")
    if not world or world.get("snapshot_hash") == expected:
        return None
    return (
        f"--dataset {config.dataset}: its research questions were keyed on world "
        f"{header.world_id} (snapshot {expected[:12]}), but this workspace's "
        f"world {config.world_db} is {world.get('world_id')} (snapshot "
        f"{world.get('snapshot_hash', '?')[:12]}); run it in the workspace it was made in "
        "(--workspace), or leave out --dataset to draw questions on this world"
    )


def check_agent(spec: AgentSpec, where: str) -> None:
    """:class:`SpecError` if the spec's harness does not load, does not declare one of its
    option keys (with close matches and the known keys) or lacks its API key: checked before
    the first stage."""
    from harnesses._protocol import HarnessOptions
    from harnesses._registry import (
        UNDECLARED_HINT,
        HarnessLoadError,
        credentials_problem,
        declared_options,
        unknown_keys_text,
    )

    try:
        known = declared_options(spec.harness)
    except HarnessLoadError as error:
        raise SpecError(f"{where}: {error}") from None
    unknown = [key for key, _ in spec.options if key not in known]
    if unknown:
        suggestions = {key: key for key in (*SPEC_KEYS, *known)}
        hint = f" ({UNDECLARED_HINT})" if not known and ":" in spec.harness else ""
        raise SpecError(
            f"{where}: unknown key {unknown_keys_text(unknown, suggestions)}; the "
            f"pipeline's keys: {', '.join(SPEC_KEYS)}; {spec.harness}'s options: "
            f"{', '.join(sorted(known)) or 'none'}{hint}"
        )
    options = HarnessOptions(
        model=spec.model,
        reasoning_effort=spec.reasoning_effort,
        base_url=spec.base_url,
        extra=dict(spec.options),
    )
    if (problem := credentials_problem(spec.harness, options)) is not None:
        raise SpecError(f"{where}: {problem}")


def agents_from(args: argparse.Namespace) -> list[AgentSpec]:
    if args.agents:
        agents = [AgentSpec.parse(text) for text in args.agents]
        for spec, text in zip(agents, args.agents, strict=True):
            check_agent(spec, f"--agent {text!r}")
    elif args.harness:
        agents = [AgentSpec(args.harness, args.model, base_url=args.base_url)]
        agents = [replace(agents[0], label=agents[0].default_label())]
        check_agent(agents[0], f"--harness {args.harness}")
    else:
        return demo_agents()
    labels = [agent.label for agent in agents]
    duplicate = next((label for label in labels if labels.count(label) > 1), None)
    if duplicate:
        raise SpecError(f"two agents are both called {duplicate!r}; add label=NAME to one of them")
    return agents


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["view"]:  # subcommand: the static trajectory viewer
        from ledgerbench.viewer import main as view_main

        return view_main(argv[1:])
    if argv[:1] == ["runs"]:  # subcommand: one line per run
        from ledgerbench._runs import main as runs_main

        return runs_main(argv[1:])
    if argv[:1] == ["compare"]:  # subcommand: python -m analysis.compare
        from analysis.compare import main as compare_main

        return compare_main(argv[1:], prog="ledgerbench compare")
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = _validate(args)
    try:
        agents = agents_from(args) if problem is None else []
    except SpecError as error:
        problem = str(error)
    if problem:
        print(f"ledgerbench: error: {problem}", file=sys.stderr)
        return 2
    config = PipelineConfig(
        workspace=args.workspace,
        customers=args.customers,
        vendors=args.vendors,
        seed=args.seed,
        questions=args.questions,
        entity_questions=args.entity_questions,
        brief_questions=args.brief_questions,
        conversations=args.conversations,
        research=args.research,
        dataset=args.dataset,
        agents=agents,
        base_url=args.base_url,
        judge=args.judge,
        timeout=args.timeout,
        concurrency=args.concurrency,
        fresh=args.fresh,
        executor_args=_executor_args(args),
    )
    problem = research_problem(config) or dataset_pairing_problem(config)
    if problem is not None:
        print(f"ledgerbench: error: {problem}", file=sys.stderr)
        return 2
    console = Console(stderr=True)
    started = time.monotonic()
    try:
        run_pipeline(config, console)
    except PipelineError as error:
        print(f"ledgerbench: error: {error}", file=sys.stderr)
        return 1
    except Terminated:
        print(
            "ledgerbench: stopped (SIGTERM); run the same command again to resume", file=sys.stderr
        )
        return 143
    except KeyboardInterrupt:
        print("ledgerbench: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    for line in headline(config.report_dir):
        print(line)
    print(f"Done in {time.monotonic() - started:.1f} s.")
    return 0


def cli() -> int:
    """The ``ledgerbench`` command: :func:`main`, stopped in one line (Ctrl-C, SIGTERM, pipe)."""
    return run_cli(main, "ledgerbench")


if __name__ == "__main__":
    raise SystemExit(cli())
