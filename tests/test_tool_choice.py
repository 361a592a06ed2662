"""``--tools``: the tools of a run, chosen by name, glob or group, for every harness.

Real ERP servers (one started with ``--toolset generic``), the real runner and CLI in
subprocesses, the fake model servers of ``tests/fakes`` driven by the real SDKs and the real
``claude`` binary. A choice that names nothing real is refused in one line before any question,
with nothing written to the run folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnesses._runner import MANIFEST_FILE, RunConfig, RunConfigError, read_trajectories, run
from harnesses._tool_choice import (
    ToolChoiceError,
    catalogue,
    check_tool_patterns,
    parse_tool_patterns,
    select_tools,
)
from ledgerbench.pipeline import AgentSpec, SpecError
from ledgerbench_core.trajectory import RunManifest
from tests.conftest import REPO_ROOT, RunningServer, start_mcp_server, stop_process
from tests.fakes.anthropic_server import AnthropicFakeServer, Reply, ScriptedModel
from tests.fakes.openai_server import Call, ModelRequest, Turn, serve_openai
from tests.test_runner_plugins import numbered_dataset, snapshot_of

pytestmark = pytest.mark.timeout(180)

FINANCE = [name for name, group in catalogue().items() if group == "finance"]
GENERIC = ["list_entity_sets", "describe_entity_set", "query_entity_set"]


@pytest.fixture(scope="module")
def generic_erp(erp_db_url: str) -> Iterator[RunningServer]:
    """An ERP server that offers the generic data tools alone (no erp_info)."""
    server, _ = start_mcp_server(erp_db_url, "--toolset", "generic")
    yield server
    stop_process(server.process)


@pytest.fixture
def api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def config_for(server: RunningServer, tmp_path: Path, **fields: Any) -> RunConfig:
    tmp_path.mkdir(parents=True, exist_ok=True)
    dataset = numbered_dataset(tmp_path / "ds.yaml", 1, snapshot_of(server.db_url))
    return RunConfig(
        dataset=dataset, erp_url=server.url, out=tmp_path / "run", progress=False, **fields
    )


def manifest_of(run_dir: Path) -> RunManifest:
    return RunManifest.model_validate_json((run_dir / MANIFEST_FILE).read_text())


# -- the patterns --------------------------------------------------------------------------------


def test_groups_globs_and_names_choose_from_what_is_offered() -> None:
    offered = [*FINANCE, *GENERIC, "world__search", "world__fetch"]
    assert select_tools(["finance"], offered) == FINANCE
    assert select_tools(["generic"], offered) == GENERIC
    assert select_tools(["world"], offered) == ["world__search", "world__fetch"]
    assert select_tools(["erp"], offered) == [*FINANCE, *GENERIC]
    assert select_tools(["all"], offered) == offered
    chosen = select_tools(parse_tool_patterns("erp_info, list_*"), offered)
    assert chosen[0] == "erp_info" and len(chosen) > 5
    assert all(name == "erp_info" or name.startswith("list_") for name in chosen)
    both = ["get_aging", "world__search", "world__fetch"]
    assert select_tools(["world", "get_aging"], offered) == both  # the servers' order
    # a group with nothing offered is no error (world on a run without a research world) ...
    assert select_tools(["finance", "world"], FINANCE) == FINANCE
    # ... but a tool named outright that the server lacks is, and so is an empty choice
    with pytest.raises(ToolChoiceError, match="'erp_info' is not offered by the run's ERP"):
        select_tools(["erp_info"], GENERIC)
    with pytest.raises(ToolChoiceError, match="chooses none of the 3 tools"):
        select_tools(["world"], GENERIC)
    with pytest.raises(ToolChoiceError, match="'world__search': the run serves no research world"):
        select_tools(["world__search"], FINANCE)


@pytest.mark.parametrize(
    ("patterns", "hint"),
    [
        (["erp_inf"], "did you mean erp_info"),
        (["finanse"], "did you mean finance"),
        (["lst_*"], "no tool matches 'lst_*'"),
        (["search"], "world__search"),
    ],
)
def test_unknown_names_are_refused_with_close_matches(patterns: list[str], hint: str) -> None:
    with pytest.raises(ToolChoiceError) as raised:
        check_tool_patterns(patterns)
    message = str(raised.value)
    assert hint in message and "groups: finance, generic, world, erp, all" in message
    assert "\n" not in message


# -- the runner ----------------------------------------------------------------------------------


def test_cli_refuses_an_unknown_tool_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "harnesses.run",
            "--harness",
            "nothing",
            "--tools",
            "erp_inf",
            "--out",
            str(out),
            "--no-progress",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("error: --tools erp_inf: ") and "did you mean erp_info" in lines[0]
    assert not out.exists()


def test_a_generic_only_server_is_accepted_and_the_choice_recorded(
    generic_erp: RunningServer, tmp_path: Path
) -> None:
    """The runner needs no erp_info tool to start; the plug-in sees the chosen tools."""
    config = config_for(generic_erp, tmp_path, harness="tests.test_runner_plugins:EnvToolsAgent")
    summary = run(config.model_copy(update={"tools": ["list_*", "describe_*"]}), log=lambda _: 0)
    manifest = manifest_of(summary.run_dir)
    assert manifest.erp_snapshot_hash == snapshot_of(generic_erp.db_url)  # from erp://info
    assert manifest.tools == ["list_entity_sets", "describe_entity_set"]
    assert manifest.config["tools"] == ["list_*", "describe_*"]
    (record,) = read_trajectories(summary.run_dir / "trajectories.jsonl")
    assert record.extra["tools"] == ["list_entity_sets", "describe_entity_set"]
    assert record.extra["withheld_tools"] == ["query_entity_set"]

    everything = run(
        config.model_copy(update={"out": tmp_path / "all", "tools": []}), log=lambda _: 0
    )
    assert manifest_of(everything.run_dir).tools == GENERIC
    (record,) = read_trajectories(everything.run_dir / "trajectories.jsonl")
    assert record.extra["tools"] is None  # no --tools: every tool the servers offer


def test_a_tool_the_server_lacks_is_refused_before_anything_is_written(
    generic_erp: RunningServer, tmp_path: Path
) -> None:
    config = config_for(generic_erp, tmp_path, harness="nothing", tools=["erp_info", "generic"])
    with pytest.raises(RunConfigError) as raised:
        run(config, log=lambda _: 0)
    assert "--tools erp_info,generic: 'erp_info' is not offered by the run's ERP server" in str(
        raised.value
    )
    assert "query_entity_set" in str(raised.value)  # what it does offer
    assert not config.out.exists()


def test_scripted_refuses_when_a_tool_it_calls_is_left_out(
    erp_server: RunningServer, generic_erp: RunningServer, tmp_path: Path
) -> None:
    config = config_for(erp_server, tmp_path, harness="scripted", tools=["finance"])
    with pytest.raises(RunConfigError) as raised:
        run(config, log=lambda _: 0)
    message = str(raised.value)
    assert message == (
        "the scripted agent calls query_entity_set, which --tools finance leaves out; choose "
        "tools that include them (e.g. --tools finance,query_entity_set)"
    )
    assert not config.out.exists()
    on_generic = config_for(generic_erp, tmp_path / "g", harness="scripted")
    with pytest.raises(RunConfigError, match=r"calls erp_info, .* the run's servers do not offer"):
        run(on_generic, log=lambda _: 0)
    assert not on_generic.out.exists()

    chosen = config.model_copy(update={"tools": ["finance", "query_entity_set"]})
    summary = run(chosen, log=lambda _: 0)
    assert summary.recorded == 1
    assert manifest_of(summary.run_dir).tools == [*FINANCE, "query_entity_set"]


def test_custom_and_openai_send_exactly_the_chosen_tools(
    erp_server: RunningServer, tmp_path: Path, api_keys: None
) -> None:
    """The request bodies list the chosen tools and no other; a call to another tool is refused
    as unknown, not run."""
    chosen = ["erp_info", "get_customer", "list_customer_transactions"]

    def model(request: ModelRequest) -> Turn:
        if not request.tool_outputs:
            return Turn(tool_calls=[Call("get_aging", {}), Call("erp_info", {})])
        return Turn(text="Done: " + " | ".join(o[:60] for o in request.tool_outputs))

    for harness in ("custom", "openai"):
        with serve_openai(model) as fake:
            config = config_for(
                erp_server,
                tmp_path / harness,
                harness=harness,
                model="m-1",
                base_url=fake.base_url,
                tools=["erp_info", "get_customer", "list_customer_*"],
            )
            summary = run(config, log=lambda _: 0)
            bodies = [r.body for r in fake.model_requests]
        assert manifest_of(summary.run_dir).tools == chosen
        for body in bodies:
            names = [t.get("name") or t["function"]["name"] for t in body["tools"]]
            assert names == chosen, harness
        (record,) = read_trajectories(summary.run_dir / "trajectories.jsonl")
        refused = [c for c in record.tool_calls if c.name == "get_aging"]
        assert refused and refused[0].is_error and "unknown tool" in refused[0].output, harness
        ran = [c for c in record.tool_calls if c.name == "erp_info" and not c.is_error]
        assert ran, harness


def test_openai_hosted_mcp_allows_the_chosen_tools_alone(
    erp_server: RunningServer, tmp_path: Path, api_keys: None
) -> None:
    with serve_openai([Turn(text="The answer.")]) as fake:
        config = config_for(
            erp_server,
            tmp_path,
            harness="openai",
            model="m-1",
            base_url=fake.base_url,
            erp_public_url=erp_server.url,
            harness_opts={"mcp_mode": "hosted"},
            tools=["get_*"],
        )
        summary = run(config, log=lambda _: 0)
        (body,) = [r.body for r in fake.model_requests]
    (entry,) = [t for t in body["tools"] if t["type"] == "mcp"]
    assert entry["allowed_tools"] == sorted(manifest_of(summary.run_dir).tools)
    assert entry["allowed_tools"] and all(n.startswith("get_") for n in entry["allowed_tools"])


@pytest.mark.claude_cli
@pytest.mark.skipif(shutil.which("claude") is None, reason="claude CLI not installed")
def test_the_claude_cli_is_sent_the_chosen_tools_alone(
    erp_server: RunningServer, tmp_path: Path, api_keys: None
) -> None:
    """The CLI's allowed tools are the chosen ones and the rest are denied by name, so the model
    is sent the chosen definitions alone, as ``claude_tool_entries`` builds them (what
    bench/bench_tool_tokens.py counts for the claude harness)."""
    import asyncio

    from harnesses._claude_cli import claude_tool_entries
    from harnesses._protocol import AgentEnvironment, ErpEndpoint
    from harnesses._toolbox import McpToolbox

    with AnthropicFakeServer(ScriptedModel([Reply(text="The answer.")])) as fake:
        config = config_for(
            erp_server,
            tmp_path,
            harness="claude",
            model="claude-sonnet-4-6",
            base_url=fake.base_url,
            tools=["erp_info", "get_aging"],
        )
        summary = run(config, log=lambda _: 0)
        main = [r.body for r in fake.main_requests()]
    assert summary.recorded == 1 and main
    sent = [t for t in main[0]["tools"] if t["name"].startswith("mcp__")]
    assert [t["name"] for t in sent] == ["mcp__erp__erp_info", "mcp__erp__get_aging"]

    async def listed() -> list[Any]:
        env = AgentEnvironment(erp=ErpEndpoint(url=erp_server.url), instructions="", work_dir="")
        async with McpToolbox(env) as toolbox:
            return [s for s in await toolbox.list_tools() if s.name in ("erp_info", "get_aging")]

    expected = claude_tool_entries(asyncio.run(listed()))
    for entry, want in zip(sent, expected, strict=True):
        assert entry["input_schema"] == want["input_schema"]
        assert entry["description"].startswith(want["description"][:60])
    # The pre-flight's count of the prompt before the question (instructions, tools and the
    # CLI's own prompt, CLI_OWN_PROMPT_CHARS) is what this CLI sent, within 15%.
    seen = manifest_of(tmp_path / "run").model_endpoint
    assert seen is not None and "claude client's own" in seen.prompt_tokens_source
    sent_chars = sum(len(json.dumps(main[0].get(key))) for key in ("system", "tools", "messages"))
    sent_tokens = sent_chars / 4 - len("Test question number 0?") / 4
    assert abs(seen.prompt_tokens / sent_tokens - 1) < 0.15, (seen.prompt_tokens, sent_tokens)


# -- ledgerbench agent specs -----------------------------------------------------------------------


def test_agent_specs_take_tools_and_refuse_unknown_ones() -> None:
    spec = AgentSpec.parse("custom:qwen3,base_url=http://127.0.0.1:8080/v1,tools=erp_info,list_*")
    assert spec.tools == ("erp_info", "list_*")
    assert spec.run_args()[-2:] == ["--tools", "erp_info,list_*"]
    spec = AgentSpec.parse("scripted,tools=finance,world,query_entity_set,label=lean")
    assert spec.tools == ("finance", "world", "query_entity_set") and spec.label == "lean"
    with pytest.raises(SpecError) as raised:
        AgentSpec.parse("custom:qwen3,tools=erp_inf")
    assert "tools=erp_inf: no tool or group named 'erp_inf' (did you mean erp_info" in str(
        raised.value
    )


def test_the_report_shows_the_tools_beside_the_agent(
    erp_server: RunningServer, tmp_path: Path
) -> None:
    from analysis._load import tools_label

    config = config_for(erp_server, tmp_path, harness="nothing", tools=["finance"])
    run_dir = run(config, log=lambda _: 0).run_dir
    for command in (
        ["judge.run", str(run_dir), "--judge", "rules", "--erp-db", erp_server.db_url],
        ["analysis.compare", str(run_dir), "--judge", "rules", "--out", str(tmp_path / "report")],
    ):
        done = subprocess.run(
            [sys.executable, "-m", *command], cwd=REPO_ROOT, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
    report = (tmp_path / "report" / "report.md").read_text()
    assert f"research world, tools finance ({len(FINANCE)}), 1 answers" in report
    untouched = json.loads(manifest_of(run_dir).model_dump_json())
    untouched["tools"], untouched["config"]["tools"] = None, []
    assert tools_label(RunManifest.model_validate(untouched)) is None  # an older run: "–"


def test_scripted_calls_no_tool_beyond_the_ones_it_declares(
    erp_server: RunningServer, tmp_path: Path
) -> None:
    """Its declared tools are what its rules call: over every obligation item of the default
    set, run with exactly those tools, every call it made is one of them."""
    from harnesses.scripted._agent import ScriptedAgent

    config = RunConfig(
        dataset=REPO_ROOT / "datasets" / "obligations.yaml",
        erp_url=erp_server.url,
        out=tmp_path / "run",
        progress=False,
        harness="scripted",
        concurrency=8,
        tools=list(ScriptedAgent.ERP_TOOLS),
    )
    summary = run(config, log=lambda _: 0)
    records = read_trajectories(summary.run_dir / "trajectories.jsonl")
    called = {call.name for record in records for call in record.tool_calls}
    assert len(records) == 100 and len(called) > 10
    assert called <= set(ScriptedAgent.ERP_TOOLS), called - set(ScriptedAgent.ERP_TOOLS)


def test_the_default_research_tools_fit_their_token_budget() -> None:
    """The tool definitions of a research run (ERP finance tools and the world's), as the custom
    harness sends them, stay within 6,000 tokens of a named tokenizer (bench/bench_tool_tokens.py
    prints every figure); every harness sends every tool."""
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    try:
        import bench_tool_tokens
    finally:
        sys.path.remove(str(REPO_ROOT / "bench"))
    figures = bench_tool_tokens.measure()
    assert figures["tokenizer"].startswith("tiktoken cl100k_base")
    per_set = figures["per_toolset"]
    assert per_set["finance+world"]["tools"] == len(FINANCE) + 5
    assert per_set["finance+world"]["custom"] <= 6_000
    assert per_set["all"]["tools"] == len(figures["per_tool"]) == len(catalogue())
    for harness in ("custom", "custom-anthropic", "openai", "claude"):
        assert per_set["finance"][harness] < per_set["finance+world"][harness], harness


async def test_the_erp_facts_are_a_resource_whatever_the_toolset(
    erp_server: RunningServer, generic_erp: RunningServer
) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    async with Client(StreamableHttpTransport(generic_erp.url)) as client:
        assert "erp_info" not in {t.name for t in await client.list_tools()}
        (contents,) = await client.read_resource("erp://info")
    async with Client(StreamableHttpTransport(erp_server.url)) as client:
        tool = (await client.call_tool("erp_info", {})).structured_content
    facts = json.loads(contents.text)
    assert facts.pop("record_url_pattern").startswith(generic_erp.base_url)  # its own links
    assert facts == {k: v for k, v in tool.items() if k != "record_url_pattern"}
