"""The trial header: how the runner tells the ERP MCP server which (question, trial) a call is for.

Shared by the server (``erp_mcp``, which keys its fault draws and audit entries by it) and the
harnesses (which send it on every request), so neither imports the other.
"""

from __future__ import annotations

from urllib.parse import quote

TRIAL_HEADER = "X-LedgerBench-Trial"
"""HTTP header carrying the trial key. Not a secret: it names a question, nothing more."""

_SAFE = "-._~:@/+,;=!*()'&"
"""Characters of a question id kept as they are in the key (everything else percent-encoded)."""


def trial_key(question_id: str, trial: int) -> str:
    """The header's value for one (question, trial), e.g. ``obl-other-001#0``.

    The id is percent-encoded where needed (non-ASCII, spaces, ``#``, ``$``): a header value must
    be ASCII, and the Claude CLI expands ``${...}`` in the headers of its MCP config."""
    return f"{quote(question_id, safe=_SAFE)}#{trial}"
