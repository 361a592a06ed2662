"""``python -m harnesses.run``: put a dataset's questions to an agent and record what it did.

A thin layer over :func:`harnesses._runner.run`: flags become a :class:`RunConfig`. Bad input gives
one line on stderr and exit code 2; Ctrl-C stops cleanly (exit 130) and the same command resumes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import SecretStr, ValidationError

EXAMPLES = """\
examples:
  python -m harnesses.run --harness scripted --limit 5
      offline baseline on 5 questions; serves the default ERP (.ledgerbench/erp.db) itself
  python -m harnesses.run --harness openai --model gpt-5.2 --timeout 60 --out runs/gpt52
  python -m harnesses.run --harness claude --model claude-haiku-4-5 --task-type obligations
  python -m harnesses.run --harness openai --max-turns 20 --max-tokens 200000 --max-cost-usd 0.50
      sample limits for any harness: over one, the question ends (max_turns, token_limit,
      cost_limit) and is judged
  python -m harnesses.run --harness mypkg.agents:MyAgent --harness-opt temperature=0.2 --trials 3
  python -m harnesses.run --erp-url http://127.0.0.1:8765/mcp --ids obl-credit-limit-001
      a running ERP server (its token in ERP_MCP_TOKEN or --erp-token), one question
  python -m harnesses.run --erp-db postgresql://bench@localhost/erp --concurrency 10
  python -m harnesses.run --harness claude --executor ray --ray-address head:6379 --concurrency 40
      one Ray task per question on a cluster; the SQLite ERP is shipped to the workers
  python -m harnesses.run --dataset datasets/operations --user chat:gpt-5.2 \
      --reviewer anthropic:claude-haiku-4-5 --out runs/ops
      conversations with an LLM user, its turns reviewed by another model beside the rules

Run the same command again to resume an interrupted run (only the missing questions run); add
--retry-errors to re-run infrastructure failures too, --retry-simulator-errors to re-run the
conversations the reviewer of the simulated user excluded. Exit codes: 0 done, 2 bad input, 3
stopped after repeated infrastructure failures or a server that could not start, 130 interrupted,
141 the summary's reader went away (e.g. | head; the run is recorded).
"""


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, no usage dump
        self.exit(2, f"error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m harnesses.run",
        description="Put every selected question of a dataset to an agent under a hard time "
        "budget and record the trajectories (runs/NAME/trajectories.jsonl + manifest.json).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sel = parser.add_argument_group("questions")
    sel.add_argument(
        "--dataset",
        type=Path,
        help="dataset YAML file or directory (default: the project's datasets/); "
        "e.g. --dataset datasets/obligations.yaml",
    )
    sel.add_argument(
        "--task-type",
        action="append",
        default=[],
        metavar="TYPE",
        help="only this task type: obligations, entity_performance, business_brief or "
        "operations (repeatable or comma-separated); e.g. --task-type obligations",
    )
    sel.add_argument(
        "--ids",
        action="append",
        default=[],
        metavar="ID[,ID...]",
        help="only these question ids (repeatable or comma-separated); e.g. "
        "--ids obl-credit-limit-001,obl-credit-limit-002",
    )
    sel.add_argument(
        "--limit", type=int, help="at most N questions (first in dataset order); e.g. --limit 10"
    )
    sel.add_argument(
        "--trials", type=int, default=1, help="repeat each question N times (default 1); e.g. 3"
    )
    sel.add_argument(
        "--seed", type=int, help="shuffle the question order with this seed; e.g. --seed 7"
    )
    sel.add_argument(
        "--concurrency",
        type=int,
        default=5,
        help="questions in flight at once (default 5); e.g. --concurrency 10",
    )
    budget = parser.add_argument_group("time budgets (wall clock, hard)")
    budget.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds per obligation and entity-research question (default 60); e.g. 120",
    )
    budget.add_argument(
        "--brief-timeout",
        type=float,
        default=300.0,
        help="seconds per business brief (default 300); an item's own timeout overrides both",
    )
    budget.add_argument(
        "--stall-timeout",
        type=float,
        metavar="SECONDS",
        help="a provider silent this long (no response headers, no stream event) counts as hung: "
        "retried, then provider_unavailable (default: a quarter of the budget, 1 to 15 s, raised "
        "by the pre-flight to cover a model server's measured time to read the prompt); e.g. 30 "
        "for a model that thinks long in silence",
    )
    limits = parser.add_argument_group(
        "sample limits (per question; over one, the question ends and is judged)"
    )
    limits.add_argument(
        "--max-turns",
        type=int,
        metavar="N",
        help="model turns (the claude max_turns, custom max_steps and a cap for every other "
        "harness; the tighter wins); ends as max_turns; e.g. 20",
    )
    limits.add_argument(
        "--max-tool-calls",
        type=int,
        metavar="N",
        help="the run's one tool-call cap per question, the same for every harness (default "
        "60): calls past it are not run and the question ends as max_turns",
    )
    limits.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="input + output tokens over the question's model calls; ends as token_limit; "
        "e.g. 200000",
    )
    limits.add_argument(
        "--max-cost-usd",
        type=float,
        metavar="USD",
        help="cost of the question's model calls (reported, or estimated from the price table); "
        "ends as cost_limit; e.g. 0.50",
    )
    agent = parser.add_argument_group("harness")
    from harnesses._registry import harness_names

    agent.add_argument(
        "--harness",
        default="scripted",
        help=f"{', '.join(harness_names())} (nothing: the floor, always 'nothing found'), or a "
        "plug-in package.module:ClassName (default scripted)",
    )
    agent.add_argument(
        "--user",
        default="scripted",
        help="who plays the user in conversations (operations items): scripted, the "
        "deterministic offline user (default), or a model: chat:MODEL (Chat Completions) or "
        "anthropic:MODEL (Messages); e.g. --user chat:gpt-5.2",
    )
    agent.add_argument(
        "--user-base-url",
        help="API base URL of the user model; e.g. http://127.0.0.1:9000/v1",
    )
    agent.add_argument(
        "--reviewer",
        default="rules",
        help="who reviews the simulated user's turns: rules (default, offline) or, beside the "
        "rules, a model: chat:MODEL or anthropic:MODEL; e.g. --reviewer anthropic:claude-haiku-4-5",
    )
    agent.add_argument(
        "--reviewer-base-url",
        help="API base URL of the reviewer model; e.g. http://127.0.0.1:9001/v1",
    )
    agent.add_argument("--model", help="model name passed to the harness; e.g. gpt-5.2")
    agent.add_argument(
        "--reasoning-effort",
        help="reasoning effort for the harness, sent only when given (not every model takes "
        "it); e.g. low, medium, high",
    )
    agent.add_argument(
        "--base-url", help="provider API base URL; e.g. http://127.0.0.1:9000/v1 for a local server"
    )
    agent.add_argument(
        "--harness-opt",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="harness-specific option (repeatable); e.g. --harness-opt stream=false",
    )
    agent.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="LIST",
        help="the MCP tools the agent is offered (default: all the servers offer): tool names, "
        "globs and the groups finance, generic (ERP), world (research world: world__<tool>), erp, "
        "all, comma-separated; e.g. --tools finance,world or --tools 'erp_info,list_*'",
    )
    erp = parser.add_argument_group(
        "ERP (default: serve .ledgerbench/erp.db, generated if missing)"
    )
    erp.add_argument(
        "--erp-url", help="MCP endpoint of a running ERP server; e.g. http://127.0.0.1:8765/mcp"
    )
    erp.add_argument(
        "--erp-token",
        help="bearer token for --erp-url (or set ERP_MCP_TOKEN); never written to any file",
    )
    erp.add_argument(
        "--erp-db",
        help="serve this database on a free loopback port for the run; e.g. sqlite:///erp.db",
    )
    erp.add_argument(
        "--erp-public-url",
        help="MCP URL a remote provider can reach (e.g. a tunnel) when not the local one",
    )
    erp.add_argument(
        "--erp-fault-rate",
        type=float,
        default=0.0,
        help="inject transient tool failures into the servers the runner starts, the ERP's and "
        "the research world's alike (passed to erp_mcp and synthetic_world serve as --error-rate; "
        "recorded in the manifest); e.g. 0.3",
    )
    erp.add_argument(
        "--erp-fault-seed",
        type=int,
        default=0,
        help="seed of the injected faults (--fault-seed of both servers), keyed by question, "
        "call and retry so the same seed replays the same faults at any --concurrency; e.g. 7",
    )
    world = parser.add_argument_group(
        "research (entity and brief questions; default: serve the research world "
        ".ledgerbench/world.db, generated from the default ERP if missing)"
    )
    world.add_argument(
        "--research",
        choices=("world", "web", "none", "golden"),
        default="world",
        help="where public-company research goes: world = the research world's MCP server "
        "(search, fetch, company, prices; no web; the default), web = the harness's live web "
        "tools (the published benchmark's setup, for the real-company sets in datasets/web/), "
        "none = no research tools (a memorisation floor), golden = each item's gold documents "
        "in its prompt and no research tools (a reasoning ceiling: golden minus world is what "
        "retrieval costs the agent)",
    )
    world.add_argument(
        "--world-db",
        help="serve this research world file for the run; e.g. sqlite:///world.db (made with "
        "python -m synthetic_world generate)",
    )
    world.add_argument(
        "--world-url",
        help="MCP endpoint of a running research-world server; e.g. http://127.0.0.1:8766/mcp",
    )
    world.add_argument(
        "--world-token",
        help="bearer token for --world-url (or set WORLD_MCP_TOKEN); never written to any file",
    )
    world.add_argument(
        "--world-public-url",
        help="world MCP URL the provider can reach, for openai --harness-opt mcp_mode=hosted "
        "(like --erp-public-url)",
    )
    out = parser.add_argument_group("output")
    out.add_argument(
        "--out",
        type=Path,
        help="run directory (default runs/<harness>-<model>-<time>, or the latest unfinished run "
        "with the same settings); e.g. --out runs/baseline",
    )
    out.add_argument(
        "--force-new",
        action="store_true",
        help="start over even if --out holds a run with other settings (old manifest, "
        "trajectories and scores moved to replaced-<time>/)",
    )
    out.add_argument(
        "--retry-errors",
        action="store_true",
        help="on resume, run again the questions that ended in an infrastructure failure "
        "(provider or ERP unavailable, harness error); earlier attempts are kept in the record",
    )
    out.add_argument(
        "--retry-simulator-errors",
        action="store_true",
        help="on resume, run again the conversations the reviewer of the simulated user excluded "
        "(a critical simulator error, or a reviewer model that failed); earlier attempts are "
        "kept in the record and the re-runs listed in the manifest",
    )
    out.add_argument(
        "--max-consecutive-infra-failures",
        type=int,
        default=5,
        metavar="N",
        help="stop the run after N infrastructure failures in a row, printing the command to "
        "resume (default 5; 0: never stop)",
    )
    out.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    from ledgerbench_core._ray import add_executor_arguments

    add_executor_arguments(parser, unit="question")
    return parser


def _split(values: list[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _harness_opts(values: list[str]) -> dict[str, str]:
    opts: dict[str, str] = {}
    for value in values:
        key, sep, setting = value.partition("=")
        if not sep or not key.strip():
            raise _UsageError(f"--harness-opt {value!r}: expected KEY=VALUE, e.g. max_turns=20")
        opts[key.strip()] = setting
    return opts


def _task_types(values: list[str]) -> list[str]:
    from ledgerbench_core.dataset import TaskType

    known = [t.value for t in TaskType]
    chosen = _split(values)
    for value in chosen:
        if value not in known:
            raise _UsageError(f"--task-type {value!r}: choose from {', '.join(known)}")
    return chosen


def _tools(values: list[str]) -> list[str]:
    from harnesses._tool_choice import ToolChoiceError, check_tool_patterns, parse_tool_patterns

    if not values:
        return []
    patterns = parse_tool_patterns(values)
    try:
        check_tool_patterns(patterns)
    except ToolChoiceError as error:
        raise _UsageError(f"--tools {','.join(values)}: {error}") from None
    return patterns


def config_from_args(args: argparse.Namespace, argv: Sequence[str]) -> object:
    from harnesses._runner import RunConfig
    from ledgerbench_core._ray import check_executor_arguments

    if (problem := check_executor_arguments(args)) is not None:
        raise _UsageError(problem)
    token = args.erp_token or os.environ.get("ERP_MCP_TOKEN") or None
    world_token = args.world_token or os.environ.get("WORLD_MCP_TOKEN") or None
    try:
        return RunConfig(
            dataset=args.dataset,
            task_types=_task_types(args.task_type),
            ids=_split(args.ids),
            limit=args.limit,
            trials=args.trials,
            seed=args.seed,
            concurrency=args.concurrency,
            timeout=args.timeout,
            brief_timeout=args.brief_timeout,
            stall_timeout=args.stall_timeout,
            max_turns=args.max_turns,
            **({"max_tool_calls": args.max_tool_calls} if args.max_tool_calls is not None else {}),
            max_tokens=args.max_tokens,
            max_cost_usd=args.max_cost_usd,
            harness=args.harness,
            user=args.user,
            user_base_url=args.user_base_url,
            reviewer=args.reviewer,
            reviewer_base_url=args.reviewer_base_url,
            model=args.model,
            reasoning_effort=args.reasoning_effort,
            base_url=args.base_url,
            harness_opts=_harness_opts(args.harness_opt),
            tools=_tools(args.tools),
            erp_url=args.erp_url,
            erp_token=SecretStr(token) if token else None,
            erp_db=args.erp_db,
            erp_public_url=args.erp_public_url,
            erp_fault_rate=args.erp_fault_rate,
            erp_fault_seed=args.erp_fault_seed,
            world_db=args.world_db,
            world_url=args.world_url,
            world_token=SecretStr(world_token) if world_token else None,
            world_public_url=args.world_public_url,
            research=args.research,
            out=args.out,
            force_new=args.force_new,
            retry_errors=args.retry_errors,
            retry_simulator_errors=args.retry_simulator_errors,
            max_consecutive_infra_failures=args.max_consecutive_infra_failures,
            progress=not args.no_progress and sys.stderr.isatty(),
            command=["python", "-m", "harnesses.run", *argv],
            executor=args.executor,
            ray_address=args.ray_address,
            ray_num_cpus=args.ray_num_cpus,
            ray_memory_mb=args.ray_memory_mb,
        )
    except ValidationError as error:
        raise _UsageError(_flag_problem(error)) from None


def _flag_problem(error: ValidationError) -> str:
    """One line naming the flag, the value given and what it must be."""
    first = error.errors()[0]
    field = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "input"
    value = first.get("input")
    given = f" {value}" if isinstance(value, int | float | str) else ""
    if first.get("type") == "finite_number":
        return f"{field}{given}: give a finite number, e.g. {field} 60"
    return f"{field}{given}: {first['msg'].lower()}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # --help, or a flag argparse could not parse (already printed)
        return int(exit_.code or 0)
    from harnesses._erp_process import ServerStartError
    from harnesses._runner import RunConfigError, run, summary_table
    from ledgerbench_core._ray import RayExecutorError

    try:
        config = config_from_args(args, argv)
        summary = run(config)  # type: ignore[arg-type]
    except (_UsageError, RunConfigError, RayExecutorError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except ServerStartError as error:  # infrastructure, not the user's input
        print(f"error: {error}; run the same command again to resume", file=sys.stderr)
        return 3
    except KeyboardInterrupt as interrupt:
        message = str(interrupt) or "interrupted; run the same command again to resume"
        print(message, file=sys.stderr)
        return 130
    except OSError as error:  # a full disk, a read-only runs/: what was recorded is kept
        from ledgerbench_core._cli import environment_error_line

        if (line := environment_error_line(error)) is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 1
    printed = _print_summary(summary_table(summary))
    if summary.errors:
        detail = ", ".join(f"{name} x{count}" for name, count in sorted(summary.errors.items()))
        print(f"errors: {detail}", file=sys.stderr)
    if summary.infrastructure_failures:
        print(
            f"infrastructure failures (not judged): {summary.infrastructure_failures}; "
            "re-run them with --retry-errors",
            file=sys.stderr,
        )
    if summary.kept:
        print(f"trajectories: {summary.run_dir / 'trajectories.jsonl'}", file=sys.stderr)
    else:
        print("nothing was recorded, so no run folder was kept", file=sys.stderr)
    if summary.stopped:
        return 3
    if summary.interrupted:
        print("interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    return 0 if printed else EXIT_BROKEN_PIPE


EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE, as a shell reports a writer whose reader went away (``... | head``)."""


def _print_summary(table: object) -> bool:
    """Print the summary table on stdout; False when stdout is a closed pipe (``... | head``):
    the run is recorded all the same, and the lines on stderr still say where."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # a redirected summary keeps whole column names
    with console.capture() as captured:  # rich would end the process on a closed pipe
        console.print(table)
    try:
        sys.stdout.write(captured.get())
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
