"""Heavy aggregates of the ERP MCP server at 1x and 100x, idle and beside busy loops (issue 40).

    python bench/bench_aggregates.py [--busy 4] [-n 15] [--repo DIR] [--db1 P] [--db100 P]
                                     [--only TEXT] [--cpu]

It starts the server of this checkout (or of ``--repo DIR``, e.g. an older checkout, for a before
figure) on a 1x and a 100x ERP and, with the official ``mcp`` client:

1. idle: calls every aggregate case (each aggregate tool on today and on past as-of dates, by
   legal entity, by party type, by group and currency, per party) on both scales in turns and
   prints each p50 and the slowest at 100x;
2. with ``--busy N`` ``yes > /dev/null`` loops beside the servers: the same table again, each
   case's 100x / 1x ratio, then another session's ``erp_info`` p50 / p99 at 100x alone and while
   a second process loops over the heaviest aggregate of the table.

``--only TEXT`` keeps the cases whose name holds TEXT (e.g. ``query_entity_set``); ``--cpu`` adds,
after the idle table, each case's server CPU per call at both scales (``-n`` calls each, apart).
The load average is printed beside each phase. The ERPs are generated once (seed 42) and cached:
the 100x file (about 1 GB, a few minutes) at ``--db100``. Goals (issue 40): every aggregate at
100x within 3x of its 1x p50 with the busy loops (past as-of dates included), the slowest under
500 ms idle, and another session's p99 beside the heaviest within 3x of alone.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sqlite3
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import bench_mcp  # noqa: E402
from bench_server_start import busy_loops  # noqa: E402

from ledgerbench_core._startup import describe_load  # noqa: E402

DEFAULT_DB = "/tmp/ledgerbench_bench_{scale:g}x.db"


def cases(db: Path) -> dict[str, list[dict]]:
    """Per case (a tool, with a note in brackets), its argument dicts, from the ERP's today."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        today = dt.date.fromisoformat(
            conn.execute("select value from erp_meta where key='as_of'").fetchone()[0]
        )
        agents = [
            a
            for (a,) in conn.execute(
                "select distinct owner_agent_id from collection_activity "
                "where legal_entity = 'USMF' order by 1 limit 3"
            )
        ]
    finally:
        conn.close()
    return case_pools(today, agents)


def cases_named() -> list[str]:
    """The cases' names (the same for every ERP)."""
    return list(case_pools(dt.date(2026, 3, 2), ["CA001"]))


def case_pools(today: dt.date, agents: list[str]) -> dict[str, list[dict]]:
    """Per case, its argument dicts for an ERP whose today is ``today`` and whose collection
    agents in USMF include ``agents``."""
    past = [(today - dt.timedelta(days=d)).isoformat() for d in (61, 200)]
    year = today.year - 1
    months_back = (today - dt.timedelta(days=150)).replace(day=1)  # 2025-10-01 at seed 42
    month = dt.timedelta(days=30)
    vendor = {"party_type": "vendor"}
    return {
        "get_aging (all customers)": [{}],
        "get_aging (all vendors)": [vendor],
        "get_aging (by legal entity)": [{"group_by": "legal_entity"}],
        "get_aging (by legal entity, vendors)": [{"group_by": "legal_entity", **vendor}],
        "get_aging (by legal entity, past)": [
            {"group_by": "legal_entity", "as_of": d} for d in past
        ],
        "get_aging (by legal entity, vendors, past)": [
            {"group_by": "legal_entity", "as_of": d, **vendor} for d in past
        ],
        "get_aging (one legal entity by currency, past)": [
            {"group_by": "currency", "legal_entity": "USMF", "as_of": d} for d in past
        ],
        "get_aging (by group, vendors, past)": [
            {"group_by": "group", "as_of": d, **vendor} for d in past
        ],
        "get_aging (per party, past)": [{"as_of": d} for d in past],
        "get_aging (per party, one legal entity, past)": [
            {"as_of": d, "legal_entity": "USMF", "limit": 20} for d in past
        ],
        "rank_parties (invoiced, a year)": [
            {"measure": "invoiced", "date_from": f"{year}-01-01", "date_to": f"{year}-12-31"}
        ],
        "rank_parties (paid, vendors, a year)": [
            {"measure": "paid", "date_from": f"{year}-01-01", "date_to": f"{year}-12-31", **vendor}
        ],
        "rank_parties (invoiced, a quarter)": [
            {"measure": "invoiced", "date_from": f"{year}-07-01", "date_to": f"{year}-09-30"}
        ],
        "rank_parties (paid, vendors, a month)": [
            {"measure": "paid", "date_from": f"{year}-11-01", "date_to": f"{year}-11-30", **vendor}
        ],
        "rank_parties (open)": [{"measure": "open", "top_n": 10}],
        "get_vendor_spend (top 10)": [{"legal_entity": "USMF", "top_n": 10}],
        "get_collections_worklist (agent)": [
            {"agent_id": a, "legal_entity": "USMF"} for a in agents
        ],
        "get_collections_worklist (agent, past)": [
            {"agent_id": a, "legal_entity": "USMF", "as_of": past[0]} for a in agents
        ],
        "query_entity_set (sum by legal entity and type)": [
            {
                "entity_set": "customer-transactions",
                "group_by": ["legal_entity", "txn_type"],
                "aggregates": [{"op": "sum", "field": "amount_acct"}, {"op": "count"}],
            }
        ],
        "query_entity_set (sum by legal entity, from a date)": [
            {
                "entity_set": "customer-transactions",
                "group_by": ["legal_entity"],
                "filters": [{"field": "txn_date", "op": "ge", "value": d}],
                "aggregates": [{"op": "sum", "field": "amount_acct"}],
            }
            for d in (months_back.isoformat(), past[1])
        ],
        "query_entity_set (by legal entity and type, a year)": [
            {
                "entity_set": "vendor-transactions",
                "group_by": ["legal_entity", "txn_type"],
                "filters": [
                    {"field": "txn_date", "op": "gt", "value": f"{year}-03-01"},
                    {"field": "txn_date", "op": "le", "value": today.isoformat()},
                ],
                "aggregates": [{"op": "sum", "field": "amount_acct"}, {"op": "count"}],
            }
        ],
        "query_entity_set (open by legal entity, due in a month)": [
            {
                "entity_set": "vendor-transactions",
                "group_by": ["legal_entity"],
                "filters": [
                    {"field": "due_date", "op": "gt", "value": today.isoformat()},
                    {"field": "due_date", "op": "le", "value": (today + month).isoformat()},
                ],
                "aggregates": [{"op": "sum", "field": "open_amount_acct"}, {"op": "count"}],
            }
        ],
        "query_entity_set (per day and type, a quarter)": [
            {
                "entity_set": "vendor-transactions",
                "group_by": ["txn_date", "txn_type"],
                "filters": [
                    {"field": "txn_date", "op": "ge", "value": f"{year}-07-01"},
                    {"field": "txn_date", "op": "le", "value": f"{year}-09-30"},
                ],
                "aggregates": [{"op": "sum", "field": "amount_cur"}, {"op": "count"}],
                "top": 100,
            }
        ],
        "list_settlements (vendors, 500)": [{"party_type": "vendor", "page_size": 500}],
        "list_cash_discounts (a legal entity)": [
            {"expiring_within_days": 30, "legal_entity": "USMF"}
        ],
        "list_collection_cases (no filter)": [{}],
    }


async def cpu_table(servers: dict[str, tuple[str, dict]], pids: dict[str, int], n: int) -> dict:
    """Per scale and case, the server's CPU milliseconds per call over ``n`` calls."""
    found: dict[str, dict[str, float]] = {label: {} for label in servers}
    for label, (url, args) in servers.items():
        async with bench_mcp.Session(url) as session:
            for case, pool in args.items():
                tool = case.split(" ")[0]
                await session.call(tool, pool[0])
                before = bench_mcp.process_cpu_s(pids[label])
                for i in range(n):
                    await session.call(tool, pool[i % len(pool)])
                spent = bench_mcp.process_cpu_s(pids[label]) - before
                found[label][case] = round(spent / n * 1000, 2)
    print(f"\n   {'case':52} {'1x CPU':>9} {'100x CPU':>10}  (server, per call)")
    for case, one in found["1x"].items():
        print(f"   {case:52} {one:6.1f} ms {found['100x'].get(case, 0.0):8.1f} ms", flush=True)
    return found


async def latency_table(servers: dict[str, tuple[str, dict]], options) -> dict[str, dict]:
    results = await bench_mcp.latency_in_turns(
        servers, options.n, options.case_seconds, options.turns
    )
    return results


def ratios(table: dict[str, dict]) -> dict[str, float]:
    one, hundred = table["1x"], table["100x"]
    return {
        case: round(hundred[case]["p50_ms"] / one[case]["p50_ms"], 2)
        for case in one
        if case in hundred and one[case]["p50_ms"] > 0
    }


def print_ratios(table: dict[str, dict], goal: float = 3.0) -> dict[str, float]:
    found = ratios(table)
    print(f"\n   {'case':52} {'1x p50':>9} {'100x p50':>10} {'ratio':>7}")
    for case, ratio in found.items():
        mark = "" if ratio <= goal else "  over 3x"
        one, hundred = table["1x"][case]["p50_ms"], table["100x"][case]["p50_ms"]
        print(f"   {case:52} {one:7.1f} ms {hundred:8.1f} ms {ratio:6.2f}x{mark}", flush=True)
    over = [c for c, r in found.items() if r > goal]
    print(f"   {len(found) - len(over)} of {len(found)} aggregates within {goal:g}x of 1x")
    return found


def slowest(row: dict[str, dict]) -> tuple[str, float]:
    case = max((c for c in row if c != "ping"), key=lambda c: row[c]["p50_ms"])
    return case, row[case]["p50_ms"]


async def lookup_beside_heaviest(url: str, heaviest: tuple[str, list[dict]], n: int) -> dict:
    quiet = await bench_mcp.quiet_latency(url, n)
    tool = heaviest[0].split(" ")[0]
    loud = await bench_mcp.beside(url, n, [(tool, a) for a in heaviest[1]])
    out = {
        "alone_p50_ms": round(statistics.median(quiet), 2),
        "alone_p99_ms": round(bench_mcp.percentile(quiet, 99), 2),
        "beside": heaviest[0],
        "beside_p50_ms": loud["p50_ms"],
        "beside_p99_ms": loud["p99_ms"],
        "heavy_calls": loud["other_calls"],
    }
    out["p99_ratio"] = round(out["beside_p99_ms"] / out["alone_p99_ms"], 2)
    print(
        f"   erp_info alone:  p50 {out['alone_p50_ms']:7.2f} ms  p99 {out['alone_p99_ms']:7.2f} ms"
    )
    print(f"   erp_info beside {heaviest[0]} ({out['heavy_calls']} calls): p50 "
          f"{out['beside_p50_ms']:7.2f} ms  p99 {out['beside_p99_ms']:7.2f} ms = "
          f"{out['p99_ratio']:.2f}x alone{describe_load()}", flush=True)  # fmt: skip
    return out


async def run(options: argparse.Namespace) -> dict[str, Any]:
    dbs = {"1x": Path(options.db1), "100x": Path(options.db100)}
    for label, path in dbs.items():
        bench_mcp.ensure_db(path, float(label.removesuffix("x")))
    repo = Path(options.repo).resolve()
    started = {label: bench_mcp.start_server(db, repo) for label, db in dbs.items()}
    results: dict[str, Any] = {"repo": str(repo), "busy": options.busy, "n": options.n}
    try:
        for process, _ in started.values():
            await bench_mcp.wait_until_idle(process.pid)
        servers = {
            label: (url, _only(cases(dbs[label]), options.only))
            for label, (_, url) in started.items()
        }
        print(f"\n== idle{describe_load()} ==", flush=True)
        idle = await latency_table(servers, options)
        print_ratios(idle)
        case, p50 = slowest(idle["100x"])
        print(f"\n   slowest aggregate at 100x idle: {case} p50 {p50:.1f} ms (goal < 500 ms)")
        results["idle"] = {"latency": idle, "ratios": ratios(idle), "slowest": [case, p50]}
        if options.cpu:
            pids = {label: process.pid for label, (process, _) in started.items()}
            results["idle"]["cpu_ms"] = await cpu_table(servers, pids, options.n)
        if options.busy:
            with busy_loops(options.busy):
                print(f"\n== {options.busy} busy loops beside{describe_load()} ==", flush=True)
                busy = await latency_table(servers, options)
                found = print_ratios(busy)
                heavy = max(busy["100x"], key=lambda c: busy["100x"][c]["p50_ms"])
                print(f"\n   lookups at 100x beside the heaviest aggregate ({heavy}):")
                beside = await lookup_beside_heaviest(
                    started["100x"][1], (heavy, servers["100x"][1][heavy]), options.lookups
                )
                results["busy"] = {"latency": busy, "ratios": found, "lookup": beside,
                                   "load": describe_load()}  # fmt: skip
    finally:
        for process, _ in started.values():
            bench_mcp.stop_server(process)
    return results


def _only(found: dict[str, list[dict]], text: str | None) -> dict[str, list[dict]]:
    return {case: pool for case, pool in found.items() if text is None or text in case}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=0,
                        help="yes loops beside the servers in the second phase")  # fmt: skip
    parser.add_argument("-n", type=int, default=15, help="calls per case and scale (default 15)")
    parser.add_argument("--turns", type=int, default=3, help="turns the scales answer in")
    parser.add_argument("--case-seconds", type=float, default=6.0,
                        help="a case stops after this long once it has 5 calls")  # fmt: skip
    parser.add_argument("--lookups", type=int, default=300,
                        help="erp_info calls alone and beside the heaviest aggregate")  # fmt: skip
    parser.add_argument("--repo", default=str(REPO), help="checkout whose server to measure")
    parser.add_argument("--db1", default=DEFAULT_DB.format(scale=1), help="1x ERP (SQLite file)")
    parser.add_argument("--db100", default=DEFAULT_DB.format(scale=100),
                        help="100x ERP (SQLite file; generated if missing)")  # fmt: skip
    parser.add_argument("--only", help="only the cases whose name holds this text")
    parser.add_argument("--cpu", action="store_true",
                        help="also each case's server CPU per call at both scales")  # fmt: skip
    parser.add_argument("--json", help="write the figures to this file")
    options = parser.parse_args(argv)
    if options.busy < 0 or options.n < 5:
        parser.error("--busy must be 0 or more and -n at least 5")
    if options.only is not None and not any(options.only in case for case in cases_named()):
        parser.error(
            f"--only {options.only!r} matches no case; the cases: {', '.join(cases_named())}"
        )
    if not (Path(options.repo) / "erp_mcp").is_dir():
        parser.error(f"--repo {options.repo} holds no erp_mcp package; give a checkout")
    results = asyncio.run(run(options))
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
