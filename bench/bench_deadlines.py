"""Deadlines, hung and dead providers: how far past its budget each harness's record closes, how
long a hung provider takes to become ``provider_unavailable``, and how long a run takes to stop
when the provider is dead (circuit breaker).

Every harness runs against local fakes: the scripted agent against the real ERP MCP server, the
openai and custom harnesses against the fake OpenAI (and Anthropic) server with a live model that
types a word every 0.2 s and never finishes, the real ``claude`` binary against the fake Anthropic
server typing the same way, and a plug-in that blocks its event loop (``time.sleep``). Overshoot =
record latency - budget (the runner's grace for a cancelled harness is 0.5 s); each record must be
the agent's ``time_limit``. Hung provider: the fake accepts every request and sends nothing, not
even headers; the record must be ``provider_unavailable`` (default stall bound: a quarter of the
budget, at most 15 s; retried while the retry window, a quarter of the budget, is open). Dead
provider: a whole run (``harnesses.run``'s ``run``) of 20 questions with the openai harness
against a refused port and against a server answering HTTP 500 to everything; the circuit
breaker stops it after 5 infrastructure failures in a row.

    .venv/bin/python bench/bench_deadlines.py                 # 3 runs each, all harnesses
    .venv/bin/python bench/bench_deadlines.py --runs 5 --skip claude --skip hung
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harnesses import AgentEnvironment, HarnessOptions, create_harness
from harnesses._erp_process import start_erp_server
from harnesses._erp_serving import fetch_erp_info
from harnesses._instructions import SYSTEM_INSTRUCTIONS
from harnesses._runner import QuestionRunner, RunConfig, run
from ledgerbench_core.dataset import Question, TaskType
from tests.fakes.anthropic_server import AnthropicFakeServer, Reply, ScriptedModel, ToolUse
from tests.fakes.openai_server import Turn, serve_openai
from tests.test_runner_plugins import numbered_dataset, snapshot_of

QUERY = "What is the open balance of customer SYNCUS-0001 in USMF?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def one_record(harness_name: str, options: HarnessOptions, erp, budget: float):
    harness = create_harness(harness_name, options)
    with tempfile.TemporaryDirectory() as work:
        env = AgentEnvironment(erp=erp.endpoint, instructions=SYSTEM_INSTRUCTIONS, work_dir=work)
        config = RunConfig(harness=harness_name, timeout=budget, progress=False)
        question = Question(
            id="bench", query=QUERY, task_type=TaskType.obligations, segment="AR", scenario="b"
        )
        runner = QuestionRunner(harness, env, config)
        try:
            return await runner.run(question, 0)
        finally:
            await runner.aclose()


async def overshoot(harness_name: str, options: HarnessOptions, erp, budget: float) -> float:
    record = await one_record(harness_name, options, erp, budget)
    if record.termination.reason.value != "time_limit":
        raise RuntimeError(f"{harness_name}: expected time_limit, got {record.termination}")
    return record.latency_s - budget


async def until_unavailable(harness_name: str, options: HarnessOptions, erp, budget: float):
    """(seconds to the record, model attempts) for a provider that never sends a byte."""
    record = await one_record(harness_name, options, erp, budget)
    if record.termination.reason.value != "provider_unavailable":
        raise RuntimeError(
            f"{harness_name}: expected provider_unavailable, got {record.termination}"
        )
    attempts = sum(1 for e in record.events if e.type == "model")
    return record.latency_s, attempts


def summarise(label: str, values: list[float], unit: str = "s") -> None:
    print(
        f"  {label:<34} median {statistics.median(values):6.2f} {unit}  "
        f"(min {min(values):.2f}, max {max(values):.2f}, n={len(values)})"
    )


SLOW_TEXT = "The open balance is being worked out" + " still typing" * 2000
"""A live model's reply: a word every 0.2 s, never finished within any budget here."""


async def deadline_figures(args: argparse.Namespace, erp) -> None:
    print("Deadline overshoot (record latency - budget), a live model that types slowly:")
    # A run imports the MCP client before its first question (erp_info); do the same here, so
    # the first question does not pay a multi-second import on the event loop.
    await fetch_erp_info(erp.endpoint)
    slow = Turn(text=SLOW_TEXT, trickle_s=0.2)
    with serve_openai(lambda request: slow) as fake:
        os.environ["OPENAI_API_KEY"] = "test-key"
        cases = {
            "openai (model types slowly)": ("openai", HarnessOptions(base_url=fake.base_url), 3),
            "custom (model types slowly)": ("custom", HarnessOptions(base_url=fake.base_url), 3),
            "scripted (ERP agent, tiny budget)": ("scripted", HarnessOptions(), 0.05),
            "plug-in blocking its loop 30 s": (
                "tests.test_runner_plugins:BlockingHarness",
                HarnessOptions(extra={"block_s": "30"}),
                2,
            ),
        }
        for label, (name, options, budget) in cases.items():
            if any(skip in name for skip in args.skip):
                continue
            values = [await overshoot(name, options, erp, budget) for _ in range(args.runs)]
            summarise(f"{label}, budget {budget:g} s", values)
    if "claude" in args.skip:
        return
    model = ScriptedModel(
        [
            Reply(text="Checking.", tool_uses=[ToolUse("mcp__erp__erp_info", {})]),
            Reply(text=SLOW_TEXT[:4000], trickle_s=0.2),
        ]
    )
    os.environ["ANTHROPIC_API_KEY"] = "sk-bench-not-a-secret"
    with AnthropicFakeServer(model) as fake:
        options = HarnessOptions(
            model="claude-sonnet-4-6", base_url=fake.base_url, extra={"save_stream": "false"}
        )
        values = [await overshoot("claude", options, erp, 20) for _ in range(args.runs)]
    summarise("claude (model types slowly), budget 20 s", values)


async def hung_figures(args: argparse.Namespace, erp) -> None:
    budget = args.hung_budget
    print(
        f"Hung provider (accepts, sends nothing), budget {budget:g} s: time to "
        "provider_unavailable (stall bound and retry window: a quarter of the budget, <= 15 s):"
    )
    os.environ["OPENAI_API_KEY"] = "test-key"
    os.environ["ANTHROPIC_API_KEY"] = "sk-bench-not-a-secret"
    hang_openai = Turn(fault="hang")
    hang_anthropic = ScriptedModel([Reply(fault="hang")], all_requests_main=True)
    with (
        serve_openai(lambda request: hang_openai) as openai_fake,
        AnthropicFakeServer(hang_anthropic) as anthropic_fake,
    ):
        cases = {
            "openai (Responses)": ("openai", HarnessOptions(base_url=openai_fake.base_url)),
            "custom (Chat Completions)": ("custom", HarnessOptions(base_url=openai_fake.base_url)),
            "custom (Anthropic Messages)": (
                "custom",
                HarnessOptions(base_url=anthropic_fake.base_url, extra={"api": "anthropic"}),
            ),
            "claude (CLI)": (
                "claude",
                HarnessOptions(
                    model="claude-sonnet-4-6",
                    base_url=anthropic_fake.base_url,
                    extra={"save_stream": "false"},
                ),
            ),
        }
        for label, (name, options) in cases.items():
            if any(skip in name for skip in args.skip):
                continue
            results = [
                await until_unavailable(name, options, erp, budget) for _ in range(args.hung_runs)
            ]
            attempts = statistics.median(a for _, a in results)
            summarise(f"{label}, {attempts:g} attempts", [t for t, _ in results])


def dead_provider_run(base_url: str, erp, dataset: Path, timeout: float) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as out:
        config = RunConfig(
            dataset=dataset,
            harness="openai",
            base_url=base_url,
            erp_url=erp.endpoint.url,
            timeout=timeout,
            concurrency=1,
            out=Path(out) / "run",
            progress=False,
        )
        os.environ["ERP_MCP_TOKEN"] = erp.endpoint.token or ""
        started = time.perf_counter()
        summary = run(config, log=lambda _: None)
        wall = time.perf_counter() - started
    if not summary.stopped:
        raise RuntimeError("the circuit breaker did not stop the run")
    return wall, f"{summary.recorded}/{summary.expected} recorded"


def dead_provider_figures(args: argparse.Namespace, erp, dataset: Path) -> None:
    print("Dead provider, 20 questions, openai harness, circuit breaker at 5:")
    os.environ["OPENAI_API_KEY"] = "test-key"
    refused = f"http://127.0.0.1:{free_port()}/v1"
    results = [dead_provider_run(refused, erp, dataset, 60) for _ in range(args.runs)]
    summarise(f"connection refused, budget 60 s ({results[0][1]})", [w for w, _ in results])
    failing = Turn(status=500, error_message="down", retry_after_ms=None)
    with serve_openai(lambda request: failing) as fake:
        results = [dead_provider_run(fake.base_url, erp, dataset, 20) for _ in range(args.runs)]
    summarise(f"HTTP 500 always, budget 20 s ({results[0][1]})", [w for w, _ in results])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="repetitions per figure (default 3)")
    parser.add_argument(
        "--hung-budget", type=float, default=60.0, help="budget of the hung-provider figure (60)"
    )
    parser.add_argument(
        "--hung-runs", type=int, default=1, help="repetitions of the hung-provider figure (1)"
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        help="skip harnesses whose name contains this, or a section (hung, dead) (repeatable), "
        "e.g. --skip claude",
    )
    args = parser.parse_args()
    from synthetic_erp import generate_erp

    with tempfile.TemporaryDirectory() as folder:
        db_url = f"sqlite:///{folder}/erp.db"
        generate_erp(db_url, customers=60, vendors=60)
        dataset = numbered_dataset(Path(folder) / "ds.yaml", 20, snapshot_of(db_url))
        erp = start_erp_server(db_url)
        try:
            asyncio.run(deadline_figures(args, erp))
            if "hung" not in args.skip:
                asyncio.run(hung_figures(args, erp))
            if "dead" not in args.skip:
                dead_provider_figures(args, erp, dataset)
        finally:
            erp.stop()


if __name__ == "__main__":
    main()
