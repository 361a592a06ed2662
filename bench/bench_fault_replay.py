"""Seeded ERP faults replay on Ray as locally: the same questions, seed and fault rate run with the
local executor and on a local Ray cluster, record by record.

Both runs serve the default ERP with ``--erp-fault-rate`` / ``--erp-fault-seed`` (locally the
runner's own server; on Ray each worker's server, from the SQLite file shipped to it) and put the
first ``--questions`` obligation questions of ``datasets/obligations.yaml`` to the scripted agent,
which retries a failed tool call up to three times. Printed: how many records have identical tool-
call sequences (name, arguments, error flag, output) and identical answers, with the ERP's
host:port masked (each run serves its own), the faults each run met, and the wall times.

    .venv/bin/python bench/bench_fault_replay.py [--questions 50] [--rate 0.3] [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HOST_PORT = re.compile(r"http://127\.0\.0\.1:\d+")


def fields(path: Path) -> dict:
    from harnesses._runner import read_trajectories

    def mask(text: str) -> str:
        return HOST_PORT.sub("http://ERP", text)

    return {
        (r.question_id, r.trial): {
            "calls": [(c.name, c.arguments, c.is_error, mask(c.output)) for c in r.tool_calls],
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=50, help="questions, e.g. 50")
    parser.add_argument("--rate", type=float, default=0.3, help="share of failing calls, e.g. 0.3")
    parser.add_argument("--seed", type=int, default=7, help="fault seed, e.g. 7")
    args = parser.parse_args(argv)
    os.environ.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")
    from harnesses._erp_process import ensure_default_erp
    from harnesses._runner import TRAJECTORIES_FILE, RunConfig
    from tests.ray_cluster import local_ray_cluster

    db_url = ensure_default_erp()
    with tempfile.TemporaryDirectory() as tmp, local_ray_cluster(cpus=2) as cluster:
        root = Path(tmp)
        common = {
            "dataset": ROOT / "datasets" / "obligations.yaml",
            "harness": "scripted",
            "limit": args.questions,
            "erp_db": db_url,
            "erp_fault_rate": args.rate,
            "erp_fault_seed": args.seed,
            "progress": False,
        }
        local_s = timed_run(RunConfig(**common, out=root / "local", concurrency=5))
        ray_s = timed_run(
            RunConfig(
                **common,
                out=root / "ray",
                concurrency=2,
                executor="ray",
                ray_address=cluster.address,
            )
        )
        local = fields(root / "local" / TRAJECTORIES_FILE)
        remote = fields(root / "ray" / TRAJECTORIES_FILE)
    keys = sorted(local)
    same_calls = sum(local[k]["calls"] == remote.get(k, {}).get("calls") for k in keys)
    same_answers = sum(local[k]["answer"] == remote.get(k, {}).get("answer") for k in keys)
    same_reasons = sum(local[k]["reason"] == remote.get(k, {}).get("reason") for k in keys)

    def faults(records: dict) -> tuple[int, int]:
        calls = [c for r in records.values() for c in r["calls"]]
        return sum(c[3].startswith("TRANSIENT") for c in calls), len(calls)

    (local_faults, local_calls), (ray_faults, ray_calls) = faults(local), faults(remote)
    print(
        f"scripted agent, {len(keys)} obligation questions, ERP fault rate {args.rate:g}, "
        f"seed {args.seed}; ERP host:port masked"
    )
    print(f"  identical tool-call sequences: {same_calls}/{len(keys)}")
    print(f"  identical answers:             {same_answers}/{len(keys)}")
    print(f"  identical terminations:        {same_reasons}/{len(keys)}")
    print(f"  injected faults met: local {local_faults} of {local_calls} calls, ray {ray_faults} "
          f"of {ray_calls} calls")  # fmt: skip
    print(f"  wall time: local {local_s:.1f} s (5 in flight), ray {ray_s:.1f} s (2 in flight)")
    for key in keys:
        if local[key]["calls"] != remote.get(key, {}).get("calls"):
            show_difference(key, local[key]["calls"], remote.get(key, {}).get("calls") or [])
    return 0 if same_calls == same_answers == len(keys) else 1


if __name__ == "__main__":
    raise SystemExit(main())
