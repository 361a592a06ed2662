"""Latency, throughput and isolation of the ERP MCP server over streamable HTTP on loopback.

For each data scale (1x and 100x; 10x with --scales) it starts ``python -m erp_mcp --transport http
--bench-tools`` on a free loopback port and, with the official ``mcp`` client:
- calls every tool sequentially with realistic arguments (drawn from the database, varied per call)
  and prints p50 / p99 latency per case, next to the no-op ``ping`` tool measured in the same run
  (the floor); a case stops after --case-seconds once it has 5 calls. The scales' servers are up
  together and answer in --latency-turns turns (every case of every scale in each), so the
  100x/1x and floor ratios compare calls made in the same minutes;
- runs 1, 8 and 32 concurrent client sessions for a fixed time on a single-record tool, on ping and
  on the heaviest aggregate (``get_aging {}``: every customer) and prints calls per second with
  the per-call p50 / p99;
- measures interference: another process loops over hostile calls (huge page numbers, dates near
  year 1 or 9999, oversized bucket edges, a 100k-value ``in`` list, kilobyte strings), then over
  the heaviest aggregates, while this process measures ``erp_info`` latency; it prints that p50 /
  p99 next to the quiet figure;
- calls every tool with the arguments that make its result largest (``tests/mcp_budget.py``) and
  prints the largest result against the 100,000-character budget;
- with a server that has ``--workers``: single-record throughput of ``--workers 1`` and
  ``--workers 2`` (stateless HTTP) at 8 concurrent clients, with the CPU the load client and the
  server processes used (all on the same cores).

``--repo DIR`` runs the server from another checkout; ``--baseline-repo DIR`` measures another
checkout's server too, each scale right before this one's (on a shared machine the load drifts
within minutes), and prints the issue-27 table, before beside after; ``--compare BEFORE.json``
prints it against an earlier run's JSON:

    .venv/bin/python bench/bench_mcp.py                     # 1x and 100x (generates 100x once)
    .venv/bin/python bench/bench_mcp.py --scales 1 -n 50    # quick look at 1x only
    .venv/bin/python bench/bench_mcp.py --baseline-repo /tmp/main --baseline-db 100=/tmp/old100.db
    .venv/bin/python bench/bench_mcp.py --json after.json --compare before.json  # against a file
    .venv/bin/python bench/bench_mcp.py --only workers      # just the --workers 1 vs 2 figures

Targets (issue 27): every aggregate at 100x within 3x of its own 1x p50; no tool p50 over 500 ms at
100x; single-record p50 within 2x of the floor at 100x; at 8 clients ``--workers 2`` gives at
least 1.5x the single-record throughput of ``--workers 1``; another session's ``erp_info`` p99
within 3x of idle while the heaviest aggregate runs.
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
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.mcp_budget and harnesses, from this checkout

DEFAULT_DB = "/tmp/ledgerbench_bench_{scale:g}x.db"
HEAVY = "get_aging (all customers)"
"""The heaviest aggregate of the issue-27 audit: aging of every customer in every legal entity."""

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
    """Per case (a tool, with a note in brackets), a pool of argument dicts drawn from the
    database. Each pool is drawn in a stated order, so a new index (which can change the order a
    plain LIMIT reads rows in) does not change what is measured."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def rows(query: str) -> list[tuple]:
        found = db.execute(query).fetchall()
        rng.shuffle(found)
        return found[:pool]

    customers = rows(
        "select distinct legal_entity, customer_account from customer_transaction "
        "where open_amount_cur != 0 order by legal_entity, customer_account limit 2000"
    )
    vendors = rows("select legal_entity, account, name from vendor order by id limit 2000")
    names = rows("select name from customer order by name, id limit 2000")
    orders = rows("select legal_entity, sales_id from sales_order order by 1, 2 limit 2000")
    pos = rows("select legal_entity, po_number from purchase_order order by 1, 2 limit 2000")
    invoices = rows(
        "select legal_entity, invoice_id from vendor_invoice where po_number is not null "
        "order by id limit 2000"
    )
    journals = rows("select legal_entity, journal_id from payment_journal order by 1, 2 limit 2000")
    agents = rows(
        "select legal_entity, owner_agent_id, due_date from collection_activity "
        "where status in ('open','in_progress') order by id limit 2000"
    )
    vouchers = rows(
        "select legal_entity, debit_voucher from customer_settlement order by 1, 2 limit 2000"
    )
    today = db.execute("select value from erp_meta where key='as_of'").fetchone()[0]
    db.close()

    def typo(name: str) -> str:
        return name[:3] + name[4:] if len(name) > 6 else name

    party = [{"account": a, "legal_entity": le} for le, a in customers]
    last_year = int(today[:4]) - 1
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
        HEAVY: [{}],
        "list_customer_transactions": [{**p, "page_size": 20} for p in party],
        "list_vendor_transactions": [
            {"account": a, "legal_entity": le, "page_size": 20} for le, a, _ in vendors
        ],
        "list_settlements": [{**p, "page_size": 20} for p in party],
        "list_settlements (one voucher)": [
            {"voucher": v, "legal_entity": le} for le, v in vouchers
        ],
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
            {"account": a, "legal_entity": le, "fiscal_year": last_year} for le, a, _ in vendors
        ],
        "get_vendor_spend (top 10)": [{"legal_entity": "USMF", "top_n": 10}],
        "list_reference_data": [{"kind": "payment_terms", "legal_entity": "USMF"}],
        "list_collection_letters": [{**p} for p in party],
        "list_collection_activities": [
            {"owner_agent_id": ag, "legal_entity": le, "due_from": d, "due_to": d}
            for le, ag, d in agents
        ],
        "list_collection_cases": [{**p} for p in party],
        "list_collection_cases (no filter)": [{}],
        "get_collections_worklist": [
            {"agent_id": ag, "legal_entity": le, "as_of": d} for le, ag, d in agents
        ],
        "rank_parties": [
            {
                "measure": "invoiced",
                "legal_entity": "USMF",
                "date_from": f"{last_year}-01-01",
                "date_to": f"{last_year}-12-31",
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
        "query_entity_set (sum by legal entity and type)": [
            {
                "entity_set": "customer-transactions",
                "group_by": ["legal_entity", "txn_type"],
                "aggregates": [{"op": "sum", "field": "amount_acct"}, {"op": "count"}],
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


def _server_env(repo: Path) -> dict[str, str]:
    return dict(os.environ, FASTMCP_LOG_LEVEL="WARNING", FASTMCP_SHOW_SERVER_BANNER="false",
                PYTHONPATH=str(repo))  # fmt: skip


@cache
def server_supports(repo: Path, flag: str) -> bool:
    """Whether the server of checkout ``repo`` has the command-line option ``flag``."""
    done = subprocess.run([sys.executable, "-m", "erp_mcp", "--help"], env=_server_env(repo),
                          cwd=repo, capture_output=True, text=True)  # fmt: skip
    return flag in done.stdout


def start_server(db: Path, repo: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """The server of checkout ``repo`` (its ``erp_mcp`` comes first on the path)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "erp_mcp", "--db", f"sqlite:///{db}", "--transport", "http",
         "--port", str(port), "--bench-tools", *extra],
        env=_server_env(repo), cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.1)
    process.kill()
    raise TimeoutError("server did not start")


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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


def kind_of(label: str) -> str:
    tool = label.split(" ")[0]
    return "single" if tool in SINGLE_RECORD or label == "ping" else "aggregate"


async def latency_in_turns(
    servers: dict[str, tuple[str, dict[str, list[dict]]]], n: int, case_seconds: float, turns: int
) -> dict[str, dict[str, dict]]:
    """Per server (a label: its URL and argument pools), p50 / p99 per case over ``n`` calls.

    The servers answer in turns: each turn calls every case of every server ``n / turns`` times
    (a case stops early once it has 5 calls and has taken ``case_seconds`` in all). So a drift in
    the machine's speed over the minutes of a run weighs on the floor (ping), on every case and on
    both scales alike, instead of landing on whichever was measured then: the ratios the targets
    are stated in compare calls made in the same minutes."""
    from contextlib import AsyncExitStack

    per_turn = max(1, -(-n // turns))
    times: dict[str, dict[str, list[float]]] = {}
    spent: dict[tuple[str, str], float] = {}
    async with AsyncExitStack() as stack:
        sessions = {}
        for label, (url, args) in servers.items():
            session = await stack.enter_async_context(Session(url))
            sessions[label] = session
            times[label] = {}
            for case, pool in args.items():
                tool = case.split(" ")[0]
                warm = await session.session.call_tool(tool, pool[0])
                if warm.is_error:  # e.g. a tool or argument an older server (--repo) lacks
                    print(f"  {label} {case:40} skipped: {warm.content[0].text[:80]}", flush=True)
                    continue
                for i in range(3):
                    await session.call(tool, pool[i % len(pool)])
                times[label][case] = []
        for _ in range(turns):
            for label, (_, args) in servers.items():
                for case, calls in times[label].items():
                    tool, pool = case.split(" ")[0], args[case]
                    started = time.perf_counter()
                    for _ in range(per_turn):
                        if len(calls) >= n or (
                            len(calls) >= 5 and spent.get((label, case), 0.0) > case_seconds
                        ):
                            break
                        calls.append(await sessions[label].call(tool, pool[len(calls) % len(pool)]))
                    spent[(label, case)] = (
                        spent.get((label, case), 0.0) + time.perf_counter() - started
                    )
    results: dict[str, dict[str, dict]] = {}
    for label, cases in times.items():
        print(f"\n== {label}: latency (calls in {turns} turns with the other scales) ==")
        results[label] = {}
        for case, calls in cases.items():
            row = results[label][case] = {
                "p50_ms": round(statistics.median(calls), 2),
                "p99_ms": round(percentile(calls, 99), 2),
                "calls": len(calls),
                "kind": kind_of(case),
            }
            print(f"  {case:48} p50 {row['p50_ms']:9.2f} ms   p99 {row['p99_ms']:9.2f} ms"
                  f"   ({row['calls']} calls)", flush=True)  # fmt: skip
    return results


def scale_arguments(db: Path, tools: list[str] | None) -> dict[str, list[dict]]:
    """The argument pools of a scale's ERP, for the cases of ``--tools`` (every case without)."""
    args = sample_arguments(db, random.Random(7))
    if tools:
        args = {k: v for k, v in args.items() if k.split(" ")[0] in {*tools, "ping"}}
    return args


async def session_open(url: str, n: int) -> dict[str, float]:
    """A new session plus one ``erp_info`` call through the harnesses' own client, as every agent
    question opens one: the latency and the client's CPU per session."""
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


def _proc_stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of a Linux process, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds so far of process ``pid`` and all its descendants (a server with
    ``--workers`` runs in several processes)."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _proc_stat(int(entry.name))) is not None:
            stats[int(entry.name)] = stat
    wanted, total = {pid}, 0.0
    changed = True
    while changed:  # descendants: children of anything already wanted
        changed = False
        for child, (parent, _) in stats.items():
            if parent in wanted and child not in wanted:
                wanted.add(child)
                changed = True
    for member in wanted:
        if member in stats:
            total += stats[member][1]
    return total


async def throughput(
    url: str, tool: str, pool: list[dict], clients: int, seconds: float
) -> dict[str, float]:
    """Calls per second with ``clients`` concurrent sessions, each in its own task, and the
    per-call p50 / p99 latency (calls still running at the deadline finish and count)."""
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
    cpu_started = time.process_time()
    go.set()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - window["start"]
    return {
        "calls_per_s": round(len(times) / wall, 2),
        "p50_ms": round(statistics.median(times), 2),
        "p99_ms": round(percentile(times, 99), 2),
        "calls": len(times),
        "client_cpu_pct": round((time.process_time() - cpu_started) / wall * 100, 1),
    }


class RawClient:
    """A lean load client: JSON-RPC ``tools/call`` requests over one keep-alive HTTP/1.1
    connection to a stateless MCP endpoint, with the response read and checked but nothing else
    (no pydantic, no session), so that on a 2-core machine the server, not the client, sets the
    pace. Both response forms of streamable HTTP are read (JSON and an SSE stream)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path
        self._id = 0

    async def __aenter__(self) -> RawClient:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.writer.close()

    async def call(self, tool: str, args: dict) -> float:
        self._id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._id, "method": "tools/call",
                           "params": {"name": tool, "arguments": args}}).encode()  # fmt: skip
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        started = time.perf_counter()
        self.writer.write(head + body)
        status, headers, payload = await self._response()
        elapsed = (time.perf_counter() - started) * 1000
        if status != 200:
            raise RuntimeError(f"{tool}: HTTP {status}: {payload[:200]!r}")
        text = payload.decode()
        if "text/event-stream" in headers.get("content-type", ""):
            text = "".join(
                line[5:].strip() for line in text.splitlines() if line.startswith("data:")
            )
        message = json.loads(text)
        if "error" in message or message["result"].get("isError"):
            raise RuntimeError(f"{tool}({args}) failed: {text[:300]}")
        return elapsed

    async def _response(self) -> tuple[int, dict[str, str], bytes]:
        status = int((await self.reader.readline()).split()[1])
        headers = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            return status, headers, await self.reader.readexactly(int(headers["content-length"]))
        chunks = []
        while size := int((await self.reader.readline()).strip(), 16):
            chunks.append(await self.reader.readexactly(size + 2))
        await self.reader.readline()
        return status, headers, b"".join(chunk[:-2] for chunk in chunks)


async def raw_throughput(
    url: str, tool: str, pool: list[dict], clients: int, seconds: float
) -> dict[str, float]:
    """Like ``throughput`` with the lean client (stateless servers only)."""
    times: list[float] = []

    async def worker(index: int, deadline: float) -> None:
        async with RawClient(url) as client:
            i = index
            while time.perf_counter() < deadline:
                times.append(await client.call(tool, pool[i % len(pool)]))
                i += 1

    await asyncio.gather(*(worker(i, time.perf_counter() + 2) for i in range(clients)))  # warm
    times.clear()
    start = time.perf_counter()
    cpu_started = time.process_time()
    await asyncio.gather(*(worker(i, start + seconds) for i in range(clients)))
    wall = time.perf_counter() - start
    return {
        "calls_per_s": round(len(times) / wall, 1),
        "p50_ms": round(statistics.median(times), 2),
        "p99_ms": round(percentile(times, 99), 2),
        "calls": len(times),
        "client_cpu_pct": round((time.process_time() - cpu_started) / wall * 100, 1),
    }


def _attack(url: str, calls: list, stop, count) -> None:
    """The other session, in its own process so its client-side work (a 100k-value list is 1 MB
    of JSON per call) does not slow the measuring client."""

    async def loop() -> None:
        async with Session(url) as s:
            while not stop.is_set():
                tool, args = calls[count.value % len(calls)]
                await s.call(tool, args, may_fail=True)
                with count.get_lock():
                    count.value += 1

    asyncio.run(loop())


async def quiet_latency(url: str, n: int) -> list[float]:
    async with Session(url) as victim:
        for _ in range(5):
            await victim.call("erp_info", {})
        return [await victim.call("erp_info", {}) for _ in range(n)]


async def beside(url: str, n: int, calls: list) -> dict[str, Any]:
    """``erp_info`` latency while another process loops over ``calls``."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    stop, count = context.Event(), context.Value("i", 0)
    attacker = context.Process(target=_attack, args=(url, calls, stop, count), daemon=True)
    async with Session(url) as victim:
        for _ in range(5):
            await victim.call("erp_info", {})
        attacker.start()
        deadline = time.monotonic() + 120
        while count.value == 0 and time.monotonic() < deadline:  # one call done: it is looping
            await asyncio.sleep(0.05)
        loud = [await victim.call("erp_info", {}) for _ in range(n)]
        stop.set()
    attacker.join(timeout=300)
    if attacker.is_alive():
        attacker.kill()
    return {
        "p50_ms": round(statistics.median(loud), 2),
        "p99_ms": round(percentile(loud, 99), 2),
        "other_calls": count.value,
    }


async def interference(
    url: str, n: int, latency: dict[str, dict], args: dict[str, list[dict]]
) -> dict[str, Any]:
    """``erp_info`` alone, then beside hostile calls, ``get_aging {}`` and the slowest aggregate
    of the latency table (when that is another one)."""
    quiet = await quiet_latency(url, n)
    out: dict[str, Any] = {
        "quiet_p50_ms": round(statistics.median(quiet), 2),
        "quiet_p99_ms": round(percentile(quiet, 99), 2),
    }
    print(f"  erp_info alone:{'':34} p50 {out['quiet_p50_ms']:9.2f} ms   "
          f"p99 {out['quiet_p99_ms']:9.2f} ms", flush=True)  # fmt: skip
    cases = {"hostile calls": HOSTILE_CALLS, HEAVY: [("get_aging", {})]}
    aggregates = {k: v for k, v in latency.items() if v["kind"] == "aggregate"}
    if aggregates:
        slowest = max(aggregates, key=lambda k: aggregates[k]["p50_ms"])
        if slowest != HEAVY:
            cases[slowest] = [(slowest.split(" ")[0], a) for a in args[slowest][:5]]
    for label, calls in cases.items():
        row = await beside(url, n, calls)
        row["p99_x_quiet"] = round(row["p99_ms"] / out["quiet_p99_ms"], 2)
        out[label] = row
        print(f"  erp_info beside {label:32} p50 {row['p50_ms']:9.2f} ms   p99 "
              f"{row['p99_ms']:9.2f} ms = {row['p99_x_quiet']:.2f}x quiet "
              f"({row['other_calls']} calls beside)", flush=True)  # fmt: skip
    return out


async def budget(url: str, db: Path) -> dict[str, Any]:
    """Every tool at the arguments that make its result largest: the largest result and any over
    the budget (or failing)."""
    from tests.mcp_budget import largest_arguments

    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    calls = largest_arguments(connection)
    connection.close()
    sizes: list[tuple[int, str, str]] = []
    failures = []
    async with Session(url) as s:
        for tool, arg_list in calls.items():
            for args in arg_list:
                try:
                    result = await s.session.call_tool(tool, args)
                except Exception as error:  # e.g. a result the client refuses
                    failures.append(f"{tool} {json.dumps(args)}: {type(error).__name__}")
                    continue
                if result.is_error:
                    failures.append(f"{tool} {json.dumps(args)}: {result.content[0].text[:100]}")
                    continue
                sizes.append((len(result.content[0].text), tool, json.dumps(args)))
    sizes.sort(reverse=True)
    from erp_mcp._tooling import RESULT_BUDGET

    over = [f"{tool} {args}: {size:,}" for size, tool, args in sizes if size > RESULT_BUDGET]
    row = {
        "largest_chars": sizes[0][0],
        "largest_call": f"{sizes[0][1]} {sizes[0][2]}",
        "over_budget": over,
        "failures": failures,
        "calls": len(sizes) + len(failures),
    }
    print(f"  largest result {row['largest_chars']:,} characters ({row['largest_call'][:70]}); "
          f"{len(over)} over the {RESULT_BUDGET:,} budget, {len(failures)} failed, "
          f"of {row['calls']} calls", flush=True)  # fmt: skip
    for line in over + failures:
        print(f"    {line[:160]}")
    return row


def idle_cores_s() -> float:
    """Core-seconds the whole machine has spent idle since boot (``/proc/stat``): over a round, the
    CPU a second worker could have had (on a shared machine, often none)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    return (int(fields[3]) + int(fields[4])) / os.sysconf("SC_CLK_TCK")


async def wait_until_idle(pid: int, timeout: float = 300) -> None:
    """Until a server's processes have stopped using CPU for a second (start-up is over)."""
    deadline = time.monotonic() + timeout
    before = process_cpu_s(pid)
    while time.monotonic() < deadline:
        await asyncio.sleep(1)
        now = process_cpu_s(pid)
        if now - before < 0.02:
            return
        before = now


async def bench_workers(db: Path, options: argparse.Namespace) -> dict[str, Any] | None:
    """Single-record throughput of ``--workers 1`` and ``--workers 2`` (both stateless) at 8
    concurrent clients. Both servers run side by side and are measured in turns, ``--rounds``
    times each, so that the load of a shared machine falls on both alike; medians are reported."""
    if not server_supports(options.repo, "--workers"):
        print("  --workers: not in this server; skipped", flush=True)
        return None
    pool = sample_arguments(db, random.Random(7))["get_customer"]
    servers = {
        n: start_server(db, options.repo, "--workers", str(n), "--stateless") for n in (1, 2)
    }
    rounds: dict[int, list[dict]] = {1: [], 2: []}
    try:
        for process, _ in servers.values():
            await wait_until_idle(process.pid)  # every worker has opened the ERP
        for _ in range(options.rounds):
            for n, (process, url) in servers.items():
                cpu_before, started = process_cpu_s(process.pid), time.perf_counter()
                idle_before = idle_cores_s()
                row = await raw_throughput(url, "get_customer", pool, 8, options.seconds)
                cpu = process_cpu_s(process.pid) - cpu_before
                wall = time.perf_counter() - started
                row["server_cpu_pct"] = round(cpu / wall * 100, 1)
                row["machine_idle_pct"] = round((idle_cores_s() - idle_before) / wall * 100, 1)
                # the round's CPU rate over its call rate (the 2 s warm-up runs at the same pace)
                row["server_cpu_ms_per_call"] = round(cpu / wall / row["calls_per_s"] * 1000, 2)
                row["load_average"] = round(os.getloadavg()[0], 1)
                rounds[n].append(row)
        official = {
            n: await throughput(url, "get_customer", pool, 8, options.seconds)
            for n, (_, url) in servers.items()
        }
    finally:
        for process, _ in servers.values():
            stop_server(process)
    out: dict[str, Any] = {"rounds": {f"workers {n}": r for n, r in rounds.items()}}
    for n in (1, 2):
        rows = rounds[n]
        out[f"workers {n}"] = row = {
            key: round(statistics.median(r[key] for r in rows), 1)
            for key in ("calls_per_s", "p50_ms", "p99_ms", "client_cpu_pct", "server_cpu_pct",
                        "machine_idle_pct", "server_cpu_ms_per_call")
        }  # fmt: skip
        row["official_client"] = official[n]
        print(f"  --workers {n}, 8 lean clients, median of {len(rows)}: {row['calls_per_s']:8.1f} "
              f"calls/s   p50 {row['p50_ms']:6.2f} ms   p99 {row['p99_ms']:7.2f} ms   CPU: "
              f"client {row['client_cpu_pct']}%, server {row['server_cpu_pct']}% of a core "
              f"({row['server_cpu_ms_per_call']} ms a call), machine idle "
              f"{row['machine_idle_pct']}%; "
              f"official client x8: {official[n]['calls_per_s']} calls/s (client CPU "
              f"{official[n]['client_cpu_pct']}%)", flush=True)  # fmt: skip
    pairs = zip(rounds[1], rounds[2], strict=True)
    ratios = [two["calls_per_s"] / one["calls_per_s"] for one, two in pairs]
    out["ratio"] = round(out["workers 2"]["calls_per_s"] / out["workers 1"]["calls_per_s"], 2)
    out["round_ratios"] = [round(r, 2) for r in ratios]
    print(f"  --workers 2 / --workers 1: {out['ratio']:.2f}x (per round: "
          f"{', '.join(f'{r:.2f}' for r in ratios)})", flush=True)  # fmt: skip
    return out


async def bench_scale(
    label: str, db: Path, options: argparse.Namespace, latency: dict[str, dict] | None = None
) -> dict[str, Any]:
    """Every section but the latency table (``latency``: measured before, in turns with the
    other scales) for one scale's ERP."""
    all_args = sample_arguments(db, random.Random(7))
    sections = set(options.only or SECTIONS)
    figures: dict[str, Any] = {"load_average": [round(x, 1) for x in os.getloadavg()]}
    print(f"\n== {label}: {db} ({db.stat().st_size / 1e6:.0f} MB), server from "
          f"{options.repo}; load average {figures['load_average']} ==", flush=True)  # fmt: skip
    if sections - {"workers"}:
        process, url = start_server(db, options.repo)
        try:
            if "latency" in sections:
                figures["latency"] = latency or {}
                async with Session(url) as warm:  # the runtime opens on the first session
                    await warm.call("erp_info", {})
                sessions = max(10, options.n // 10)
                cpu_before = process_cpu_s(process.pid)
                row = await session_open(url, sessions)
                row["server_cpu_ms"] = round(
                    (process_cpu_s(process.pid) - cpu_before) / sessions * 1000, 1
                )
                figures["session_open"] = row
                print(f"  new session + erp_info{'':26} p50 {row['p50_ms']:9.2f} ms   "
                      f"p99 {row['p99_ms']:9.2f} ms   CPU per session: server "
                      f"{row['server_cpu_ms']} ms, client {row['client_cpu_ms']} ms",
                      flush=True)  # fmt: skip
            if "throughput" in sections:
                rates = {}
                for case in ("ping", "get_customer", HEAVY):
                    tool = case.split(" ")[0]
                    for clients in (1, 8, 32):
                        row = await throughput(url, tool, all_args[case], clients, options.seconds)
                        rates[f"{case} x{clients}"] = row
                        print(f"  {case:26} {clients:3} sessions: {row['calls_per_s']:9.2f} "
                              f"calls/s   p50 {row['p50_ms']:9.2f} ms   p99 {row['p99_ms']:9.2f} "
                              f"ms", flush=True)  # fmt: skip
                figures["throughput"] = rates
            if "interference" in sections:
                figures["interference"] = await interference(
                    url, options.n, figures.get("latency", {}), all_args
                )
            if "budget" in sections:
                figures["budget"] = await budget(url, db)
        finally:
            stop_server(process)
    if "workers" in sections:
        figures["workers"] = await bench_workers(db, options)
    figures["load_average_end"] = [round(x, 1) for x in os.getloadavg()]
    return figures


async def measure_latency(
    measured: dict[str, tuple[Path, Path]], options: argparse.Namespace
) -> dict[str, dict[str, dict]]:
    """The latency tables of every scale (and baseline), their servers all up and answering in
    turns (:func:`latency_in_turns`)."""
    servers, processes = {}, []
    try:
        for label, (repo, db) in measured.items():
            process, url = start_server(db, repo)
            processes.append(process)
            servers[label] = (url, scale_arguments(db, options.tools))
            print(f"== {label}: {db} ({db.stat().st_size / 1e6:.0f} MB), server from {repo}",
                  flush=True)  # fmt: skip
        return await latency_in_turns(servers, options.n, options.case_seconds,
                                      options.latency_turns)  # fmt: skip
    finally:
        for process in processes:
            stop_server(process)


def floor_ratios(latency: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Median over each kind of case (single-record, aggregate) of p50 and p99 as a ratio to the
    no-op floor (ping) of the same run."""
    floor = latency["ping"]
    out = {}
    for kind in ("single", "aggregate"):
        rows = [r for label, r in latency.items() if label != "ping" and r["kind"] == kind]
        if rows:
            floor_p50, floor_p99 = floor["p50_ms"], floor["p99_ms"]
            out[kind] = {
                "cases": len(rows),
                "p50_x_floor": round(statistics.median(r["p50_ms"] for r in rows) / floor_p50, 2),
                "p99_x_floor": round(statistics.median(r["p99_ms"] for r in rows) / floor_p99, 2),
                "worst_p99_x_floor": round(max(r["p99_ms"] for r in rows) / floor_p99, 2),
            }
    return out


def scale_ratios(one: dict[str, dict], hundred: dict[str, dict]) -> dict[str, float]:
    """Per aggregate case measured at both scales: its 100x p50 over its 1x p50."""
    return {
        label: round(hundred[label]["p50_ms"] / row["p50_ms"], 2)
        for label, row in one.items()
        if row["kind"] == "aggregate" and label in hundred
    }


def summarize(results: dict[str, Any]) -> None:
    for label, figures in results.items():
        if "latency" in figures:
            figures["floor_ratios"] = floor_ratios(figures["latency"])
            floor = figures["latency"]["ping"]
            print(f"\n== {label}: ratio to the no-op floor (ping p50 {floor['p50_ms']:.2f} ms, "
                  f"p99 {floor['p99_ms']:.2f} ms), median over cases ==")  # fmt: skip
            for kind, row in figures["floor_ratios"].items():
                print(f"  {kind:10} ({row['cases']:2} cases) p50 {row['p50_x_floor']:7.2f}x   "
                      f"p99 {row['p99_x_floor']:7.2f}x   worst p99 "
                      f"{row['worst_p99_x_floor']:7.2f}x")  # fmt: skip
    one = results.get("1x", {}).get("latency")
    hundred = results.get("100x", {}).get("latency")
    if not (one and hundred):
        return
    ratios = scale_ratios(one, hundred)
    results["100x"]["scale_ratios"] = ratios
    floor = hundred["ping"]["p50_ms"]
    print("\n== targets at 100x ==")
    for label, ratio in ratios.items():
        mark = "ok " if ratio < 3 else "OVER"
        print(f"  {mark} {label:48} 100x/1x p50 {ratio:7.2f}   (100x p50 "
              f"{hundred[label]['p50_ms']:.1f} ms)")  # fmt: skip
    if ratios:  # none when --tools leaves out every aggregate
        under = sum(1 for r in ratios.values() if r < 3)
        print(f"  aggregates within 3x of their 1x p50: {under} of {len(ratios)}; median "
              f"{statistics.median(ratios.values()):.2f}x")  # fmt: skip
    slowest = max((k for k in hundred if k != "ping"), key=lambda k: hundred[k]["p50_ms"])
    print(f"  slowest p50 at 100x: {slowest} {hundred[slowest]['p50_ms']:.1f} ms (target < 500)")
    singles = [
        r["p50_ms"] / floor for k, r in hundred.items() if r["kind"] == "single" and k != "ping"
    ]
    if singles:  # none when --tools leaves out every single-record tool
        print(f"  single-record p50 at 100x: median {statistics.median(singles):.2f}x the floor, "
              f"worst {max(singles):.2f}x (target < 2x)")  # fmt: skip


SECTIONS = ("latency", "throughput", "interference", "budget", "workers")


def _cell(value: float | None, unit: str = "ms") -> str:
    if value is None:
        return "-"
    if unit == "ms":
        return f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms"
    if unit == "x":
        return f"{value:.1f}x"
    return f"{value:g}"


def issue_rows(results: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The rows of the issue-27 table from one run: measure -> (1x cell, 100x cell)."""
    rows: dict[str, tuple[str, str]] = {}

    def latency(scale: str) -> dict:
        return results.get(scale, {}).get("latency", {})

    def agg_floor(scale: str) -> str:
        lat = latency(scale)
        if not lat:
            return "-"
        ratio = floor_ratios(lat).get("aggregate", {})
        return f"{ratio.get('p50_x_floor', 0):.1f}x ({ratio.get('cases', 0)} cases)"

    rows["aggregate tools vs the no-op floor, median over cases"] = (
        agg_floor("1x"),
        agg_floor("100x"),
    )
    ratios = scale_ratios(latency("1x"), latency("100x")) if latency("1x") else {}
    if ratios:  # none when --tools leaves out every aggregate
        under = sum(1 for r in ratios.values() if r < 3)
        rows["aggregates, 100x vs 1x (goal < 3x)"] = (
            "",
            f"median {statistics.median(ratios.values()):.1f}x; {under} of {len(ratios)} under 3x",
        )
    for label, measure in (
        (HEAVY, "`get_aging {}` (all customers)"),
        ("list_collection_cases (no filter)", "`list_collection_cases` (no filter)"),
        ("query_entity_set (sum by legal entity and type)",
         "`query_entity_set` sum by legal entity and type"),
        ("list_settlements (one voucher)", "`list_settlements` for ONE voucher"),
    ):  # fmt: skip
        cells = []
        for scale in ("1x", "100x"):
            row = latency(scale).get(label)
            cell = "-" if row is None else _cell(row["p50_ms"])
            if row is not None and label.startswith("list_collection_cases"):
                cell += f" (p99 {_cell(row['p99_ms'])})"
            cells.append(cell)
        rows[measure] = (cells[0], cells[1])
    hundred = results.get("100x", {})
    inter = hundred.get("interference", {})
    if HEAVY in inter:
        rows["another session's `erp_info` p99 while `get_aging {}` runs"] = (
            "",
            f"{_cell(inter['quiet_p99_ms'])} -> {_cell(inter[HEAVY]['p99_ms'])} "
            f"({inter[HEAVY]['p99_x_quiet']:.1f}x)",
        )
    rates = hundred.get("throughput", {})
    heavy = [rates.get(f"{HEAVY} x{n}") for n in (1, 8, 32)]
    if all(heavy):
        rows["`get_aging {}` throughput, 1 / 8 / 32 sessions"] = (
            "",
            " / ".join(f"{r['calls_per_s']:.2f}" for r in heavy) + " calls/s",
        )
    lat = latency("100x")
    if lat:
        slowest = max((k for k in lat if k != "ping"), key=lambda k: lat[k]["p50_ms"])
        rows["slowest tool p50 (goal < 500 ms)"] = (
            "",
            f"{_cell(lat[slowest]['p50_ms'])} ({slowest})",
        )
        floor = lat["ping"]["p50_ms"]
        singles = [
            r["p50_ms"] / floor for k, r in lat.items() if r["kind"] == "single" and k != "ping"
        ]
        rows["single-record p50 vs the floor, median / worst (goal < 2x)"] = (
            "",
            f"{statistics.median(singles):.2f}x / {max(singles):.2f}x",
        )
    if inter:
        worst = max((v["p99_x_quiet"], k) for k, v in inter.items() if isinstance(v, dict))
        rows["`erp_info` p99 beside the heaviest calls, worst vs idle (goal < 3x)"] = (
            "",
            f"{worst[0]:.1f}x ({worst[1]})",
        )
    workers = hundred.get("workers") or results.get("1x", {}).get("workers")
    if workers:
        one, two = workers["workers 1"], workers["workers 2"]
        rows["single-record throughput, 8 clients, --workers 1 / 2 (goal >= 1.5x)"] = (
            "",
            f"{one['calls_per_s']:.0f} / {two['calls_per_s']:.0f} calls/s = "
            f"{workers['ratio']:.2f}x (load client CPU {one['client_cpu_pct']:.0f}% / "
            f"{two['client_cpu_pct']:.0f}% of a core)",
        )
    for scale in ("1x", "10x", "100x"):
        row = results.get(scale, {}).get("budget")
        if row:
            over = len(row["over_budget"])
            rows[f"largest result at {scale} (budget 100,000)"] = (
                "",
                f"{row['largest_chars']:,} chars; {over} over, {len(row['failures'])} failed",
            )
    return rows


def print_comparison(before: dict[str, Any], after: dict[str, Any]) -> None:
    """The issue-27 table: each measure at 1x and 100x, before -> after."""
    old, new = issue_rows(before), issue_rows(after)
    print("\n== issue 27: before -> after (same script, same machine) ==")
    print("| measure (p50 unless said) | 1x before | 1x after | 100x before | 100x after |")
    print("|---|---|---|---|---|")
    for measure in dict.fromkeys([*old, *new]):
        b = old.get(measure, ("-", "-"))
        a = new.get(measure, ("-", "-"))
        print(f"| {measure} | {b[0] or ''} | {a[0] or ''} | {b[1]} | {a[1]} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 100.0],
                        help="data scales, e.g. --scales 1 10 100 (default 1 100)")  # fmt: skip
    parser.add_argument("--db", action="append", default=[], metavar="SCALE=PATH",
                        help="the ERP of a scale, e.g. --db 100=/tmp/erp100.db (default "
                        f"{DEFAULT_DB.format(scale=100)}; generated if missing)")  # fmt: skip
    parser.add_argument(
        "-n", type=int, default=200, help="calls per case for latency (default 200)"
    )
    parser.add_argument("--case-seconds", type=float, default=20.0,
                        help="stop a latency case after this long once it has 5 calls "
                        "(default 20)")  # fmt: skip
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per throughput run")
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="turns of --workers 1 and 2, measured alternately (default 5)",
    )
    parser.add_argument("--latency-turns", type=int, default=5,
                        help="turns in which the scales' servers answer the latency calls, "
                        "so drift weighs on every case and scale alike (default 5)")  # fmt: skip
    parser.add_argument("--tools", nargs="*", help="only these tools, e.g. --tools get_customer")
    parser.add_argument("--only", nargs="+", choices=SECTIONS,
                        help=f"only these sections of {', '.join(SECTIONS)}")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--compare", type=Path, metavar="BEFORE.json",
                        help="print the issue-27 table with the figures of BEFORE.json beside "
                        "this run's")  # fmt: skip
    parser.add_argument(
        "--repo",
        type=Path,
        default=REPO,
        help="checkout whose erp_mcp serves, for before/after figures, e.g. --repo /work/main",
    )
    parser.add_argument("--baseline-repo", type=Path, metavar="DIR",
                        help="also measure the server of this checkout, each scale right before "
                        "this one's (same machine, same minutes): the before figures, e.g. "
                        "--baseline-repo /tmp/main")  # fmt: skip
    parser.add_argument("--baseline-db", action="append", default=[], metavar="SCALE=PATH",
                        help="the baseline's ERP of a scale (default: the --db of that scale; an "
                        "ERP generated by the baseline's code lacks newer indexes)")  # fmt: skip
    args = parser.parse_args(argv)

    def dbs(items: list[str]) -> dict[float, Path]:
        return {float(k): Path(v) for k, _, v in (item.partition("=") for item in items)}

    paths, baseline_paths = dbs(args.db), dbs(args.baseline_db)
    checkouts = {"": (args.repo, paths)}
    if args.baseline_repo:
        checkouts[" baseline"] = (args.baseline_repo, baseline_paths)
    measured: dict[str, tuple[Path, Path]] = {}  # label -> (checkout, ERP)
    for scale in args.scales:
        path = paths.get(scale, Path(DEFAULT_DB.format(scale=scale)))
        ensure_db(path, scale)
        for suffix, (repo, own) in checkouts.items():
            measured[f"{scale:g}x{suffix}"] = (repo, own.get(scale, path))
    latency: dict[str, dict[str, dict]] = {}
    if "latency" in (args.only or SECTIONS):
        latency = asyncio.run(measure_latency(measured, args))
    results, baseline = {}, {}
    for scale in args.scales:
        label = f"{scale:g}x"
        options = argparse.Namespace(**vars(args))
        if scale != args.scales[-1]:  # --workers once, at the largest scale
            options.only = [s for s in (options.only or SECTIONS) if s != "workers"]
        if args.baseline_repo:
            before = argparse.Namespace(**{**vars(options), "repo": args.baseline_repo})
            name = f"{label} baseline"
            baseline[label] = asyncio.run(
                bench_scale(name, measured[name][1], before, latency.get(name))
            )
        results[label] = asyncio.run(
            bench_scale(label, measured[label][1], options, latency.get(label))
        )
    if baseline:
        print("\n==== baseline ====")
        summarize(baseline)
        print("\n==== this checkout ====")
    summarize(results)
    if args.json:
        args.json.write_text(json.dumps({"results": results, "baseline": baseline} if baseline
                                        else results, indent=2))  # fmt: skip
    if baseline:
        print_comparison(baseline, results)
    elif args.compare:
        before = json.loads(args.compare.read_text())
        print_comparison(before.get("results", before), results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
