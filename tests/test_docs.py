"""Docs stay honest: every command has help and is in the README; format docs match the models."""

from __future__ import annotations

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


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_examples(command: list[str]) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", *command, "--help"], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    assert "usage:" in completed.stdout
    assert len(completed.stdout.splitlines()) > 5


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
