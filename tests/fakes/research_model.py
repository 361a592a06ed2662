"""A model-free research reader for the fake provider servers: it plays a simple agent through
whatever research the run offers, so one policy drives every harness the same way.

- ``--research world``: search the world with the question, fetch the top result, answer with the
  first figure-bearing line of that document and cite it;
- ``--research golden``: answer the same way from the first document given in the prompt;
- ``--research none`` (no research tool, no documents): say it cannot research, state no figure.

Its accuracy is low by design (it reads one line); what it shows is the wiring: the tools a
harness offers in each mode, the calls recorded with their documents, the citations judged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tests.fakes.anthropic_server import Reply, ToolUse, tool_result_text, tool_results
from tests.fakes.openai_server import Call, ModelRequest, Turn

CANNOT = "I cannot research public companies in this run (no research tools), so I give no figures."
_FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?\s*(?:%|million|billion)|[$€£]\s?\d")


@dataclass(frozen=True)
class Step:
    """Call ``tool`` with ``arguments``, or (tool None) answer ``text``."""

    tool: str | None = None
    arguments: dict[str, Any] | None = None
    text: str = ""


def decide(tools: list[str], prompt: str, last_output: str | None) -> Step:
    """The next step from the offered tool names, the user prompt and the latest tool output."""
    search = next((t for t in tools if t.endswith("search") and "world" in t), None)
    fetch = next((t for t in tools if t.endswith("fetch") and "world" in t), None)
    if "Documents for this question" in prompt:
        return Step(text=_answer_from_prompt(prompt))
    if search is None or fetch is None:
        return Step(text=CANNOT)
    data = _json(last_output)
    if data is None:
        question = prompt.strip().splitlines()[0][:280]
        return Step(search, {"query": question, "k": 5})
    if "results" in data:
        if not data["results"]:
            return Step(text="The research world returned no document for this question.")
        return Step(fetch, {"url": data["results"][0]["url"]})
    if "content" in data:
        return Step(text=_answer(data["content"], data["title"], data["url"]))
    return Step(text="The research tools failed; I give no figures.")


def _json(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:  # the CLI appends reminders after a tool's JSON
        data, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except json.JSONDecodeError:
        return {}
    if isinstance(data, dict) and set(data) == {"result"}:
        data = data["result"]
    return data if isinstance(data, dict) else {}


def _answer(content: str, title: str, url: str) -> str:
    line = next(
        (
            line.strip(" |#*")
            for line in content.splitlines()
            if _FIGURE.search(line) and not set(line.strip()) <= set("|-: ")
        ),
        "the document states no figure",
    )
    line = re.sub(r"\s*\|\s*", "; ", line)
    return f"{line} (source: [{title}]({url})).\n\nSources: {url}"


def _answer_from_prompt(prompt: str) -> str:
    block = prompt.split("--- Document 1:", 1)[1]
    header, _, rest = block.partition("\n")
    url = re.search(r"^URL: (\S+)", rest, re.M).group(1)
    content = rest.split("\n", 2)[-1].split("\n--- Document ", 1)[0]
    title = header.rsplit(" (", 1)[0].strip()
    return _answer(content, title, url)


# -- the fakes' script shapes ----------------------------------------------------------------------


def openai_script(request: ModelRequest) -> Turn:
    """For :func:`tests.fakes.openai_server.serve_openai` (Responses or chat)."""
    body = request.body
    tools = [
        t.get("name") or t.get("function", {}).get("name", "") for t in body.get("tools") or []
    ]
    step = decide(tools, _openai_prompt(body), (request.tool_outputs or [None])[-1])
    if step.tool is None:
        return Turn(text=step.text)
    return Turn(tool_calls=[Call(step.tool, step.arguments or {})])


def _openai_prompt(body: dict[str, Any]) -> str:
    items = body.get("input") or body.get("messages") or []
    if isinstance(items, str):
        return items
    for item in items:
        if item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, list):
                return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


def anthropic_script(body: dict[str, Any], turn: int) -> Reply:
    """For :class:`tests.fakes.anthropic_server.ScriptedModel` (the CLI or custom api=anthropic)."""
    tools = [str(t.get("name", "")) for t in body.get("tools") or []]
    results = tool_results(body)
    last = tool_result_text(results[-1]) if results else None
    step = decide(tools, _anthropic_prompt(body), last)
    if step.tool is None:
        return Reply(text=step.text)
    return Reply(tool_uses=[ToolUse(step.tool, step.arguments or {})])


def _anthropic_prompt(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or [] if b.get("type") == "text"]
        # the CLI puts reminders before the question: the question is the last text block
        if texts:
            return texts[-1]
    return ""
