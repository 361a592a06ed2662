"""The rules judge against corrupted answers: the table of issue 15, re-measured.

Runs the scripted agent over the default obligations dataset (or reuses ``--run DIR``), corrupts
every answer the rules judge finds correct in each way of the issue, re-judges it and prints caught
/ touched per corruption, plus how long judging took.

    .venv/bin/python bench/bench_judge_corruptions.py
    .venv/bin/python bench/bench_judge_corruptions.py --run runs/scripted --erp-db sqlite:///erp.db
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from judge._rules import RulesJudge  # noqa: E402
from tests.judge_corruptions import erp_neighbour, judged, load_run, measure, table_markdown  # noqa: E402

DATASET = REPO / "datasets" / "obligations.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="an existing scripted run over the dataset")
    parser.add_argument(
        "--erp-db",
        default=f"sqlite:///{REPO / '.ledgerbench' / 'erp.db'}",
        help="ERP database the run used (default: the project's .ledgerbench/erp.db)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = args.run
        if run_dir is None:
            run_dir = Path(scratch) / "scripted"
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "harnesses.run", "--harness", "scripted", "--dataset",
                 str(DATASET), "--erp-db", args.erp_db, "--out", str(run_dir), "--no-progress"],
                check=True, cwd=REPO, capture_output=True,
            )  # fmt: skip
            print(f"scripted run: {time.perf_counter() - started:.1f} s")
        pairs = load_run(run_dir, DATASET)
        judge = RulesJudge(erp_db_url=args.erp_db)
        timings = []
        for question, trajectory in pairs:
            started = time.perf_counter()
            judged(judge, question, trajectory)
            timings.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        measurement = measure(pairs, judge, erp_neighbour(args.erp_db))
        elapsed = time.perf_counter() - started
        judge.close()
    print(table_markdown(measurement))
    judged_answers = measurement.baseline_total + sum(r.touched for r in measurement.rows)
    print(
        f"rules judge: median {statistics.median(timings):.1f} ms per answer "
        f"(p90 {sorted(timings)[int(0.9 * len(timings))]:.1f} ms, {len(timings)} answers); "
        f"the whole measurement judged {judged_answers} answers in {elapsed:.1f} s"
    )
    for row in measurement.rows:
        if row.missed:
            print(f"missed by {row.name}: {', '.join(row.missed[:10])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
