"""Links that last: stable record links in answers, and copies that open with the server gone.

The ERP server the runner starts cites ``https://erp.ledgerbench.test/erp/...`` (RFC 2606
``.test``: never resolves), the same in every run, so two runs of one agent on one ERP give
byte-identical answers. The viewer and the grading packet carry copies of the records an answer
cites or its tools showed; a browser opens them from ``file://`` after the run's server stopped.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from harnesses._erp_process import start_erp_server
from judge.linked import (
    ErpRecordLinks,
    LinkedItem,
    LinkedItemStore,
    RunSources,
    TrialTexts,
)
from ledgerbench.viewer import build_viewer
from ledgerbench_core.trajectory import RunManifest
from synthetic_erp import STABLE_RECORD_BASE
from tests.cdp import Browser, chromium_path

QUESTIONS = "6"


def _scripted_run(erp_db_url: str, out: Path) -> Path:
    completed = subprocess.run(
        [
            *(sys.executable, "-m", "harnesses.run", "--harness", "scripted", "--limit", QUESTIONS),
            *("--task-type", "obligations", "--erp-db", erp_db_url, "--out", str(out)),
            *("--no-progress", "--concurrency", "3"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    return out


def _answers(run: Path) -> dict[tuple[str, int], str]:
    records = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    return {(r["question_id"], r["trial"]): r["answer"] for r in records}


@pytest.fixture(scope="module")
def two_runs(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The scripted agent twice on the same ERP: each run's server has its own port."""
    root = tmp_path_factory.mktemp("lasting")
    first = _scripted_run(erp_db_url, root / "runs" / "first")
    second = _scripted_run(erp_db_url, root / "runs" / "second")
    judged = subprocess.run(
        [sys.executable, "-m", "judge.run", str(first), "--judge", "rules"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert judged.returncode == 0, judged.stderr
    return first, second


def test_two_runs_of_the_same_agent_give_byte_identical_answers(two_runs) -> None:
    first, second = two_runs
    a, b = _answers(first), _answers(second)
    assert len(a) == int(QUESTIONS) and a.keys() == b.keys()
    for key in a:
        assert a[key].encode() == b[key].encode(), key
    links = re.findall(r"https?://[^\s)\]|]+/erp/[^\s)\]|]+", "\n".join(a.values()))
    assert links, "the answers cite records"
    assert all(link.startswith(f"{STABLE_RECORD_BASE}/erp/") for link in links), links
    # The servers did listen on loopback ports of their own (the links just do not say so).
    ports = {
        json.loads((run / "manifest.json").read_text())["erp_url"].rsplit(":", 1)[1]
        for run in two_runs
    }
    assert len(ports) == 2


def test_the_rules_judge_resolves_the_stable_links(two_runs) -> None:
    first, _ = two_runs
    scores = [
        json.loads(line) for line in (first / "scores" / "rules.jsonl").read_text().splitlines()
    ]
    cited = [s for s in scores if "citations" in s["dimensions"]]
    assert cited
    for score in cited:
        assertions = score["dimensions"]["citations"]["assertions"]
        assert all(a["score"] == 1.0 for a in assertions), assertions


def test_the_server_answers_record_paths_under_the_stable_name_and_its_own(erp_db_url) -> None:
    server = start_erp_server(erp_db_url)
    try:
        base = server.endpoint.url.removesuffix("/mcp")
        headers = {"Authorization": f"Bearer {server.endpoint.token}", "Accept": "application/json"}
        path = "/erp/USMF/customers/SYNCUS-0001"
        own = httpx.get(base + path, headers=headers, timeout=30)
        stable = httpx.get(
            base + path, headers={**headers, "Host": "erp.ledgerbench.test"}, timeout=30
        )
        foreign = httpx.get(base + path, headers={**headers, "Host": "evil.example"}, timeout=30)
    finally:
        server.stop()
    assert own.status_code == stable.status_code == 200
    assert own.json() == stable.json()
    assert own.json()["url"] == f"{STABLE_RECORD_BASE}{path}"
    assert foreign.status_code == 421


# ---------------------------------------------------------------------------------------------
# The carried-copy store
# ---------------------------------------------------------------------------------------------


def _sources(run: Path, erp_db: str | None = None) -> tuple[RunSources, list[TrialTexts]]:
    manifest = RunManifest.model_validate_json((run / "manifest.json").read_bytes())
    records = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    trials = [
        TrialTexts(
            (r["question_id"], r["trial"]), r["answer"], [c["output"] for c in r["tool_calls"]]
        )
        for r in records
    ]
    outputs = [output for trial in trials for output in trial.tool_outputs]
    return RunSources(run, manifest, outputs, erp_db=erp_db), trials


def test_cited_records_are_copied_from_the_erp_and_every_spelling_opens_them(two_runs) -> None:
    first, _ = two_runs
    sources, trials = _sources(first)
    # One answer cites its first record in all three spellings: each must open the same copy.
    answer = trials[0].answer
    path = re.search(r"/erp/[A-Z]+/[a-z-]+/[A-Za-z0-9%._-]+", answer).group(0)  # type: ignore[union-attr]
    spelled = f"{answer}\nAlso http://127.0.0.1:9/{path.lstrip('/')} and erp://{path[5:]}."
    trials[0] = TrialTexts(trials[0].key, spelled, trials[0].tool_outputs)
    store = LinkedItemStore()
    links, warnings = store.add_run(sources, trials)
    assert warnings == []
    entry = links.trials[trials[0].key]
    copy_id = entry.aliases[f"{STABLE_RECORD_BASE}{path}"]
    assert entry.aliases[f"http://127.0.0.1:9{path}"] == copy_id
    assert entry.aliases[f"erp://{path[5:]}"] == copy_id
    assert entry.cited[0] == copy_id and entry.cited.count(copy_id) == 1
    item = store.items[copy_id]
    assert item["source"].startswith("ERP snapshot ")
    assert item["link"] == f"{STABLE_RECORD_BASE}{path}"
    assert item["fields"] and item["sections"] is not None
    key_field = path.rsplit("/", 1)[1]
    assert any(value == key_field for _, value in item["fields"]), item["fields"]


def test_without_the_erp_the_copies_are_what_the_tools_showed(two_runs, tmp_path) -> None:
    first, _ = two_runs
    sources, trials = _sources(first, erp_db=f"sqlite:///{tmp_path / 'gone.db'}")
    store = LinkedItemStore()
    links, warnings = store.add_run(sources, trials)
    assert len(warnings) == 1 and "cannot read the run's ERP" in warnings[0]
    copied = [store.items[i] for t in links.trials.values() for i in t.cited]
    assert copied, "the cited records still have copies"
    assert all(c["source"].startswith("as a tool output showed it") for c in copied)


class WorldDocLinks:
    """A second kind of linked item, as the research world will add: documents at
    https://world.ledgerbench.test/<world>/docs/<doc>, copied from the world's own files."""

    kind = "world-doc"
    pattern = re.compile(r"https://world\.ledgerbench\.test/([\w-]+)/docs/([\w-]+)")

    def __init__(self, documents: dict[str, str]) -> None:
        self.documents = documents

    def find(self, text: str) -> dict[str, str]:
        return {m.group(0): f"/{m.group(1)}/docs/{m.group(2)}" for m in self.pattern.finditer(text)}

    def copy(self, run, cited, read):
        copies = {
            key: LinkedItem(
                kind=self.kind,
                key=key,
                link=f"https://world.ledgerbench.test{key}",
                title=key.rsplit("/", 1)[1],
                source="world w1",
                body=self.documents[key],
            )
            for key in cited | read
            if key in self.documents
        }
        return "w1", copies, []


def test_a_second_kind_is_one_small_adapter(two_runs) -> None:
    first, _ = two_runs
    sources, trials = _sources(first)
    doc = "https://world.ledgerbench.test/w1/docs/annual-report"
    trials[0] = TrialTexts(trials[0].key, f"{trials[0].answer}\nSee {doc}.", trials[0].tool_outputs)
    store = LinkedItemStore(
        [ErpRecordLinks(), WorldDocLinks({"/w1/docs/annual-report": "Revenue grew 4%."})]
    )
    links, _ = store.add_run(sources, trials)
    entry = links.trials[trials[0].key]
    doc_id = entry.aliases[doc]
    assert store.items[doc_id]["body"] == "Revenue grew 4%."
    assert doc_id in entry.cited and any(i.startswith("erp-record:") for i in entry.cited)


def _page_data(page: Path) -> tuple[dict, dict[int, dict]]:
    text = page.read_text()
    items = json.loads(
        gzip.decompress(base64.b64decode(re.search(r'id="lb-items">([^<]*)<', text).group(1)))  # type: ignore[union-attr]
    )
    details = {
        int(n): json.loads(gzip.decompress(base64.b64decode(blob)))
        for n, blob in re.findall(r'id="lb-q-(\d+)">([^<]*)</script>', text)
    }
    return items, details


def test_the_viewer_page_carries_the_cited_records(two_runs, tmp_path) -> None:
    first, second = two_runs
    page, warnings = build_viewer([first, second], tmp_path / "viewer")
    assert not [w for w in warnings if "ERP" in w], warnings
    items, details = _page_data(page)
    for detail in details.values():
        for run in detail["runs"]:
            for record in run["records"]:
                linked = run["linked"][str(record["trial"])]
                for link in re.findall(
                    rf"{re.escape(STABLE_RECORD_BASE)}/erp/[^\s)\]|]+", record["answer"]
                ):
                    assert linked["aliases"][link] in items, link
                assert all(i in items for i in linked["cited"] + linked["read"])
    # Both runs cite the same records of the same ERP: each copy is in the page once.
    ids = [
        i
        for d in details.values()
        for run in d["runs"]
        for t in run["linked"].values()
        for i in t["cited"]
    ]
    assert len(set(ids)) < len(ids)


def test_the_grading_packet_carries_the_cited_records(two_runs, tmp_path) -> None:
    from judge.human import main

    first, _ = two_runs
    out = tmp_path / "packet"
    assert main(["export", str(first), "--n", "3", "--seed", "2", "--out", str(out)]) == 0
    page = (out / "packet.html").read_text()
    packet = json.loads(
        re.search(r'id="packet-data">(.*?)</script>', page, re.S).group(1).replace("<\\/", "</")  # type: ignore[union-attr]
    )
    for item in packet["items"]:
        cited_in_answer = set(re.findall(r"/erp/[A-Z]+/[a-z-]+/[^\s)\]|]+", item["answer"]))
        carried = {r["key"] for r in item["records"] if r["cited"]}
        assert cited_in_answer <= carried, (cited_in_answer, carried)
        assert all(r["fields"] for r in item["records"])


browser = pytest.mark.skipif(
    chromium_path() is None,
    reason="chromium not installed: apt-get update && apt-get install -y chromium",
)


@pytest.mark.browser
@browser
def test_a_cited_record_opens_in_the_viewer_with_the_server_stopped(two_runs, tmp_path) -> None:
    first, _ = two_runs
    page_path, _ = build_viewer([first], tmp_path / "viewer")
    record = next(
        json.loads(line)
        for line in (first / "trajectories.jsonl").read_text().splitlines()
        if f"{STABLE_RECORD_BASE}/erp/" in line
    )
    link = re.search(rf"{re.escape(STABLE_RECORD_BASE)}/erp/[^\s)\]|]+", record["answer"]).group(0)  # type: ignore[union-attr]
    key = link.rsplit("/", 1)[1]
    # The run's own ERP server stopped when the run ended; nothing listens for these links.
    with Browser(tmp_path / "profile") as page:
        page.navigate(page_path.as_uri() + f"#/q/{record['question_id']}")
        page.wait_for(f"document.body.dataset.rendered === 'q/{record['question_id']}'")
        page.evaluate(
            f"[...document.querySelectorAll('.answer a.carried')]"
            f".find(a => a.title.startsWith({json.dumps(link)})).click()"
        )
        page.wait_for("document.body.dataset.rendered.startsWith('item/')")
        text = page.evaluate("document.getElementById('app').innerText")
        assert key in text and "Copy: ERP snapshot" in text
        assert page.evaluate("document.querySelectorAll('.item-fields tr').length") > 3
        assert not [line for line in page.console if "Content Security Policy" in line]
        page.evaluate("history.back()")
        page.wait_for(f"document.body.dataset.rendered === 'q/{record['question_id']}'")


@pytest.mark.browser
@browser
def test_a_cited_record_opens_in_the_grading_packet(two_runs, tmp_path) -> None:
    first, _ = two_runs
    out = tmp_path / "packet"
    subprocess.run(
        [
            *(sys.executable, "-m", "judge.human", "export", str(first)),
            *("--n", "2", "--seed", "2", "--out", str(out)),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    with Browser(tmp_path / "profile") as page:
        page.navigate((out / "packet.html").as_uri())
        page.wait_for("document.body.dataset.ready === '1'")
        text = page.evaluate(
            "(() => { const r = [...document.querySelectorAll('details.record')]"
            ".find(d => d.querySelector('summary').textContent.endsWith('cited'));"
            " r.parentElement.open = true; r.open = true; return r.innerText; })()"
        )
        assert "Copy: ERP snapshot" in text and "account" in text


def test_links_are_found_in_answers_that_start_with_a_link_and_in_json_outputs() -> None:
    finder = ErpRecordLinks()
    link = f"{STABLE_RECORD_BASE}/erp/USMF/customers/SYNCUS-0195"
    assert finder.find(f"[Rangel Tooling Inc. (SYNCUS-0195)]({link}) has no open disputes.") == {
        link: "/erp/USMF/customers/SYNCUS-0195"
    }
    output = json.dumps({"items": [{"account": "SYNCUS-0195", "url": link}], "next_cursor": None})
    assert finder.find(output) == {link: "/erp/USMF/customers/SYNCUS-0195"}
    assert finder.find(f"see erp://USMF/customers/SYNCUS-0195 and {link}.") == {
        "erp://USMF/customers/SYNCUS-0195": "/erp/USMF/customers/SYNCUS-0195",
        link: "/erp/USMF/customers/SYNCUS-0195",
    }
