"""The research corruption table, at a world seed the tests never use, and the rules judge's pace.

Builds (once, in --work) a world at seed 2718 beside the default ERP, draws N entity questions
(default 300) with the project's own command, runs the scripted agent on them through MCP, then:

- corrupts its right answers in the five wrong ways and rewrites them in the three right ways of
  tests/research_corruptions.py, and prints the table: how many answers each kind touched and how
  many lost accuracy (targets: at least 95% of each wrong kind, no right one);
- times the rules judge (every research rule: accuracy, world citations, groundedness, recency)
  on 1,000 research answers (the run's answers, repeated) and prints answers per second (target:
  1,000 in under 30 s).

    .venv/bin/python bench/bench_research_corruptions.py
    .venv/bin/python bench/bench_research_corruptions.py -n 126 --work /tmp/rc
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WORLD_SEED = 2718
"""No test uses this world seed."""


def _step(args: list[str]) -> None:
    subprocess.run([sys.executable, "-m", *args], cwd=REPO, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=300, help="entity questions (default 300)")
    parser.add_argument(
        "--seed", type=int, default=WORLD_SEED, help=f"world seed (default {WORLD_SEED})"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/ledgerbench_research_corruptions"))
    args = parser.parse_args()
    from harnesses._erp_process import ensure_default_erp
    from judge._base import JudgeItem
    from judge._rules import RulesJudge
    from ledgerbench_core.dataset import load_dataset
    from ledgerbench_core.trajectory import TrajectoryRecord
    from tests import research_corruptions as rc

    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    erp = ensure_default_erp()
    world = work / f"world-{args.seed}.db"
    if not world.exists():
        _step(
            [
                "synthetic_world",
                "generate",
                "--erp-db",
                erp,
                "--db",
                f"sqlite:///{world}",
                "--seed",
                str(args.seed),
                "--quiet",
            ]
        )
    dataset = work / f"entity-{args.seed}-{args.n}.yaml"
    if not dataset.exists():
        _step(
            [
                "synthetic_world",
                "questions",
                "--db",
                f"sqlite:///{world}",
                "--erp-db",
                erp,
                "--n",
                str(args.n),
                "--seed",
                "5",
                "--out",
                str(dataset),
            ]
        )
    run_dir = work / f"run-{args.seed}-{args.n}"
    started = time.perf_counter()
    _step(
        [
            "harnesses.run",
            "--harness",
            "scripted",
            "--dataset",
            str(dataset),
            "--erp-db",
            erp,
            "--world-db",
            f"sqlite:///{world}",
            "--out",
            str(run_dir),
            "--no-progress",
        ]
    )
    print(f"scripted run of {args.n} questions: {time.perf_counter() - started:.0f} s")
    items = {item.id: item for item in load_dataset(dataset).items}
    records = [
        TrajectoryRecord.model_validate_json(line)
        for line in (run_dir / "trajectories.jsonl").read_text().splitlines()
    ]
    pairs = [(items[r.question_id], r) for r in records]
    judge = RulesJudge(world_db=str(world))
    ledger = rc.Ledger.open(world)
    right_before = sum(rc.accuracy(judge, q, r, r.answer) == 1.0 for q, r in pairs)
    print(f"right before corruption: {right_before}/{len(pairs)}")
    wrong = rc.measure(pairs, judge, ledger, rc.WRONG)
    right = rc.measure(pairs, judge, ledger, rc.RIGHT)
    print(rc.table(wrong, right))
    fresh = RulesJudge(world_db=str(world))
    answers = [pairs[i % len(pairs)] for i in range(1000)]
    started = time.perf_counter()
    for question, record in answers:
        fresh.score(JudgeItem(question=question, trajectory=record))
    elapsed = time.perf_counter() - started
    print(
        f"rules judge: 1,000 research answers in {elapsed:.1f} s "
        f"({1000 / elapsed:,.0f} answers/s; target under 30 s)"
    )


if __name__ == "__main__":
    main()
