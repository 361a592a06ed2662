"""What a newcomer pays on a fresh clone: `make demo` (install included) and the venv's size.

    python bench/bench_install.py                 # this checkout's HEAD
    python bench/bench_install.py --ref b708b3c   # an older commit, for a before/after
    python bench/bench_install.py --test          # then `make test` too (several minutes)

Clones the repository into a temporary folder (with ../shared linked as scripts/check-fresh-clone
does), runs `make demo` there with no pip or uv cache, and prints the wall time of the whole
command, the pipeline's own time (its "Done in" line) and so the install's, and the venv's size.
One run per call: installs depend on the package index and the machine's load, so quote several
calls' median.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _size_mb(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_size
    return round(total / 1_000_000)


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if completed.returncode != 0:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-5:]
        raise SystemExit(f"{' '.join(command)} failed: " + " | ".join(tail))
    return elapsed, completed.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="HEAD", help="commit to clone (default HEAD)")
    parser.add_argument("--test", action="store_true", help="also time `make test`")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ledgerbench-install-"))
    try:
        clone = work / "ledgerbench"
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
        subprocess.run(["git", "checkout", "--quiet", args.ref], cwd=clone, check=True)
        shared = REPO.parent / "shared"
        if shared.is_dir():
            (work / "shared").symlink_to(shared.resolve())
        env = dict(os.environ, PIP_NO_CACHE_DIR="1", UV_NO_CACHE="1")
        demo_s, out = _timed(["make", "demo"], clone, env)
        done = re.search(r"Done in ([\d.]+) s", out)
        pipeline_s = float(done.group(1)) if done else float("nan")
        install_s = demo_s - pipeline_s
        line = (
            f"{args.ref}: make demo {demo_s:.0f} s on a fresh clone (install {install_s:.0f} s, "
            f"pipeline {pipeline_s:.0f} s); venv {_size_mb(clone / '.venv')} MB"
        )
        if args.test:
            test_s, _ = _timed(["make", "test"], clone, env)
            line += f"; make test {test_s:.0f} s (its extras' install included)"
        print(line)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
