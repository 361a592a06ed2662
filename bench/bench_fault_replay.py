"""Seeded ERP (and research-world) faults replay on Ray as locally: the same questions, seed and
fault rate run with the local executor and on a local Ray cluster, record by record.

Both runs serve the default ERP with ``--erp-fault-rate`` / ``--erp-fault-seed`` (locally the
runner's own server; on Ray each worker's server, from the SQLite file shipped to it) and put the
first ``--questions`` obligation questions of ``datasets/obligations.yaml`` to the scripted agent,
which retries a failed tool call up to three times. With ``--research`` the questions are the
research items instead (half from ``datasets/entity_performance.yaml``, half from
``datasets/business_briefs.yaml``) run with ``--research world``: the default world is served
with the same faults, locally by the runner and on Ray by each worker from the world file
shipped to it. Printed: how many records have identical tool-call sequences (name, arguments,
error flag, output), identical answers and identical terminations, with the servers'
host:port and cursor signatures masked (each run serves its own), the faults each run met, and
the wall times.

    .venv/bin/python bench/bench_fault_replay.py [--questions 50] [--rate 0.3] [--seed 7]
    .venv/bin/python bench/bench_fault_replay.py --research --questions 30
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HOST_PORT = re.compile(r"http://127\.0\.0\.1:\d+")
CURSOR_SIGNATURE = re.compile(r"(eyJ[A-Za-z0-9_-]+)\.[A-Za-z0-9_-]{22}")
"""A paging cursor's signature: each server process signs with a key of its own."""
RESEARCH_DATASETS = ("entity_performance.yaml", "business_briefs.yaml")


def mask(text: str) -> str:
    return CURSOR_SIGNATURE.sub(r"\1.SIG", HOST_PORT.sub("http://ERP", text))


def fields(path: Path) -> dict:
    from harnesses._runner import read_trajectories

    return {
        (r.question_id, r.trial): {
            "calls": [
                (c.name, mask(json.dumps(c.arguments, sort_keys=True)), c.is_error, mask(c.output))
                for c in r.tool_calls
            ],
            "answer": mask(r.answer),
            "reason": r.termination.reason.value,
        }
        for r in read_trajectories(path)
    }


def show_difference(key: tuple, local: list, remote: list) -> None:
    """The first call where the two runs of a question part, as (name, error flag, output)."""
    at = next((i for i, pair in enumerate(zip(local, remote, strict=False)) if pair[0] != pair[1]),
              min(len(local), len(remote)))  # fmt: skip

    def brief(calls: list) -> str:
        return "; ".join(f"{c[0]} error={c[2]} {c[3][:100]!r}" for c in calls[at : at + 2])

    print(f"  differs: {key[0]} trial {key[1]}, call {at + 1} of {len(local)} local / "
          f"{len(remote)} ray\n    local: {brief(local)}\n    ray:   {brief(remote)}")  # fmt: skip


def timed_run(config) -> float:
    from harnesses._runner import run

    started = time.perf_counter()
    summary = run(config, log=lambda _: None)
    assert summary.ran == summary.expected, summary
    return time.perf_counter() - started


def parts(args: argparse.Namespace) -> list[tuple[Path, int]]:
    """(dataset, number of questions) of each pair of runs."""
    if not args.research:
        return [(ROOT / "datasets" / "obligations.yaml", args.questions)]
    first = (args.questions + 1) // 2
    counts = (first, args.questions - first)
    pairs = zip(RESEARCH_DATASETS, counts, strict=True)
    return [(ROOT / "datasets" / name, n) for name, n in pairs if n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=50, help="questions, e.g. 50")
    parser.add_argument("--rate", type=float, default=0.3, help="share of failing calls, e.g. 0.3")
    parser.add_argument("--seed", type=int, default=7, help="fault seed, e.g. 7")
    parser.add_argument(
        "--research",
        action="store_true",
        help="research items with --research world (the world served with the same faults)",
    )
    parser.add_argument("--ray-cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    args = parser.parse_args(argv)
    if args.questions < 1 or not 0 < args.rate <= 1 or args.ray_cpus < 1:
        parser.error("--questions and --ray-cpus must be at least 1, --rate in (0, 1]")
    os.environ.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")
    from harnesses._erp_process import ensure_default_erp
    from harnesses._runner import TRAJECTORIES_FILE, RunConfig
    from tests.ray_cluster import local_ray_cluster

    db_url = ensure_default_erp()
    local: dict = {}
    remote: dict = {}
    local_s = ray_s = 0.0
    with tempfile.TemporaryDirectory() as tmp, local_ray_cluster(cpus=args.ray_cpus) as cluster:
        root = Path(tmp)
        for index, (dataset, n) in enumerate(parts(args)):
            common = {
                "dataset": dataset,
                "harness": "scripted",
                "limit": n,
                "erp_db": db_url,
                "erp_fault_rate": args.rate,
                "erp_fault_seed": args.seed,
                "progress": False,
            }
            if args.research:
                common["research"] = "world"
            local_dir, ray_dir = root / f"local-{index}", root / f"ray-{index}"
            local_s += timed_run(RunConfig(**common, out=local_dir, concurrency=5))
            ray_s += timed_run(
                RunConfig(
                    **common,
                    out=ray_dir,
                    concurrency=2,
                    executor="ray",
                    ray_address=cluster.address,
                )
            )
            local.update(fields(local_dir / TRAJECTORIES_FILE))
            remote.update(fields(ray_dir / TRAJECTORIES_FILE))
    keys = sorted(local)
    same_calls = sum(local[k]["calls"] == remote.get(k, {}).get("calls") for k in keys)
    same_answers = sum(local[k]["answer"] == remote.get(k, {}).get("answer") for k in keys)
    same_reasons = sum(local[k]["reason"] == remote.get(k, {}).get("reason") for k in keys)

    def faults(records: dict) -> tuple[int, int]:
        calls = [c for r in records.values() for c in r["calls"]]
        return sum(c[3].startswith("TRANSIENT") for c in calls), len(calls)

    (local_faults, local_calls), (ray_faults, ray_calls) = faults(local), faults(remote)
    kind = "research questions (entity, brief), --research world"
    kind = kind if args.research else "obligation questions"
    servers = "ERP and world" if args.research else "ERP"
    print(
        f"scripted agent, {len(keys)} {kind}, {servers} fault rate {args.rate:g}, seed "
        f"{args.seed}; host:port and cursor signatures masked"
    )
    same = sum(local[k] == remote.get(k) for k in keys)
    print(f"  identical records (calls, answer, termination): {same}/{len(keys)}")
    print(f"  identical tool-call sequences: {same_calls}/{len(keys)}")
    print(f"  identical answers:             {same_answers}/{len(keys)}")
    print(f"  identical terminations:        {same_reasons}/{len(keys)}")
    endings = Counter(r["reason"] for r in local.values())
    print("  endings (local): " + ", ".join(f"{n} {reason}" for reason, n in endings.items()))
    print(f"  injected faults met: local {local_faults} of {local_calls} calls, ray {ray_faults} "
          f"of {ray_calls} calls")  # fmt: skip
    print(
        f"  wall time: local {local_s:.1f} s (5 in flight), ray {ray_s:.1f} s (2 in flight, "
        f"{args.ray_cpus} Ray CPUs)"
    )
    for key in keys:
        if local[key]["calls"] != remote.get(key, {}).get("calls"):
            show_difference(key, local[key]["calls"], remote.get(key, {}).get("calls") or [])
    return 0 if same == len(keys) == len(remote) else 1


if __name__ == "__main__":
    raise SystemExit(main())
