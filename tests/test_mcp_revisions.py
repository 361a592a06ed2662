"""Both servers speak the newest MCP revision (2026-07-28: no session handshake, discovered with
``server/discover``) as well as the handshake revisions, to the official Python client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

from tests.conftest import RunningServer, start_world_server, stop_process
from tests.world_fixtures import shared_folder, small_world


@pytest.fixture(scope="module")
def world_server(
    erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> Iterator[RunningServer]:
    world = small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))
    server, _ = start_world_server(f"sqlite:///{Path(world)}")
    yield server
    stop_process(server.process)


@pytest.mark.parametrize(
    ("mode", "revision"),
    [
        ("auto", LATEST_MODERN_VERSION),  # the client probes server/discover first
        (LATEST_MODERN_VERSION, LATEST_MODERN_VERSION),
        ("legacy", LATEST_HANDSHAKE_VERSION),  # the initialize handshake
    ],
)
@pytest.mark.parametrize(
    ("server_name", "info_tool"), [("erp", "erp_info"), ("world", "world_info")]
)
async def test_each_revision_is_spoken(
    erp_server, world_server, server_name, info_tool, mode, revision
) -> None:
    server = erp_server if server_name == "erp" else world_server
    async with (
        httpx.AsyncClient() as http,
        Client(streamable_http_client(server.url, http_client=http), mode=mode) as client,
    ):
        assert client.protocol_version == revision
        result = await client.call_tool(info_tool, {})
        assert not result.is_error
        assert result.structured_content and result.structured_content["today"]
        tools = await client.list_tools()
        assert info_tool in {tool.name for tool in tools.tools}
