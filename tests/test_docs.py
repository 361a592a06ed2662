"""Docs stay honest: every command has help and is in the README; format docs match the models."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ledgerbench import _docs
from tests.conftest import REPO_ROOT

COMMANDS = [
    ["ledgerbench"],
    ["ledgerbench", "view"],
    ["ledgerbench", "runs"],
    ["synthetic_erp"],
    ["synthetic_erp", "generate"],
    ["synthetic_erp", "stats"],
    ["synthetic_erp", "import-fno"],
    ["synthetic_erp", "questions"],
    ["erp_mcp"],
    ["synthetic_world"],
    ["synthetic_world", "generate"],
    ["synthetic_world", "info"],
    ["synthetic_world", "questions"],
    ["synthetic_world", "serve"],
    ["ledgerbench.dataset"],
    ["harnesses.run"],
    ["ledgerbench.export"],
    ["judge.run"],
    ["judge.summary"],
    ["judge.compare"],
    ["judge.human", "export"],
    ["judge.human", "import"],
    ["analysis.compare"],
]


HELP_DRIVER = """
import contextlib, io, json, runpy, sys
results = {}
for command in json.loads(sys.argv[1]):
    sys.argv = [command[0], *command[1:], "--help"]
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module(command[0], run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException as error:
            code, err = 1, io.StringIO(f"{type(error).__name__}: {error}")
    results[" ".join(command)] = {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
print(json.dumps(results))
"""
"""Runs every command's ``python -m <module> --help`` the way ``-m`` does (runpy), in one fresh
interpreter: one start-up instead of one per command."""


@pytest.fixture(scope="module")
def help_texts() -> dict[str, dict]:
    completed = subprocess.run(
        [sys.executable, "-c", HELP_DRIVER, json.dumps(COMMANDS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_examples(command: list[str], help_texts) -> None:
    shown = help_texts[" ".join(command)]
    assert shown["code"] == 0, shown["stderr"]
    assert "usage:" in shown["stdout"]
    assert len(shown["stdout"].splitlines()) > 5


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_is_in_the_readme(command: list[str]) -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    module = command[0]
    shown = module if module == "ledgerbench" else f"python -m {module}"
    assert shown in readme
    if len(command) > 1:
        assert command[1] in readme


def test_readme_two_commands_are_what_ci_runs() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert "make demo" in readme and "make test" in readme
    assert "\nmake test\n" in ci
    assert "scripts/check-fresh-clone" in ci


def test_trajectory_format_doc_matches_the_models() -> None:
    doc = _docs.TRAJECTORY_DOC
    expected = _docs.rewrite(doc, _docs.render_section(_docs.trajectory_models()))
    assert doc.read_text() == expected, "run: python -m ledgerbench._docs"


def test_every_linked_doc_exists() -> None:
    import re

    readme = (REPO_ROOT / "README.md").read_text()
    links = re.findall(r"\]\(((?:docs|datasets|erp_mcp|harnesses|judge)/[^)#]+)\)", readme)
    assert links
    for link in links:
        assert (REPO_ROOT / link).exists(), link


def test_runner_help_names_every_built_in_harness(help_texts) -> None:
    from harnesses._registry import harness_names

    shown = " ".join(help_texts["harnesses.run"]["stdout"].split())
    for name in harness_names():
        assert name in shown, name
    assert "nothing" in shown


def test_the_readme_headline_block_is_the_demo_s_shape() -> None:
    """The block ``scripts/refresh-docs`` writes (the slow test compares it with a real demo)."""
    from ledgerbench import _readme

    lines = _readme.readme_headline()
    assert lines[0].startswith("Report: runs/pipeline/report/report.html")
    agents = [line for line in lines[1:] if line.startswith("  ") and not line.startswith("   ")]
    assert [line.split(":")[0].strip() for line in agents[:2]] == [
        "scripted",
        "scripted-faulty-erp-world",
    ]
    assert agents[2].startswith("  scripted-faulty-erp-world vs scripted: Overall ")
    # under each agent: accuracy of all three task types and the research figures
    details = [line.strip() for line in lines[1:] if line.startswith("    ")]
    assert [d.split(":")[0] for d in details] == ["accuracy by task type", "research"] * 2
    assert all("obligations" in d and "entity" in d and "briefs" in d for d in details[::2])
    assert all("gold read" in d and "citation recall" in d for d in details[1::2])
    floor = _readme.between((REPO_ROOT / "harnesses" / "README.md").read_text(), _readme.FLOOR)
    assert "`--harness nothing` accuracy" in floor


def test_the_readme_says_where_the_published_files_come_from() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    doc = (REPO_ROOT / "docs" / "force-bench-files.md").read_text()
    assert "docs/force-bench-files.md" in readme and "LEDGERBENCH_REFERENCE_DIR" in readme
    assert "microsoft/FinanceBenchmark" in doc and "scripts/fetch-force-bench" in doc
    assert "../shared/reference/force-bench/results" not in readme  # the Table 1 command


def test_the_demo_headline_is_the_pipeline_s_own_block() -> None:
    """The report stage prints a "Report:" block of its own first; the headline is the last one."""
    from ledgerbench import _readme

    stdout = (
        "Report: runs/pipeline/report/report.html (also report.md, stats.json)\n"
        "  scripted: overall 0.975 [0.957, 0.990]\n"
        "Report: runs/pipeline/report/report.html (also report.md)\n"
        "  scripted: overall 0.98 [0.96, 0.99]\n"
        "Done in 61.0 s.\n"
    )
    assert _readme.demo_headline(stdout) == [
        "Report: runs/pipeline/report/report.html (also report.md)",
        "  scripted: overall 0.98 [0.96, 0.99]",
    ]
