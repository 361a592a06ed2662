"""A recording MCP client for harnesses that run the tool loop themselves.

Every call goes into the question's :class:`TrajectoryDraft` with its arguments, output, error flag
and timing, so a harness cannot forget to record a call and a timeout keeps every call made so far.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import time
from dataclasses import dataclass
from typing import Any

from harnesses._protocol import (
    ErpEndpoint,
    ErpUnavailableError,
    TrajectoryDraft,
    WorldUnavailableError,
)

CANCELLED_OUTPUT = "Cancelled: the time budget ran out before the tool answered."


@dataclass(frozen=True)
class ToolSpec:
    """An MCP tool as a model should see it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


@dataclass(frozen=True)
class ToolResultText:
    text: str
    is_error: bool
    structured: Any = None


def _result_text(result: Any) -> str:
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        text = getattr(block, "text", None)
        if text is not None:
            parts.append(text)
    if not parts and getattr(result, "structured_content", None) is not None:
        parts.append(json.dumps(result.structured_content, default=str))
    return "\n".join(parts)


def tool_specs(tools: list[Any]) -> list[ToolSpec]:
    """MCP ``tools/list`` entries as a model should see them."""
    specs = []
    for tool in tools:
        annotations = getattr(tool, "annotations", None)
        specs.append(
            ToolSpec(
                name=tool.name,
                description=tool.description or "",
                input_schema=dict(tool.input_schema or {"type": "object", "properties": {}}),
                read_only=bool(getattr(annotations, "read_only_hint", False)),
            )
        )
    return specs


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: building one loads the CA bundle (tens of ms of
    CPU), and without it every agent session's HTTP client would build its own."""
    return ssl.create_default_context()


def http_transport(endpoint: ErpEndpoint) -> Any:
    """A streamable-HTTP transport to ``endpoint`` that reuses the process's TLS context and
    compiled output-schema validators (``harnesses._mcp_session``)."""
    from harnesses._mcp_session import HttpTransport

    return HttpTransport(endpoint.url, headers=endpoint.headers(), verify=shared_tls_context())


class ErpClient:
    """``async with ErpClient(endpoint) as erp: await erp.call(name, args, draft)``."""

    def __init__(
        self, endpoint: ErpEndpoint, *, server_label: str = "erp", transport: str = "http"
    ) -> None:
        if transport not in ("http", "stdio"):
            raise ValueError(f"ERP transport {transport!r}: use http or stdio")
        if transport == "stdio" and not endpoint.stdio_command:
            raise ValueError(
                "the stdio transport needs a database the runner serves itself (--erp-db or the "
                "default ERP), not --erp-url"
            )
        self._endpoint = endpoint
        self._server_label = server_label
        self._transport = transport
        self._client: Any = None

    def _make_transport(self) -> Any:
        if self._transport == "stdio":
            import os

            from harnesses._mcp_session import StdioServerTransport

            command, *args = self._endpoint.stdio_command or ()
            env = dict(os.environ, FASTMCP_LOG_LEVEL="WARNING", FASTMCP_SHOW_SERVER_BANNER="false")
            return StdioServerTransport(command=command, args=list(args), env=env, keep_alive=False)
        return http_transport(self._endpoint)

    async def __aenter__(self) -> ErpClient:
        from fastmcp import Client

        self._client = Client(self._make_transport())
        try:
            await self._client.__aenter__()
        except Exception as error:
            self._client = None
            where = self._endpoint.url if self._transport == "http" else "its stdio command"
            raise self._unavailable(
                f"cannot connect to {self._server_name} at {where}: {type(error).__name__}: {error}"
            ) from error
        return self

    @property
    def _server_name(self) -> str:
        return "the research world's MCP server" if self._is_world else "the ERP MCP server"

    @property
    def _is_world(self) -> bool:
        return self._server_label == "world"

    def _unavailable(self, message: str) -> ErpUnavailableError:
        """The error that names this server: the world's is ``world_unavailable``, not the ERP's."""
        kind = WorldUnavailableError if self._is_world else ErpUnavailableError
        return kind(message)

    async def __aexit__(self, *exc_info: object) -> None:
        if self._client is None:
            return
        client, self._client = self._client, None
        try:
            await client.__aexit__(*exc_info)
        except Exception as error:
            if _is_protocol_answer(error):
                raise
            if exc_info[0] is not None:  # the session broke under the work: this server is gone
                raise self._unavailable(
                    f"{self._server_name} went away: {type(error).__name__}: {error}"
                ) from error
            # Closing the session of a server that went away after the last call: the work
            # done with it stands (a failed call already raised and was recorded).

    async def list_tools(self) -> list[ToolSpec]:
        return tool_specs(await self._client.list_tools())

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        draft: TrajectoryDraft,
        *,
        recorded_name: str | None = None,
    ) -> ToolResultText:
        """Call an ERP tool and record it. Tool errors come back as ``is_error`` results; a call the
        deadline cuts off is recorded as ``cancelled`` (no duration) before the cancellation goes
        on."""
        await draft.hold_past_limit()
        started = draft.elapsed()
        clock = time.monotonic()
        try:
            result = await self._client.call_tool_mcp(name, arguments or {})
        except asyncio.CancelledError:
            draft.add_tool_call(
                recorded_name or name,
                arguments,
                CANCELLED_OUTPUT,
                is_error=True,
                server=self._server_label,
                started_s=started,
                cancelled=True,
            )
            raise
        except Exception as error:  # transport failures are recorded, then re-raised
            draft.add_tool_call(
                recorded_name or name,
                arguments,
                f"{type(error).__name__}: {error}",
                is_error=True,
                server=self._server_label,
                started_s=started,
                duration_s=time.monotonic() - clock,
            )
            if _is_protocol_answer(error):  # the server answered: not an outage
                raise
            raise self._unavailable(
                f"{self._server_name} failed during `{name}`: {type(error).__name__}: {error}"
            ) from error
        text = _result_text(result)
        is_error = bool(getattr(result, "is_error", False))
        draft.add_tool_call(
            recorded_name or name,
            arguments,
            text,
            is_error=is_error,
            server=self._server_label,
            started_s=started,
            duration_s=time.monotonic() - clock,
        )
        return ToolResultText(
            text=text, is_error=is_error, structured=getattr(result, "structured_content", None)
        )


def _is_protocol_answer(error: Exception) -> bool:
    """An MCP error the server sent back (it is up and answered), as opposed to a lost
    connection or a dead server."""
    from mcp import MCPError
    from mcp_types.jsonrpc import CONNECTION_CLOSED  # the server went away: nothing answered

    return isinstance(error, MCPError) and error.code != CONNECTION_CLOSED
