"""Scans run on their own bounded pool of threads at the server's priority, so however many
sessions run aggregates, the request threads stay free for lookups.

Lookups (one record by key, a name search, server facts) are served on the request threads; every
other tool (aggregates, rankings, filtered lists) on the server's scan threads. These keep the
server's CPU priority: lowered threads (nice +10) starved on a busy machine and stalled the server
while preempted holding the interpreter lock. ``bench/bench_aggregates.py --busy 4`` measures a
lookup beside the heaviest aggregate.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import sys
import threading

import pytest
from fastmcp import Client

from erp_mcp import build_server
from erp_mcp._tooling import ScanThreads, registered_tools
from synthetic_world._tools import WORLD_TOOLS

LOOKUPS = {
    "erp_info",
    "search_parties",
    "get_customer",
    "get_vendor",
    "list_reference_data",
    "get_sales_order",
    "get_purchase_order",
    "get_vendor_invoice",
    "get_payment_journal",
    "list_entity_sets",
    "describe_entity_set",
    "ping",
}


def _scan_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("erp-scan")]


def test_only_key_lookups_skip_the_scan_threads() -> None:
    assert {t.name for t in registered_tools() if t.lookup} == LOOKUPS
    scans = {t.name for t in registered_tools() if not t.lookup}
    assert {"get_aging", "rank_parties", "query_entity_set", "get_collections_worklist"} <= scans
    assert all(t.lookup for t in WORLD_TOOLS.tools())  # an in-memory index answers each quickly


async def test_scans_run_on_pool_threads_at_the_callers_priority_and_context() -> None:
    scans = ScanThreads(threads=2)
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker")
    marker.set("caller")

    def where() -> tuple[str, str, int]:
        tid = threading.get_native_id()
        return threading.current_thread().name, marker.get(), os.getpriority(os.PRIO_PROCESS, tid)

    try:
        name, seen, nice = await scans.run(where)
    finally:
        scans.close()
    assert name.startswith("erp-scan")
    assert seen == "caller"
    assert nice == os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


async def test_the_scan_pool_is_bounded() -> None:
    """Six calls on a pool of two: never more than two at once, and every call is served."""
    scans = ScanThreads(threads=2)
    running, most = 0, 0
    lock = threading.Lock()
    release = threading.Event()

    def work() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            if running == 2:
                release.set()
        release.wait(timeout=30)
        with lock:
            running -= 1

    try:
        await asyncio.gather(*(scans.run(work) for _ in range(6)))
    finally:
        scans.close()
    assert most == 2


async def test_the_server_starts_scan_threads_for_aggregates_only(erp_db_url: str) -> None:
    before = set(_scan_threads())
    async with Client(build_server(erp_db_url)) as client:
        await client.call_tool("erp_info", {})
        await client.call_tool("search_parties", {"query": "a"})
        assert not set(_scan_threads()) - before  # (threads of servers closed before may end)
        aging = await client.call_tool("get_aging", {"group_by": "legal_entity"})
        assert aging.structured_content["rows"]
        started = set(_scan_threads()) - before
        assert started
        mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        for thread in started:  # the server's own priority, not a lowered one
            assert os.getpriority(os.PRIO_PROCESS, thread.native_id) == mine


@pytest.mark.parametrize("workers", [False, True], ids=["one process", "each worker"])
def test_a_serving_process_hands_the_interpreter_over_every_half_millisecond(
    erp_db_url: str, workers: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan thread building a large result in Python holds the GIL for up to the switch
    interval each time the event loop needs it; a serving process (one, or each worker) sets it
    to 0.5 ms before it serves (Python's default: 5 ms)."""
    import uvicorn

    from erp_mcp._cli import main
    from erp_mcp._workers import _worker_main
    from tests.conftest import free_port

    seen: list[float] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: seen.append(
        sys.getswitchinterval()))  # fmt: skip
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    try:
        if workers:  # a worker builds its server from the command line before it serves
            from erp_mcp._workers import WORKER_ENV

            spec = {"factory": "erp_mcp._cli:worker_server", "argv": ["--db", erp_db_url]}
            monkeypatch.setenv(WORKER_ENV, json.dumps({**spec, "hosts": []}))
            _worker_main("127.0.0.1", free_port())
        else:
            args = ["--db", erp_db_url, "--transport", "http", "--port", str(free_port())]
            assert main(args) == 0
    finally:
        sys.setswitchinterval(before)
    assert seen == [pytest.approx(0.0005)]
