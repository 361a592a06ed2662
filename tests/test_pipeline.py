"""The one-command pipeline end to end, offline: ERP, questions, scripted run, rules, report."""

from __future__ import annotations

import json

import pytest

from ledgerbench.pipeline import DEMO_FAULT_RATE, DEMO_FAULT_SEED, AgentSpec, SpecError, main
from ledgerbench_core.trajectory import RunManifest

SMALL = [
    *("--customers", "150", "--vendors", "150", "--questions", "25", "--concurrency", "4"),
    *("--entity-questions", "6", "--brief-questions", "5"),  # 5: a tested contrast's minimum
    *("--conversations", str(CONVERSATIONS := 8)),
]
ITEMS = 25 + 6 + 5 + CONVERSATIONS


@pytest.mark.slow  # the whole demo, twice (about a minute): `make demo` runs it too
@pytest.mark.timeout(600)
def test_pipeline_runs_offline_then_resumes_from_cache(tmp_path, capfd) -> None:
    workspace = tmp_path / "ws"
    assert main(["--workspace", str(workspace), *SMALL]) == 0
    first = capfd.readouterr()  # the stages' output too (they write to the same descriptors)
    assert first.out.count("Report:") == 1, first.out  # the headline, not the stage's own too
    assert "report.html" in first.out
    assert "scripted: Overall" in first.out
    assert "scripted-faulty-erp-world vs scripted: Overall" in first.out
    # all three task types, each with its accuracy, and the research figures
    assert "accuracy by task type: obligations" in first.out and "entity" in first.out
    assert "briefs" in first.out and "research: gold shown" in first.out

    report = workspace / "report"
    stats = json.loads((report / "stats.json").read_text())
    assert [row["provider"] for row in stats["headline"]] == [
        "scripted",
        "scripted-faulty-erp-world",
    ]
    assert (report / "report.html").stat().st_size > 10_000
    # The viewer of both runs is built, named in the headline, and the report links to it.
    viewer = report / "viewer" / "index.html"
    assert f"Viewer: {viewer}" in first.out and viewer.stat().st_size > 10_000
    assert (
        'href="viewer/index.html#/?judge=rules&amp;type=obligations"'
        in (report / "report.html").read_text()
    )
    overall = next(
        c
        for m in stats["models"]
        for c in m["contrasts"]
        if m["metric"] == "overall" and c["scope"] == "equal_weight"
    )
    assert overall["tested"] and overall["p_value"] is not None
    assert "scripted-faulty-erp-world vs scripted" in (report / "report.md").read_text()
    run_dir = workspace / "runs" / "scripted"
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == ITEMS
    task_types = {json.loads(line)["task_type"] for line in lines}
    assert task_types == {"obligations", "entity_performance", "business_brief", "operations"}
    scores = (run_dir / "scores" / "rules.jsonl").read_text().splitlines()
    assert len(scores) == ITEMS
    # The second agent met an ERP whose tool calls failed transiently: the rate and seed are in
    # its manifest, and it needed more tool calls (retries) for the same questions.
    faulty = workspace / "runs" / "scripted-faulty-erp-world"
    manifest = RunManifest.model_validate_json((faulty / "manifest.json").read_text())
    assert manifest.config["erp_fault_rate"] == DEMO_FAULT_RATE
    assert manifest.config["erp_fault_seed"] == DEMO_FAULT_SEED
    calls = {
        row["provider"]: row["tool_calls"]["mean"]
        for row in stats["operations"]
        if row["task_type"] == "obligations"
    }
    assert calls["scripted-faulty-erp-world"] > 1.3 * calls["scripted"]

    stats_mtime = (report / "stats.json").stat().st_mtime
    assert main(["--workspace", str(workspace), *SMALL]) == 0
    second = capfd.readouterr()
    for stage in ("generate ERP", "research world", "questions", "viewer", "report"):
        assert f"{stage}: " in second.err and "(cached)" in second.err
    assert second.err.count("(cached)") == 5
    assert (report / "stats.json").stat().st_mtime == stats_mtime
    assert len((run_dir / "trajectories.jsonl").read_text().splitlines()) == ITEMS

    # `ledgerbench runs` lists the demo's runs, found under the workspace's runs/ folder.
    assert main(["runs", str(tmp_path), "--json"]) == 0
    listed = {run["name"]: run for run in json.loads(capfd.readouterr().out)}
    assert sorted(listed) == ["ws/runs/scripted", "ws/runs/scripted-faulty-erp-world"]
    for name, run in listed.items():
        assert run["records"] == ITEMS and run["finished"]
        # a conversation ends when its simulated user says it is done; under faults a brief's
        # retries may reach the run's tool-call cap (max_turns)
        endings = dict(run["endings"])
        assert endings.pop("user_done") == CONVERSATIONS
        if name.endswith("faulty-erp-world"):
            assert set(endings) <= {"completed", "max_turns"}
            assert sum(endings.values()) == ITEMS - CONVERSATIONS
        else:
            assert endings == {"completed": ITEMS - CONVERSATIONS}
        assert 0 < run["overall"]["rules"] <= 1
    assert (
        listed["ws/runs/scripted-faulty-erp-world"]["overall"]["rules"]
        < (listed["ws/runs/scripted"]["overall"]["rules"])
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("openai:gpt-5.2", ["--harness", "openai", "--model", "gpt-5.2"]),
        (
            "claude:claude-haiku-4-5,effort=low,max_turns=20",
            [
                "--harness",
                "claude",
                "--model",
                "claude-haiku-4-5",
                "--reasoning-effort",
                "low",
                "--max-turns",  # a sample limit: the runner's flag, which every harness honours
                "20",
            ],
        ),
        ("mypkg.agents:MyAgent,model=m1", ["--harness", "mypkg.agents:MyAgent", "--model", "m1"]),
        (
            "scripted,faults=0.25,fault_seed=3",
            ["--harness", "scripted", "--erp-fault-rate", "0.25", "--erp-fault-seed", "3"],
        ),
    ],
)
def test_agent_specs_become_runner_arguments(text, expected) -> None:
    assert AgentSpec.parse(text).run_args() == expected


def test_agent_spec_labels_and_errors(tmp_path, capsys) -> None:
    assert AgentSpec.parse("openai:gpt-5.2").label == "openai-gpt-5.2"
    assert AgentSpec.parse("scripted,faults=0.5").label == "scripted-faulty-erp-world"
    assert AgentSpec.parse("scripted,label=mine").label == "mine"
    for bad, message in (
        ("openai:gpt-5.2,effort", "is not KEY=VALUE"),
        ("scripted,faults=lots", "is not a number"),
        ("scripted,faults=2", "between 0 and 1"),
    ):
        with pytest.raises(SpecError, match=message):
            AgentSpec.parse(bad)
    code = main(["--workspace", str(tmp_path), "--agent", "scripted", "--agent", "scripted"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "add label=NAME" in err


def test_pipeline_rejects_bad_input_in_one_line(tmp_path, capsys) -> None:
    assert main(["--workspace", str(tmp_path), "--customers", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--customers must be a positive integer" in err
    assert main(["--workspace", str(tmp_path), "--dataset", str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--judge", "rule"],
            "ledgerbench: error: --judge 'rule': did you mean rules? use rules, a DSPy model",
        ),
        (["--judge", "nosuchpkg.mod:factory"], "cannot import module 'nosuchpkg.mod'"),
        (
            ["--agent", "scriptd"],
            "ledgerbench: error: --agent 'scriptd': unknown harness 'scriptd'; built-in "
            "harnesses: claude, custom, guess, nothing, openai, scripted",
        ),
        (["--harness", "scriptd"], "ledgerbench: error: --harness scriptd: unknown harness"),
        (
            ["--agent", "scripted", "--agent", "scripted,fault=0.5,label=flaky"],
            "ledgerbench: error: --agent 'scripted,fault=0.5,label=flaky': unknown key fault "
            "(did you mean faults?); the pipeline's keys: label, model, base_url, effort, "
            "reasoning_effort, faults, fault_rate, fault_seed, max_turns, max_tool_calls, "
            "max_tokens, max_cost_usd; scripted's options: transport",
        ),
        (
            ["--agent", "claude:claude-haiku-4-5,max_turn=5"],
            "unknown key max_turn (did you mean max_turns?)",
        ),
        (["--agent", "openai:gpt-5.2,web_serch=false"], "(did you mean web_search?)"),
    ],
)
def test_agents_and_judge_are_checked_before_any_stage(tmp_path, capsys, argv, message) -> None:
    """Each is refused in one line before the ERP stage, so the workspace is never created."""
    workspace = tmp_path / "ws"
    assert main(["--workspace", str(workspace), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert message in err, err
    assert not workspace.exists()


def test_ray_executor_without_ray_is_refused_before_any_stage(
    tmp_path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40: the run stage would find Ray missing only after the ERP and the world were
    generated; the pipeline says so at once, in one line with the install command."""
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as where the extra is not installed
    workspace = tmp_path / "ws"
    assert main(["--workspace", str(workspace), "--executor", "ray"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'ledgerbench[ray]'" in err, err
    assert not workspace.exists()


def test_an_llm_judge_without_its_key_is_refused_before_any_stage(
    tmp_path, capsys, monkeypatch
) -> None:
    pytest.importorskip("dspy")  # without it the judge is refused for that first
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    workspace = tmp_path / "ws"
    assert main(["--workspace", str(workspace), "--judge", "openai/gpt-5.2"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "ledgerbench: error: --judge openai/gpt-5.2 needs an API key: set OPENAI_API_KEY, or "
        "point --base-url at an OpenAI-compatible server, or use --judge rules\n"
    )
    assert not workspace.exists()


def test_a_stage_command_is_echoed_on_one_line_as_typed(tmp_path) -> None:
    """However narrow the terminal, so it can be pasted; brackets in a path stay text."""
    import io
    import sys

    from rich.console import Console

    from ledgerbench.pipeline import _run_stage_command

    out = io.StringIO()
    database = f"sqlite:///{tmp_path / ('long-folder-name-' * 5) / '[copy] erp.db'}"
    command = [sys.executable, "-c", "pass", "--db", database, "--seed", "42"]
    _run_stage_command("test", command, Console(file=out, width=80))
    assert out.getvalue().splitlines() == [f'$ python -c pass --db "{database}" --seed 42']


def test_a_report_of_other_agents_is_kept_beside_and_the_move_said(tmp_path) -> None:
    import io

    from rich.console import Console

    from ledgerbench.pipeline import PipelineConfig, keep_other_agents_report

    config = PipelineConfig(workspace=tmp_path / "ws", agents=[AgentSpec("nothing", label="none")])
    report = config.report_dir
    report.mkdir(parents=True)
    stats = {"providers": [{"name": "scripted"}, {"name": "scripted-faulty-erp-world"}]}
    (report / "stats.json").write_text(json.dumps(stats))
    (report / "report.html").write_text("<p>the earlier comparison</p>")
    config.viewer_dir.mkdir()
    (config.viewer_dir / "index.html").write_text("the earlier runs")
    out = io.StringIO()
    aside = keep_other_agents_report(config, Console(file=out, width=60))
    assert aside == report.with_name("report-scripted+scripted-faulty-erp-world")
    assert (aside / "report.html").read_text() == "<p>the earlier comparison</p>"
    assert (aside / "viewer" / "index.html").read_text() == "the earlier runs"  # its own viewer
    assert not report.exists()
    assert out.getvalue() == (
        "report: the earlier report (agents scripted, scripted-faulty-erp-world) is kept in "
        f"{aside}; {report} now compares none\n"
    )
    # The same agents again: their own report is the one to refresh, nothing is moved.
    report.mkdir()
    (report / "stats.json").write_text(json.dumps({"providers": [{"name": "none"}]}))
    assert keep_other_agents_report(config, Console(file=io.StringIO())) is None
    assert (report / "stats.json").exists()


def test_a_failing_stage_names_itself_and_the_command_to_rerun(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("header: {name: x}\nitems: [{id: 1}]\n")
    code = main(["--workspace", str(tmp_path / "ws"), *SMALL, "--dataset", str(bad)])
    assert code == 2 and not (tmp_path / "ws").exists()  # a broken dataset: before any stage
    assert "--dataset " in capsys.readouterr().err
    # Of another ERP of the same seed: only the ERP the first stage generates can tell.
    from tests.test_runner_plugins import numbered_dataset

    other = numbered_dataset(tmp_path / "other.yaml", 1, "0" * 64)  # generator seed 42
    code = main(["--workspace", str(tmp_path / "ws"), *SMALL, "--dataset", str(other)])
    assert code == 1
    err = capsys.readouterr().err
    assert "stage 'run agent' failed" in err
    assert "python -m harnesses.run" in err


@pytest.mark.slow  # the whole default demo (about a minute on an idle machine)
@pytest.mark.timeout(1200)
def test_the_readme_headline_is_what_the_demo_prints(tmp_path) -> None:
    """`make demo` in a fresh folder prints the README's headline block line for line (else:
    scripts/refresh-docs)."""
    from ledgerbench import _readme

    printed, _ = _readme.run_demo(tmp_path)
    assert printed == _readme.readme_headline(), "the demo changed: run scripts/refresh-docs"
