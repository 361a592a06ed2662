"""Facts the docs state, checked against the code so they cannot drift: the dataset format's
version, the question ids in examples, the files the documented commands leave in the checkout,
and what the fault flag fails."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from ledgerbench_core.dataset._records import DATASET_FORMAT_VERSION
from tests.conftest import REPO_ROOT

DOCS = sorted(
    [REPO_ROOT / "README.md", *REPO_ROOT.glob("docs/*.md"), *REPO_ROOT.glob("*/README.md")]
)
DATASETS = sorted((REPO_ROOT / "datasets").glob("*.yaml"))


def _doc_texts() -> dict[str, str]:
    return {str(path.relative_to(REPO_ROOT)): path.read_text() for path in DOCS}


def _runner_help() -> str:
    from harnesses.run import build_parser

    return build_parser().format_help()


def _pipeline_help() -> str:
    from ledgerbench.pipeline import build_parser

    return build_parser().format_help()


def _shipped_ids() -> set[str]:
    ids: set[str] = set()
    for path in DATASETS:
        data = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        ids |= {item["id"] for item in data.get("items") or []}
    return ids


def test_the_format_version_the_docs_show_is_the_code_s_and_the_shipped_files():
    stated = {
        (name, int(version))
        for name, text in _doc_texts().items()
        for version in re.findall(r"format_version:\s*(\d+)", text)
    }
    assert stated, "the dataset format doc shows a header with format_version"
    assert {name for name, version in stated if version != DATASET_FORMAT_VERSION} == set()
    for path in DATASETS:
        head = path.read_text()[:2000]
        assert f"format_version: {DATASET_FORMAT_VERSION}" in head, path.name


def test_every_question_id_in_an_example_exists_in_a_shipped_dataset():
    texts = {**_doc_texts(), "harnesses.run --help": _runner_help()}
    shown = {
        (name, qid)
        for name, text in texts.items()
        for ids in re.findall(r"--ids[ =]([\w.,-]+)", text)
        for qid in ids.split(",")
        if re.fullmatch(r"[a-z][a-z0-9-]*-\d+", qid)  # an id, not a metavar such as ID
    }
    assert any(name == "harnesses.run --help" for name, _ in shown)
    known = _shipped_ids()
    assert sorted((name, qid) for name, qid in shown if qid not in known) == []


def _written_paths() -> set[str]:
    """What the documented commands, run from the checkout, write there: ``sqlite:///NAME.db``
    databases and the folders of ``--out``/``--workspace`` targets (``runs/x`` -> ``runs/``),
    less what the project tracks (``datasets/``)."""
    paths: set[str] = set()
    for text in [*_doc_texts().values(), _runner_help()]:
        paths |= set(re.findall(r"sqlite:///([\w.-]+\.db)\b", text))
        for folder in re.findall(r"--(?:out|workspace)[ =]([a-z][\w.-]*)/", text):
            paths.add(folder + "/")
    tracked = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    return {path for path in paths if not any(f.startswith(path) for f in tracked)}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_what_the_documented_commands_write_is_git_ignored():
    paths = _written_paths()
    assert {"erp.db", "world.db", "logs/", "runs/"} <= paths, paths
    not_ignored = []
    for path in sorted(paths):
        checked = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "check-ignore", "-q", "--no-index", path],
            capture_output=True,
        )
        if checked.returncode != 0:
            not_ignored.append(path)
    assert not_ignored == [], f"add to .gitignore: {not_ignored}"


def _paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_the_fault_flag_says_it_fails_the_world_server_too():
    """The runner passes ``--erp-fault-rate`` to the research world's server as well as the
    ERP's (harnesses/_world_serving.py), so every doc paragraph and help text about the flag, and
    the label the pipeline gives a faulty agent, name the world."""
    import inspect

    from harnesses._world_serving import serve_world
    from ledgerbench.pipeline import AgentSpec, demo_agents

    assert "config.erp_fault_rate" in inspect.getsource(serve_world)
    runner = _runner_help()
    flag_help = " ".join(runner[runner.index("\n  --erp-fault-rate") :][:400].split())
    assert "research world" in flag_help, flag_help
    stale = [
        (name, paragraph[:120])
        for name, text in {**_doc_texts(), "ledgerbench --help": _pipeline_help()}.items()
        for paragraph in _paragraphs(text)
        if re.search(r"--erp-fault-rate\b|\bfaults=[\d`]|\bfaults \(", paragraph)
        and "world" not in paragraph
        and "fault` ->" not in paragraph  # the harness README's example of a refused typo
    ]
    assert stale == []
    assert "world" in AgentSpec.parse("scripted,faults=0.5").label
    assert all("world" in agent.label for agent in demo_agents() if agent.fault_rate)
