"""Benchmark: the research keys recomputed from the rendered documents, per world seed.

Run: ``.venv/bin/python bench/bench_world_recompute.py`` (optionally ``--seeds 42 7 --repeat 3
--scale 1``). For each world seed it generates the seed-42 ERP once, then the world, keys the
126-item entity set and the 30-item brief set (question seed 1), parses every document with
tests/world_documents.py and recomputes every item with tests/world_recompute.py (the briefs' ERP
facts from the ledger with tests/erp_position_recompute.py). Prints, per
seed, the wall and CPU seconds of each step (median of the repeats) and, per question kind, the
items and facts recomputed, the items whose key matches the documents, and the mismatches by
cause (a known defect, or none: unexplained). The work is single-threaded, so on a busy shared
machine the CPU time is the better estimate of the unloaded wall time.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' parser

from ledgerbench_core.dataset import Dataset
from tests.erp_position_recompute import ERP_PREFIXES, erp_mismatches
from tests.world_documents import load_world
from tests.world_recompute import Recompute, compare_item

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SETS = (("entity_performance", 126), ("business_brief", 30))


def timed(clock: dict, name: str, work):
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    clock.setdefault(name, []).append((time.perf_counter() - wall, time.process_time() - cpu))
    return result


def run_seed(erp_url: str, folder: Path, seed: int, scale: float, clock: dict):
    from synthetic_world._cli import main as world_cli

    world_db = folder / f"world{seed}.db"
    world_db.unlink(missing_ok=True)
    common = ["--db", f"sqlite:///{world_db}", "--erp-db", erp_url]
    timed(
        clock,
        "generate world",
        lambda: world_cli(
            ["generate", *common, "--seed", str(seed), "--scale", str(scale), "--quiet"]
        ),
    )
    items = []
    for task_type, n in SETS:
        out = folder / f"{task_type}{seed}.yaml"
        out.unlink(missing_ok=True)
        args = ["questions", *common, "--task-type", task_type, "--n", str(n), "--seed", "1"]
        timed(clock, "key questions", lambda args=args, out=out: world_cli([*args, f"--out={out}"]))
        items += Dataset.model_validate(yaml.load(out.read_text(), Loader=LOADER)).items
    world = timed(clock, "parse documents", lambda: load_world(world_db))
    recompute = Recompute(world, sqlite3.connect(world_db))
    results = timed(
        clock, "recompute keys", lambda: [(item, *compare_item(recompute, item)) for item in items]
    )
    erp = sqlite3.connect(erp_url.removeprefix("sqlite:///"))
    briefs = [item for item in items if item.task_type == "business_brief"]
    erp_facts = sum(1 for b in briefs for f in b.expected if f.field.startswith(ERP_PREFIXES))
    wrong = sum(len(erp_mismatches(erp, b)) for b in briefs)
    earlier = sum(b.as_of < world.today for b in briefs)
    print(
        f"\nbriefs' ERP facts recomputed from the ledger (tests/erp_position_recompute.py): "
        f"{erp_facts} facts on {len(briefs)} briefs ({earlier} as of an earlier day), "
        f"{wrong} mismatches"
    )
    return world, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 7], help="world seeds")
    parser.add_argument("--scale", type=float, default=1.0, help="world scale (default 1)")
    parser.add_argument("--repeat", type=int, default=1, help="repetitions (median shown)")
    args = parser.parse_args()
    from synthetic_erp import generate_erp

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        erp_url = f"sqlite:///{folder / 'erp.db'}"
        generate_erp(erp_url, seed=42)
        for seed in args.seeds:
            clock: dict = {}
            for _ in range(args.repeat):
                world, results = run_seed(erp_url, folder, seed, args.scale, clock)
            print(
                f"\nworld seed {seed} (scale {args.scale}): {len(world.docs):,} documents, "
                f"{len(world.figures):,} figures and {len(world.events):,} events parsed, "
                f"{len(world.problems)} documents unparsed"
            )
            print(f"{'step':<18}{'wall s':>9}{'cpu s':>9}")
            for name, samples in clock.items():
                wall = statistics.median(s[0] for s in samples)
                cpu = statistics.median(s[1] for s in samples)
                print(f"{name:<18}{wall:>9.2f}{cpu:>9.2f}")
            report(results)


def report(results) -> None:
    items, facts, matched, causes = Counter(), Counter(), Counter(), Counter()
    for item, mismatches, compared in results:
        kind = "brief" if item.task_type == "business_brief" else item.metadata["kind"]
        items[kind] += 1
        facts[kind] += compared
        matched[kind] += not mismatches
        for cause in {m.cause or "unexplained" for m in mismatches}:
            causes[(kind, cause)] += 1
    print(f"{'kind':<24}{'items':>6}{'facts':>7}{'match':>7}  items with mismatches, by cause")
    for kind in sorted(items):
        why = ", ".join(f"{c} {n}" for (k, c), n in sorted(causes.items()) if k == kind)
        print(f"{kind:<24}{items[kind]:>6}{facts[kind]:>7}{matched[kind]:>7}  {why}")
    print(
        f"{'total':<24}{sum(items.values()):>6}{sum(facts.values()):>7}{sum(matched.values()):>7}"
    )


if __name__ == "__main__":
    main()
