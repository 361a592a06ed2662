"""Sample limits for every harness (``--max-turns``, ``--max-tool-calls``, ``--max-tokens``,
``--max-cost-usd``): the runner enforces them from what harnesses report, harnesses with a cap of
their own apply the tighter one, and the reason is in the closed set and the manifest.

The models are the local fakes (real SDKs over HTTP), the ERP the real MCP server."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesses import AgentEnvironment, ErpEndpoint, HarnessOptions, Status, create_harness
from harnesses._erp_client import ErpClient
from harnesses._protocol import AgentOutcome
from harnesses._runner import (
    MANIFEST_FILE,
    TRAJECTORIES_FILE,
    QuestionRunner,
    RunConfig,
    RunConfigError,
    read_trajectories,
    run,
)
from ledgerbench.pipeline import AgentSpec, SpecError
from ledgerbench_core.dataset import Question, TaskType
from ledgerbench_core.trajectory import RunManifest, TerminationReason
from tests.fakes.openai_server import Call, ModelRequest, Turn, serve_openai
from tests.test_runner_plugins import numbered_dataset, snapshot_of

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def forever_tools(request: ModelRequest) -> Turn:
    """A model that always wants one more tool call (and answers when tools are refused)."""
    if request.body.get("tool_choice") == "none":
        return Turn(text=f"Final answer after {request.index} turns.")
    return Turn(text=f"Turn {request.index}: one more lookup.", tool_calls=[Call("erp_info", {})])


async def one_question(harness: str, options: HarnessOptions, erp_server, **limits):
    agent = create_harness(harness, options)
    env = AgentEnvironment(
        erp=ErpEndpoint(url=erp_server.url), instructions="Be exact.", work_dir="/tmp"
    )
    config = RunConfig(harness=harness, timeout=60.0, progress=False, **limits)
    question = Question(
        id="q-limit", query="Balance?", task_type=TaskType.obligations, segment="AR", scenario="t"
    )
    runner = QuestionRunner(agent, env, config)
    try:
        return await runner.run(question, 0)
    finally:
        await runner.aclose()


class LookupLoop:
    """An agent without a cap of its own: it calls ``erp_info`` through :class:`ErpClient` (the
    scripted agent's client) until it is stopped, so only the runner's limit ends it."""

    name = "lookup-loop"
    model = None

    async def run(self, task, env, draft) -> AgentOutcome:
        async with ErpClient(env.erp) as erp:
            while True:
                await erp.call("erp_info", {}, draft)


async def test_a_run_over_its_tool_call_limit_ends_at_the_call_that_went_over(
    erp_server,
) -> None:
    """Issue 40: the runner checks the limits every few milliseconds, and an agent whose calls
    are faster made more calls past the limit, the last one cut off in flight, as many as the
    timing allowed: a seeded run then differed between machines and executors. Now no call
    starts past the limit, so the record ends at the call that went over, whole, every time."""
    env = AgentEnvironment(
        erp=ErpEndpoint(url=erp_server.url), instructions="Be exact.", work_dir="/tmp"
    )
    config = RunConfig(harness="lookup-loop", timeout=60.0, progress=False, max_tool_calls=3)
    question = Question(
        id="q-loop", query="Balance?", task_type=TaskType.obligations, segment="AR", scenario="t"
    )
    runner = QuestionRunner(LookupLoop(), env, config)
    try:
        records = [await runner.run(question, trial) for trial in range(3)]
    finally:
        await runner.aclose()
    for record in records:
        assert record.termination.reason == TerminationReason.max_turns
        assert record.termination.detail == "4 tool calls, over --max-tool-calls 3"
        assert [c.name for c in record.tool_calls] == ["erp_info"] * 4
        assert not any(c.is_error for c in record.tool_calls), record.tool_calls[-1].output


class WorldLookupLoop:
    """:class:`LookupLoop` on the research world: ``world__world_info`` through the toolbox the
    openai and custom harnesses bridge MCP tools with (the world's own client behind it)."""

    name = "world-lookup-loop"
    model = None

    async def run(self, task, env, draft) -> AgentOutcome:
        from harnesses._toolbox import McpToolbox

        async with McpToolbox(env) as tools:
            while True:
                await tools.call("world__world_info", {}, draft)


async def test_the_world_client_holds_past_the_limit_too(
    erp_server, erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> None:
    """Issue 40: research tools go through the same client as the ERP's, so a run over its
    limit on world calls also ends at the call that went over, every time."""
    from tests.conftest import start_world_server, stop_process
    from tests.world_fixtures import shared_folder, small_world

    world = small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))
    world_server, _ = start_world_server(f"sqlite:///{world}")
    env = AgentEnvironment(
        erp=ErpEndpoint(url=erp_server.url),
        world=ErpEndpoint(url=world_server.url),
        instructions="Be exact.",
        work_dir="/tmp",
    )
    config = RunConfig(harness="world-lookup-loop", timeout=60.0, progress=False, max_tool_calls=2)
    question = Question(
        id="q-world-loop",
        query="Margins?",
        task_type=TaskType.entity_performance,
        segment="research",
        scenario="t",
    )
    runner = QuestionRunner(WorldLookupLoop(), env, config)
    try:
        records = [await runner.run(question, trial) for trial in range(3)]
    finally:
        await runner.aclose()
        stop_process(world_server.process)
    for record in records:
        assert record.termination.reason == TerminationReason.max_turns
        assert record.termination.detail == "3 tool calls, over --max-tool-calls 2"
        assert [(c.name, c.server) for c in record.tool_calls] == [
            ("world__world_info", "world")
        ] * 3
        assert not any(c.is_error for c in record.tool_calls), record.tool_calls[-1].output


@pytest.mark.parametrize("harness", ["openai", "custom"])
async def test_max_tool_calls_tightens_the_harness_cap(harness, erp_server) -> None:
    with serve_openai(forever_tools) as fake:
        options = HarnessOptions(base_url=fake.base_url)
        record = await one_question(harness, options, erp_server, max_tool_calls=3)
    assert record.termination.reason == TerminationReason.max_turns, record.termination
    assert record.status == Status.max_turns and not record.termination.infrastructure
    # (custom's own erp_info before the model's first turn is the harness's, not one of the three)
    assert len(record.tool_calls) == 3, [c.name for c in record.tool_calls]
    assert record.answer.startswith("Final answer"), "the harness ended gracefully with an answer"


@pytest.mark.parametrize(("harness", "turns"), [("openai", 2), ("custom", 3)])
async def test_max_turns_caps_every_harness(harness, turns, erp_server) -> None:
    with serve_openai(forever_tools) as fake:
        options = HarnessOptions(base_url=fake.base_url)
        record = await one_question(harness, options, erp_server, max_turns=turns)
        requests = len(fake.model_requests)
    assert record.termination.reason == TerminationReason.max_turns, record.termination
    assert record.turns == turns == requests, "never more model turns than --max-turns"


async def test_max_tokens_stops_the_question_as_token_limit(erp_server) -> None:
    # 100 input + 20 output tokens a turn: the third turn takes the question to 360 > 250.
    with serve_openai(forever_tools) as fake:
        options = HarnessOptions(base_url=fake.base_url)
        record = await one_question("openai", options, erp_server, max_tokens=250)
    assert record.termination.reason == TerminationReason.token_limit, record.termination
    assert record.status == Status.max_turns and not record.termination.infrastructure
    assert record.termination.detail == "360 tokens, over --max-tokens 250"
    assert record.turns == 3
    assert record.answer == "Turn 2: one more lookup.", "what the model wrote is kept"


async def test_max_cost_stops_the_question_as_cost_limit(erp_server) -> None:
    # $1 per million input and output tokens: 120 tokens a turn = $0.00012 a turn.
    price = {"price_per_mtok": "1,1,1"}
    with serve_openai(forever_tools) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra=price)
        record = await one_question("custom", options, erp_server, max_cost_usd=0.0003)
    assert record.termination.reason == TerminationReason.cost_limit, record.termination
    assert record.cost_usd == pytest.approx(0.00036)
    assert record.termination.detail == "USD 0.0004, over --max-cost-usd 0.0003"


def test_a_plugin_is_stopped_by_the_runner_and_the_limits_are_in_the_manifest(
    erp_server, tmp_path
) -> None:
    """SlowHarness has no cap of its own: it records a tool call every 0.1 s until stopped."""
    dataset = numbered_dataset(tmp_path / "ds.yaml", 2, snapshot_of(erp_server.db_url))
    config = RunConfig(
        dataset=dataset,
        harness="tests.test_runner_plugins:SlowHarness",
        erp_url=erp_server.url,
        out=tmp_path / "run",
        timeout=60.0,
        max_tool_calls=5,
        progress=False,
    )
    summary = run(config, log=lambda _: None)
    records = read_trajectories(summary.run_dir / TRAJECTORIES_FILE)
    assert [r.termination.reason for r in records] == [TerminationReason.max_turns] * 2
    for record in records:
        assert len(record.tool_calls) == 6, "stopped at the first call over the limit"
        assert record.termination.detail == "6 tool calls, over --max-tool-calls 5"
        assert record.latency_s < 10, "stopped at once, not at the deadline"
        assert (tmp_path / "run" / "work" / f"cleaned-{record.question_id}-0").exists()
    manifest = RunManifest.model_validate_json((tmp_path / "run" / MANIFEST_FILE).read_text())
    assert manifest.config["max_tool_calls"] == 5 and manifest.config["max_tokens"] is None
    assert manifest.fingerprint_parts["limits"] == {"max_tool_calls": 5}
    # A resume with another limit is another run: refused, naming what changed.
    with pytest.raises(RunConfigError, match=r"sample limits \(max_tool_calls 5 -> 9\)"):
        run(config.model_copy(update={"max_tool_calls": 9}), log=lambda _: None)


def test_agent_specs_turn_limits_into_runner_flags() -> None:
    spec = AgentSpec.parse("openai:gpt-5.2,max_turns=8,max_tool_calls=12,web_search=false")
    spec_cost = AgentSpec.parse("custom:qwen3,max_tokens=150000,max_cost_usd=0.25")
    args = spec.run_args() + spec_cost.run_args()
    assert args[args.index("--max-turns") + 1] == "8"
    assert args[args.index("--max-tool-calls") + 1] == "12"
    assert args[args.index("--max-tokens") + 1] == "150000"
    assert args[args.index("--max-cost-usd") + 1] == "0.25"
    assert args[args.index("--harness-opt") :][:2] == ["--harness-opt", "web_search=false"]
    assert "max_turns=8" not in " ".join(args), "a limit is not a harness option"
    with pytest.raises(SpecError, match="max_turns must be above 0"):
        AgentSpec.parse("scripted,max_turns=0")
    with pytest.raises(SpecError, match="is not a number"):
        AgentSpec.parse("scripted,max_cost_usd=lots")


def test_limit_flags_are_validated_in_one_line(tmp_path: Path, capsys) -> None:
    from harnesses import run as cli

    for flag, value in [
        ("--max-turns", "0"),
        ("--max-tokens", "-5"),
        ("--max-cost-usd", "inf"),
        ("--stall-timeout", "nan"),
    ]:
        code = cli.main(["--no-progress", "--out", str(tmp_path / "r"), flag, value])
        err = capsys.readouterr().err.strip()
        assert code == 2 and err.startswith(f"error: {flag} {value}"), err
        assert len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()
