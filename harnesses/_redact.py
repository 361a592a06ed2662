"""Secrets never reach a file the run writes: what counts as a secret, and how it is hidden."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

SECRET_KEY_PATTERN = re.compile(r"key|token|secret|password|passwd|auth|credential|cookie", re.I)
REDACTED = "***"


def is_secret_key(key: str) -> bool:
    return bool(SECRET_KEY_PATTERN.search(key))


def redact_url(url: str | None) -> str | None:
    if url is None:
        return None
    return re.sub(r"(?<=://)([^/@\s:]+):([^/@\s]+)@", r"\1:***@", url)


def public_harness_opts(opts: dict[str, str]) -> dict[str, str]:
    return {key: (REDACTED if is_secret_key(key) else value) for key, value in sorted(opts.items())}


def redact_command(argv: Iterable[str], secret_values: Iterable[str]) -> list[str]:
    """argv with token values, secret harness options and URL passwords replaced by ``***``."""
    secrets = [value for value in secret_values if value]
    redacted: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            redacted.append(REDACTED)
            hide_next = False
            continue
        if arg in {"--erp-token", "--token", "--api-key"}:
            redacted.append(arg)
            hide_next = True
            continue
        if arg.startswith(("--erp-token=", "--token=", "--api-key=")):
            redacted.append(arg.split("=", 1)[0] + "=" + REDACTED)
            continue
        if "=" in arg and not arg.startswith("-") and is_secret_key(arg.split("=", 1)[0]):
            redacted.append(arg.split("=", 1)[0] + "=" + REDACTED)
            continue
        if arg.startswith("--harness-opt=") and is_secret_key(arg.split("=", 2)[1]):
            redacted.append("--harness-opt=" + arg.split("=", 2)[1] + "=" + REDACTED)
            continue
        clean = redact_url(arg) or arg
        for secret in secrets:
            clean = clean.replace(secret, REDACTED)
        redacted.append(clean)
    return redacted


def environment_secrets() -> list[str]:
    """Values of API-key-like environment variables, scrubbed from everything the run writes."""
    return [
        value
        for name, value in os.environ.items()
        if len(value) >= 8 and re.search(r"(API_KEY|TOKEN|SECRET|PASSWORD)$", name.upper())
    ]


def one_line(text: str) -> str:
    return " ".join(text.split())


def error_detail(error: BaseException, secret: str | None) -> str:
    """``Type: message`` of ``error`` on one line, with ``secret`` (a server's token) masked."""
    detail = one_line(f"{type(error).__name__}: {error}")
    return detail.replace(secret, REDACTED) if secret else detail
