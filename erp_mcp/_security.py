"""DNS-rebinding protection for every HTTP route (``/mcp`` and the record pages).

A browser page on a foreign site can make a loopback server answer by rebinding its own name to
127.0.0.1; the request then carries the foreign name in ``Host`` and the foreign site in ``Origin``.
So every request must name an allowed host: loopback names (localhost, 127.0.0.1, ::1) always, any
other only when given with ``--allowed-host``. A wrong ``Host`` gets 421 (this server does not serve
that name), a present but foreign ``Origin`` gets 403, as the MCP transport specification asks.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
MAX_REQUEST_BYTES = 256 * 1024
"""Largest request body: the biggest valid call (a 500-value ``in`` filter of long strings) is
about 100 KB; a megabyte list is refused before it is parsed."""


def normalize_host(value: str) -> str | None:
    """The host name of a ``Host`` header or ``--allowed-host`` value, lower case, without port or
    IPv6 brackets; None when it is malformed."""
    value = value.strip().lower()
    if not value or any(ch in value for ch in "/@\\ \t"):
        return None
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 1 else None
    host, _, port = value.partition(":") if value.count(":") == 1 else (value, "", "")
    if port and not port.isdigit():
        return None
    return host.rstrip(".") or None


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class HostOriginGuard:
    """ASGI middleware refusing requests whose Host (421) or Origin (403) is not allowed, and
    bodies over ``MAX_REQUEST_BYTES`` (413)."""

    def __init__(self, app, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = {h for h in (normalize_host(x) for x in allowed_hosts) if h}

    def allows(self, host: str | None) -> bool:
        return host is not None and (_is_loopback(host) or host in self.allowed)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host_header = headers.get("host", "")
        if not self.allows(normalize_host(host_header)):
            await _refuse(
                send,
                421,
                f"misdirected request: this server does not answer to Host {host_header[:100]!r}; "
                "start it with --allowed-host NAME to serve that name",
            )
            return
        origin = headers.get("origin")
        if origin is not None:
            origin_host = urlsplit(origin).hostname if "://" in origin else None
            if not self.allows(origin_host):
                await _refuse(
                    send,
                    403,
                    f"forbidden: requests from Origin {origin[:100]!r} are refused; start the "
                    "server with --allowed-host NAME to accept that site",
                )
                return
        length = headers.get("content-length")
        if length is None:  # chunked: read the body (at most the limit) before the app sees it
            receive = await _buffered(receive)
            if receive is None:
                await _refuse(send, 413, _TOO_LARGE)
                return
        elif length.isascii() and length.isdigit() and int(length) > MAX_REQUEST_BYTES:
            await _refuse(send, 413, _TOO_LARGE)
            return
        await self.app(scope, receive, send)


_TOO_LARGE = (
    f"request body over {MAX_REQUEST_BYTES} bytes; no valid call is that large (an in filter "
    "takes at most 500 values)"
)


async def _buffered(receive):
    """``receive`` replaying a body sent without a declared length (chunked), read here in full;
    None once it grows past ``MAX_REQUEST_BYTES`` (the caller answers 413 itself: an app that
    met the limit halfway through reading would answer 500)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: pass that on
            first = message
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_REQUEST_BYTES:
            return None
        if not message.get("more_body", False):
            first = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            break
    pending = [first]

    async def replay():
        return pending.pop() if pending else await receive()

    return replay


async def _refuse(send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"x-content-type-options", b"nosniff"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
