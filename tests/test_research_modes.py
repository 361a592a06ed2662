"""``--research world|web|none|golden``: what each mode serves, offers and records, through the
real runner, the real world server and, for the model harnesses, the fake provider servers driven
by the real SDKs (and, for claude, the real CLI)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harnesses import RunConfig
from harnesses._instructions import SYSTEM_INSTRUCTIONS, instructions_hash, system_instructions
from harnesses._run_config import RunConfigError
from harnesses._runner import run
from ledgerbench_core.dataset import load_dataset
from ledgerbench_core.trajectory import TrajectoryRecord
from tests.conftest import start_world_server, stop_process
from tests.fakes.anthropic_server import AnthropicFakeServer, ScriptedModel
from tests.fakes.openai_server import serve_openai
from tests.fakes.research_model import CANNOT, anthropic_script, openai_script
from tests.world_fixtures import question_set, shared_folder, small_world, world_rows

pytestmark = pytest.mark.timeout(600)

KEY = "sk-fake-research"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return shared_folder(tmp_path_factory, worker_id, "world")


@pytest.fixture(scope="module")
def world(erp_db_url: str, folder: Path) -> Path:
    return small_world(erp_db_url, folder)


@pytest.fixture(scope="module")
def entity_set(world: Path, erp_db_url: str, folder: Path) -> Path:
    return question_set(world, erp_db_url, folder, "entity_performance", 50)


@pytest.fixture(scope="module")
def positive_ids(entity_set: Path) -> list[str]:
    """Three positive single-company items (each has gold documents)."""
    items = [
        i
        for i in load_dataset(entity_set).items
        if not i.metadata["negative"] and i.gold_documents and i.metadata.get("company_reference")
    ]
    return [i.id for i in items[:3]]


def records(run_dir: Path) -> list[TrajectoryRecord]:
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    return [TrajectoryRecord.model_validate_json(line) for line in lines]


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


@pytest.fixture(scope="module")
def servers(erp_server, world: Path) -> Iterator[tuple[str, str]]:
    """One ERP and one world server (MCP over HTTP) for the module's runs, as a deployment hands
    them to the runner (``--erp-url``, ``--world-url``): the modes under test are what the agent
    is given, not how the runner starts servers (``test_world_is_the_default_and_is_recorded``
    and ``tests/test_world_questions.py`` run with the servers the runner starts itself)."""
    world_server, _ = start_world_server(f"sqlite:///{world}")
    try:
        yield erp_server.url, world_server.url
    finally:
        stop_process(world_server.process)


def run_mode(servers, entity_set, out, research, ids, **extra) -> Path:
    erp_url, world_url = servers
    config = RunConfig(
        dataset=entity_set,
        ids=ids,
        erp_url=erp_url,
        world_url=world_url if research in ("world", "golden") else None,
        research=research,
        out=out,
        progress=False,
        retries=0,
        **extra,
    )
    run(config, log=lambda _m: None)
    return out


class WorldProbe:
    """A plug-in (``tests.test_research_modes:WorldProbe``) that searches the world it is handed
    through its own MCP client and reports what it got."""

    def __init__(self, options) -> None:
        self.model = None

    async def run(self, task, env, draft):
        from harnesses import AgentOutcome
        from harnesses._erp_client import ErpClient

        if env.world is None:
            return AgentOutcome(answer=f"research={env.research}; no world")
        async with ErpClient(env.world, server_label="world") as world:
            result = await world.call("search", {"query": task.query[:200]}, draft)
        return AgentOutcome(answer=f"research={env.research}; searched: {not result.is_error}")


def world_servers(record: TrajectoryRecord) -> set[str]:
    return {call.server for call in record.tool_calls if call.server == "world"}


# -- instructions -----------------------------------------------------------------------------


def test_each_mode_tells_the_agent_where_research_goes_and_web_is_the_published_text() -> None:
    texts = {mode: system_instructions(mode) for mode in ("world", "web", "none", "golden")}
    assert texts["web"] == SYSTEM_INSTRUCTIONS
    assert "web search and URL fetching" in texts["web"]
    assert "`world`" in texts["world"] and "no web access" in texts["world"]
    assert "No research tools" in texts["none"]
    assert "documents you need come with the question" in texts["golden"]
    for mode, text in texts.items():
        others = [t for m, t in texts.items() if m != mode]
        assert "web search" not in text or mode == "web"
        assert text not in others
    assert len({instructions_hash(t) for t in texts.values()}) == 4
    with pytest.raises(ValueError, match="expected one of world, web, none, golden"):
        system_instructions("internet")


# -- the runner -------------------------------------------------------------------------------


def test_world_is_the_default_and_is_recorded(
    entity_set, world, erp_db_url, tmp_path, positive_ids
):
    config = RunConfig(
        dataset=entity_set,
        ids=positive_ids[:1],
        erp_db=erp_db_url,
        world_db=f"sqlite:///{world}",
        out=tmp_path / "run",
        progress=False,
    )
    assert config.research == "world"
    run(config, log=lambda _m: None)
    data = manifest(tmp_path / "run")
    assert data["config"]["research"] == "world" and data["world_id"]
    assert data["system_prompt_hash"] == instructions_hash(system_instructions("world"))
    (record,) = records(tmp_path / "run")
    assert record.status.value == "ok" and world_servers(record) == {"world"}
    assert any(call.documents for call in record.tool_calls)


def test_a_plug_in_gets_the_world_beside_the_erp(
    servers, entity_set, world, tmp_path, positive_ids
):
    plugin = "tests.test_research_modes:WorldProbe"
    ids = positive_ids[:1]
    runs = {
        mode: run_mode(servers, entity_set, tmp_path / mode, mode, ids, harness=plugin)
        for mode in ("world", "none")
    }
    (with_world,) = records(runs["world"])
    assert with_world.answer == "research=world; searched: True"
    (search,) = with_world.tool_calls
    assert search.server == "world" and search.documents
    (without,) = records(runs["none"])
    assert without.answer == "research=none; no world"


def test_none_serves_no_world_and_the_agent_gets_no_research_tool(
    servers, entity_set, world, tmp_path, positive_ids
):
    out = run_mode(servers, entity_set, tmp_path / "none", "none", positive_ids[:2])
    data = manifest(out)
    assert data["config"]["research"] == "none"
    assert data["world_id"] is None and data["world_url"] is None
    assert not (out / "world_mcp.log").exists()
    assert data["system_prompt_hash"] == instructions_hash(system_instructions("none"))
    for record in records(out):
        assert world_servers(record) == set()
        assert "no research tools" in record.answer


def test_world_flags_with_a_worldless_mode_are_one_line_and_touch_nothing(
    entity_set, world, erp_db_url, tmp_path
):
    config = RunConfig(
        dataset=entity_set,
        erp_db=erp_db_url,
        world_db=f"sqlite:///{world}",
        research="web",
        out=tmp_path / "run",
        progress=False,
    )
    with pytest.raises(RunConfigError, match="--world-db has no use with --research web"):
        run(config, log=lambda _m: None)
    assert not (tmp_path / "run").exists()


def test_the_scripted_baseline_refuses_golden_in_one_line(entity_set, erp_db_url, tmp_path):
    config = RunConfig(
        dataset=entity_set, erp_db=erp_db_url, research="golden", out=tmp_path / "r", progress=False
    )
    with pytest.raises(RunConfigError, match="the scripted harness supports world, web, none"):
        run(config, log=lambda _m: None)
    assert not (tmp_path / "r").exists()


def test_the_cli_takes_research_and_explains_it(capsys) -> None:
    from harnesses.run import build_parser

    parser = build_parser()
    assert parser.parse_args(["--research", "golden"]).research == "golden"
    assert parser.parse_args([]).research == "world"
    text = parser.format_help()
    assert "--research" in text and "memorisation floor" in text and "reasoning ceiling" in text
    with pytest.raises(SystemExit):
        parser.parse_args(["--research", "internet"])
    assert "invalid choice: 'internet'" in capsys.readouterr().err


# -- the model harnesses on the fake servers ----------------------------------------------------


def gold_contents(world: Path, links: list[str]) -> list[str]:
    ids = [link.rsplit("/", 1)[-1] for link in links]
    rows = world_rows(
        world,
        f"SELECT doc_id, body FROM document WHERE doc_id IN ({','.join('?' * len(ids))})",
        tuple(ids),
    )
    bodies = dict(rows)
    return [bodies[i] for i in ids]


def check_world_record(record: TrajectoryRecord, prefix: str) -> None:
    assert record.status.value == "ok", record.error
    names = [call.name for call in record.tool_calls if call.server == "world"]
    assert names == [f"{prefix}search", f"{prefix}fetch"], [c.name for c in record.tool_calls]
    search, fetch = [call for call in record.tool_calls if call.server == "world"]
    assert search.documents and fetch.documents == [search.documents[0]]
    assert fetch.documents[0].rsplit("/", 1)[-1] in record.answer
    assert not any(call.server == "web" for call in record.tool_calls)


def run_openai_modes(servers, entity_set, tmp_path, ids, monkeypatch, harness, opts):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = {}
    with serve_openai(openai_script, api_key=KEY) as fake:
        for mode in ("world", "golden", "none"):
            out[mode] = run_mode(
                servers, entity_set, tmp_path / mode, mode, ids,
                harness=harness, base_url=fake.base_url, model="gpt-5.2", harness_opts=opts,
            )  # fmt: skip
        tools = [
            {t.get("name") or t.get("function", {}).get("name") for t in r.body.get("tools") or []}
            for r in fake.model_requests
        ]
    return out, tools


@pytest.mark.parametrize(
    ("harness", "opts"),
    [("openai", {}), ("custom", {"api": "openai"})],
)
def test_openai_wire_harnesses_research_in_every_mode(
    servers, entity_set, world, tmp_path, positive_ids, monkeypatch, harness, opts
):
    ids = positive_ids[:1]
    runs, offered = run_openai_modes(servers, entity_set, tmp_path, ids, monkeypatch, harness, opts)
    assert any("world__search" in names for names in offered)
    assert not any("web_search" in names for names in offered)
    (world_record,) = records(runs["world"])
    check_world_record(world_record, "world__")
    (golden,) = records(runs["golden"])
    item = next(i for i in load_dataset(entity_set).items if i.id == ids[0])
    assert golden.given_documents == item.gold_documents
    for content in gold_contents(world, item.gold_documents):
        assert content.strip() in golden.input
    assert world_servers(golden) == set() and golden.status.value == "ok"
    assert item.gold_documents[0].rsplit("/", 1)[-1] in golden.answer
    (none,) = records(runs["none"])
    assert none.answer == CANNOT and world_servers(none) == set()


def test_custom_on_the_anthropic_wire_researches_the_world(
    servers, entity_set, world, tmp_path, positive_ids, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    model = ScriptedModel(anthropic_script, all_requests_main=True)
    with AnthropicFakeServer(model, api_key=KEY) as fake:
        out = run_mode(
            servers, entity_set, tmp_path / "w", "world", positive_ids[:1],
            harness="custom", base_url=fake.base_url, model="claude-x",
            harness_opts={"api": "anthropic"},
        )  # fmt: skip
    (record,) = records(out)
    check_world_record(record, "world__")


@pytest.mark.skipif(shutil.which("claude") is None, reason="the claude CLI is not installed")
def test_claude_cli_researches_the_world_and_never_the_web(
    servers, entity_set, world, tmp_path, positive_ids, monkeypatch
):
    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    model = ScriptedModel(anthropic_script)
    with AnthropicFakeServer(model, api_key=KEY) as fake:
        out = run_mode(
            servers, entity_set, tmp_path / "w", "world", positive_ids[:1],
            harness="claude", base_url=fake.base_url, model="claude-sonnet-4-6",
            timeout=120.0,
        )  # fmt: skip
        offered = {t["name"] for t in fake.main_requests()[0].body["tools"]}
    assert {"mcp__world__search", "mcp__world__fetch"} <= offered
    assert not offered & {"WebSearch", "WebFetch"}
    (record,) = records(out)
    check_world_record(record, "mcp__world__")


def test_claude_config_names_the_erp_and_the_world_with_tokens_as_variables() -> None:
    from harnesses._claude_cli import (
        TOKEN_VARIABLE,
        WORLD_TOKEN_VARIABLE,
        build_command,
        mcp_config,
    )
    from harnesses._protocol import AgentEnvironment, ErpEndpoint

    env = AgentEnvironment(
        erp=ErpEndpoint(url="http://127.0.0.1:9/mcp", token="erp-secret"),
        instructions="I",
        work_dir="/tmp",
        world=ErpEndpoint(url="http://127.0.0.1:10/mcp", token="world-secret"),
    ).for_trial("q-1#0")
    servers = mcp_config(env, "http")["mcpServers"]
    assert list(servers) == ["erp", "world"]
    assert servers["world"]["url"] == "http://127.0.0.1:10/mcp"
    assert servers["world"]["headers"]["Authorization"] == f"Bearer ${{{WORLD_TOKEN_VARIABLE}}}"
    assert servers["erp"]["headers"]["Authorization"] == f"Bearer ${{{TOKEN_VARIABLE}}}"
    assert "secret" not in json.dumps(servers)
    argv = build_command(
        "claude", "q", instructions="I", mcp_config_path="/m", model=None, effort=None,
        max_turns=5, web=False, world=True,
    )  # fmt: skip
    assert argv[argv.index("--tools") + 1] == ""
    allowed = argv[argv.index("--allowedTools") + 1 : argv.index("--disallowedTools")]
    assert allowed == ["mcp__erp", "mcp__world"]
    assert not env.web_allowed
