"""World documents that last: the viewer and the grading packet carry a copy of every research-
world document an answer cites or its agent fetched, read from the run's world file, so each
``https://world.ledgerbench.test/<world>/docs/<doc>`` link opens offline once the servers are gone.

The runs are the scripted agent's on a small world (tests/world_fixtures.py), in this process.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from judge.linked import WorldDocumentLinks, document_key
from ledgerbench.viewer import build_viewer
from synthetic_world import LINK_BASE
from tests.cdp import Browser, chromium_path
from tests.test_lasting_links import _page_data
from tests.world_fixtures import (
    question_set,
    run_scripted,
    shared_folder,
    small_world,
    world_rows,
)

pytestmark = pytest.mark.timeout(600)

DOC_LINK = re.compile(rf"{re.escape(LINK_BASE)}/w[0-9a-f]{{10}}/docs/d[0-9a-f]{{12}}")


@pytest.fixture(scope="module")
def world(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))


@pytest.fixture(scope="module")
def dataset(
    world: Path, erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> Path:
    """A dataset folder with both research sets: one run answers both task types."""
    shared = shared_folder(tmp_path_factory, worker_id, "world")
    folder = tmp_path_factory.mktemp("research-sets")
    for task_type, n in (("entity_performance", 8), ("business_brief", 3)):
        shutil.copy(question_set(world, erp_db_url, shared, task_type, n), folder)
    return folder


@pytest.fixture(scope="module")
def two_runs(
    dataset: Path, world: Path, erp_db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[Path, Path]]:
    """[(first, second)]: the scripted agent twice on both sets; the servers are gone after."""
    root = tmp_path_factory.mktemp("world-links")
    return [
        tuple(
            run_scripted(dataset, world, erp_db_url, root / n, concurrency=4)
            for n in ("first", "second")
        )
    ]


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]


def _body(world: Path, link: str) -> str:
    doc_id = link.rsplit("/", 1)[1]
    return world_rows(world, "SELECT body FROM document WHERE doc_id = ?", (doc_id,))[0][0]


def test_two_runs_give_byte_identical_answers_citing_stable_document_links(two_runs) -> None:
    cited = 0
    for first, second in two_runs:
        a = {(r["question_id"], r["trial"]): r["answer"] for r in _records(first)}
        b = {(r["question_id"], r["trial"]): r["answer"] for r in _records(second)}
        assert a and a.keys() == b.keys()
        for key in a:
            assert a[key].encode() == b[key].encode(), key
        cited += sum(bool(DOC_LINK.search(answer)) for answer in a.values())
    assert cited >= 5  # the answers do cite world documents, by the stable base


def test_the_viewer_carries_every_cited_and_fetched_document(two_runs, world, tmp_path) -> None:
    runs = [run for pair in two_runs for run in pair]
    page, warnings = build_viewer(runs, tmp_path / "viewer")
    assert not [w for w in warnings if "world" in w], warnings
    items, details = _page_data(page)
    checked_cited = checked_fetched = 0
    for detail in details.values():
        for run in detail["runs"]:
            for record in run["records"]:
                linked = run["linked"][str(record["trial"])]
                for link in DOC_LINK.findall(record["answer"]):
                    item = items[linked["aliases"][link]]
                    assert item["kind"] == "world-document" and item["link"] == link
                    assert item["body"] == _body(world, link)  # the document, from the world
                    assert item["source"].startswith("world snapshot")
                    assert linked["aliases"][link] in linked["cited"]
                    checked_cited += 1
                for call in record["tool_calls"]:
                    if call["name"].split("__")[-1] != "fetch":
                        continue
                    (link,) = call["documents"]
                    copy = linked["aliases"][link]
                    assert copy in linked["cited"] + linked["read"]
                    assert items[copy]["body"] == _body(world, link)
                    checked_fetched += 1
    assert checked_cited >= 5 and checked_fetched >= 5
    # A search result the agent never fetched nor cited is not carried.
    for detail in details.values():
        for run in detail["runs"]:
            for record in run["records"]:
                linked = run["linked"][str(record["trial"])]
                kept = {items[i]["link"] for i in linked["cited"] + linked["read"]}
                shown = {d for c in record["tool_calls"] for d in c.get("documents") or []}
                fetched_or_cited = {
                    d
                    for c in record["tool_calls"]
                    if c["name"].endswith("fetch")
                    for d in c["documents"]
                } | set(DOC_LINK.findall(record["answer"]))
                assert (kept & shown) <= fetched_or_cited


def test_without_the_world_file_the_copies_are_what_fetch_returned(two_runs, tmp_path) -> None:
    first = Path(shutil.copytree(two_runs[0][0], tmp_path / "moved"))
    manifest = json.loads((first / "manifest.json").read_text())
    manifest["world_db"] = str(tmp_path / "gone" / "world.db")
    (first / "manifest.json").write_text(json.dumps(manifest))
    page, warnings = build_viewer([first], tmp_path / "viewer")
    assert any("cannot read the run's world" in w for w in warnings), warnings
    items, details = _page_data(page)
    fetched = [
        (run["linked"][str(r["trial"])], c["documents"][0])
        for d in details.values()
        for run in d["runs"]
        for r in run["records"]
        for c in r["tool_calls"]
        if c["name"].endswith("fetch") and c["documents"]
    ]
    assert fetched
    for linked, link in fetched:
        item = items[linked["aliases"][link]]
        assert item["source"].startswith("as a fetch output showed it") and item["body"]


def test_the_grading_packet_carries_the_cited_documents(two_runs, world, tmp_path) -> None:
    from judge import JudgeRunConfig, run_judge
    from judge.human import main

    first = two_runs[0][0]
    run_judge(JudgeRunConfig(run_dir=first, judge="rules", progress=False))
    out = tmp_path / "packet"
    assert main(["export", str(first), "--n", "4", "--seed", "2", "--out", str(out)]) == 0
    page = (out / "packet.html").read_text()
    packet = json.loads(
        re.search(r'id="packet-data">(.*?)</script>', page, re.S).group(1).replace("<\\/", "</")  # type: ignore[union-attr]
    )
    checked = 0
    for item in packet["items"]:
        carried = {r["link"]: r for r in item["records"] if r["cited"]}
        for link in DOC_LINK.findall(item["answer"]):
            assert carried[link]["body"] == _body(world, link)
            checked += 1
    assert checked


def test_document_links_in_every_spelling_name_one_document() -> None:
    finder = WorldDocumentLinks()
    link = f"{LINK_BASE}/w0123456789/docs/d0123456789ab"
    text = f"Revenue rose ([annual report]({link})); see also <{link}>, {link}."
    assert set(finder.find(text).values()) == {"w0123456789/d0123456789ab"}
    assert document_key("http://127.0.0.1:9/w0123456789/docs/d0123456789ab/") == (
        "w0123456789/d0123456789ab"
    )
    assert document_key("https://erp.ledgerbench.test/erp/USMF/customers/X") is None
    assert document_key("/docs/d0123456789ab") is None  # no world: not a document of a run


@pytest.mark.browser
@pytest.mark.skipif(
    chromium_path() is None,
    reason="chromium not installed: apt-get update && apt-get install -y chromium",
)
def test_a_cited_document_opens_in_the_viewer_with_the_servers_stopped(
    two_runs, world, tmp_path
) -> None:
    first = two_runs[0][0]
    page_path, _ = build_viewer([first], tmp_path / "viewer")
    record = next(r for r in _records(first) if DOC_LINK.search(r["answer"]))
    link = DOC_LINK.search(record["answer"]).group(0)  # type: ignore[union-attr]
    title = world_rows(world, "SELECT title FROM document WHERE doc_id = ?", (link[-13:],))[0][0]
    qid = record["question_id"]
    with Browser(tmp_path / "profile") as page:
        page.navigate(page_path.as_uri() + f"#/q/{qid}")
        page.wait_for(f"document.body.dataset.rendered === 'q/{qid}'")
        # The trajectory shows each search's returned documents and each fetch's document.
        listed = page.evaluate("document.querySelectorAll('.documents li').length")
        assert listed >= 2
        page.evaluate(
            f"[...document.querySelectorAll('.answer a.carried')]"
            f".find(a => a.title.startsWith({json.dumps(link)})).click()"
        )
        page.wait_for("document.body.dataset.rendered.startsWith('item/')")
        text = page.evaluate("document.getElementById('app').innerText")
        assert title in text and "Copy: world snapshot" in text
        assert not [line for line in page.console if "Content Security Policy" in line]


@pytest.mark.browser
@pytest.mark.skipif(
    chromium_path() is None,
    reason="chromium not installed: apt-get update && apt-get install -y chromium",
)
def test_a_research_question_reads_as_text_in_the_viewer(two_runs, world, tmp_path) -> None:
    """Search results by title and date (linked only where a copy is carried), a fetched document
    rendered (its tables as tables, the raw JSON one click away), one list of what the answer
    cited and the agent read, each marked, and the checks only an LLM judge decides folded away."""
    import subprocess
    import sys

    first = two_runs[0][0]
    judged = Path(shutil.copytree(first, tmp_path / "judged"))
    judge = [sys.executable, "-m", "judge.run", str(judged), "--judge", "rules"]
    subprocess.run([*judge, "--world-db", f"sqlite:///{world}"], check=True, capture_output=True)
    page_path, _ = build_viewer([judged], tmp_path / "viewer")
    record = next(
        r
        for r in _records(judged)
        if DOC_LINK.search(r["answer"])
        and any(c["name"].endswith("search") for c in r["tool_calls"])
        and any(c["name"].endswith("fetch") for c in r["tool_calls"])
    )
    search = next(c for c in record["tool_calls"] if c["name"].endswith("search"))
    first_result = json.loads(search["output"])["results"][0]
    qid = record["question_id"]
    with Browser(tmp_path / "profile") as page:
        page.navigate(page_path.as_uri() + f"#/q/{qid}")
        page.wait_for(f"document.body.dataset.rendered === 'q/{qid}'")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        text = page.evaluate("document.getElementById('app').innerText")
        assert not re.search(r"\[object|undefined|NaN", text)
        listed = page.evaluate(
            "[...document.querySelectorAll('.documents li')].map(li => li.innerText)"
        )
        assert any(
            first_result["title"] in line and first_result["published_at"] in line
            for line in listed
        ), listed[:3]
        # No link to an address that resolves nowhere: documents link to their carried copy.
        hrefs = page.evaluate(
            "[...document.querySelectorAll('.documents a')].map(a => a.getAttribute('href'))"
        )
        assert hrefs and all(h.startswith("#/item/") for h in hrefs), hrefs
        # The fetched document is rendered: its markdown tables are tables; raw JSON beside it.
        assert page.evaluate("document.querySelectorAll('.rendered-output .md table').length") > 0
        assert page.evaluate("document.querySelectorAll('details.raw-output pre').length") > 0
        assert "\\n" not in page.evaluate(
            "[...document.querySelectorAll('.rendered-output')].map(e => e.innerText).join('')"
        )
        # One list of carried records and documents, each marked.
        marks = page.evaluate(
            "[...document.querySelectorAll('.carried-list li')].map(li => li.dataset.mark)"
        )
        assert "cited and read" in marks and set(marks) <= {"cited", "read", "cited and read"}
        assert page.evaluate("document.querySelectorAll('.carried-list ul').length") == 1
        # Checks left to an LLM judge are folded under one line, out of the verdict's table.
        main_table = page.evaluate(
            "[...document.querySelectorAll('.verdict > table.dims')].map(t => t.innerText).join('')"
        )
        assert "needs an LLM judge" not in main_table
        folded = page.evaluate("document.querySelector('details.llm-only > summary').innerText")
        assert "need an LLM judge, not scored by rules" in folded
