"""Scaling out: ``--workers N`` processes on one port over stateless streamable HTTP, and
``--stateless`` for replicas behind a load balancer.

Real server processes, the official ``mcp`` client and the runner's own scripted agent: any worker
answers any request, a cursor from one worker continues on another, a run through the workers
gives the answers a run through one process gives, and stopping the server stops every worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from erp_mcp import main
from harnesses._runner import TRAJECTORIES_FILE, RunConfig, run
from ledgerbench_core._startup import LISTEN_FD_ENV, STARTUP_FD_ENV
from ledgerbench_core.trajectory import TrajectoryRecord
from tests.conftest import (
    REPO_ROOT,
    child_processes,
    free_port,
    start_mcp_server,
    stop_process,
)

pytestmark = pytest.mark.timeout(300)

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _children(pid: int) -> list[int]:
    """Worker processes of a server (its children, without multiprocessing's tracker)."""
    return [
        child
        for child, command in child_processes(pid).items()
        if b"resource_tracker" not in command
    ]


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _call(url: str, tool: str, arguments: dict) -> dict:
    """One stateless JSON-RPC tools/call on a connection of its own (any worker may take it)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}  # fmt: skip
    with httpx.Client(timeout=120) as http:
        response = http.post(url, json=body, headers=ACCEPT)
    assert response.status_code == 200, response.text
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(data[0] if data else response.text)["result"]


@pytest.fixture(scope="module")
def workers_server(erp_db_url: str):
    server, _ = start_mcp_server(erp_db_url, "--workers", "2")
    deadline = time.monotonic() + 120
    while len(_children(server.process.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    _call(server.url, "erp_info", {})  # the workers have opened the ERP
    workers = _children(server.process.pid)
    yield server
    stop_process(server.process)
    # stopping the server stops every worker
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(workers) == 2 and not [p for p in workers if Path(f"/proc/{p}").exists()]


def test_two_workers_answer_any_request_and_share_cursors(workers_server) -> None:
    workers = _children(workers_server.process.pid)
    assert len(workers) == 2
    before = {pid: _cpu_ticks(pid) for pid in workers}
    first = _call(workers_server.url, "list_customer_transactions", {"page_size": 2})
    cursor = first["structuredContent"]["next_cursor"]
    pages = [
        _call(workers_server.url, "list_customer_transactions", {"page_size": 2, "cursor": cursor})
        for _ in range(40)
    ]
    assert all(not p.get("isError") and p["structuredContent"]["offset"] == 2 for p in pages)
    busy = [pid for pid in workers if _cpu_ticks(pid) > before[pid]]
    assert len(busy) == 2, "both workers should have answered some of the 40 connections"
    wrong_tool = _call(workers_server.url, "list_vendor_transactions", {"cursor": cursor})
    assert wrong_tool["isError"] and "another tool" in wrong_tool["content"][0]["text"]


async def test_the_official_client_works_against_stateless_workers(workers_server) -> None:
    async with (
        streamable_http_client(workers_server.url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        result = await session.call_tool("get_customer", {"account": "SYNCUS-0001"})
    assert "get_aging" in tools and not result.is_error
    assert result.structured_content["customer"]["account"] == "SYNCUS-0001"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--workers", "2"], "--transport http"),
        (["--stateless"], "--transport http"),
        (["--transport", "http", "--workers", "0"], "--workers must be 1-64"),
        (["--transport", "http", "--workers", "2", "--error-rate", "0.1"], "would not replay"),
        (["--transport", "http", "--workers", "3", "--jitter-ms", "5"], "would not replay"),
    ],
)
def test_scaling_flags_are_checked_in_one_line(argv, message, erp_db_url, capsys) -> None:
    assert main(["--db", erp_db_url, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_help_lists_the_scaling_flags(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "--workers N" in out and "--stateless" in out


def _answers(run_dir: Path, base_url: str) -> dict[str, tuple]:
    records = [
        TrajectoryRecord.model_validate_json(line)
        for line in (run_dir / TRAJECTORIES_FILE).read_text().splitlines()
    ]
    out = {}
    for r in records:
        calls = [  # cursors are opaque and signed with each server's own key
            (c.name, json.dumps({**c.arguments, "cursor": "..."} if "cursor" in c.arguments
                                else c.arguments, sort_keys=True))
            for c in r.tool_calls
        ]  # fmt: skip
        out[r.question_id] = (r.status, r.answer.replace(base_url, "BASE"), calls)
    return out


def test_a_run_through_the_workers_gives_the_same_answers(
    workers_server, erp_server, tmp_path: Path
) -> None:
    """The runner and its agents need no change: stateless workers answer the scripted agent's
    sessions exactly as one stateful process does."""
    dataset = REPO_ROOT / "datasets" / "obligations.yaml"
    results = {}
    for label, server in (("one process", erp_server), ("two workers", workers_server)):
        config = RunConfig(dataset=dataset, harness="scripted", erp_url=server.url, limit=12,
                           concurrency=4, out=tmp_path / re.sub(r"\W", "_", label),
                           progress=False)  # fmt: skip
        summary = run(config, log=lambda _: None)
        assert summary.recorded == 12
        results[label] = _answers(config.out, server.base_url)
    for question_id, want in results["one process"].items():
        assert results["two workers"][question_id] == want, question_id
    assert sum(1 for status, _, calls in results["one process"].values() if calls) >= 10


def test_one_stateless_process_keeps_no_sessions(erp_db_url: str, erp_server) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    server, _ = start_mcp_server(erp_db_url, "--stateless")
    try:
        with httpx.Client(timeout=60) as http:
            stateless = http.post(server.url, json=init, headers=ACCEPT)
            stateful = http.post(erp_server.url, json=init, headers=ACCEPT)
        result = _call(server.url, "erp_info", {})  # no session needed
    finally:
        stop_process(server.process)
    assert stateless.status_code == stateful.status_code == 200
    assert "mcp-session-id" not in stateless.headers and "mcp-session-id" in stateful.headers
    assert result["structuredContent"]["default_legal_entity"] == "USMF"
    # one JSON body, not a one-event SSE stream (less work per call: no tool sends anything
    # before its result), with or without a session
    for answer in (stateless, stateful):
        assert answer.headers["content-type"].startswith("application/json")
        assert json.loads(answer.text)["result"]["serverInfo"]["name"]


def test_the_research_world_serves_with_workers_too(
    erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> None:
    """The world's server runs on the same serving machinery: --workers, stateless requests and
    signed cursors that continue on another worker and are refused by another tool."""
    from tests.conftest import start_world_server
    from tests.world_fixtures import shared_folder, small_world, world_rows

    world = small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))
    (ticker,) = world_rows(
        world, "SELECT ticker FROM company WHERE listed = 1 ORDER BY company_id LIMIT 1"
    )[0]
    server, _ = start_world_server(f"sqlite:///{world}", "--workers", "2")
    process = server.process
    try:
        url = server.url
        args = {"ticker": ticker, "start": "2025-01-01", "end": "2025-12-31", "page_size": 50}
        first = _call(url, "prices", args)["structuredContent"]
        pages = [_call(url, "prices", {**args, "cursor": first["next_cursor"]}) for _ in range(10)]
        assert all(p["structuredContent"]["offset"] == 50 for p in pages)
        assert len(_children(process.pid)) == 2
    finally:
        stop_process(process)


@pytest.mark.parametrize("reuse_port", [False, True], ids=["one process", "workers"])
async def test_accepted_connections_send_small_writes_at_once(reuse_port: bool) -> None:
    """Nagle's algorithm is off on every connection the HTTP server accepts, as uvicorn accepts
    them (an asyncio server on our listening socket). With it on, every answer on a kept-alive
    connection waited ~40 ms for the client's delayed acknowledgement (single-record calls took
    48 ms instead of 2 ms, and a second worker could not add throughput)."""
    import asyncio
    import socket

    from erp_mcp._workers import tcp_listener

    listener = tcp_listener("127.0.0.1", 0, reuse_port=reuse_port)
    nodelay: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        nodelay.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=listener)
    async with server:
        _, writer = await asyncio.open_connection("127.0.0.1", listener.getsockname()[1])
        assert await asyncio.wait_for(nodelay, 60) != 0
        writer.close()


def _listening_inodes(port: int) -> set[int]:
    """The socket inodes listening on TCP ``port`` (IPv4, this network namespace)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port = int(fields[1].rsplit(":", 1)[1], 16)
        if fields[3] == "0A" and local_port == port:  # 0A: TCP_LISTEN
            inodes.add(int(fields[9]))
    return inodes


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    return inodes


def _serve_workers(command: list[str], db_url: str, port: int) -> subprocess.Popen:
    """``python -m <command> --workers 2`` over HTTP on ``port`` as a user starts it: no progress
    pipe, no socket handed over; its stderr is a pipe to read the start line from."""
    env = {k: v for k, v in os.environ.items() if k not in (STARTUP_FD_ENV, LISTEN_FD_ENV)}
    args = [sys.executable, "-m", *command, "--db", db_url, "--transport", "http"]
    args += ["--host", "127.0.0.1", "--port", str(port), "--workers", "2"]
    return subprocess.Popen(
        args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def _start_line(process: subprocess.Popen) -> str:
    for line in process.stderr:
        if "serving MCP at" in line:
            return line
    raise AssertionError(f"exited with code {process.wait()} before its start line")


@pytest.mark.parametrize("which", ["erp", "world"])
def test_the_start_line_comes_once_every_worker_accepts_connections(
    which: str, erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> None:
    """A script that waits for the start line (as scripts/mcp-conformance does) and calls at once
    reaches a worker: every worker listens when the line is printed, none is still importing."""
    if which == "erp":
        command, db_url, tool = ["erp_mcp"], erp_db_url, "erp_info"
    else:
        from tests.world_fixtures import shared_folder, small_world

        world = small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))
        command, db_url, tool = ["synthetic_world", "serve"], f"sqlite:///{world}", "world_info"
    port = free_port()
    process = _serve_workers(command, db_url, port)
    try:
        assert "with 2 workers" in _start_line(process)
        listening = _listening_inodes(port)
        connections = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(8)]
        for connection in connections:
            connection.close()
        answers = [_call(f"http://127.0.0.1:{port}/mcp", tool, {}) for _ in range(8)]
        workers = _children(process.pid)
        assert len(listening) == 2 and all(not answer.get("isError") for answer in answers)
        assert len(workers) == 2
        assert all(_socket_inodes(pid) & listening for pid in workers)  # one socket each
    finally:
        stop_process(process)


def test_the_listening_step_comes_once_every_worker_accepts_connections(erp_db_url: str) -> None:
    """On the progress pipe a starter hands over (as the runner does), the workers' start steps
    come while they start and ``listening`` only once every worker listens."""
    port = free_port()
    read_fd, write_fd = os.pipe()
    env = {k: v for k, v in os.environ.items() if k != LISTEN_FD_ENV}
    env[STARTUP_FD_ENV] = str(write_fd)
    args = [sys.executable, "-m", "erp_mcp", "--db", erp_db_url, "--transport", "http"]
    args += ["--port", str(port), "--workers", "2"]
    process = subprocess.Popen(
        args, env=env, pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    os.close(write_fd)
    steps = []
    try:
        with os.fdopen(read_fd) as progress:
            for line in progress:
                steps.append(line.strip())
                if steps[-1] == "listening":
                    break
            listening = _listening_inodes(port)
            answer = _call(f"http://127.0.0.1:{port}/mcp", "erp_info", {})
    finally:
        stop_process(process)
    assert steps[-1] == "listening", steps
    assert len(listening) == 2 and not answer.get("isError")
    assert "starting 2 workers (worker 1: " in " ".join(steps), steps


def test_a_ctrl_c_while_the_workers_start_stops_the_server_quietly(erp_db_url: str) -> None:
    """Ctrl-C reaches the whole process group while the workers still import: the parent stops
    them, and nothing reports a worker death or prints a traceback."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in (STARTUP_FD_ENV, LISTEN_FD_ENV)}
    args = [sys.executable, "-m", "erp_mcp", "--db", erp_db_url, "--transport", "http"]
    args += ["--port", str(port), "--workers", "2"]
    process = subprocess.Popen(
        args, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        spawned: list[int] = []
        while len(spawned) < 2 and process.poll() is None:
            time.sleep(0.01)
            spawned = [
                pid
                for pid, command in child_processes(process.pid).items()
                if b"--multiprocessing-fork" in command
            ]
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        stop_process(process)
    assert len(spawned) == 2 and process.returncode == 130, err  # as one process ends
    assert err == "", err
    assert not [pid for pid in spawned if Path(f"/proc/{pid}").exists()]


def test_a_worker_whose_start_fails_is_named_with_its_step_and_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker that raises while it starts tells the parent its error in one line; the parent
    stops the others and names the worker, its step and the error."""
    from erp_mcp._cursors import CURSOR_SECRET_ENV
    from erp_mcp._workers import WORKER_ENV, WorkersFailed, serve_workers

    monkeypatch.setenv(WORKER_ENV, "")  # serve_workers sets both; restored after the test
    monkeypatch.setenv(CURSOR_SECRET_ENV, "test-secret")
    with pytest.raises(WorkersFailed) as failed:
        serve_workers("127.0.0.1", free_port(), 2, "erp_mcp._cli:no_such_factory", [], [])
    assert re.fullmatch(
        r"worker [12] of 2 \(pid \d+\) exited with code 1 at step 'building the server' before "
        r"it listened \(AttributeError: module 'erp_mcp._cli' has no attribute 'no_such_factory'; "
        r"--workers 1 shows the whole error\); the other workers were stopped",
        str(failed.value),
    ), failed.value
    workers = [c for c in child_processes(os.getpid()).values() if b"multiprocessing-fork" in c]
    assert not workers


def test_a_second_server_on_the_port_of_the_workers_is_refused(workers_server) -> None:
    """Its workers would join the first server's SO_REUSEPORT group and take half of its
    connections; it says the port is in use instead (exit 2)."""
    port = int(workers_server.base_url.rsplit(":", 1)[1])
    second = _serve_workers(["erp_mcp"], workers_server.db_url, port)
    try:
        _, err = second.communicate(timeout=120)
    finally:
        stop_process(second)
    assert second.returncode == 2 and err.count("\n") == 1 and "already in use" in err, err


def test_a_worker_that_dies_before_it_listens_is_named_with_its_step(erp_db_url: str) -> None:
    """The server exits 3 (an infrastructure failure, not bad input) with one line naming the
    worker and the start step it died at, prints no start line and leaves no worker behind."""
    port = free_port()
    process = _serve_workers(["erp_mcp"], erp_db_url, port)
    try:
        spawned: list[int] = []
        while len(spawned) < 2 and process.poll() is None:
            time.sleep(0.01)
            spawned = sorted(
                pid
                for pid, command in child_processes(process.pid).items()
                if b"--multiprocessing-fork" in command
            )
        assert len(spawned) == 2, "the server exited before it started its workers"
        worker, other = spawned
        os.kill(worker, signal.SIGSTOP)
        if _socket_inodes(worker) & _listening_inodes(port):
            pytest.skip("the worker listened before the test could stop it")
        os.kill(worker, signal.SIGKILL)
        _, err = process.communicate(timeout=120)
    finally:
        stop_process(process)
    assert process.returncode == 3, err
    assert err.count("\n") == 1 and "Traceback" not in err and "serving MCP" not in err, err
    assert re.search(rf"worker [12] of 2 \(pid {worker}\) was killed by SIGKILL at step '", err)
    assert not Path(f"/proc/{other}").exists()
