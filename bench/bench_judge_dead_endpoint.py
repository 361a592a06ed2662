"""How long ``python -m judge.run`` takes to stop on a dead judge endpoint (issue 25: within 30 s,
with one line): a port nobody listens on (connection refused) and a server that accepts every
connection and never answers. Wall time of the whole command, interpreter start included.

    .venv/bin/python bench/bench_judge_dead_endpoint.py            # 3 runs of each
    .venv/bin/python bench/bench_judge_dead_endpoint.py --repeat 5
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ledgerbench_core.dataset import Dimension  # noqa: E402
from tests.fakes.dead_server import silent_server  # noqa: E402
from tests.fakes.judge_data import question, trajectory, write_run  # noqa: E402


def _stop_time(run_dir: Path, base_url: str) -> tuple[float, str]:
    env = dict(os.environ, BENCH_KEY="k", LITELLM_LOCAL_MODEL_COST_MAP="True")
    argv = [sys.executable, "-m", "judge.run", str(run_dir), "--judge", "openai/gpt-4o-mini",
            "--base-url", base_url, "--api-key-env", "BENCH_KEY", "--no-progress"]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    seconds = time.monotonic() - started
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return seconds, f"exit {done.returncode}, {len(lines)} line(s): {lines[-1] if lines else ''}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each case (3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tags = {Dimension.clarity: ["clarity.acronyms"]}
        run_dir = write_run(
            Path(scratch) / "run",
            [question(f"q{i}", tags=tags) for i in range(20)],
            [trajectory(f"q{i}", answer="an answer") for i in range(20)],
        )
        for case in ("refused", "hung"):
            times, last = [], ""
            for _ in range(args.repeat):
                if case == "refused":
                    seconds, last = _stop_time(run_dir, f"http://127.0.0.1:{_free_port()}/v1")
                else:
                    with silent_server() as server:
                        seconds, last = _stop_time(run_dir, server.url)
                times.append(seconds)
            print(
                f"{case}: median {statistics.median(times):.1f} s (max {max(times):.1f} s, "
                f"{args.repeat} runs); {last[:220]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
