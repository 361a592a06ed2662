"""Overhead of the LLM harnesses per tool round, and questions per second at concurrency 8.

An instant scripted model server (``tests/fakes``; OpenAI Responses, Chat Completions or Anthropic
Messages) runs in a child process so its CPU time is not charged to the harness; the ERP is the real
``erp_mcp`` server over HTTP. Each question makes ``--rounds`` tool rounds (one ``erp_info`` call
each) and then answers. Overhead per round = (question time - the same question with no tool
rounds - time inside the MCP calls) / rounds: SDK request building and parsing, the local HTTP hop
to the instant model, recording. Target: under 10 ms. "CPU/round" is this process's CPU time per
round (harness, SDKs and MCP client), which a busy machine inflates less than wall time.

    .venv/bin/python bench/bench_harness_overhead.py [--rounds 10] [--questions 32] [--erp-db URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TOOL = "erp_info"
CONFIGS = {
    "openai (Responses, streaming)": ("openai", "responses", {}),
    "openai (Responses, no streaming)": ("openai", "responses", {"stream": "false"}),
    "custom (Chat Completions)": ("custom", "chat", {}),
    "custom (Anthropic Messages, streaming)": ("custom", "anthropic", {"api": "anthropic"}),
}


# --- the instant model (child process) -----------------------------------------------------------


def _round_of(call_ids: list[str]) -> int:
    rounds = [int(c.split("_")[1]) for c in call_ids if c and c.startswith("r_")]
    return max(rounds) + 1 if rounds else 0


def openai_turn(request: Any) -> Any:
    from tests.fakes.openai_server import Call, Turn

    body = request.body
    if request.api == "responses":
        items = body.get("input") if isinstance(body.get("input"), list) else []
        ids = [i.get("call_id", "") for i in items if i.get("type") == "function_call_output"]
    else:
        ids = [m.get("tool_call_id", "") for m in body["messages"] if m.get("role") == "tool"]
    done = _round_of(ids)
    if done >= ROUNDS:
        return Turn(text=f"Answer after {done} rounds.")
    return Turn(tool_calls=[Call(TOOL, {}, call_id=f"r_{done}_{os.urandom(4).hex()}")])


def anthropic_turn(body: dict[str, Any], turn: int) -> Any:
    from tests.fakes.anthropic_server import Reply, ToolUse

    if turn >= ROUNDS:
        return Reply(text=f"Answer after {turn} rounds.", input_tokens=100, output_tokens=20)
    use = ToolUse(TOOL, {}, id=f"toolu_{turn}_{os.urandom(4).hex()}")
    return Reply(tool_uses=[use], input_tokens=100, output_tokens=20)


ROUNDS = 0


def serve_model(api: str, rounds: int) -> None:
    """Child process: serve the instant model, print its base URL, run until stdin closes."""
    global ROUNDS
    ROUNDS = rounds
    if api == "anthropic":
        from tests.fakes import anthropic_server
        from tests.fakes.anthropic_server import AnthropicFakeServer, ScriptedModel

        # Headers and body go out as separate writes: without TCP_NODELAY, Nagle's algorithm and
        # delayed ACKs add ~40 ms per keep-alive request, which is the fake's cost, not ours.
        anthropic_server._Handler.disable_nagle_algorithm = True

        with AnthropicFakeServer(ScriptedModel(anthropic_turn, all_requests_main=True)) as fake:
            print(fake.base_url, flush=True)
            sys.stdin.read()
        return
    from tests.fakes.openai_server import serve_openai

    with serve_openai(openai_turn) as fake:
        print(fake.base_url, flush=True)
        sys.stdin.read()


class ModelProcess:
    def __init__(self, api: str, rounds: int) -> None:
        code = f"import bench.bench_harness_overhead as b; b.serve_model({api!r}, {rounds})"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self.process.stdout.readline().strip()

    def stop(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=10)


# --- the measurements ----------------------------------------------------------------------------


async def one_question(harness: Any, env: Any, qid: str) -> tuple[float, float, float]:
    from harnesses import AgentTask, TrajectoryDraft
    from ledgerbench_core.dataset import TaskType

    draft = TrajectoryDraft()
    task = AgentTask(
        qid, 0, "What is the ERP's today?", TaskType.obligations, 120.0, time.monotonic() + 120.0
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    await harness.run(task, env, draft)
    elapsed = time.perf_counter() - started
    in_tools = sum(call.duration_s or 0.0 for call in draft.tool_calls)
    return elapsed, in_tools, time.process_time() - cpu_started


async def measure(name: str, api: str, extra: dict[str, str], env: Any, args: Any) -> dict:
    from harnesses import HarnessOptions, create_harness

    harness_name = CONFIGS[name][0]
    results: dict[str, Any] = {}
    for rounds in (0, args.rounds):
        model = ModelProcess(api, rounds)
        try:
            harness = create_harness(
                harness_name, HarnessOptions(base_url=model.base_url, extra=dict(extra))
            )
            await one_question(harness, env, "warm-up")
            samples = [await one_question(harness, env, f"q{i}") for i in range(args.repeat)]
            results[rounds] = samples
            if rounds == args.rounds:
                results["qps"] = await throughput(harness, env, args)
            await harness.aclose()
        finally:
            model.stop()
    base = statistics.median(sample[0] for sample in results[0])
    base_tools = statistics.median(sample[1] for sample in results[0])
    full = results[args.rounds]
    per_round = statistics.median(
        (elapsed - base - (in_tools - base_tools)) / args.rounds for elapsed, in_tools, _ in full
    )
    mcp = statistics.median((in_tools - base_tools) / args.rounds for _, in_tools, _ in full)
    base_cpu = statistics.median(sample[2] for sample in results[0])
    cpu = statistics.median((sample[2] - base_cpu) / args.rounds for sample in full)
    return {
        "overhead_ms": per_round * 1000,
        "mcp_ms": mcp * 1000,
        "cpu_ms": cpu * 1000,
        "base_ms": base * 1000,
        "qps": results["qps"],
    }


async def throughput(harness: Any, env: Any, args: Any) -> float:
    gate = asyncio.Semaphore(args.concurrency)

    async def guarded(index: int) -> None:
        async with gate:
            await one_question(harness, env, f"c{index}")

    started = time.perf_counter()
    await asyncio.gather(*(guarded(i) for i in range(args.questions)))
    return args.questions / (time.perf_counter() - started)


async def main_async(args: Any) -> None:
    os.environ.setdefault("OPENAI_API_KEY", "test-key")
    os.environ.setdefault("ANTHROPIC_API_KEY", "test-key")
    from harnesses import AgentEnvironment
    from harnesses._erp_process import ensure_default_erp, start_erp_server

    db_url = args.erp_db or ensure_default_erp()
    server = start_erp_server(db_url)
    env = AgentEnvironment(erp=server.endpoint, instructions="Benchmark.", work_dir="/tmp")
    print(
        f"ERP {db_url}; {args.rounds} tool rounds per question; {args.repeat} questions timed; "
        f"{args.questions} questions at concurrency {args.concurrency} for questions/s"
    )
    print(
        f"{'harness':40} {'overhead/round':>15} {'MCP call':>9} {'CPU/round':>10} "
        f"{'no-tool q':>10} {'q/s @' + str(args.concurrency):>7}"
    )
    try:
        for name, (_, api, extra) in CONFIGS.items():
            if args.only and args.only.lower() not in name.lower():
                continue
            row = await measure(name, api, extra, env, args)
            print(
                f"{name:40} {row['overhead_ms']:12.2f} ms {row['mcp_ms']:6.2f} ms "
                f"{row['cpu_ms']:7.2f} ms {row['base_ms']:7.1f} ms {row['qps']:7.1f}",
                flush=True,
            )
        load = os.getloadavg()[0]
        print(
            f"load average at the end: {load:.1f} on {os.cpu_count()} CPUs (other work shares them)"
        )
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: .venv/bin/python bench/bench_harness_overhead.py --rounds 10",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="tool rounds per timed question (default 10), e.g. --rounds 5",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="timed questions per harness (median reported; default 5)",
    )
    parser.add_argument(
        "--questions", type=int, default=32, help="questions for the throughput figure (default 32)"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=8,
        help="questions in flight for the throughput figure (default 8)",
    )
    parser.add_argument(
        "--erp-db",
        default=None,
        help="ERP database URL (default: the runner's .ledgerbench/erp.db), "
        "e.g. --erp-db sqlite:///erp.db",
    )
    parser.add_argument(
        "--only",
        default=None,
        help="measure only harness rows containing this text, e.g. --only streaming",
    )
    args = parser.parse_args(argv)
    if min(args.rounds, args.repeat, args.questions, args.concurrency) < 1:
        parser.error("--rounds, --repeat, --questions and --concurrency must be 1 or more")
    asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
