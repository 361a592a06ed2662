"""What one event loop (and thread) per question costs the built-in harnesses.

The runner runs every question on a loop of its own (``HarnessLoop``: a harness may block). This
bench runs the same questions through the real ``QuestionRunner`` both ways and prints the
difference per question:

- shared: the harness on the runner's loop (what built-ins did before);
- own loop: each question on a fresh ``HarnessLoop`` thread (what the runner does). The SDK
  harnesses make their client per question either way (a client's connection pool is bound to the
  loop it was made on), with the process's shared TLS context.

Harnesses: scripted (the real ERP over MCP, obligation questions from ``datasets/``), openai
(Responses, streamed) and custom (Chat Completions, streamed) against the instant fake model of
``bench_harness_overhead`` in a child process, ``--rounds`` tool rounds per question.

    .venv/bin/python bench/bench_loops.py [--questions 40] [--concurrency 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.bench_harness_overhead import ModelProcess  # noqa: E402


async def timed(harness: Any, own_loops: bool, questions: list, env: Any, args: Any) -> dict:
    from harnesses._question_runner import QuestionRunner
    from harnesses._run_config import RunConfig

    config = RunConfig(harness=harness.name, timeout=120.0, progress=False)
    runner = QuestionRunner(harness, env, config)
    runner.own_loops = own_loops
    gate = asyncio.Semaphore(args.concurrency)

    async def one(index: int) -> float:
        async with gate:
            record = await runner.run(questions[index % len(questions)], index)
            assert record.status.value == "ok", record.termination
            return record.latency_s

    await one(0)  # warm: imports, the tool catalogue, the first connection
    started = time.perf_counter()
    latencies = await asyncio.gather(*(one(i) for i in range(args.questions)))
    wall = time.perf_counter() - started
    return {"latency": statistics.median(latencies), "qps": args.questions / wall}


def questions_from_dataset(count: int) -> list:
    from ledgerbench_core.dataset import load_dataset

    dataset = load_dataset(ROOT / "datasets" / "obligations.yaml")
    return list(dataset.items[:count])


def plain_questions(count: int) -> list:
    from ledgerbench_core.dataset import Question, TaskType

    return [
        Question(id=f"q{i}", query="ERP today?", task_type=TaskType.obligations, segment="AR",
                 scenario="bench")
        for i in range(count)
    ]  # fmt: skip


async def main_async(args: Any) -> None:
    os.environ.setdefault("OPENAI_API_KEY", "test-key")
    from harnesses import AgentEnvironment, HarnessOptions, create_harness
    from harnesses._erp_process import ensure_default_erp, start_erp_server

    server = start_erp_server(ensure_default_erp())
    env = AgentEnvironment(erp=server.endpoint, instructions="Benchmark.", work_dir="/tmp")
    print(
        f"{args.questions} questions at concurrency {args.concurrency}, median of {args.repeat} "
        f"runs; openai/custom: {args.rounds} tool rounds per question against an instant model"
    )
    print(
        f"{'harness':34} {'latency shared':>14} {'own loop':>9} {'+ per q':>8} "
        f"{'q/s shared':>10} {'own loop':>9}"
    )
    cases = [
        ("scripted (ERP over MCP)", "scripted", None, {}),
        ("openai (Responses, streamed)", "openai", "responses", {}),
        ("custom (Chat Completions, streamed)", "custom", "chat", {}),
    ]
    try:
        for label, name, api, extra in cases:
            model = ModelProcess(api, args.rounds) if api else None
            try:
                options = HarnessOptions(base_url=model.base_url if model else None, extra=extra)
                harness = create_harness(name, options)
                questions = questions_from_dataset(20) if api is None else plain_questions(20)
                rows: dict[bool, list[dict]] = {False: [], True: []}
                for _ in range(args.repeat):
                    for own in (False, True):
                        rows[own].append(await timed(harness, own, questions, env, args))
                await harness.aclose()
            finally:
                if model is not None:
                    model.stop()
            shared = {k: statistics.median(r[k] for r in rows[False]) for k in ("latency", "qps")}
            own = {k: statistics.median(r[k] for r in rows[True]) for k in ("latency", "qps")}
            extra_ms = (own["latency"] - shared["latency"]) * 1000
            print(
                f"{label:34} {shared['latency'] * 1000:11.1f} ms {own['latency'] * 1000:6.1f} ms "
                f"{extra_ms:+6.1f} ms {shared['qps']:10.1f} {own['qps']:9.1f}",
                flush=True,
            )
        print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=40, help="questions per run, e.g. 40")
    parser.add_argument("--concurrency", type=int, default=5, help="questions in flight, e.g. 5")
    parser.add_argument("--rounds", type=int, default=3, help="tool rounds per question, e.g. 3")
    parser.add_argument("--repeat", type=int, default=3, help="runs per setting (median), e.g. 3")
    args = parser.parse_args(argv)
    asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
