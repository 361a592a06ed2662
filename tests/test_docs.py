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
    ["harnesses.export"],
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
