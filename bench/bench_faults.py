"""Cost of one fault draw (``erp_mcp`` ``--error-rate``), paid on every valid tool call.

Draws are keyed by the call (seed, trial header, tool, canonical JSON of the arguments, occurrence):
two blake2b hashes, a JSON dump with sorted keys and an LRU counter update under a lock. Compared
with the arrival-order draw it replaced (one shared ``random.Random`` under a lock) and with one
``erp_info`` call over in-memory MCP (the cheapest tool), to show the draw is noise next to a call.

    .venv/bin/python bench/bench_faults.py [--draws 200000] [--erp-db URL]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ARGUMENTS = [
    {},
    {"query": "Wholesale", "limit": 5, "party_type": "customer"},
    {"account": "SYNCUS-0042", "legal_entity": "USMF"},
    {"legal_entity": "USMF", "as_of": "2026-03-02", "bucket_edges": [30, 60, 90], "page": 2},
]


def per_draw_us(draw, calls: list, repeats: int = 5) -> float:
    """Median over ``repeats`` of the mean microseconds per draw."""
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        for trial, tool, arguments in calls:
            draw(trial, tool, arguments)
        timings.append((time.perf_counter() - started) / len(calls) * 1e6)
    return statistics.median(timings)


def arrival_order_draw(seed: int):
    """The replaced scheme: one generator shared by every call, in arrival order."""
    rng, lock = random.Random(seed), threading.Lock()

    def draw(trial: str, tool: str, arguments: dict) -> tuple[float, bool]:
        with lock:
            return rng.uniform(0, 20.0), rng.random() < 0.3

    return draw


async def erp_info_call_us(db_url: str, calls: int = 300) -> float:
    from fastmcp import Client

    from erp_mcp import build_server

    async with Client(build_server(db_url)) as client:
        for _ in range(20):
            await client.call_tool("erp_info", {})
        timings = []
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool("erp_info", {})
            timings.append((time.perf_counter() - started) * 1e6)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200_000, help="draws per timing, e.g. 200000")
    parser.add_argument(
        "--erp-db", help="ERP database for the erp_info comparison, e.g. sqlite:///erp.db"
    )
    args = parser.parse_args()
    from erp_mcp import FaultConfig
    from erp_mcp._middleware import FaultDraws

    config = FaultConfig(error_rate=0.3, jitter_ms=20, seed=7)
    calls = [
        (f"obl-{n % 500:04d}#0", f"tool_{n % 7}", ARGUMENTS[n % len(ARGUMENTS)])
        for n in range(args.draws)
    ]
    keyed = per_draw_us(FaultDraws(config).draw, calls)
    old = per_draw_us(arrival_order_draw(7), calls)
    print(f"keyed draw:          {keyed:6.2f} us per call (median of 5 x {args.draws:,})")
    print(f"arrival-order draw:  {old:6.2f} us per call")
    print(f"extra per call:      {keyed - old:6.2f} us")
    if args.erp_db:
        call = asyncio.run(erp_info_call_us(args.erp_db))
        print(
            f"erp_info (in-memory MCP), p50: {call:8.1f} us -> the draw is {keyed / call:.1%} of it"
        )


if __name__ == "__main__":
    main()
