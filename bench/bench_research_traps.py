"""Analyst work and traps of keyed research sets: the issue-38 table, and per question kind the
share of items whose natural search meets a hard negative in its top five.

For each entity set given (default: the shipped datasets/entity_performance.yaml on the default
world, rebuilt from its seeds when missing) it prints: items, median and 90th-percentile
question length in words, the share of analyst items (a business context and several asks), the
share of items with three or more keyed asks, the segment counts, and per kind the items and how
many met a hard negative (synthetic_world/_traps.py says what counts as one).

    .venv/bin/python bench/bench_research_traps.py [--dataset FILE --world-db sqlite:///w.db]
        [--draw 500]

With ``--draw N`` it also times drawing N entity items on that world (the generator's own
function, in this process: wall and CPU seconds; issue 38's target is under 10 s for 500).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ledgerbench_core.dataset import load_dataset  # noqa: E402
from synthetic_world._runtime import connect_read_only  # noqa: E402
from synthetic_world._traps import TrapFinder  # noqa: E402


def shape(items) -> list[tuple[str, str]]:
    words = sorted(len(item.query.split()) for item in items)
    p90 = words[min(len(words) - 1, int(0.9 * len(words)))]
    asks = [len({f.ask for f in item.expected if f.ask}) for item in items]
    segments = Counter(item.segment for item in items)
    return [
        ("items", str(len(items))),
        ("median words (p90)", f"{statistics.median(words):g} ({p90})"),
        ("analyst items", f"{sum(bool(i.asks) for i in items) / len(items):.0%}"),
        ("items with 3+ keyed asks", f"{sum(a >= 3 for a in asks) / len(items):.0%}"),
        ("segments", " / ".join(str(n) for n in segments.values())),
        ("not reported / not disclosed / none", str(sum(i.metadata["negative"] for i in items))),
    ]


def exposure(items, world: Path) -> dict[str, tuple[int, int]]:
    conn = connect_read_only(world)
    try:
        finder = TrapFinder(conn)
        names = dict(conn.execute("SELECT company_id, name FROM company"))
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for item in items:
            company = item.metadata["company_id"]
            found = finder.hard_negatives(
                item.metadata["kind"],
                company,
                names[company],
                item.metadata.get("params") or {},
                item.gold_documents,
                item.as_of,
            )
            out[item.metadata["kind"]][0] += 1
            out[item.metadata["kind"]][1] += bool(found)
        return {kind: (n, met) for kind, (n, met) in sorted(out.items())}
    finally:
        conn.close()


CANNED = "The figure is not yet reported; the company has not disclosed it."


def canned(items) -> tuple[int, float]:
    """The rules judge's accuracy of a canned "not reported / not disclosed" answer, with no
    lookup, on the "not yet reported" items (those whose key gives a latest reported figure)."""
    from judge._research import rule_research_facts
    from judge._rules import RuleContext

    asked = [
        item
        for item in items
        if item.metadata["negative"]
        and any(f.kind == "not_disclosed" and f.value == "not yet reported" for f in item.expected)
    ]
    scores = [
        rule_research_facts(RuleContext(item, CANNED, None, "accuracy.research_key")).score
        for item in asked
    ]
    return len(asked), statistics.fmean(scores) if scores else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset", type=Path, default=ROOT / "datasets" / "entity_performance.yaml"
    )
    parser.add_argument("--world-db", help="the world the set is keyed on (default: rebuilt)")
    parser.add_argument("--draw", type=int, default=0, help="also time drawing N entity items")
    args = parser.parse_args()
    dataset = load_dataset(args.dataset)
    if args.world_db:
        world = Path(args.world_db.removeprefix("sqlite:///"))
    else:
        from harnesses._erp_process import ensure_default_erp
        from harnesses._world_serving import ensure_default_world

        world = ensure_default_world(
            ensure_default_erp(),
            seed=dataset.header.world_seed,
            expected_snapshot=dataset.header.world_snapshot_hash,
        )
    items = dataset.items
    print(f"{args.dataset.name} on world {dataset.header.world_id}")
    for label, value in shape(items):
        print(f"  {label:<38}{value}")
    asked, accuracy = canned(items)
    print(f"  {'canned not-reported answer, accuracy':<38}{accuracy:.3f} on {asked} items")
    rows = exposure(items, world)
    total = sum(n for n, _ in rows.values())
    met = sum(m for _, m in rows.values())
    print(f"\n  {'kind':<26}{'items':>7}{'hard negative in top 5':>26}")
    for kind, (n, hit) in rows.items():
        print(f"  {kind:<26}{n:>7}{hit:>12} ({hit / n:.0%})")
    print(f"  {'all':<26}{total:>7}{met:>12} ({met / total:.0%})")
    if args.draw:
        wall, cpu = draw_time(world, args.draw)
        print(f"\n  drawing {args.draw} entity items: {wall:.1f} s wall, {cpu:.1f} s CPU")


def draw_time(world: Path, n: int) -> tuple[float, float]:
    import time

    from synthetic_world._keys import KeyContext
    from synthetic_world._questions import entity_questions

    conn = connect_read_only(world)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        entity_questions(KeyContext(conn), n, 1, {})
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        conn.close()


if __name__ == "__main__":
    main()
