"""A real local Ray cluster for the Ray executor tests, started once per session.

``ray start --head --block`` runs as our child in its own process group; teardown signals it (it
stops the GCS, raylet and workers it started) and then kills whatever is left of that group.
``ray stop`` is never used: it would stop every Ray cluster on the machine, not just ours.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO_ROOT

RAY_WORKER_CPUS = 2
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
"""Keeps a single-node Ray on 127.0.0.1 (it otherwise advertises the machine's outward address);
drivers that connect to it need the same variables."""
TEST_JUDGE_KEY_ENV = "LEDGERBENCH_TEST_JUDGE_KEY"
"""Set on the cluster's workers: the fake judge server needs some key; it is not a secret."""


@dataclass(frozen=True)
class LocalRayCluster:
    address: str
    """``127.0.0.1:PORT`` of the head's GCS, for ``--ray-address``."""
    temp_dir: Path
    process: subprocess.Popen
    cpus: int
    home: Path
    """The cluster's own HOME (and its drivers'): nothing of the user's ``~/.ray`` (an
    ``auth_token`` from another cluster, say) can reach it."""

    def worker_pids(self) -> set[int]:
        """Pids of the Ray worker processes of this cluster (idle or busy)."""
        return {pid for pid, cmd in _processes() if "default_worker.py" in cmd and self._ours(cmd)}

    def _ours(self, cmd: str) -> bool:
        return str(self.temp_dir) in cmd


def _processes() -> list[tuple[int, str]]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            found.append((int(entry.name), cmd))
    return found


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(process: subprocess.Popen, temp_dir: Path) -> None:
    pgid = process.pid
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=20)
    deadline = time.monotonic() + 10
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if group_alive(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    # Workers are children of the raylet and stay in the group; anything that escaped the group
    # still names our temp dir on its command line.
    for pid, cmd in _processes():
        if str(temp_dir) in cmd and pid != os.getpid():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if process.poll() is None:
        process.kill()
        process.wait()
    shutil.rmtree(temp_dir, ignore_errors=True)


@contextlib.contextmanager
def local_ray_cluster(
    cpus: int = RAY_WORKER_CPUS, home: Path | None = None
) -> Iterator[LocalRayCluster]:
    """A head node on loopback with its own HOME (``home``: a given one, e.g. holding the
    cluster's ``~/.ray/auth_token``)."""
    # Short path: Ray's unix sockets live under it and must fit in 107 characters.
    temp_dir = Path(tempfile.mkdtemp(prefix="lbray-", dir="/tmp"))
    if home is None:
        home = temp_dir / "home"
        home.mkdir()
    ray_cli = Path(sys.executable).with_name("ray")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), HOME=str(home), **LOOPBACK_ENV)
    env[TEST_JUDGE_KEY_ENV] = "fake-judge-key"
    env.pop("RAY_ADDRESS", None)
    log = temp_dir / "ray-start.log"
    command = [
        str(ray_cli),
        "start",
        "--head",
        "--block",
        "--port=0",
        "--node-ip-address=127.0.0.1",
        f"--num-cpus={cpus}",
        "--num-gpus=0",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={temp_dir}",
        f"--object-store-memory={200 * 1024 * 1024}",
    ]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        address = _wait_for_address(temp_dir, log, process, timeout=120)
        yield LocalRayCluster(
            address=address, temp_dir=temp_dir, process=process, cpus=cpus, home=home
        )
    finally:
        _stop(process, temp_dir)


def _wait_for_address(temp_dir: Path, log: Path, process: subprocess.Popen, timeout: float) -> str:
    """The head's GCS address, which ``ray start`` writes to ``ray_current_cluster``."""
    deadline = time.monotonic() + timeout
    marker = temp_dir / "ray_current_cluster"
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if "Ray runtime started" in text and marker.exists():
            address = marker.read_text().strip()
            if address:
                return address
        if process.poll() is not None:
            raise RuntimeError(f"ray start exited with {process.returncode}: {text[-2000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"ray start did not report its address within {timeout}s")
