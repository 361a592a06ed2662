"""Paging cursors: opaque, signed, and bound to the tool and the filters of the call that made them.

A cursor is ``<payload>.<signature>``: the payload (URL-safe base64 of JSON) holds the offset of the
next row and a fingerprint of the call (the tool's name and its arguments without the paging
fields); the signature is an HMAC-SHA256 of the payload under the server's cursor key. So a client
can neither move a cursor to another offset, nor use it with another tool or other filters: each is
refused with one line saying what to do instead.

The key is ``$LEDGERBENCH_CURSOR_SECRET`` when set (replicas behind a load balancer set the same
value, so a cursor from one works on another), else random per server process; ``--workers``
hands its workers one random key (see :mod:`erp_mcp._serve_cli`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterator
from contextvars import ContextVar
from functools import cache

from fastmcp.exceptions import ToolError
from pydantic import BaseModel

CURSOR_SECRET_ENV = "LEDGERBENCH_CURSOR_SECRET"
PAGING_FIELDS = frozenset({"page", "page_size", "cursor", "top", "skip"})
"""Arguments a cursor does not bind: they say where a page starts and how long it is."""
MAX_OFFSET = 50_000_000

_TOOL: ContextVar[str] = ContextVar("erp_mcp_tool", default="")


@contextlib.contextmanager
def tool_scope(name: str) -> Iterator[None]:
    """Cursors made or read inside belong to the tool ``name`` (set around every tool call)."""
    token = _TOOL.set(name)
    try:
        yield
    finally:
        _TOOL.reset(token)


@cache
def cursor_key() -> bytes:
    """The key cursors are signed with (read once per process)."""
    secret = os.environ.get(CURSOR_SECRET_ENV)
    return secret.encode("utf-8") if secret else secrets.token_bytes(32)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def fingerprint(args: BaseModel) -> str:
    """Short hash of the tool and the filters of a call (its arguments but the paging ones)."""
    filters = args.model_dump(mode="json", exclude=set(PAGING_FIELDS))
    blob = json.dumps([_TOOL.get(), type(args).__name__, filters], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _signature(payload: str) -> str:
    return _b64(hmac.new(cursor_key(), payload.encode(), hashlib.sha256).digest()[:16])


def encode_cursor(args: BaseModel, offset: int) -> str:
    """The cursor continuing the call ``args`` (of the current tool) at row ``offset``."""
    body = json.dumps({"o": offset, "q": fingerprint(args)}, separators=(",", ":"))
    payload = _b64(body.encode())
    return f"{payload}.{_signature(payload)}"


def decode_cursor(cursor: str, args: BaseModel) -> int:
    """The offset a cursor continues at, or a ToolError when it was not issued by this server for
    this tool and these filters."""
    payload, _, signature = cursor.strip().partition(".")
    if not signature or not hmac.compare_digest(
        signature.encode("ascii", "replace"), _signature(payload).encode()
    ):
        raise ToolError(
            "cursor: not a cursor this server issued (or the server restarted since); pass "
            "next_cursor unchanged, or drop cursor to start again"
        )
    try:
        body = json.loads(_unb64(payload))
        offset, issued_for = int(body["o"]), str(body["q"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise ToolError(
            "cursor: not a cursor this server issued; pass next_cursor unchanged"
        ) from None
    if issued_for != fingerprint(args):
        raise ToolError(
            "cursor: it continues another call (another tool or different filters); repeat the "
            "tool and filters of the call that returned it, or drop cursor to start again"
        )
    if not 0 <= offset <= MAX_OFFSET:
        raise ToolError("cursor: offset out of range; pass next_cursor unchanged")
    return offset
