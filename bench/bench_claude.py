"""Claude CLI harness: start-up cost of one question and throughput at concurrency 4.

The real ``claude`` binary answers against an instant scripted model (the local fake Anthropic
server) and the real ERP MCP server over HTTP, so every second measured is the harness + CLI + MCP
overhead, never model time. Two scripts: ``answer`` (one model call, no tool) and ``tool`` (one
ERP call, then the answer).

    .venv/bin/python bench/bench_claude.py                      # 20 sequential, 20 at concurrency 4
    .venv/bin/python bench/bench_claude.py --runs 10 --concurrency 4 --questions 12

Prints, per script: median / p10 / p90 wall seconds per question, the CLI's own ``duration_ms``
(time inside its agent loop), the difference (process start-up, MCP connect, shutdown), and the
throughput in questions per second sequentially and at the given concurrency.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harnesses import (
    AgentEnvironment,
    AgentTask,
    HarnessOptions,
    TrajectoryDraft,
    create_harness,
)
from harnesses._erp_process import ensure_default_erp, start_erp_server
from harnesses._instructions import SYSTEM_INSTRUCTIONS
from ledgerbench_core.dataset import TaskType
from tests.fakes.anthropic_server import (
    AnthropicFakeServer,
    Reply,
    ScriptedModel,
    ToolUse,
)

SCRIPTS = {
    "answer": [Reply(text="The balance is 0.00 USD.", input_tokens=100, output_tokens=10)],
    "tool": [
        Reply(text="Checking.", tool_uses=[ToolUse("mcp__erp__erp_info", {})]),
        Reply(text="The ERP's today is known.", input_tokens=100, output_tokens=10),
    ],
}


async def one_question(harness, env: AgentEnvironment, number: int) -> tuple[float, float]:
    draft = TrajectoryDraft()
    task = AgentTask(
        question_id=f"bench-{number:03d}",
        trial=0,
        query="What is the balance of customer SYNCUS-0001?",
        task_type=TaskType.obligations,
        timeout_s=120,
        deadline=time.monotonic() + 120,
    )
    started = time.perf_counter()
    outcome = await harness.run(task, env, draft)
    wall = time.perf_counter() - started
    if not outcome.answer:
        raise RuntimeError(f"question {number} gave no answer: {draft.extra}")
    return wall, float(draft.extra.get("duration_ms", 0)) / 1000


async def batch(harness, env: AgentEnvironment, count: int, concurrency: int) -> tuple[list, float]:
    gate = asyncio.Semaphore(concurrency)

    async def limited(number: int) -> tuple[float, float]:
        async with gate:
            return await one_question(harness, env, number)

    started = time.perf_counter()
    results = await asyncio.gather(*(limited(n) for n in range(count)))
    return list(results), time.perf_counter() - started


def quantiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    cut = statistics.quantiles(ordered, n=10) if len(ordered) > 1 else ordered * 9
    return statistics.median(ordered), cut[0], cut[-1]


async def bench(args: argparse.Namespace) -> None:
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-bench-not-a-secret")
    db_url = ensure_default_erp()
    erp = start_erp_server(db_url)
    try:
        for name, script in SCRIPTS.items():
            with (
                AnthropicFakeServer(ScriptedModel(script)) as fake,
                tempfile.TemporaryDirectory() as work,
            ):
                options = HarnessOptions(
                    model="claude-sonnet-4-6",
                    base_url=fake.base_url,
                    extra={"save_stream": "false"},
                )
                harness = create_harness("claude", options)
                env = AgentEnvironment(
                    erp=erp.endpoint, instructions=SYSTEM_INSTRUCTIONS, work_dir=work
                )
                await one_question(harness, env, 999)  # warm the page cache
                sequential, seq_total = await batch(harness, env, args.runs, 1)
                parallel, par_total = await batch(harness, env, args.questions, args.concurrency)
            walls = [wall for wall, _ in sequential]
            inner = [loop for _, loop in sequential]
            median, p10, p90 = quantiles(walls)
            overhead = statistics.median(w - i for w, i in sequential)
            print(
                f"{name:>6}: one question median {median:.2f} s (p10 {p10:.2f}, p90 {p90:.2f}; "
                f"n={len(walls)}); CLI loop {statistics.median(inner):.2f} s, start-up + "
                f"shutdown {overhead:.2f} s"
            )
            print(
                f"{'':>6}  throughput: sequential {len(walls) / seq_total:.2f} q/s; concurrency "
                f"{args.concurrency}: {len(parallel) / par_total:.2f} q/s "
                f"(median latency {statistics.median(w for w, _ in parallel):.2f} s, "
                f"{len(parallel)} questions)"
            )
    finally:
        erp.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=20, help="sequential questions per script (default 20)"
    )
    parser.add_argument(
        "--questions", type=int, default=20, help="questions in the concurrent batch (default 20)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=4, help="questions in flight at once (default 4)"
    )
    args = parser.parse_args()
    if min(args.runs, args.questions, args.concurrency) < 1:
        parser.error("--runs, --questions and --concurrency must be at least 1")
    asyncio.run(bench(args))


if __name__ == "__main__":
    main()
