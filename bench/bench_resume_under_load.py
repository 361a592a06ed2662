"""A run, its resume after ``kill -9`` and a ``--retry-errors`` run, with busy loops beside them.

    python bench/bench_resume_under_load.py [--busy 4] [--limit 12]

The scripted harness on the obligation set; the first start is killed with SIGKILL once a record
is written, then the same command resumes it, then ``--retry-errors`` runs it again. Each prints
its exit code and wall time, and the load average beside it. Goal (issue 40): both succeed with
4 busy loops (``yes > /dev/null``) beside them; at load 20 they succeed or fail with a line that
names the server step still running.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_server_start import busy_loops  # noqa: E402
from ledgerbench_core._startup import describe_load  # noqa: E402


def _command(out: Path, limit: int, *extra: str) -> list[str]:
    return [
        *(sys.executable, "-m", "harnesses.run", "--harness", "scripted"),
        *("--task-type", "obligations", "--limit", str(limit), "--concurrency", "2"),
        *("--out", str(out), "--no-progress", *extra),
    ]


def _records(out: Path) -> int:
    path = out / "trajectories.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def _timed(command: list[str]) -> tuple[int, float, str]:
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return done.returncode, time.monotonic() - started, lines[-1] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=4)
    parser.add_argument("--limit", type=int, default=12)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="bench-resume-")) / "run"
    ok = True
    with busy_loops(args.busy):
        print(f"{args.busy} busy loops beside{describe_load()}")
        started = time.monotonic()
        first = subprocess.Popen(
            _command(out, args.limit), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        while _records(out) == 0 and first.poll() is None:
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        print(f"first start: killed (-9) after {time.monotonic() - started:.1f} s with "
              f"{_records(out)} record(s)")  # fmt: skip
        for name, extra in (("resume", ()), ("--retry-errors", ("--retry-errors",))):
            code, wall, last = _timed(_command(out, args.limit, *extra))
            ok = ok and code == 0
            print(f"{name:15} exit {code} in {wall:.1f} s, {_records(out)} records{describe_load()}"
                  + ("" if code == 0 else f": {last}"))  # fmt: skip
    shutil.rmtree(out.parent, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    raise SystemExit(main())
