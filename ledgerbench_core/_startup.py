"""How a server tells the process that started it where its start is, and how that process waits.

A server started by the runner, the judge or the pipeline gets the write end of a pipe in
``LEDGERBENCH_STARTUP_FD`` and writes one line per start step (``importing``, ``opening the
database``, ...). The starter waits on progress, not on a fixed clock: a server is given up on only
when it died, or when it wrote no new step and used no CPU for ``stall_s`` seconds (stuck, say on a
lock), or when ``limit_s`` passed; each failure names the step it was at. On a machine so busy that
a start takes minutes of wall time for two seconds of CPU, the server is still waited for.

Standard library only: the servers import this first, before their own heavy imports.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

STARTUP_FD_ENV = "LEDGERBENCH_STARTUP_FD"
SPAWNED = "starting the interpreter"
"""The step of a server that has not said anything yet."""
LISTENING = "listening"
"""The last step a server reports: its socket listens on the port it was given."""
LISTEN_FD_ENV = "LEDGERBENCH_LISTEN_FD"
"""A listening socket the starter bound and hands over (its descriptor number).

The starter binds the port itself and keeps it bound until the server owns it: a port picked free
and released, then bound by the server seconds later, can be taken meanwhile by any other program
on the machine, and the starter's first call then reaches that program (on a busy machine the
research world's first ``world_info`` got another server's 401 that way)."""


def report_step(step: str) -> None:
    """Tell the starter (if any) that the server reached ``step``; never fails."""
    descriptor = os.environ.get(STARTUP_FD_ENV)
    if not descriptor:
        return
    with contextlib.suppress(OSError, ValueError):
        os.write(int(descriptor), f"{step}\n".encode())


def done_reporting() -> None:
    """Close the progress pipe (the server listens): later children do not inherit it."""
    descriptor = os.environ.pop(STARTUP_FD_ENV, None)
    if descriptor:
        with contextlib.suppress(OSError, ValueError):
            os.close(int(descriptor))


def inherited_listener() -> socket.socket | None:
    """The listening socket the starter handed over in ``LEDGERBENCH_LISTEN_FD``, or None; taken
    out of the environment, so children the server starts do not look for it. ValueError (one
    line) when the variable names no listening TCP socket of this process."""
    descriptor = os.environ.pop(LISTEN_FD_ENV, None)
    if not descriptor:
        return None
    try:
        sock = socket.socket(fileno=int(descriptor))
    except (ValueError, OSError):
        sock = None
    if sock is None or not _listening_tcp(sock):
        if sock is not None:
            sock.detach()  # not ours to close
        raise ValueError(
            f"{LISTEN_FD_ENV}={descriptor[:20]!r} is not a listening TCP socket of this process; "
            "unset it and the server binds --port itself"
        )
    return sock


def _listening_tcp(sock: socket.socket) -> bool:
    try:
        accepting = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    except OSError:
        return False
    return bool(accepting) and sock.type == socket.SOCK_STREAM


_collection_paused = False


def pause_collection() -> None:
    """Pause the cyclic garbage collector for a server's start (see :func:`resume_collection`).

    A start creates a quarter of a million long-lived objects (modules, classes, schemas); each
    full collection meanwhile traverses all of them again, about a fifth of the ERP server's
    start-up CPU, and finds almost nothing to free. Reference counting still frees everything
    else as usual."""
    global _collection_paused
    if gc.isenabled():
        gc.disable()
        _collection_paused = True


def resume_collection() -> None:
    """Once the server is ready: move what the start made to the permanent generation
    (``gc.freeze``: later collections skip it, so they stay short while serving) and turn the
    collector back on. Does nothing unless :func:`pause_collection` paused it."""
    global _collection_paused
    if _collection_paused:
        _collection_paused = False
        gc.freeze()
        gc.enable()


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of process ``pid`` so far (None where /proc cannot tell)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    try:
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (ValueError, IndexError, OSError):
        return None


STALL_ENV = "LEDGERBENCH_SERVER_STALL_S"
DEFAULT_STALL_S = 120.0
"""No step and no CPU for this long: stuck (a runnable process gets some CPU at any load)."""
DEFAULT_LIMIT_S = 900.0
"""However busy the machine, a start that takes longer than this is given up on."""


@dataclass
class StartupWatch:
    """The starter's side: the pipe's read end and what the server said and used so far."""

    read_fd: int
    pid: int = 0
    stall_s: float = DEFAULT_STALL_S
    limit_s: float = DEFAULT_LIMIT_S
    step: str = SPAWNED
    started: float = field(default_factory=time.monotonic)
    _last_progress: float = field(default_factory=time.monotonic)
    _last_cpu: float | None = None
    _pending: bytes = b""
    ended: bool = False
    """The server closed its end of the pipe (it is done reporting, or it died)."""

    @classmethod
    def open(cls) -> tuple[StartupWatch, int]:
        """A watch and the write end to hand to the child (``pass_fds`` and the environment)."""
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        return cls(read_fd=read_fd, stall_s=stall_seconds()), write_fd

    def poll(self) -> str | None:
        """Read what the server said and what CPU it used; why to give up on it, or None."""
        now = time.monotonic()
        if self._read_steps():
            self._last_progress = now
        cpu = cpu_seconds(self.pid) if self.pid else None
        if cpu is not None and (self._last_cpu is None or cpu > self._last_cpu):
            self._last_cpu = cpu
            self._last_progress = now
        if now - self._last_progress > self.stall_s:
            return (
                f"stuck at step '{self.step}': no progress for {self.stall_s:.0f} s"
                f"{self._cpu_note()}"
            )
        if now - self.started > self.limit_s:
            return (
                f"still at step '{self.step}' after {self.limit_s:.0f} s{self._cpu_note()}; "
                "the machine may be overloaded"
            )
        return None

    def listening(self) -> bool:
        """Whether the server said it listens (reads what it wrote since the last look)."""
        self._read_steps()
        return self.step == LISTENING

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def cpu_used(self) -> float | None:
        return self._last_cpu

    def _cpu_note(self) -> str:
        return f" ({self._last_cpu:.1f} s of CPU used)" if self._last_cpu is not None else ""

    def _read_steps(self) -> bool:
        got = False
        while True:
            try:
                chunk = os.read(self.read_fd, 4096)
            except BlockingIOError:
                break
            except OSError:
                break
            if not chunk:
                self.ended = True
                break
            self._pending += chunk
            got = True
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            if text := line.decode("utf-8", "replace").strip():
                self.step = text
        return got

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.read_fd)


def stall_seconds() -> float:
    """How long a server may use no CPU (and say nothing) before it counts as stuck."""
    return _env_seconds(STALL_ENV, DEFAULT_STALL_S)


def _env_seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def describe_load() -> str:
    """`` (load average 12.3 on 2 cores)`` where the system can tell, else ``""``."""
    try:
        one_minute = os.getloadavg()[0]
    except (OSError, AttributeError):
        return ""
    return f" (load average {one_minute:.1f} on {os.cpu_count() or '?'} cores)"


def parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGKILL the child when its parent dies, ``kill -9``
    included (None elsewhere). The signal fires when the *thread* that started the child ends,
    so start children that must outlive a thread from the main thread."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def set_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: go now
            os.kill(os.getpid(), signal.SIGKILL)

    return set_death_signal


def die_with_parent() -> None:
    """The same, asked by the child itself (a ``multiprocessing`` worker, first thing)."""
    prctl = _prctl()
    if prctl is None:
        return
    parent = os.getppid()
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent == 1 or os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


_PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
