"""Plug-in harnesses the runner tests load by import path (``tests.test_runner_plugins:Class``),
shared helpers for the runner tests, and the tests of plug-in loading itself."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from harnesses import AgentOutcome, HarnessOptions
from harnesses._protocol import TransientError
from harnesses._registry import HarnessLoadError, create_harness
from ledgerbench_core._trial import TRIAL_HEADER, trial_key

LEAKED_SECRET_ENV = "RUNNER_TEST_LEAK"


# --------------------------------------------------------------------------------------------------
# Plug-in harnesses
# --------------------------------------------------------------------------------------------------


class InstantHarness:
    """Answers at once, echoing the question id; records one fake tool call."""

    name = "instant"

    def __init__(self, options: HarnessOptions) -> None:
        self.model = options.model or "instant-model"
        self.options = options

    async def run(self, task, env, draft) -> AgentOutcome:
        draft.add_tool_call("echo", {"id": task.question_id}, f"seen {task.question_id}")
        return AgentOutcome(answer=f"Answer to {task.question_id} (trial {task.trial}).")

    async def aclose(self) -> None:
        return None


class EnvToolsAgent:
    """A plug-in that answers with the tools its environment offers (``env.tools``)."""

    name = "env-tools"

    def __init__(self, options: HarnessOptions) -> None:
        self.model = "env-tools-model"

    async def run(self, task, env, draft) -> AgentOutcome:
        draft.extra["tools"] = list(env.tools) if env.tools is not None else None
        draft.extra["withheld_tools"] = list(env.withheld_tools)
        return AgentOutcome(answer="tools: " + ",".join(env.tools or ["(all)"]))

    async def aclose(self) -> None:
        return None


class PacedHarness(InstantHarness):
    """Takes ``delay`` seconds (``--harness-opt delay=0.3``) per question."""

    known_options: ClassVar[dict[str, str]] = {"delay": "seconds per question"}

    name = "paced"

    async def run(self, task, env, draft) -> AgentOutcome:
        await asyncio.sleep(float(self.options.extra.get("delay", "0.3")))
        return await super().run(task, env, draft)


class SlowHarness(InstantHarness):
    """Works forever in small steps, writing a partial answer and a tool call per step. When
    cancelled it writes a marker file in its work dir (the clean-up the runner must allow)."""

    name = "slow"

    async def run(self, task, env, draft) -> AgentOutcome:
        step = 0
        try:
            while True:
                step += 1
                draft.add_tool_call("step", {"n": step}, f"step {step} done")
                draft.set_answer(f"Partial answer after {step} steps.")
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            marker = Path(env.work_dir) / f"cleaned-{task.question_id}-{task.trial}"
            marker.write_text(str(step))
            raise


class StubbornHarness(InstantHarness):
    """Ignores cancellation for a while (a badly behaved plug-in): the runner must not wait."""

    name = "stubborn"

    async def run(self, task, env, draft) -> AgentOutcome:
        draft.set_answer("stubborn partial")
        for _ in range(100):  # 10 s: far past any budget and grace the tests give it
            try:
                await asyncio.sleep(0.1)
            except asyncio.CancelledError:
                continue
        return AgentOutcome(answer="too late")


class FlakyHarness(InstantHarness):
    """Fails ``fail_times`` times with a transient error (429-like), then answers."""

    known_options: ClassVar[dict[str, str]] = {"fail_times": "transient failures before an answer"}

    name = "flaky"

    def __init__(self, options: HarnessOptions) -> None:
        super().__init__(options)
        self.calls: dict[str, int] = {}

    async def run(self, task, env, draft) -> AgentOutcome:
        key = f"{task.question_id}/{task.trial}"
        self.calls[key] = self.calls.get(key, 0) + 1
        if self.calls[key] <= int(self.options.extra.get("fail_times", "2")):
            raise TransientError("429 Too Many Requests", retry_after=0.05)
        return AgentOutcome(answer=f"Answer after {self.calls[key]} attempts.")


class BrokenHarness(InstantHarness):
    """Always fails with a non-transient error after recording a partial answer."""

    name = "broken"

    async def run(self, task, env, draft) -> AgentOutcome:
        draft.set_answer("half an answer")
        raise KeyError("no such field in the provider reply")


class LeakyHarness(InstantHarness):
    """Puts the ERP token and an API key everywhere it can: answer, tool output, error text, a
    scratch file in its work dir. The runner must keep them out of every file it writes."""

    known_options: ClassVar[dict[str, str]] = {
        "api_key": "a secret to leak",
        "temperature": "recorded as it is",
    }

    name = "leaky"

    async def run(self, task, env, draft) -> AgentOutcome:
        token = env.erp.token or ""
        key = self.options.extra.get("api_key", "")
        leak = os.environ.get(LEAKED_SECRET_ENV, "")
        Path(env.work_dir, "mcp-config.json").write_text(
            f'{{"headers": {{"Authorization": "Bearer {token}"}}, "key": "{key}"}}'
        )
        draft.add_tool_call("leak", {"token": token}, f"token={token} key={key} env={leak}")
        if task.trial == 1:
            raise RuntimeError(f"provider said: bad key {key} with token {token}")
        return AgentOutcome(answer=f"my token is {token}, my key is {key}, env {leak}")


class BlockingHarness(InstantHarness):
    """Blocks its event loop (``time.sleep``) for ``block_s`` seconds, like a synchronous SDK call;
    the runner's deadline must still fire on time."""

    known_options: ClassVar[dict[str, str]] = {"block_s": "seconds the event loop is blocked"}

    name = "blocking"

    async def run(self, task, env, draft) -> AgentOutcome:
        draft.set_answer("blocking partial")
        time.sleep(float(self.options.extra.get("block_s", "10")))
        return AgentOutcome(answer="answered after blocking")


class SyncCallsHarness(InstantHarness):
    """Makes ``calls`` synchronous "SDK calls" of ``call_s`` each (``time.sleep``), recording a
    tool call for each, then answers: a plug-in written against a blocking client."""

    known_options: ClassVar[dict[str, str]] = {
        "calls": "blocking calls per question",
        "call_s": "seconds per call",
    }

    name = "sync-calls"

    async def run(self, task, env, draft) -> AgentOutcome:
        calls = int(self.options.extra.get("calls", "4"))
        for number in range(calls):
            time.sleep(float(self.options.extra.get("call_s", "0.25")))
            draft.add_tool_call("sync_call", {"n": number}, "ok")
        return AgentOutcome(answer=f"Answer to {task.question_id} after {calls} blocking calls.")


class EmptyHarness(InstantHarness):
    """Finishes on its own without writing any answer (an agent failure, not infrastructure)."""

    name = "empty"

    async def run(self, task, env, draft) -> AgentOutcome:
        return AgentOutcome(answer="")


class DeadProviderHarness(InstantHarness):
    """Talks to a provider whose port refuses connections, unless the file named by
    ``--harness-opt healthy_if=PATH`` exists (the provider came back)."""

    known_options: ClassVar[dict[str, str]] = {
        "port": "the dead provider's port",
        "healthy_if": "a file: the provider is back",
    }

    name = "dead-provider"

    async def run(self, task, env, draft) -> AgentOutcome:
        import httpx

        healthy = self.options.extra.get("healthy_if")
        if healthy and Path(healthy).exists():
            return AgentOutcome(answer=f"Answer to {task.question_id} once the provider is back.")
        async with httpx.AsyncClient() as client:
            await client.get(f"http://127.0.0.1:{self.options.extra['port']}/v1/models")
        return AgentOutcome(answer="unreachable")


class TrialHeaderHarness(InstantHarness):
    """Answers with the trial header its ERP endpoint would send (``env.erp.headers()``), after a
    pause so that questions overlap."""

    name = "trial-header"

    async def run(self, task, env, draft) -> AgentOutcome:
        await asyncio.sleep(0.05)
        return AgentOutcome(answer=env.erp.headers().get(TRIAL_HEADER, "none"))


# --------------------------------------------------------------------------------------------------
# Helpers shared by the runner tests
# --------------------------------------------------------------------------------------------------

_TAGS = {"relevance": [{"id": "relevance.direct", "text": "The response answers the question."}]}


def question(qid: str, query: str, task_type: str = "obligations", **extra: Any) -> dict:
    segment = {"obligations": "AR", "entity_performance": "Financial Performance"}.get(
        task_type, "Business Brief"
    )
    item = {
        "id": qid,
        "query": query,
        "task_type": task_type,
        "segment": extra.pop("segment", segment),
        "scenario": extra.pop("scenario", "Test"),
        "tags": _TAGS,
    }
    item.update(extra)
    return item


def write_dataset(path: Path, items: list[dict], snapshot_hash: str | None = None) -> Path:
    header: dict[str, Any] = {"name": path.stem, "created_by": "tests", "generator_seed": 42}
    if snapshot_hash:
        header["erp_snapshot_hash"] = snapshot_hash
    path.write_text(yaml.safe_dump({"header": header, "items": items}, sort_keys=False))
    return path


def numbered_dataset(path: Path, count: int, snapshot_hash: str | None = None) -> Path:
    items = [question(f"q-{i:03d}", f"Test question number {i}?") for i in range(count)]
    return write_dataset(path, items, snapshot_hash)


def snapshot_of(db_url: str) -> str:
    from synthetic_erp._db import open_engine, read_meta

    engine = open_engine(db_url, read_only=True)
    try:
        return read_meta(engine)["snapshot_hash"]
    finally:
        engine.dispose()


# --------------------------------------------------------------------------------------------------
# Plug-in loading
# --------------------------------------------------------------------------------------------------


def test_plugin_loads_by_import_path_with_options() -> None:
    options = HarnessOptions(model="m-1", extra={"delay": "0.01"})
    agent = create_harness("tests.test_runner_plugins:PacedHarness", options)
    assert isinstance(agent, PacedHarness)
    assert agent.model == "m-1"
    assert agent.options.extra["delay"] == "0.01"


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("tests.no_such_module:Thing", "cannot import module"),
        ("tests.test_runner_plugins:NoSuchClass", "has no attribute"),
        ("tests.test_runner_plugins", "unknown harness"),
        ("nonsense", "unknown harness"),
    ],
)
def test_bad_plugin_paths_are_refused_with_a_hint(path: str, fragment: str) -> None:
    with pytest.raises(HarnessLoadError, match=fragment):
        create_harness(path, HarnessOptions())


def test_a_plugin_reaches_the_erp_with_its_own_questions_trial_header(erp_server, tmp_path):
    from harnesses._runner import TRAJECTORIES_FILE, RunConfig, read_trajectories, run

    config = RunConfig(
        dataset=numbered_dataset(tmp_path / "ds.yaml", 3, snapshot_of(erp_server.db_url)),
        harness="tests.test_runner_plugins:TrialHeaderHarness",
        erp_url=erp_server.url,
        out=tmp_path / "run",
        trials=2,
        concurrency=4,
        progress=False,
    )
    run(config, log=lambda _: None)
    records = read_trajectories(tmp_path / "run" / TRAJECTORIES_FILE)
    assert sorted((r.question_id, r.trial) for r in records) == [
        (f"q-{i:03d}", trial) for i in range(3) for trial in range(2)
    ]
    assert all(r.answer == trial_key(r.question_id, r.trial) for r in records)
    # it declares nothing about model calls: its cost is unknown, never guessed as $0
    assert all(r.cost_usd is None for r in records)


def test_trial_keys_are_ascii_header_values_the_claude_cli_does_not_expand() -> None:
    assert trial_key("obl-other-001", 0) == "obl-other-001#0"
    assert trial_key("a b#${X}é", 2) == "a%20b%23%24%7BX%7D%C3%A9#2"
    assert trial_key("q#1", 0) != trial_key("q", 10)  # the id's own # cannot collide


def test_a_blocking_plugin_gets_the_same_verdicts_at_any_concurrency(erp_server, tmp_path):
    """Each question of a plug-in runs on an event loop (and thread) of its own: one question's
    blocking calls never eat another's budget."""
    from harnesses._runner import TRAJECTORIES_FILE, RunConfig, read_trajectories, run

    dataset = numbered_dataset(tmp_path / "ds.yaml", 10, snapshot_of(erp_server.db_url))
    verdicts = {}
    for concurrency in (1, 5):
        out = tmp_path / f"run-{concurrency}"
        config = RunConfig(
            dataset=dataset,
            harness="tests.test_runner_plugins:SyncCallsHarness",
            harness_opts={"calls": "4", "call_s": "0.25"},  # 1 s of blocking work
            erp_url=erp_server.url,
            out=out,
            timeout=4.0,  # serialised, 5 questions would need 5 s
            concurrency=concurrency,
            progress=False,
        )
        run(config, log=lambda _: None)
        records = read_trajectories(out / TRAJECTORIES_FILE)
        verdicts[concurrency] = sorted((r.question_id, r.termination.reason) for r in records)
        assert all(len(r.tool_calls) == 4 for r in records)
    assert verdicts[1] == verdicts[5]
    assert {reason for _, reason in verdicts[5]} == {"completed"}
