"""Servers are waited for on their progress, not a clock, and no process outlives its owner.

A busy machine can stretch a server's start from one second to minutes of wall time: the runner
waits as long as the server uses CPU or reports start steps, and gives up only on a server that
died or is stuck, naming the step (exit code 3, an infrastructure failure). Whatever kills the
owner of a server (a runner, a pipeline, a test process: ``kill -9`` included), the server and
its workers die with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from harnesses._erp_process import ServerStartError, start_erp_server
from ledgerbench_core._startup import SPAWNED, cpu_seconds
from tests.conftest import REPO_ROOT, child_processes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    return list(child_processes(pid))


def _wait_until_gone(pids: list[int], owner: subprocess.Popen | None = None) -> list[int]:
    """The pids still running once they stopped using CPU (a killed process stops at once; one
    left running keeps serving). Polls /proc: an event, not a clock margin."""
    quiet_since: dict[int, tuple[float | None, int]] = {}
    while True:
        running = [pid for pid in pids if _alive(pid)]
        if not running:
            return []
        for pid in running:
            cpu = cpu_seconds(pid)
            previous, streak = quiet_since.get(pid, (None, 0))
            quiet_since[pid] = (cpu, streak + 1 if cpu == previous else 0)
        # Orphans serve on: alive with no CPU change over 200 polls (a dying process is gone).
        if all(quiet_since[pid][1] > 200 for pid in running):
            return running
        time.sleep(0.05)


def test_a_stuck_start_is_reported_with_its_step(erp_db_url) -> None:
    server = start_erp_server(erp_db_url, wait=False)
    watch = server.watch
    assert watch is not None
    try:
        while watch.step == SPAWNED:  # the server reports its first step
            assert watch.poll() is None and server.process.poll() is None
            time.sleep(0.01)
        os.kill(server.process.pid, signal.SIGSTOP)  # stuck: no CPU, no step from now on
        watch.stall_s = 1.0
        with pytest.raises(ServerStartError) as raised:
            server.wait_until_listening()
        message = str(raised.value)
        assert f"stuck at step '{watch.step}'" in message
        assert "no progress for 1 s" in message and "the ERP MCP server did not listen" in message
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
        server.stop()


def test_a_slow_start_is_waited_for_however_long_it_takes(erp_db_url) -> None:
    """Paused (SIGSTOP) for longer than the stall bound would allow a silent server, but
    resumed each time before it: CPU progress keeps the wait going, and the server is used."""
    server = start_erp_server(erp_db_url, wait=False)
    watch = server.watch
    assert watch is not None
    watch.stall_s = 5.0
    try:
        for _ in range(3):  # three pauses of 1 s: 3 s without progress in all, never 5 in a row
            os.kill(server.process.pid, signal.SIGSTOP)
            time.sleep(1.0)  # the pause being simulated, not a margin
            os.kill(server.process.pid, signal.SIGCONT)
            used = cpu_seconds(server.process.pid)
            while cpu_seconds(server.process.pid) == used and server.process.poll() is None:
                time.sleep(0.01)  # it ran again
        server.wait_until_listening()
        assert server.start_cpu_s is not None and server.start_cpu_s > 0
        assert server.started_in_s is not None and server.started_in_s >= 3.0
    finally:
        server.stop()


def test_a_run_whose_server_is_stuck_exits_3_naming_the_step(erp_db_url, tmp_path) -> None:
    env = dict(os.environ, LEDGERBENCH_SERVER_STALL_S="3")
    command = [sys.executable, "-m", "harnesses.run", "--harness", "scripted", "--limit", "1"]
    command += ["--erp-db", erp_db_url, "--out", str(tmp_path / "run"), "--no-progress"]
    runner = subprocess.Popen(
        command, cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    try:
        server = None
        while server is None and runner.poll() is None:
            for pid, command in child_processes(runner.pid).items():
                if b"erp_mcp" in command.split(b"\0"):
                    server = pid
            time.sleep(0.01)
        assert server is not None, "the runner started no ERP server"
        os.kill(server, signal.SIGSTOP)
        _, stderr = runner.communicate()
    finally:
        if runner.poll() is None:
            runner.kill()
    lines = [line for line in stderr.decode().splitlines() if line.strip()]
    assert runner.returncode == 3, stderr.decode()
    assert "Traceback" not in stderr.decode()
    assert "stuck at step '" in lines[-1] and "run the same command again" in lines[-1]
    assert not (tmp_path / "run").exists(), "a start that failed writes no run folder"
    assert _wait_until_gone([server]) == []


INNER_TEST = """
import os, signal
from pathlib import Path

from tests.conftest import start_mcp_server
from tests.test_process_hygiene import _children


def test_crash_with_servers_running():
    workers, _ = start_mcp_server(os.environ["INNER_ERP_DB"], "--workers", "2")
    single, _ = start_mcp_server(os.environ["INNER_ERP_DB"])
    pids = [workers.process.pid, single.process.pid, *_children(workers.process.pid)]
    Path(os.environ["INNER_PIDS"]).write_text(" ".join(map(str, pids)))
    os.kill(os.getpid(), signal.SIGKILL)  # the xdist worker crashes with its servers up
"""


def test_no_server_outlives_a_crashed_test_worker(erp_db_url, tmp_path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "test_inner_crash.py").write_text(textwrap.dedent(INNER_TEST))
    (inner / "conftest.py").write_text("from tests.conftest import *  # noqa: F403\n")
    pids_file = tmp_path / "pids"
    env = dict(os.environ, INNER_ERP_DB=erp_db_url, INNER_PIDS=str(pids_file))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "pytest", "-q", "-n", "1", "-p", "no:cacheprovider"]
    command += ["--rootdir", str(inner), str(inner)]
    result = subprocess.run(command, cwd=inner, env=env, capture_output=True, text=True)
    assert pids_file.exists(), result.stdout + result.stderr
    assert result.returncode != 0 and "crashed" in result.stdout + result.stderr
    servers = [int(pid) for pid in pids_file.read_text().split()]
    assert len(servers) >= 3, "two servers and at least one worker of the --workers 2 one"
    assert _wait_until_gone(servers) == [], "a server outlived the test worker that started it"


def test_the_workers_of_a_killed_server_die_with_it(erp_db_url) -> None:
    from tests.conftest import start_mcp_server, stop_process

    server, _ = start_mcp_server(erp_db_url, "--workers", "2")
    try:
        workers = []
        while len(workers) < 2:  # the supervisor spawns its workers (and a resource tracker)
            workers = [
                pid
                for pid, command in child_processes(server.process.pid).items()
                if b"multiprocessing" in command and b"resource_tracker" not in command
            ]
            assert server.process.poll() is None
            time.sleep(0.05)
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait()
        assert _wait_until_gone(workers) == [], "a worker kept serving after its supervisor died"
    finally:
        stop_process(server.process)


def test_a_long_preparation_step_is_told_with_its_name() -> None:
    import threading

    from harnesses._progress import PreparationWatch

    told: list[str] = []
    said = threading.Event()

    def log(line: str) -> None:
        told.append(line)
        said.set()

    watch = PreparationWatch(log, quiet_s=0.0, every_s=3600.0).start()
    watch.step(lambda: "waiting for the ERP server at 'opening the database'")
    try:
        assert said.wait(timeout=600), "nothing was said while the step went on"
    finally:
        watch.stop()
    assert told[0].startswith(
        "preparing the run: waiting for the ERP server at 'opening the database' ("
    )
    silent = PreparationWatch(log, enabled=False, quiet_s=0.0).start()
    silent.step("reading the dataset")
    silent.stop()
    assert len(told) == 1, "a run that is not on a terminal says nothing"
