"""Which tools a run offers its agent (``--tools``, an agent spec's ``tools=``).

A choice is a list of patterns, each a tool's name as the model sees it (ERP tools by their own
name, research-world tools as ``world__<tool>``), a glob over those names (``list_*``) or a group:

- ``finance``: the ERP's finance tools (``erp_mcp --toolset finance``);
- ``generic``: the ERP's Dynamics-style data tools (``--toolset generic``);
- ``world``: the research world's tools;
- ``erp``: every ERP tool; ``all``: every tool (the default).

The patterns are checked against the catalogue of the ERP and world servers before anything
starts (:func:`check_tool_patterns`), then resolved against what the run's servers actually offer
(:func:`select_tools`): a tool named outright that the server does not offer is an error, a group
or glob that matches nothing there is not (``world`` on a run without research questions).
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from harnesses._protocol import McpEndpoint
from harnesses._toolbox import WORLD_PREFIX

SERVER_GROUPS = ("finance", "generic", "world")
GROUPS = (*SERVER_GROUPS, "erp", "all")
_GLOB = frozenset("*?[")


class ToolChoiceError(ValueError):
    """A tool choice that names nothing real; the message is one line without the flag."""


def parse_tool_patterns(values: str | Iterable[str]) -> list[str]:
    """``"erp_info, list_*"`` (or several such strings) as patterns, in order, once each."""
    texts = [values] if isinstance(values, str) else list(values)
    patterns: list[str] = []
    for text in texts:
        for part in text.split(","):
            if part.strip() and part.strip() not in patterns:
                patterns.append(part.strip())
    return patterns


@cache
def catalogue() -> dict[str, str]:
    """Every tool the ERP and world servers can offer, by the name a model sees, with its group.

    Read from the servers' registries (importing the tool modules: about a second, paid only when
    a run chooses its tools)."""
    from erp_mcp._tooling import ERP_TOOLS
    from synthetic_world._tools import WORLD_TOOLS

    known = {tool.name: tool.toolset for tool in ERP_TOOLS.select("all")}
    known.update({WORLD_PREFIX + tool.name: "world" for tool in WORLD_TOOLS.select("all")})
    return known


def group_of(name: str) -> str | None:
    """The group of a tool name (None for a tool no LedgerBench server defines)."""
    if name.startswith(WORLD_PREFIX):
        return "world"
    return catalogue().get(name)


def matches(pattern: str, name: str) -> bool:
    if pattern == "all":
        return True
    if pattern == "erp":
        return not name.startswith(WORLD_PREFIX)
    if pattern in SERVER_GROUPS:
        return group_of(name) == pattern
    if _GLOB & set(pattern):
        return fnmatch.fnmatchcase(name, pattern)
    return name == pattern


def check_tool_patterns(patterns: Sequence[str]) -> None:
    """Raise :class:`ToolChoiceError` for a pattern that names no tool of the catalogue."""
    if not patterns:
        raise ToolChoiceError("no tool named; give names, globs or groups, e.g. finance,world")
    names = list(catalogue())
    for pattern in patterns:
        if pattern in GROUPS or any(matches(pattern, name) for name in names):
            continue
        raise ToolChoiceError(f"{_no_such(pattern, names)}; groups: {', '.join(GROUPS)}")


def _no_such(pattern: str, names: list[str]) -> str:
    kind = "no tool matches" if _GLOB & set(pattern) else "no tool or group named"
    stem = pattern.replace("*", "").replace("?", "")
    close = difflib.get_close_matches(stem, [*names, *GROUPS], n=3, cutoff=0.6)
    close += [n for n in names if stem and stem in n and n not in close][: 3 - len(close)]
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return f"{kind} {pattern!r}{hint}"


def select_tools(patterns: Sequence[str], offered: Sequence[str]) -> list[str]:
    """The offered tools the patterns choose, in the servers' order.

    Raises :class:`ToolChoiceError` when a tool named outright is not offered, or when nothing
    offered is chosen."""
    for pattern in patterns:
        plain = pattern not in GROUPS and not _GLOB & set(pattern)
        if plain and pattern not in offered:
            world = pattern.startswith(WORLD_PREFIX)
            same_server = [n for n in offered if n.startswith(WORLD_PREFIX) == world]
            if world and not same_server:
                raise ToolChoiceError(
                    f"{pattern!r}: the run serves no research world (its questions need none, "
                    "or --research is not world)"
                )
            raise ToolChoiceError(
                f"{pattern!r} is not offered by the run's "
                f"{'research world' if world else 'ERP'} server (it offers "
                f"{_short_list(same_server)})"
            )
    chosen = [name for name in offered if any(matches(p, name) for p in patterns)]
    if not chosen:
        raise ToolChoiceError(
            f"{','.join(patterns)} chooses none of the {len(offered)} tools the run's servers "
            f"offer ({_short_list(offered)})"
        )
    return chosen


def _short_list(names: Iterable[str], most: int = 12) -> str:
    names = list(names)
    if not names:
        return "no tools"
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


@dataclass(frozen=True)
class RunTools:
    """The tools of a run: what its servers offer and what the agent is offered of them."""

    offered: tuple[str, ...]
    chosen: tuple[str, ...] | None = None
    """None: every offered tool (no ``--tools``)."""

    @property
    def visible(self) -> tuple[str, ...]:
        return self.offered if self.chosen is None else self.chosen

    @property
    def withheld(self) -> tuple[str, ...]:
        return tuple(name for name in self.offered if name not in self.visible)


async def offered_tools(erp: McpEndpoint, world: McpEndpoint | None) -> list[str]:
    """The names of the tools the run's servers offer, as a model sees them."""
    from harnesses._protocol import AgentEnvironment
    from harnesses._toolbox import McpToolbox

    env = AgentEnvironment(erp=erp, instructions="", work_dir="", world=world)
    async with McpToolbox(env) as toolbox:
        return [spec.name for spec in await toolbox.list_tools()]


def choose_run_tools(
    patterns: Sequence[str], offered: Sequence[str], harness: Any, flag: str = "--tools"
) -> RunTools:
    """The run's tools, or :class:`ToolChoiceError` (one line, naming ``flag``) when the patterns
    choose nothing real or leave out a tool the harness needs (``harness.required_tools(offered)``,
    for agents such as the scripted one that call fixed tools)."""
    try:
        chosen = tuple(select_tools(patterns, offered)) if patterns else None
    except ToolChoiceError as error:
        raise ToolChoiceError(f"{flag} {','.join(patterns)}: {error}") from None
    tools = RunTools(tuple(offered), chosen)
    required = getattr(harness, "required_tools", None)
    missing = [t for t in required(tools.offered) if t not in tools.visible] if required else []
    if missing:
        name = getattr(harness, "name", "this")
        where = (
            f"{flag} {','.join(patterns)} leaves out"
            if patterns and all(t in offered for t in missing)
            else "the run's servers do not offer"
        )
        raise ToolChoiceError(
            f"the {name} agent calls {', '.join(missing)}, which {where}; choose tools that "
            f"include them (e.g. {flag} {','.join([*patterns, *missing]) or 'all'})"
        )
    return tools
