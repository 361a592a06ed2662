"""A server the runner starts owns its port from the spawn (issue 40): the runner binds it and
hands the socket over, so another program cannot take the port while the server imports, and
the runner's first call reaches its own server. (The runner used to pick a free port, release it
and let the server bind it seconds later; on a busy machine another program's server took it
meanwhile, the readiness check saw that server listen, and the research world's first
``world_info`` got its 401: "Server returned an error response".)"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import subprocess
import sys
import threading

import pytest

from erp_mcp._workers import tcp_listener
from harnesses._erp_client import http_transport
from harnesses._erp_process import start_erp_server
from ledgerbench_core._startup import LISTEN_FD_ENV
from tests.conftest import REPO_ROOT
from tests.test_runner_plugins import snapshot_of

pytestmark = pytest.mark.timeout(300)

FOREIGN_REPLY = (
    b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: 25\r\n"
    b'connection: close\r\n\r\n{"error":"invalid_token"}'
)


class ForeignServer:
    """Another program's HTTP server on a port: answers every request with a 401."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", port))  # OSError when the port is taken
        self.sock.listen(16)
        self.thread = threading.Thread(target=self._answer, daemon=True)
        self.thread.start()

    def _answer(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            with conn:
                conn.recv(65536)
                conn.sendall(FOREIGN_REPLY)

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join()


async def erp_info(server) -> dict:
    from fastmcp import Client

    async with Client(http_transport(server.endpoint)) as client:
        result = await client.call_tool_mcp("erp_info", {})
    assert not result.is_error
    return result.structured_content or {}


def test_another_program_cannot_take_the_port_while_the_server_starts(erp_db_url) -> None:
    server = start_erp_server(erp_db_url, wait=False)
    foreign = None
    try:
        assert server.process.poll() is None and server.watch.step != "listening"
        try:  # the moment after the spawn, the server is still starting its interpreter
            foreign = ForeignServer(server.port)
        except OSError as error:
            assert error.errno == errno.EADDRINUSE
        server.wait_until_listening()
        info = asyncio.run(erp_info(server))
        assert foreign is None, "another program bound the port of a server being started"
        assert info["snapshot_hash"] == snapshot_of(erp_db_url)  # our server answered
        assert server.process.poll() is None
    finally:
        if foreign is not None:
            foreign.close()
        server.stop()


def test_a_handed_over_socket_on_another_port_is_refused_in_one_line(erp_db_url) -> None:
    listener = tcp_listener("127.0.0.1", 0)
    other_port = listener.getsockname()[1] + 1
    env = dict(os.environ, **{LISTEN_FD_ENV: str(listener.fileno())})
    try:
        command = ["erp_mcp", "--db", erp_db_url, "--transport", "http", "--port", str(other_port)]
        done = subprocess.run(
            [sys.executable, "-m", *command],
            cwd=REPO_ROOT,
            env=env,
            pass_fds=(listener.fileno(),),
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        listener.close()
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert f"not on --port {other_port}" in lines[0] and LISTEN_FD_ENV in lines[0]


@pytest.mark.parametrize("what", ["closed descriptor", "pipe", "not a number"])
def test_a_handed_over_descriptor_that_is_no_listening_socket_is_one_line(
    erp_db_url, what: str
) -> None:
    read_end, write_end = os.pipe()
    descriptor = {"closed descriptor": "987", "pipe": str(read_end), "not a number": "x1"}[what]
    command = ["erp_mcp", "--db", erp_db_url, "--transport", "http", "--port", "8765"]
    try:
        done = subprocess.run(
            [sys.executable, "-m", *command],
            cwd=REPO_ROOT,
            env=dict(os.environ, **{LISTEN_FD_ENV: descriptor}),
            pass_fds=(read_end,),
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.close(read_end)
        os.close(write_end)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert f"{LISTEN_FD_ENV}='{descriptor}' is not a listening TCP socket" in lines[0]
