"""MCP client sessions that compile each tool's output-schema validator once per process.

The MCP SDK checks every structured tool result against the tool's output schema. It compiles a
validator per tool *per session*, and compiling (which first checks the schema against the JSON
Schema metaschema) costs tens of milliseconds: with one session per question and a handful of tools
per question, that compilation was about half of an agent's client-side CPU. The schemas are the
same for every session on a server, so the compiled validators are shared, keyed by the schema's
content (a server that changes a schema gets a new validator). Results are validated exactly as
before; only the compilation is reused.

Imported lazily (it imports FastMCP): ``harnesses._erp_client`` builds its transports here.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp.client.transports.base import TransportOptions, VersionAwareClientSession


class SharedValidatorSession(VersionAwareClientSession):
    """FastMCP's default session, with output-schema validators shared across sessions."""

    def _output_schema_validator(self, name: str, output_schema: dict[str, Any]) -> Any:
        # The SDK's hook for "the compiled validator of this tool's schema" (mcp 2.x). Were it
        # renamed, the SDK would compile per session again: slower, never less strict. The
        # session's own cache (which the SDK empties when a listing changes a schema) is kept, so
        # the schema is serialised once per session and tool, not on every call.
        validator = self._tool_output_validators.get(name)
        if validator is None:
            validator = compiled_validator(name, json.dumps(output_schema, sort_keys=True))
            self._tool_output_validators[name] = validator
        return validator


@functools.lru_cache(maxsize=512)
def compiled_validator(name: str, schema_json: str) -> Any:
    """The checked, compiled validator of one output schema (the SDK's rules: the schema must be
    valid JSON Schema, and ``$ref`` resolves only inside it)."""
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for
    from referencing import Registry

    schema = json.loads(schema_json)
    validator_class = validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except SchemaError as error:
        raise RuntimeError(f"Invalid schema for tool {name}: {error}") from error
    return validator_class(schema, registry=Registry())


SESSION_OPTIONS = TransportOptions(session_class=SharedValidatorSession)


class HttpTransport(StreamableHttpTransport):
    """Streamable HTTP whose sessions share compiled output-schema validators."""

    def connect_session(self, *, transport_options: TransportOptions | None = None, **kwargs: Any):
        return super().connect_session(
            transport_options=transport_options or SESSION_OPTIONS, **kwargs
        )


class StdioServerTransport(StdioTransport):
    """Stdio whose sessions share compiled output-schema validators."""

    def connect_session(self, *, transport_options: TransportOptions | None = None, **kwargs: Any):
        return super().connect_session(
            transport_options=transport_options or SESSION_OPTIONS, **kwargs
        )
