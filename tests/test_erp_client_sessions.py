"""Agent sessions share compiled output-schema validators, and still refuse results that break
their tool's schema."""

from __future__ import annotations

import pytest

from harnesses._erp_client import ErpClient
from harnesses._protocol import ErpEndpoint, TrajectoryDraft

pytestmark = pytest.mark.timeout(120)


async def test_validators_are_compiled_once_for_every_session(erp_server) -> None:
    from harnesses._mcp_session import compiled_validator

    compiled_validator.cache_clear()
    draft = TrajectoryDraft()
    for _ in range(3):  # one session per question, as the runner does
        async with ErpClient(ErpEndpoint(url=erp_server.url)) as erp:
            info = await erp.call("erp_info", {}, draft)
            customer = await erp.call(
                "get_customer", {"account": "SYNCUS-0001", "legal_entity": "USMF"}, draft
            )
            assert not info.is_error and not customer.is_error
            assert "SYNCUS-0001" in customer.text
    cache = compiled_validator.cache_info()
    assert cache.misses == 2  # one compilation per tool, not one per tool and session
    assert cache.hits == 4


async def test_a_result_that_breaks_its_schema_is_still_refused() -> None:
    from fastmcp import Client, FastMCP
    from fastmcp.client.transports import FastMCPTransport
    from fastmcp.tools import ToolResult

    from harnesses._mcp_session import SESSION_OPTIONS, compiled_validator

    class InMemory(FastMCPTransport):  # the in-memory twin of harnesses._mcp_session's transports
        def connect_session(self, *, transport_options=None, **kwargs):
            return super().connect_session(transport_options=SESSION_OPTIONS, **kwargs)

    server = FastMCP("schemas")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    @server.tool(output_schema=schema)
    def count(broken: bool):  # no annotation: the schema above is the declared one
        return ToolResult(structured_content={"n": "many" if broken else 3})

    compiled_validator.cache_clear()
    for _ in range(2):  # the second session uses the first one's compiled validator
        async with Client(InMemory(server)) as client:
            good = await client.call_tool("count", {"broken": False})
            assert good.structured_content == {"n": 3}
            with pytest.raises(Exception, match="Invalid structured content returned by tool"):
                await client.call_tool("count", {"broken": True})
    assert compiled_validator.cache_info().misses == 1
