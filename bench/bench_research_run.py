"""What the research world costs a run: the world server's start, and the runner's overhead per
question when research questions are in the run.

1. World start: a one-question research run (the world served beside the ERP) against the same
   run of one obligations question (no world), in alternating rounds; the difference of the
   medians is what starting the world server adds (target: under 3 s).
2. Overhead: an instant in-process harness on N research questions at concurrency 8, with the
   world served; per question = (wall - the one-question run's wall) / (N - 1) (target: under
   20 ms).

The world is the default one (``.ledgerbench/world.db``, made by the runner on first use) unless
``--world-db`` names another; the research items are ``datasets/entity_performance.yaml``'s,
repeated under new ids.

    .venv/bin/python bench/bench_research_run.py [--rounds 5] [--questions 400]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harnesses import AgentOutcome, HarnessOptions, harness  # noqa: E402
from harnesses._runner import RunConfig, run  # noqa: E402


@harness("bench-research-instant")
class InstantHarness:
    name = "bench-research-instant"

    def __init__(self, options: HarnessOptions) -> None:
        self.model = None

    async def run(self, task, env, draft) -> AgentOutcome:
        assert env.world is not None or task.task_type == "obligations"
        draft.add_tool_call("echo", {"id": task.question_id}, "ok")
        return AgentOutcome(answer=f"answer {task.question_id}")

    async def aclose(self) -> None:
        return None


def research_dataset(path: Path, count: int) -> Path:
    source = yaml.safe_load((ROOT / "datasets" / "entity_performance.yaml").read_text())
    items = source["items"]
    copies = []
    for i in range(count):
        item = dict(items[i % len(items)])
        item["id"] = f"{item['id']}-b{i:05d}"
        copies.append(item)
    path.write_text(yaml.safe_dump({"header": source["header"], "items": copies}))
    return path


def obligations_dataset(path: Path) -> Path:
    source = yaml.safe_load((ROOT / "datasets" / "obligations.yaml").read_text())
    path.write_text(yaml.safe_dump({"header": source["header"], "items": source["items"][:1]}))
    return path


def timed(dataset: Path, out: Path, erp_db: str, world_db: str | None, concurrency: int) -> float:
    config = RunConfig(
        dataset=dataset,
        harness="bench-research-instant",
        erp_db=erp_db,
        world_db=world_db,
        out=out,
        concurrency=concurrency,
        progress=False,
    )
    started = time.perf_counter()
    summary = run(config, log=lambda _m: None)
    assert summary.ran == summary.expected, summary
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (e.g. 5)")
    parser.add_argument("--questions", type=int, default=400, help="research questions (400)")
    parser.add_argument("--erp-db", default=f"sqlite:///{ROOT / '.ledgerbench' / 'erp.db'}")
    parser.add_argument("--world-db", default=f"sqlite:///{ROOT / '.ledgerbench' / 'world.db'}")
    args = parser.parse_args()
    world_path = Path(args.world_db.removeprefix("sqlite:///"))
    if not world_path.exists():
        raise SystemExit(
            f"{world_path} not found: run `python -m harnesses.run --dataset "
            "datasets/entity_performance.yaml --limit 1` once (it builds the default world)"
        )
    print(f"load averages at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        one_research = research_dataset(root / "one-research.yaml", 1)
        one_obligation = obligations_dataset(root / "one-obligation.yaml")
        with_world, without = [], []
        for i in range(args.rounds):
            without.append(timed(one_obligation, root / f"o{i}", args.erp_db, None, 1))
            with_world.append(timed(one_research, root / f"w{i}", args.erp_db, args.world_db, 1))
        base, world = statistics.median(without), statistics.median(with_world)
        print(
            f"one-question run, median of {args.rounds}: no world {base:.2f} s, world served "
            f"{world:.2f} s -> the world adds {world - base:.2f} s (target < 3 s)"
        )
        many = research_dataset(root / "many.yaml", args.questions)
        wall = timed(many, root / "many", args.erp_db, args.world_db, 8)
        overhead = (wall - world) / (args.questions - 1)
        print(
            f"{args.questions} research questions at concurrency 8: {wall:.2f} s -> runner "
            f"overhead {overhead * 1000:.1f} ms per question (target < 20 ms)"
        )
    print(f"load averages at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
