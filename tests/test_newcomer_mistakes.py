"""A newcomer's mistakes, each through the real command line (``ledgerbench`` and
``python -m harnesses.run`` as subprocesses): refused in one line naming the problem and the fix,
exit code 2, no traceback, and nothing written or changed on disk (issue #41).

One table: a case names the command, the files it is given, and a fragment of the one line."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT, TEST_SEED
from tests.test_runner_plugins import numbered_dataset, snapshot_of
from tests.world_fixtures import shared_folder, small_world

pytestmark = pytest.mark.timeout(900)

PLUGIN = "tests.test_runner_plugins:InstantHarness"
"""A plug-in that declares no options."""

SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


@dataclass(frozen=True)
class Files:
    """What a case may point its command at (all under the test's own folder)."""

    erp_url: str
    erp_path: Path
    world: Path
    dataset: Path
    """Obligations questions keyed on the test ERP."""
    folder: Path

    def dataset_with(self, name: str, items: list | None = None, **header: object) -> Path:
        data = yaml.safe_load(self.dataset.read_text())
        data["header"].update(header)
        data["items"] = data["items"] if items is None else items
        path = self.folder / name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def workspace(self, *, world: Path | None = None) -> Path:
        """A pipeline workspace holding the test ERP (and ``world``) as its own files."""
        workspace = self.folder / "workspace"
        workspace.mkdir(exist_ok=True)
        (workspace / "erp.db").symlink_to(self.erp_path)
        if world is not None:
            (workspace / "world.db").symlink_to(world)
        return workspace

    def world_of_another_erp(self) -> Path:
        copy = self.folder / "other-world.db"
        shutil.copyfile(self.world, copy)
        with sqlite3.connect(copy) as db:
            db.execute(
                "UPDATE world_meta SET value = ? WHERE key = 'erp_snapshot_hash'", ("f" * 64,)
            )
        return copy


def _pipeline(files: Files, *args: str, workspace: Path | None = None) -> list[str]:
    workspace = workspace or files.folder / "workspace"
    return [sys.executable, "-m", "ledgerbench", "--workspace", str(workspace), *args]


def _runner(files: Files, *args: str) -> list[str]:
    out = ["--out", str(files.folder / "run"), "--no-progress"]
    return [sys.executable, "-m", "harnesses.run", *out, *args]


def _small(files: Files) -> tuple[str, ...]:
    """The pipeline's sizes and seed of the test ERP (so the workspace keeps it)."""
    return ("--customers", "1000", "--vendors", "1000", "--seed", str(TEST_SEED))


@dataclass(frozen=True)
class Case:
    name: str
    command: Callable[[Files], list[str]]
    fragment: str


CASES = [
    # ledgerbench: agents, the judge, the dataset and its pairing, before the first stage
    Case("judge typo", lambda f: _pipeline(f, "--judge", "rule"), "rule"),
    Case("harness typo", lambda f: _pipeline(f, "--agent", "scriptd"), "unknown harness 'scriptd'"),
    Case(
        "option typo",
        lambda f: _pipeline(f, "--agent", "scripted,fault=0.5"),
        "unknown key fault (did you mean faults?)",
    ),
    Case(
        "openai without its key",
        lambda f: _pipeline(f, "--agent", "openai:gpt-5.2"),
        "needs an API key: set OPENAI_API_KEY",
    ),
    Case(
        "custom anthropic without its key",
        lambda f: _pipeline(f, "--agent", "custom:m,api=anthropic,base_url=http://127.0.0.1:9/v1"),
        "set ANTHROPIC_API_KEY",
    ),
    Case(
        "claude without credentials",
        lambda f: _pipeline(f, "--agent", "claude"),
        "ANTHROPIC_API_KEY",
    ),
    Case(
        "plug-in without declared options",
        lambda f: _pipeline(f, "--agent", f"{PLUGIN},temprature=0.2"),
        "InstantHarness's options: none",
    ),
    Case(
        "dataset of another ERP",
        lambda f: _pipeline(
            f,
            "--dataset",
            str(f.dataset_with("other-erp.yaml", erp_snapshot_hash="0" * 64)),
            *_small(f),
            workspace=f.workspace(),
        ),
        "but this workspace's ERP",
    ),
    Case(
        "dataset of another seed",
        lambda f: _pipeline(f, "--dataset", str(f.dataset_with("seed7.yaml", generator_seed=7))),
        "add --seed 7",
    ),
    Case(
        "dataset of another ERP size",
        lambda f: _pipeline(
            f,
            "--dataset",
            str(f.dataset_with("small.yaml", erp_customers=200, erp_vendors=300)),
            *_small(f),
        ),
        "add --customers 200 --vendors 300",
    ),
    Case(
        "dataset keyed on another world",
        lambda f: _pipeline(
            f,
            "--dataset",
            str(f.dataset_with("other-world.yaml", world_snapshot_hash="0" * 64, world_id="w0")),
            *_small(f),
            workspace=f.workspace(world=f.world),
        ),
        "keyed on world w0",
    ),
    Case(
        "empty dataset",
        lambda f: _pipeline(f, "--dataset", str(f.dataset_with("empty.yaml", items=[]))),
        "empty.yaml: the dataset has no items (items: [])",
    ),
    Case(
        "golden research the agent cannot do",
        lambda f: _pipeline(f, "--research", "golden"),
        "--research golden: agent scripted (scripted) supports world, web, none",
    ),
    Case(
        "golden research on a dataset without gold documents",
        lambda f: _pipeline(
            f, "--agent", "nothing", "--research", "golden", "--dataset", str(f.dataset)
        ),
        "none of the 2 questions of --dataset",
    ),
    # python -m harnesses.run: the same, before any server starts
    Case(
        "runner option typo",
        lambda f: _runner(
            f, "--dataset", str(f.dataset), "--erp-db", f.erp_url, "--harness-opt", "fault=0.5"
        ),
        "fault (did you mean --erp-fault-rate?)",
    ),
    Case(
        "runner plug-in without declared options",
        lambda f: _runner(f, "--harness", PLUGIN, "--harness-opt", "temp=2", "--erp-db", f.erp_url),
        "known options: none",
    ),
    Case(
        "runner openai without its key",
        lambda f: _runner(
            f, "--harness", "openai", "--dataset", str(f.dataset), "--erp-db", f.erp_url
        ),
        "set OPENAI_API_KEY",
    ),
    Case(
        "runner dataset of another ERP",
        lambda f: _runner(
            f,
            "--dataset",
            str(f.dataset_with("other-erp.yaml", erp_snapshot_hash="0" * 64)),
            "--erp-db",
            f.erp_url,
        ),
        "was built from the ERP with snapshot hash 0000",
    ),
    Case(
        "runner world that is an ERP file",
        lambda f: _runner(
            f, "--dataset", str(f.dataset), "--erp-db", f.erp_url, "--world-db", f.erp_url
        ),
        "is not a research world",
    ),
    Case(
        "runner world of another ERP",
        lambda f: _runner(
            f,
            "--dataset",
            str(f.dataset),
            "--erp-db",
            f.erp_url,
            "--world-db",
            f"sqlite:///{f.world_of_another_erp()}",
        ),
        "was generated from the ERP with snapshot ffff",
    ),
    Case(
        "runner dataset keyed on another world",
        lambda f: _runner(
            f,
            "--dataset",
            str(f.dataset_with("other-world.yaml", world_snapshot_hash="0" * 64, world_id="w0")),
            "--erp-db",
            f.erp_url,
            "--world-db",
            f"sqlite:///{f.world}",
        ),
        "keyed on world w0",
    ),
    Case(
        "runner golden research without gold documents",
        lambda f: _runner(
            f,
            *("--harness", "nothing", "--dataset", str(f.dataset), "--erp-db", f.erp_url),
            *("--research", "golden"),
        ),
        "none of the 2 selected questions has gold documents",
    ),
]


@pytest.fixture(scope="module")
def world(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` with its size and modification time."""
    return {
        str(path.relative_to(folder)): (path.lstat().st_size, path.lstat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_mistake_is_refused_in_one_line_before_any_work(
    case: Case, erp_db_url: str, world: Path, tmp_path: Path
) -> None:
    erp_path = Path(erp_db_url.removeprefix("sqlite:///"))
    dataset = numbered_dataset(tmp_path / "obligations.yaml", 2, snapshot_of(erp_db_url))
    files = Files(erp_db_url, erp_path, world, dataset, tmp_path)
    command = case.command(files)
    before = _tree(tmp_path)
    shared_before = (erp_path.stat().st_mtime_ns, world.stat().st_mtime_ns)
    env = {k: v for k, v in os.environ.items() if k not in SECRETS}
    env["PYTHONPATH"] = str(REPO_ROOT)
    refused = subprocess.run(
        command, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=300
    )
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2, refused.stderr
    assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert case.fragment in lines[0], lines[0]
    assert _tree(tmp_path) == before, "a refused command wrote or changed a file"
    assert (erp_path.stat().st_mtime_ns, world.stat().st_mtime_ns) == shared_before
