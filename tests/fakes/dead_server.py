"""A judge endpoint that is alive and dead at once: a server that accepts every connection and
never answers (the tests and bench/bench_judge_dead_endpoint.py use it)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class SilentServer:
    url: str
    """Base URL of an OpenAI-compatible endpoint on it: ``http://127.0.0.1:PORT/v1``."""
    accepted: list[float] = field(default_factory=list)
    """``time.monotonic()`` of every connection it accepted (and never answered)."""


@contextmanager
def silent_server() -> Iterator[SilentServer]:
    """A loopback server that accepts every connection and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    state = SilentServer(f"http://127.0.0.1:{server.getsockname()[1]}/v1")
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue
            state.accepted.append(time.monotonic())

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        server.close()
