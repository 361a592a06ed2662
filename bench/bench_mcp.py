"""Latency and throughput of the ERP MCP server over streamable HTTP on loopback.

For each data scale (1x and 100x) it starts ``python -m erp_mcp --transport http --bench-tools``
on a free loopback port and, with the official ``mcp`` client:
- calls every tool sequentially with realistic arguments (drawn from the database, varied per call)
  and prints p50 / p99 latency per tool, next to the no-op ``ping`` tool measured in the same run
  (the floor), and each tool's p50 / p99 as a ratio to that floor;
- runs 1, 8 and 32 concurrent client sessions for a fixed time on a single-record tool and on ping
  and prints calls per second with the per-call p50 / p99;
- measures interference: one session sends hostile calls (huge page numbers, dates near year 1 or
  9999, oversized bucket edges, a 100k-value ``in`` list, kilobyte strings) in a loop while another
  measures ``erp_info`` latency; it prints that p50 / p99 next to the quiet figure.

``--repo DIR`` runs the server from another checkout, for before/after figures, e.g. main:

    .venv/bin/python bench/bench_mcp.py                     # 1x and 100x (generates 100x once)
    .venv/bin/python bench/bench_mcp.py --skip-100x -n 50   # quick look at 1x only
    .venv/bin/python bench/bench_mcp.py --skip-100x --only-interference --repo /work/main  # before
    .venv/bin/python bench/bench_mcp.py --json out.json     # also write the figures as JSON

Targets (issue 3): at 1x p99 < 20 ms for single-record tools and < 100 ms for aggregates; at 100x
under 3x the 1x figure; single-record tools within 2x of the no-op floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_1X = Path("/tmp/ledgerbench_bench_1x.db")
DEFAULT_100X = Path("/tmp/ledgerbench_bench_100x.db")

SINGLE_RECORD = {
    "get_customer",
    "get_vendor",
    "get_sales_order",
    "get_purchase_order",
    "get_vendor_invoice",
    "get_payment_journal",
    "search_parties",
    "erp_info",
    "describe_entity_set",
    "list_entity_sets",
}

HOSTILE_CALLS = [
    ("list_customer_transactions", {"page": 2**62}),
    ("list_sales_orders", {"page": 2**62}),
    ("query_entity_set", {"entity_set": "customers", "skip": 2**63}),
    ("get_aging", {"as_of": "0001-01-02"}),
    ("get_aging", {"as_of": "9999-12-30"}),
    ("get_aging", {"bucket_edges": [10**9]}),
    ("search_parties", {"query": "x" * 5000}),
    (
        "query_entity_set",
        {
            "entity_set": "customer-transactions",
            "filters": [
                {"field": "voucher", "op": "in", "value": [f"V{i}" for i in range(100_000)]}
            ],
        },
    ),
]
"""Calls that crashed tools or made them do unbounded work before issue 16."""


def ensure_db(path: Path, scale: float) -> None:
    if path.exists():
        return
    from synthetic_erp import generate_erp

    print(f"generating {scale:g}x ERP into {path} ...", flush=True)
    started = time.perf_counter()
    generate_erp(f"sqlite:///{path}", seed=42, scale=scale)
    print(f"  done in {time.perf_counter() - started:.0f} s", flush=True)


def sample_arguments(path: Path, rng: random.Random, pool: int = 20) -> dict[str, list[dict]]:
    """Per tool, a pool of argument dicts drawn from the database."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def rows(query: str) -> list[tuple]:
        found = db.execute(query).fetchall()
        rng.shuffle(found)
        return found[:pool]

    customers = rows(
        "select distinct legal_entity, customer_account from customer_transaction "
        "where open_amount_cur != 0 limit 2000"
    )
    vendors = rows("select legal_entity, account, name from vendor limit 2000")
    names = rows("select name from customer limit 2000")
    orders = rows("select legal_entity, sales_id from sales_order limit 2000")
    pos = rows("select legal_entity, po_number from purchase_order limit 2000")
    invoices = rows(
        "select legal_entity, invoice_id from vendor_invoice where po_number is not null limit 2000"
    )
    journals = rows("select legal_entity, journal_id from payment_journal limit 2000")
    agents = rows(
        "select legal_entity, owner_agent_id, due_date from collection_activity "
        "where status in ('open','in_progress') limit 2000"
    )
    today = db.execute("select value from erp_meta where key='as_of'").fetchone()[0]
    db.close()

    def typo(name: str) -> str:
        return name[:3] + name[4:] if len(name) > 6 else name

    party = [{"account": a, "legal_entity": le} for le, a in customers]
    return {
        "ping": [{}],
        "erp_info": [{}],
        "search_parties": [{"query": typo(n)} for (n,) in names],
        "get_customer": party,
        "get_vendor": [{"account": a, "legal_entity": le} for le, a, _ in vendors],
        "get_aging": [{"account": a, "legal_entity": le} for le, a in customers],
        "get_aging (legal entity)": [{"legal_entity": "USMF", "group_by": "legal_entity"}],
        "get_aging (by group, vendors)": [
            {"party_type": "vendor", "group_by": "group", "legal_entity": "USMF"}
        ],
        "list_customer_transactions": [{**p, "page_size": 20} for p in party],
        "list_vendor_transactions": [
            {"account": a, "legal_entity": le, "page_size": 20} for le, a, _ in vendors
        ],
        "list_settlements": [{**p, "page_size": 20} for p in party],
        "list_disputes": [{**p} for p in party],
        "list_cash_discounts": [{"expiring_within_days": 7, "legal_entity": "USMF"}],
        "list_sales_orders": [{**p, "page_size": 20} for p in party],
        "get_sales_order": [{"sales_id": s, "legal_entity": le} for le, s in orders],
        "list_purchase_orders": [
            {"account": a, "legal_entity": le, "page_size": 20} for le, a, _ in vendors
        ],
        "get_purchase_order": [{"po_number": p, "legal_entity": le} for le, p in pos],
        "list_vendor_invoices": [{"status": ["pending_approval"], "page_size": 20}],
        "get_vendor_invoice": [{"invoice_id": i, "legal_entity": le} for le, i in invoices],
        "list_payment_journals": [{"source": "proposal", "page_size": 20}],
        "get_payment_journal": [{"journal_id": j, "legal_entity": le} for le, j in journals],
        "get_vendor_spend": [
            {"account": a, "legal_entity": le, "fiscal_year": int(today[:4]) - 1}
            for le, a, _ in vendors
        ],
        "get_vendor_spend (top 10)": [{"legal_entity": "USMF", "top_n": 10}],
        "list_reference_data": [{"kind": "payment_terms", "legal_entity": "USMF"}],
        "list_collection_letters": [{**p} for p in party],
        "list_collection_activities": [
            {"owner_agent_id": ag, "legal_entity": le, "due_from": d, "due_to": d}
            for le, ag, d in agents
        ],
        "list_collection_cases": [{**p} for p in party],
        "get_collections_worklist": [
            {"agent_id": ag, "legal_entity": le, "as_of": d} for le, ag, d in agents
        ],
        "rank_parties": [
            {
                "measure": "invoiced",
                "legal_entity": "USMF",
                "date_from": f"{int(today[:4]) - 1}-01-01",
                "date_to": f"{int(today[:4]) - 1}-12-31",
                "top_n": 10,
            }
        ],
        "query_entity_set (aggregate)": [
            {
                "entity_set": "customer-transactions",
                "legal_entity": "USMF",
                "filters": [{"field": "txn_type", "op": "eq", "value": "sales_invoice"}],
                "group_by": ["customer_account"],
                "aggregates": [{"op": "sum", "field": "amount_acct"}],
                "order_by": [{"field": "sum_amount_acct", "descending": True}],
                "top": 10,
            }
        ],
        "list_entity_sets": [{}],
        "describe_entity_set": [{"entity_set": "vendor-invoices"}],
        "query_entity_set": [
            {
                "entity_set": "customer-transactions",
                "legal_entity": le,
                "filters": [{"field": "customer_account", "op": "eq", "value": a}],
                "top": 20,
            }
            for le, a in customers
        ],
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(db: Path, repo: Path = REPO) -> tuple[subprocess.Popen, str]:
    """The server of checkout ``repo`` (its ``erp_mcp`` comes first on the path)."""
    port = free_port()
    env = dict(os.environ, FASTMCP_LOG_LEVEL="WARNING", FASTMCP_SHOW_SERVER_BANNER="false",
               PYTHONPATH=str(repo))  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "erp_mcp", "--db", f"sqlite:///{db}", "--transport", "http",
         "--port", str(port), "--bench-tools"],
        env=env, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.1)
    process.kill()
    raise TimeoutError("server did not start")


class Session:
    """One official-client MCP session over streamable HTTP."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def __aenter__(self):
        from contextlib import AsyncExitStack

        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        self._stack = AsyncExitStack()
        read, write = await self._stack.enter_async_context(streamable_http_client(self.url))
        self.session = await self._stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def call(self, tool: str, args: dict, *, may_fail: bool = False) -> float:
        started = time.perf_counter()
        try:
            result = await self.session.call_tool(tool, args)
        except Exception:  # a protocol-level failure (e.g. a result over the client's limit)
            if not may_fail:
                raise
            return (time.perf_counter() - started) * 1000
        elapsed = time.perf_counter() - started
        if result.is_error and not may_fail:
            raise RuntimeError(f"{tool}({args}) failed: {result.content[0].text}")
        return elapsed * 1000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


async def latency_table(url: str, args: dict[str, list[dict]], n: int) -> dict[str, dict]:
    results = {}
    async with Session(url) as s:
        for label, pool in args.items():
            tool = label.split(" ")[0]
            warm = await s.session.call_tool(tool, pool[0])
            if warm.is_error:  # e.g. a tool or argument an older server (--repo) does not have
                print(f"  {label:34} skipped: {warm.content[0].text[:80]}", flush=True)
                continue
            for i in range(3):
                await s.call(tool, pool[i % len(pool)])
            times = [await s.call(tool, pool[i % len(pool)]) for i in range(n)]
            results[label] = {
                "p50_ms": round(statistics.median(times), 2),
                "p99_ms": round(percentile(times, 99), 2),
                "kind": "single" if tool in SINGLE_RECORD or label == "ping" else "aggregate",
            }
            print(f"  {label:34} p50 {results[label]['p50_ms']:8.2f} ms   "
                  f"p99 {results[label]['p99_ms']:8.2f} ms", flush=True)  # fmt: skip
    return results


async def session_open(url: str, n: int) -> dict[str, float]:
    """A new session plus one ``erp_info`` call through the harnesses' own client, as every agent
    question opens one: the latency and the server's CPU per session."""
    from harnesses._erp_client import ErpClient
    from harnesses._protocol import ErpEndpoint, TrajectoryDraft

    endpoint = ErpEndpoint(url=url)
    times = []
    cpu_started = time.process_time()
    for _ in range(n):
        started = time.perf_counter()
        async with ErpClient(endpoint) as erp:
            await erp.call("erp_info", {}, TrajectoryDraft())
        times.append((time.perf_counter() - started) * 1000)
    client_cpu_ms = (time.process_time() - cpu_started) * 1000 / n
    return {
        "p50_ms": round(statistics.median(times), 2),
        "p99_ms": round(percentile(times, 99), 2),
        "client_cpu_ms": round(client_cpu_ms, 1),
    }


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a (Linux) process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def throughput(
    url: str, tool: str, pool: list[dict], clients: int, seconds: float
) -> dict[str, float]:
    """Calls per second with ``clients`` concurrent sessions, each in its own task, and the
    per-call p50 / p99 latency."""
    ready = asyncio.Semaphore(0)
    go = asyncio.Event()
    times: list[float] = []
    window: dict[str, float] = {}

    async def worker(index: int) -> None:
        async with Session(url) as s:
            ready.release()
            await go.wait()
            i = index
            while time.perf_counter() < window["deadline"]:
                times.append(await s.call(tool, pool[i % len(pool)]))
                i += 1

    tasks = [asyncio.create_task(worker(i)) for i in range(clients)]
    for _ in range(clients):
        await ready.acquire()
    window["start"] = time.perf_counter()
    window["deadline"] = window["start"] + seconds
    go.set()
    await asyncio.gather(*tasks)
    return {
        "calls_per_s": round(len(times) / (time.perf_counter() - window["start"]), 1),
        "p50_ms": round(statistics.median(times), 2),
        "p99_ms": round(percentile(times, 99), 2),
    }


def _attack(url: str, stop, count) -> None:
    """The hostile session, in its own process so its client-side work (a 100k-value list is
    1 MB of JSON per call) does not slow the measuring client."""

    async def loop() -> None:
        async with Session(url) as s:
            while not stop.is_set():
                tool, args = HOSTILE_CALLS[count.value % len(HOSTILE_CALLS)]
                await s.call(tool, args, may_fail=True)
                with count.get_lock():
                    count.value += 1

    asyncio.run(loop())


async def interference(url: str, n: int) -> dict[str, Any]:
    """``erp_info`` latency alone, then while another process loops over ``HOSTILE_CALLS``."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    stop, count = context.Event(), context.Value("i", 0)
    async with Session(url) as victim:
        for _ in range(5):
            await victim.call("erp_info", {})
        quiet = [await victim.call("erp_info", {}) for _ in range(n)]
        attacker = context.Process(target=_attack, args=(url, stop, count), daemon=True)
        attacker.start()
        deadline = time.monotonic() + 60
        while count.value == 0 and time.monotonic() < deadline:  # the attack is under way
            await asyncio.sleep(0.1)
        loud = [await victim.call("erp_info", {}) for _ in range(n)]
        stop.set()
        attacker.join(timeout=60)
        if attacker.is_alive():
            attacker.kill()
    return {
        "quiet_p50_ms": round(statistics.median(quiet), 2),
        "quiet_p99_ms": round(percentile(quiet, 99), 2),
        "hostile_p50_ms": round(statistics.median(loud), 2),
        "hostile_p99_ms": round(percentile(loud, 99), 2),
        "hostile_calls": count.value,
    }


async def bench_scale(label: str, db: Path, options: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(7)
    all_args = sample_arguments(db, rng)
    args = all_args
    if options.tools:
        args = {k: v for k, v in all_args.items() if k.split(" ")[0] in {*options.tools, "ping"}}
    process, url = start_server(db, options.repo)
    try:
        print(f"\n== {label}: {db} ({db.stat().st_size / 1e6:.0f} MB), server from "
              f"{options.repo} ==", flush=True)  # fmt: skip
        figures: dict[str, Any] = {}
        if not options.only_interference:
            figures["latency"] = await latency_table(url, args, options.n)
            sessions = max(10, options.n // 10)
            cpu_before = process_cpu_s(process.pid)
            row = await session_open(url, sessions)
            row["server_cpu_ms"] = round(
                (process_cpu_s(process.pid) - cpu_before) / sessions * 1000, 1
            )
            figures["session_open"] = row
            print(f"  new session + erp_info           p50 {row['p50_ms']:8.2f} ms   "
                  f"p99 {row['p99_ms']:8.2f} ms   CPU per session: "
                  f"server {row['server_cpu_ms']} ms, client {row['client_cpu_ms']} ms",
                  flush=True)  # fmt: skip
            rates = {}
            for tool in ("ping", "get_customer"):
                for clients in (1, 8, 32):
                    row = await throughput(url, tool, all_args[tool], clients, options.seconds)
                    rates[f"{tool} x{clients}"] = row
                    print(f"  {tool:14} {clients:3} sessions: {row['calls_per_s']:8.1f} calls/s"
                          f"   p50 {row['p50_ms']:7.2f} ms   p99 {row['p99_ms']:7.2f} ms",
                          flush=True)  # fmt: skip
            figures["throughput"] = rates
        row = await interference(url, options.n)
        figures["interference"] = row
        print(f"  erp_info alone:              p50 {row['quiet_p50_ms']:8.2f} ms   "
              f"p99 {row['quiet_p99_ms']:8.2f} ms", flush=True)  # fmt: skip
        print(f"  erp_info beside hostile calls: p50 {row['hostile_p50_ms']:6.2f} ms   "
              f"p99 {row['hostile_p99_ms']:8.2f} ms ({row['hostile_calls']} hostile calls)",
              flush=True)  # fmt: skip
        return figures
    finally:
        process.terminate()
        process.wait(timeout=20)


def floor_ratios(latency: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Median over each kind of tool (single-record, aggregate) of p50 and p99 as a ratio to the
    no-op floor (ping) of the same run."""
    floor = latency["ping"]
    out = {}
    for kind in ("single", "aggregate"):
        rows = [r for label, r in latency.items() if label != "ping" and r["kind"] == kind]
        if rows:
            floor_p50, floor_p99 = floor["p50_ms"], floor["p99_ms"]
            out[kind] = {
                "p50_x_floor": round(statistics.median(r["p50_ms"] for r in rows) / floor_p50, 2),
                "p99_x_floor": round(statistics.median(r["p99_ms"] for r in rows) / floor_p99, 2),
                "worst_p99_x_floor": round(max(r["p99_ms"] for r in rows) / floor_p99, 2),
            }
    return out


def summarize(results: dict[str, Any]) -> None:
    for label, figures in results.items():
        if "latency" in figures:
            figures["floor_ratios"] = floor_ratios(figures["latency"])
            floor = figures["latency"]["ping"]
            print(f"\n== {label}: ratio to the no-op floor (ping p50 {floor['p50_ms']:.2f} ms, "
                  f"p99 {floor['p99_ms']:.2f} ms), median over tools ==")  # fmt: skip
            for kind, row in figures["floor_ratios"].items():
                print(f"  {kind:10} p50 {row['p50_x_floor']:6.2f}x   p99 {row['p99_x_floor']:6.2f}x"
                      f"   worst p99 {row['worst_p99_x_floor']:6.2f}x")  # fmt: skip
    one = results.get("1x")
    if not one or "latency" not in one:
        return
    floor = one["latency"]["ping"]["p99_ms"]
    print("\n== targets ==")
    for label, row in one["latency"].items():
        if label == "ping":
            continue
        limit = 20 if row["kind"] == "single" else 100
        notes = [f"1x p99 {row['p99_ms']:.1f} ms {'<' if row['p99_ms'] < limit else '>='} {limit}"]
        if row["kind"] == "single":
            notes.append(f"{row['p50_ms'] / one['latency']['ping']['p50_ms']:.2f}x floor p50")
        hundred = results.get("100x", {}).get("latency", {}).get(label)
        if hundred:
            notes.append(f"100x/1x p99 {hundred['p99_ms'] / row['p99_ms']:.2f}")
        print(f"  {label:34} " + "; ".join(notes))
    print(f"  floor (ping) p99 {floor:.2f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--db-1x", type=Path, default=DEFAULT_1X, help="1x ERP (generated if missing)"
    )
    parser.add_argument(
        "--db-100x", type=Path, default=DEFAULT_100X, help="100x ERP (generated if missing)"
    )
    parser.add_argument("--skip-100x", action="store_true", help="only benchmark 1x")
    parser.add_argument(
        "-n", type=int, default=200, help="calls per tool for latency (default 200)"
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per throughput run")
    parser.add_argument("--tools", nargs="*", help="only these tools, e.g. --tools get_customer")
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    parser.add_argument(
        "--repo",
        type=Path,
        default=REPO,
        help="checkout whose erp_mcp serves, for before/after figures, e.g. --repo /work/main",
    )
    parser.add_argument(
        "--only-interference",
        action="store_true",
        help="only the interference case (quiet vs beside hostile calls)",
    )
    args = parser.parse_args(argv)
    scales = [("1x", args.db_1x, 1.0)] + ([] if args.skip_100x else [("100x", args.db_100x, 100.0)])
    results = {}
    for label, path, scale in scales:
        ensure_db(path, scale)
        results[label] = asyncio.run(bench_scale(label, path, args))
    summarize(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
