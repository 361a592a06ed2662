"""The rules judge against wrong and right answers: the tables of issues 15, 25 and 37, re-measured.

By default it builds everything with the project's own commands at an ERP seed the tests never
use (2718; the tests use 42): ``python -m synthetic_erp generate``, ``python -m synthetic_erp
questions --n 500`` and a scripted run over them. It then changes every answer the rules judge
finds correct in each wrong way of the issues and of ``tests/judge_corruptions.py`` (caught = it
scores lower on accuracy or citations) and each right way (failed = it scores lower), and prints
both tables (caught % per wrong kind, failed % per right form), how long judging took and the
time to judge 1,000 answers (target: under 30 s).

    .venv/bin/python bench/bench_judge_corruptions.py
    .venv/bin/python bench/bench_judge_corruptions.py --seed 913 --n 1000
    .venv/bin/python bench/bench_judge_corruptions.py --run runs/scripted --dataset d.yaml --erp-db sqlite:///erp.db
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
from tests.judge_corruptions import (  # noqa: E402
    RIGHT_FORMS,
    erp_context,
    judged,
    load_run,
    measure,
    table_markdown,
)


def _command(*args: str) -> None:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", *args], check=True, cwd=REPO, capture_output=True)
    print(f"  {' '.join(args[:2])}: {time.perf_counter() - started:.1f} s")


def prepare(scratch: Path, seed: int, n: int) -> tuple[Path, Path, str]:
    """A fresh ERP at ``seed``, ``n`` questions over it and a scripted run: (run, dataset, db)."""
    db = f"sqlite:///{scratch / 'erp.db'}"
    dataset = scratch / "questions.yaml"
    run_dir = scratch / "scripted"
    print(f"building ERP seed {seed}, {n} questions and a scripted run in {scratch}:")
    _command("synthetic_erp", "generate", "--db", db, "--seed", str(seed), "--overwrite")
    _command("synthetic_erp", "questions", "--db", db, "--n", str(n), "--seed", str(seed),
             "--out", str(dataset))  # fmt: skip
    _command("harnesses.run", "--harness", "scripted", "--dataset", str(dataset), "--erp-db", db,
             "--out", str(run_dir), "--no-progress")  # fmt: skip
    return run_dir, dataset, db


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2718, help="ERP and question seed (2718)")
    parser.add_argument("--n", type=int, default=500, help="questions to generate (500)")
    parser.add_argument(
        "--run", type=Path, help="an existing scripted run (with --dataset, --erp-db)"
    )
    parser.add_argument("--dataset", type=Path, help="the dataset of --run")
    parser.add_argument("--erp-db", help="the ERP database of --run, e.g. sqlite:///erp.db")
    args = parser.parse_args()
    if args.run and not (args.dataset and args.erp_db):
        parser.error("--run needs --dataset and --erp-db")
    with tempfile.TemporaryDirectory() as scratch:
        if args.run:
            run_dir, dataset, db = args.run, args.dataset, args.erp_db
        else:
            run_dir, dataset, db = prepare(Path(scratch), args.seed, args.n)
        pairs = load_run(run_dir, dataset)
        judge = RulesJudge(erp_db_url=db)
        timings = []
        for question, trajectory in pairs:
            started = time.perf_counter()
            judged(judge, question, trajectory)
            timings.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        measurement = measure(pairs, judge, erp_context(db), right_forms=RIGHT_FORMS)
        elapsed = time.perf_counter() - started
        judge.close()
        fresh = RulesJudge(erp_db_url=db)  # nothing remembered from the measurement
        started = time.perf_counter()
        for index in range(1000):
            judged(fresh, *pairs[index % len(pairs)])
        thousand = time.perf_counter() - started
        fresh.close()
    print()
    print(table_markdown(measurement))
    changed = sum(r.touched for r in measurement.rows + measurement.rights)
    print(
        f"rules judge: median {statistics.median(timings):.1f} ms per answer "
        f"(p90 {sorted(timings)[int(0.9 * len(timings))]:.1f} ms, {len(timings)} answers); "
        f"the measurement judged {measurement.baseline_total + changed} answers in {elapsed:.1f} s"
    )
    print(
        f"rules judge: 1,000 obligation answers in {thousand:.1f} s "
        f"({1000 / thousand:,.0f} answers/s; target under 30 s)"
    )
    for row in measurement.rows:
        if row.missed:
            print(f"missed by {row.name}: {', '.join(row.missed[:10])}")
    for row in measurement.rights:
        if row.missed:
            print(f"failed by {row.name}: {', '.join(row.missed[:10])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
