"""The default command chain on the default dataset (the ``datasets/`` folder, not one file).

A newcomer types ``python -m harnesses.run --harness scripted`` without ``--dataset``: the run
records the folder. Every later stage (judge, viewer, Inspect export, grading packet, analysis)
must find that folder and carry the reference answers through. The run is a real process; the
later commands run their ``main(argv)`` in this process (the same code, without an interpreter
start each), from the run's folder as a user would.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ledgerbench._inspect_log import read_run
from ledgerbench_core.dataset import load_dataset

REPO_ROOT = Path(__file__).resolve().parents[1]
DATASETS = REPO_ROOT / "datasets"
# Questions of two files' worth of scenarios: the default dataset is the whole folder. (Its
# research items are keyed on the default world of the default ERP; the world adapter of the
# viewer's carried copies is tested on a small world in tests/test_viewer_world.py.)
IDS = ["obl-credit-limit-001", "obl-aged-balance-001"]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert completed.returncode == 0, completed.stderr
    return completed


def _command(main, argv: list[str], cwd: Path, capsys, monkeypatch) -> str:
    """A command's ``main(argv)`` run from ``cwd``; returns what it printed on stderr."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().err


@pytest.fixture(scope="module")
def chain(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs/scripted made with the defaults, judged by the rules judge."""
    work = tmp_path_factory.mktemp("chain")
    run = work / "runs" / "scripted"
    _cli(
        *("-m", "harnesses.run", "--harness", "scripted", "--ids", ",".join(IDS)),
        *("--erp-db", erp_db_url, "--out", str(run), "--no-progress"),
        cwd=work,
    )
    _cli("-m", "judge.run", str(run), "--judge", "rules", cwd=work)
    return run


def _references() -> dict[str, str | None]:
    items = {item.id: item for item in load_dataset(DATASETS).items}
    return {qid: items[qid].ground_truth for qid in IDS}


def test_the_run_records_the_dataset_folder(chain: Path) -> None:
    manifest = json.loads((chain / "manifest.json").read_text())
    assert Path(manifest["dataset_path"]) == DATASETS.resolve()
    assert Path(manifest["dataset_path"]).is_dir()


def test_references_reach_the_viewer(chain: Path, capsys, monkeypatch) -> None:
    from ledgerbench.pipeline import main

    out = chain.parent.parent / "viewer"
    err = _command(main, ["view", str(chain), "--out", str(out)], chain.parent, capsys, monkeypatch)
    assert "no dataset found" not in err
    page = (out / "index.html").read_text()
    index = json.loads(
        re.search(r'id="lb-index">(.*?)</script>', page, re.S).group(1)  # type: ignore[union-attr]
    )
    by_id = {q["id"]: q for q in index["questions"]}
    details = {
        int(n): json.loads(gzip.decompress(base64.b64decode(blob)))
        for n, blob in re.findall(r'id="lb-q-(\d+)">([^<]*)</script>', page)
    }
    references = _references()
    for qid in IDS:
        question = details[by_id[qid]["n"]]["question"]
        assert question["known"], qid
        assert question["ground_truth"] == references[qid]
    assert references["obl-credit-limit-001"], "the obligation questions carry a reference"


def test_the_viewer_takes_the_dataset_folder_as_a_flag(chain: Path, capsys, monkeypatch) -> None:
    from ledgerbench.pipeline import main

    out = chain.parent.parent / "viewer-flag"
    argv = ["view", str(chain), "--out", str(out), "--dataset", f"{DATASETS}/"]
    err = _command(main, argv, chain.parent, capsys, monkeypatch)
    assert "warning" not in err, err


def test_references_reach_the_inspect_targets(chain: Path) -> None:
    contents = read_run(chain)  # what the Inspect export reads its targets from
    references = _references()
    assert set(IDS) <= set(contents.questions)
    for qid in IDS:
        assert contents.questions[qid].ground_truth == references[qid]


def test_the_inspect_log_has_the_targets(chain: Path, capsys, monkeypatch) -> None:
    pytest.importorskip(
        "inspect_ai", reason="inspect-ai not installed (optional extra: pip install '.[inspect]')"
    )
    from inspect_ai.log import read_eval_log

    from ledgerbench.export import main

    out = chain.parent.parent / "logs" / "scripted.json"
    argv = [str(chain), "--format", "inspect", "--out", str(out)]
    _command(main, argv, chain, capsys, monkeypatch)
    log = read_eval_log(str(out))
    references = _references()
    targets = {sample.id: sample.target for sample in log.samples or []}
    for qid in IDS:
        assert targets[qid] == (references[qid] or ""), targets


def test_references_reach_the_grading_packet(chain: Path, capsys, monkeypatch) -> None:
    from judge.human import main

    out = chain.parent.parent / "packet"
    argv = ["export", str(chain), "--n", "10", "--seed", "1", "--out", str(out)]
    _command(main, argv, chain.parent, capsys, monkeypatch)
    page = (out / "packet.html").read_text()
    packet = json.loads(
        re.search(r'id="packet-data">(.*?)</script>', page, re.S)  # type: ignore[union-attr]
        .group(1)
        .replace("<\\/", "</")
    )
    references = _references()
    shown = {item["question"]: item["reference"] for item in packet["items"]}
    items = {item.id: item for item in load_dataset(DATASETS).items}
    assert shown, "the packet holds the run's answers"
    for qid in IDS:
        if items[qid].query in shown:
            assert shown[items[qid].query] == references[qid]


def test_the_analysis_knows_the_scenarios(chain: Path, capsys, monkeypatch) -> None:
    from analysis.compare import main

    out = chain.parent.parent / "report"
    argv = [str(chain), "--judge", "rules", "--out", str(out), "--quiet"]
    err = _command(main, argv, chain.parent, capsys, monkeypatch)
    assert "scenarios unknown" not in err
    assert "scenarios unknown" not in (out / "report.md").read_text()
