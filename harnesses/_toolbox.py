"""The run's MCP tools behind one client: the ERP's and, when the run has one, the research
world's.

Harnesses that bridge MCP tools to a model's function calls (openai's local mode, custom) open a
:class:`McpToolbox` where they used to open the ERP client alone. World tools are offered as
``world__<tool>`` (``world__search``, ``world__fetch``, ...), so their names never collide with
the ERP's and the record says which server answered (``server="world"``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harnesses._erp_client import ErpClient, ErpUnavailableError, ToolResultText, ToolSpec
from harnesses._protocol import AgentEnvironment, TrajectoryDraft

WORLD_LABEL = "world"
WORLD_PREFIX = f"{WORLD_LABEL}__"


class McpToolbox:
    """``async with McpToolbox(env) as tools: await tools.call(name, args, draft)``."""

    def __init__(self, env: AgentEnvironment, *, erp_label: str = "erp") -> None:
        self.env = env
        self.erp = ErpClient(env.erp, server_label=erp_label)
        self.world = ErpClient(env.world, server_label=WORLD_LABEL) if env.world else None
        self._world_url = env.world.url if env.world else None

    async def __aenter__(self) -> McpToolbox:
        await self.erp.__aenter__()
        if self.world is not None:
            try:
                await self.world.__aenter__()
            except ErpUnavailableError as error:
                await self.erp.__aexit__(None, None, None)
                raise ErpUnavailableError(
                    f"cannot connect to the research world's MCP server at {self._world_url}: "
                    f"{error.__cause__ or error}"
                ) from error
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            if self.world is not None:
                await self.world.__aexit__(*exc_info)
        finally:
            await self.erp.__aexit__(*exc_info)

    async def list_tools(self) -> list[ToolSpec]:
        """The tools of both servers the run lets the agent see (``--tools``)."""
        specs = await self.erp.list_tools()
        if self.world is not None:
            specs += [world_spec(spec) for spec in await self.world.list_tools()]
        return [spec for spec in specs if self.env.offers(spec.name)]

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        draft: TrajectoryDraft,
        *,
        recorded_name: str | None = None,
    ) -> ToolResultText:
        if not self.env.offers(name):  # a harness offers only listed tools; this is the lock
            raise ValueError(f"tool {name!r} is not among the tools of this run (--tools)")
        if self.world is not None and name.startswith(WORLD_PREFIX):
            tool = name.removeprefix(WORLD_PREFIX)
            return await self.world.call(
                tool, arguments, draft, recorded_name=recorded_name or name
            )
        return await self.erp.call(name, arguments, draft, recorded_name=recorded_name)


def world_spec(spec: ToolSpec) -> ToolSpec:
    """A research-world tool as the harnesses offer it: ``world__`` name, description saying
    which server answers."""
    return dataclasses.replace(
        spec,
        name=WORLD_PREFIX + spec.name,
        description=f"Research world (public companies): {spec.description}",
    )


def catalogue_key(env: AgentEnvironment) -> str:
    """Key of the tool list a toolbox for ``env`` offers (the servers it talks to, the choice)."""
    key = env.erp.url + (f" + {env.world.url}" if env.world else "")
    return key + (f" | {','.join(env.tools)}" if env.tools is not None else "")
