"""What the fake providers share at the socket level."""

from __future__ import annotations

import select
import socket
import threading


def hang_up(connection: socket.socket, closing: threading.Event) -> None:
    """Send nothing until ``connection``'s peer closes it or ``closing`` is set (a provider that
    accepted the request and then went silent)."""
    while not closing.is_set():
        readable, _, _ = select.select([connection], [], [], 0.1)
        if readable:
            try:
                if not connection.recv(1, socket.MSG_PEEK):
                    return  # the client hung up
            except OSError:
                return
            closing.wait(0.1)  # more request bytes (a pipelined request): keep ignoring them
