"""Plug-in harnesses for the Ray executor tests, loaded on Ray workers by import path.

They coordinate with the test through files in ``--harness-opt dir=PATH`` (the workers run on this
machine): each writes ``pid-<question>-<trial>`` holding the pid of the process to kill or check.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import ClassVar

from harnesses import AgentOutcome, HarnessOptions


class _FileSignals:
    name = "ray-test"
    known_options: ClassVar[dict[str, str]] = {
        "dir": "the folder of signal files",
        "hang": "ids that hang once",
    }

    def __init__(self, options: HarnessOptions) -> None:
        self.model = "test-model"
        self.options = options
        self.dir = Path(options.extra["dir"])

    def _mark(self, task, label: str, pid: int) -> None:
        path = self.dir / f"{label}-{task.question_id}-{task.trial}"
        path.with_suffix(".part").write_text(str(pid))
        os.replace(path.with_suffix(".part"), path)

    async def aclose(self) -> None:
        return None


class HangOnceHarness(_FileSignals):
    """Questions named in ``hang`` (comma-separated ids) hang the first time they run, after
    writing the worker's pid; every other run answers at once."""

    name = "hang-once"

    async def run(self, task, env, draft) -> AgentOutcome:
        hang = set(self.options.extra.get("hang", "").split(","))
        first_time = not (self.dir / f"hung-{task.question_id}-{task.trial}").exists()
        if task.question_id in hang and first_time:
            (self.dir / f"hung-{task.question_id}-{task.trial}").write_text("")
            self._mark(task, "pid", os.getpid())
            await asyncio.sleep(task.timeout_s)
        draft.add_tool_call("echo", {"id": task.question_id}, f"seen {task.question_id}")
        return AgentOutcome(answer=f"Answer to {task.question_id} (trial {task.trial}).")


class ChildProcessHarness(_FileSignals):
    """Starts a long ``sleep`` child (as the Claude CLI harness starts Node), writes its pid, and
    waits; when cancelled it kills the child and writes ``cleaned-<question>-<trial>``."""

    name = "child-process"

    async def run(self, task, env, draft) -> AgentOutcome:
        child = await asyncio.create_subprocess_exec("sleep", "300")
        self._mark(task, "pid", child.pid)
        try:
            await child.wait()
        except asyncio.CancelledError:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            await child.wait()
            self._mark(task, "cleaned", child.pid)
            raise
        return AgentOutcome(answer="the child ended")
