"""``--research golden``: each research item's gold documents, read from the world once before the
run, go into its prompt (a reasoning ceiling: the agent needs no retrieval).

The documents come through the world server's own ``fetch`` tool, so a ``--world-url`` world works
as a served file does. A trial's record keeps what it was given (``input`` holds the whole prompt,
``given_documents`` the links) so the judge counts those documents as read.
"""

from __future__ import annotations

import asyncio
from typing import Any

from harnesses._erp_client import http_transport
from harnesses._executor import Pair
from harnesses._protocol import McpEndpoint
from harnesses._redact import one_line
from harnesses._run_config import RunConfigError

FETCH_ATTEMPTS = 4


def golden_prompt(query: str, documents: list[dict[str, Any]]) -> str:
    """The question followed by its documents (title, source, date, URL, the text)."""
    parts = [query, "", "Documents for this question (cite them by their URL):"]
    for number, doc in enumerate(documents, 1):
        parts += [
            "",
            f"--- Document {number}: {doc['title']} ({doc['source']}, published "
            f"{doc['published_at']})",
            f"URL: {doc['url']}",
            "",
            str(doc["content"]).strip(),
        ]
    return "\n".join(parts) + "\n"


async def golden_pairs(pairs: list[Pair], world: McpEndpoint) -> list[Pair]:
    """``pairs`` with each research item's prompt holding its gold documents (other items as
    they are)."""
    links = list(dict.fromkeys(link for q, _ in pairs for link in q.gold_documents))
    documents = await fetch_documents(world, links)
    out: list[Pair] = []
    for question, trial in pairs:
        if question.gold_documents:
            given = [documents[link] for link in question.gold_documents]
            question = question.model_copy(update={"query": golden_prompt(question.query, given)})
        out.append((question, trial))
    return out


async def fetch_documents(world: McpEndpoint, links: list[str]) -> dict[str, dict[str, Any]]:
    """Link -> the world's ``fetch`` result for every link (retrying injected faults)."""
    from fastmcp import Client

    if not links:
        return {}
    found: dict[str, dict[str, Any]] = {}
    try:
        async with Client(http_transport(world)) as client:
            for link in links:
                found[link] = await _fetch_one(client, link)
    except RunConfigError:
        raise
    except Exception as error:
        raise RunConfigError(
            f"--research golden: cannot read the gold documents from the research world at "
            f"{world.url} ({one_line(f'{type(error).__name__}: {error}')})"
        ) from None
    return found


async def _fetch_one(client: Any, link: str) -> dict[str, Any]:
    for attempt in range(FETCH_ATTEMPTS):
        result = await client.call_tool_mcp("fetch", {"url": link})
        if not result.is_error:
            structured = result.structured_content or {}
            return (
                structured.get("result", structured) if "content" not in structured else structured
            )
        text = " ".join(getattr(block, "text", "") for block in result.content or [])
        if not text.lstrip().startswith("TRANSIENT"):
            raise RunConfigError(
                f"--research golden: gold document {link} cannot be read from the research world "
                f"({one_line(text)[:200]}); the dataset and the world do not match"
            )
        await asyncio.sleep(0.2 * (attempt + 1))
    raise RunConfigError(f"--research golden: gold document {link} kept failing transiently")
