"""Ray executor throughput and overhead with an instant-model harness.

The harness (:class:`ModelCallHarness`) makes ``--calls`` "model calls" of ``--call-ms`` each per
question and one recorded tool call, and nothing else, so every millisecond beyond
``calls x call_ms`` is executor overhead. The bench starts a local Ray cluster with 4 worker CPUs
(loopback only), warms the workers up, then runs the same questions with the local executor and on
Ray with 1, 2 and 4 tasks in flight (one CPU each) and prints:

- questions per second, against the ideal ``workers / (calls x call_ms)``;
- the overhead per task: wall time x workers / questions minus the model time per question, the
  time a question occupies a worker slot beyond its own work (scheduling, argument and result
  transfer, record validation, the driver's fsynced write).

Fixed costs of a run (dataset load, ``erp_info``, manifest, connecting to Ray) are measured with a
one-question run and subtracted. The cold start (first task of a new job: worker processes start and
import the harness) is printed apart.

    .venv/bin/python bench/bench_ray.py [--questions 48] [--calls 3] [--call-ms 100]
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

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.bench_runner import write_dataset  # noqa: E402  (the same bench dataset)
from harnesses import AgentOutcome, HarnessOptions  # noqa: E402

HARNESS = "bench.bench_ray:ModelCallHarness"


class ModelCallHarness:
    """``calls`` model calls of ``call_ms`` each (asyncio sleeps), then an answer."""

    name = "model-call"

    def __init__(self, options: HarnessOptions) -> None:
        self.model = "instant"
        self.calls = int(options.extra.get("calls", "3"))
        self.call_s = float(options.extra.get("call_ms", "100")) / 1000

    async def run(self, task, env, draft) -> AgentOutcome:
        for turn in range(self.calls):
            await asyncio.sleep(self.call_s)
            draft.turns += 1
            if turn == 0:
                draft.add_tool_call("echo", {"id": task.question_id}, "ok")
        return AgentOutcome(answer=f"answer {task.question_id}")

    async def aclose(self) -> None:
        return None


def timed_run(dataset: Path, out: Path, erp, workers: int, executor: str, opts: dict) -> float:
    from pydantic import SecretStr

    from harnesses._runner import RunConfig, run

    config = RunConfig(
        dataset=dataset,
        harness=HARNESS,
        harness_opts=opts,
        erp_url=erp.url,
        erp_token=SecretStr(erp.token),
        out=out,
        concurrency=workers,
        progress=False,
        executor=executor,
    )
    started = time.perf_counter()
    summary = run(config, log=lambda _: None)
    assert summary.ran == summary.expected and summary.by_status == {"ok": summary.expected}
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=48, help="questions per run (e.g. 48)")
    parser.add_argument("--calls", type=int, default=3, help="model calls per question (e.g. 3)")
    parser.add_argument("--call-ms", type=float, default=100, help="ms per model call (e.g. 100)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per setting; median kept")
    args = parser.parse_args()
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback-only Ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    from harnesses._erp_process import start_erp_server
    from synthetic_erp import generate_erp
    from tests.ray_cluster import local_ray_cluster

    opts = {"calls": str(args.calls), "call_ms": f"{args.call_ms:g}"}
    work_s = args.calls * args.call_ms / 1000
    with tempfile.TemporaryDirectory() as tmp, local_ray_cluster(cpus=4) as cluster:
        root = Path(tmp)
        db_url = f"sqlite:///{root / 'erp.db'}"
        generate_erp(db_url, customers=20, vendors=20, seed=1)
        server = start_erp_server(db_url)
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        try:
            dataset = write_dataset(root / "ds.yaml", args.questions)
            one = write_dataset(root / "one.yaml", 1)
            erp = server.endpoint
            cold = timed_run(one, root / "cold", erp, 4, "ray", opts)
            # Warm four worker processes (imports done) before measuring.
            timed_run(write_dataset(root / "warm.yaml", 8), root / "warm", erp, 4, "ray", opts)
            fixed = {
                ex: min(timed_run(one, root / f"fixed-{ex}-{i}", erp, 1, ex, opts) - work_s
                        for i in range(3))
                for ex in ("local", "ray")
            }  # fmt: skip
            print(
                f"harness: {args.calls} calls x {args.call_ms:g} ms = {work_s * 1000:.0f} ms of "
                f"model time per question; {args.questions} questions per run"
            )
            print(f"cold start of a new Ray job (1 question, workers start): {cold:.2f} s")
            print(
                f"fixed cost per run: local {fixed['local'] * 1000:.0f} ms, "
                f"ray {fixed['ray'] * 1000:.0f} ms"
            )
            print(
                f"{'executor':>8} {'workers':>7} {'questions/s':>11} {'ideal':>6} "
                f"{'overhead ms/task':>16}"
            )
            settings = [("local", 1), ("local", 4), ("ray", 1), ("ray", 2), ("ray", 4)]
            for executor, workers in settings:
                walls = []
                for i in range(args.repeat):
                    out = root / f"{executor}-{workers}-{i}"
                    wall = timed_run(dataset, out, erp, workers, executor, opts)
                    walls.append(wall - fixed[executor])
                wall = statistics.median(walls)
                overhead = wall * workers / args.questions - work_s
                print(
                    f"{executor:>8} {workers:>7} {args.questions / wall:>11.2f} "
                    f"{workers / work_s:>6.2f} {overhead * 1000:>16.1f}"
                )
        finally:
            ray.shutdown()
            server.stop()


if __name__ == "__main__":
    main()
