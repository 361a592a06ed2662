"""The first call to a server the runner started is waited for on the server's life and
progress, not on a fixed clock; a server that dies meanwhile is an infrastructure failure that
names the step (exit 3 through the runner), never "check --erp-url" (bad input)."""

from __future__ import annotations

import asyncio

import pytest

from harnesses._erp_process import ServerStartError, start_erp_server
from harnesses._erp_serving import fetch_erp_info


async def test_the_first_answer_of_the_runners_server_is_read_without_a_clock(erp_db_url) -> None:
    server = start_erp_server(erp_db_url)
    try:
        info = await fetch_erp_info(server.endpoint, server, timeout=0.0)  # no clock for it
    finally:
        server.stop()
    assert info["snapshot_hash"] and info["today"]


async def test_a_server_that_dies_before_its_first_answer_names_that_step(erp_db_url) -> None:
    server = start_erp_server(erp_db_url)
    never = asyncio.Event()
    try:
        waiting = asyncio.ensure_future(server.answer(never.wait(), "answering its first call"))
        await asyncio.sleep(0)  # the wait is under way before the server goes
        server.process.kill()
        with pytest.raises(ServerStartError) as error:
            await waiting
    finally:
        server.stop()
    message = str(error.value)
    assert "the ERP MCP server exited with code -9 while answering its first call" in message
    assert server.endpoint.token not in message
