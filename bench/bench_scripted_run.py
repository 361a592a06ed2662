"""Wall time of a whole run: the scripted agent over the default datasets, one question at a time.

Every question's tool calls go over MCP (streamable HTTP) to the ERP and world servers the runner
starts, so the time per call shows what the serving path costs an agent (issue 27 found each
answer on a kept-alive connection waiting ~40 ms for a delayed acknowledgement). ``--repo DIR``
runs another checkout's code too (its packages first on the path), each round right before this
one's, and prints both:

    .venv/bin/python bench/bench_scripted_run.py                           # this checkout
    git worktree add /tmp/before <rev>
    .venv/bin/python bench/bench_scripted_run.py --repo /tmp/before --rounds 2

The ERP and world are the default ones (``.ledgerbench/``, generated on first use by
``python -m harnesses.run``); pass ``--erp-db``/``--world-db`` for others.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_once(repo: Path, args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-scripted-") as folder:
        out = Path(folder) / "run"
        command = [
            sys.executable, "-m", "harnesses.run", "--harness", "scripted",
            "--dataset", str(args.dataset), "--erp-db", args.erp_db, "--world-db", args.world_db,
            "--concurrency", str(args.concurrency), "--out", str(out), "--no-progress",
        ]  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(repo))
        started = time.perf_counter()
        done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"the run from {repo} failed: {done.stderr.strip()[-500:]}")
        records = [json.loads(line) for line in (out / "trajectories.jsonl").open()]
    calls = sum(len(r["tool_calls"]) for r in records)
    return {"questions": len(records), "calls": calls, "wall_s": wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, help="another checkout to measure beside this one")
    parser.add_argument("--rounds", type=int, default=1, help="runs per checkout (default 1)")
    parser.add_argument("--dataset", type=Path, default=REPO / "datasets")
    parser.add_argument("--erp-db", default=f"sqlite:///{REPO / '.ledgerbench' / 'erp.db'}")
    parser.add_argument("--world-db", default=f"sqlite:///{REPO / '.ledgerbench' / 'world.db'}")
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args(argv)
    for option in (args.erp_db, args.world_db):
        if not Path(option.removeprefix("sqlite:///")).exists():
            parser.error(f"{option} does not exist: run `python -m harnesses.run` once, or pass it")
    trees = {"other": args.repo.resolve()} if args.repo else {}
    trees["this"] = REPO
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, repo in trees.items():
            rounds[name].append(run_once(repo, args))
    for name, rows in rounds.items():
        wall = statistics.median(r["wall_s"] for r in rows)
        first = rows[0]
        print(f"{name:5} {trees[name]}: {first['questions']} questions, {first['calls']} tool "
              f"calls, concurrency {args.concurrency}: {wall:.1f} s (median of {len(rows)}), "
              f"{wall / first['calls'] * 1000:.1f} ms per tool call")  # fmt: skip
    if args.repo:
        other = statistics.median(r["wall_s"] for r in rounds["other"])
        this = statistics.median(r["wall_s"] for r in rounds["this"])
        print(f"this / other: {this / other:.2f}x the wall time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
