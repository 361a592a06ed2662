"""Generation wall time, CPU time and peak memory of the synthetic ERP at 1x, 10x and 100x.

Each scale runs in a fresh interpreter (so peak RSS is that run's own) into a temporary SQLite file.

    .venv/bin/python bench/bench_generate.py                 # 1x, 10x, 100x
    .venv/bin/python bench/bench_generate.py --scales 1 10   # skip 100x
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, resource, sys, time
from synthetic_erp import generate_erp
scale, url = float(sys.argv[1]), sys.argv[2]
wall, cpu = time.perf_counter(), time.process_time()
report = generate_erp(url, seed=42, scale=scale)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({
    "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
    "rss_mb": usage.ru_maxrss / 1024, "rows": sum(report.row_counts.values()),
    "ledger": report.row_counts["customer_transaction"] + report.row_counts["vendor_transaction"],
    "parties": report.customers + report.vendors,
}))
"""


def run_scale(scale: float, directory: Path) -> dict:
    target = directory / f"erp_{scale:g}x.db"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(scale), f"sqlite:///{target}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["db_mb"] = target.stat().st_size / 1e6
    target.unlink()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1, 10, 100],
                        help="scales to run, e.g. --scales 1 10 (default 1 10 100)")  # fmt: skip
    args = parser.parse_args(argv)
    header = (f"{'scale':>6} {'parties':>8} {'ledger txns':>11} {'rows':>9} {'wall s':>7} "
              f"{'cpu s':>7} {'peak MB':>8} {'db MB':>7} {'us/row':>7}")  # fmt: skip
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for scale in args.scales:
            r = run_scale(scale, Path(tmp))
            print(
                f"{scale:>5g}x {r['parties']:>8,} {r['ledger']:>11,} {r['rows']:>9,} "
                f"{r['wall']:>7.1f} {r['cpu']:>7.1f} {r['rss_mb']:>8.0f} {r['db_mb']:>7.0f} "
                f"{r['cpu'] / r['rows'] * 1e6:>7.1f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
