"""`ledgerbench view`: the static trajectory viewer, built from real run files and opened in
headless Chromium."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ledgerbench.viewer import ViewerError, build_viewer
from tests.cdp import Browser, chromium_path
from tests.run_files import (
    LINK_PAYLOAD,
    LONG_TOKEN,
    ONERROR_PAYLOAD,
    QUESTIONS,
    SCRIPT_PAYLOAD,
    write_sample_runs,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_sample_runs(tmp_path_factory.mktemp("viewer-runs"))


@pytest.fixture(scope="module")
def viewer(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("viewer")
    result = subprocess.run(
        [sys.executable, "-m", "ledgerbench", "view", *map(str, runs), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Viewer: {out / 'index.html'}")
    return out / "index.html"


def _details(page: Path) -> dict[str, dict]:
    html = page.read_text()
    index = json.loads(re.search(r'id="lb-index">(.*?)</script>', html).group(1))
    out = {}
    for question in index["questions"]:
        blob = re.search(rf'id="lb-q-{question["n"]}">(.*?)</script>', html).group(1)
        out[question["id"]] = json.loads(gzip.decompress(base64.b64decode(blob)))
    return {"index": index, **out}


def test_page_holds_every_question_run_and_verdict(viewer: Path):
    data = _details(viewer)
    index = data["index"]
    assert [q["id"] for q in index["questions"]] == [q.id for q in QUESTIONS]  # dataset order
    assert [r["name"] for r in index["runs"]] == ["run-a", "run-b"]
    assert index["runs"][0]["system_prompt"] == "You are a careful finance analyst."
    first = index["questions"][0]
    assert first["scenario"] == "Aged Balance"
    assert [cell[0]["sc"]["rules"] for cell in first["cells"]] == [1.0, 0.25]
    brief = index["questions"][2]["cells"]
    assert brief[0][0]["r"] == "provider_unavailable" and brief[0][0]["i"] is True
    assert brief[0][0]["sc"] == {}  # infrastructure failures are never judged
    assert brief[1][0]["r"] == "completed"  # derived from the version-1 line
    detail = data["obl-aged-001"]
    assert detail["question"]["ground_truth"].startswith("SYNCUS-0001 owes")
    assert (
        detail["runs"][1]["scores"]["rules"][0]["dimensions"]["accuracy"]["assertions"][0]["reason"]
        == "Balance stated, aging missing."
    )
    assert [m["role"] for m in detail["runs"][0]["records"][0]["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_page_script_and_style_are_pinned_by_a_strict_csp(viewer: Path):
    html = viewer.read_text()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", csp)
    # Run content is data only: the one executable <script> is the viewer's own.
    assert len(re.findall(r"<script>", html)) == 1
    assert SCRIPT_PAYLOAD not in html and "onerror=" not in html


def test_command_errors_are_one_line(tmp_path: Path, runs: list[Path]):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ledgerbench",
            "view",
            str(tmp_path / "nope"),
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"ledgerbench view: error: {tmp_path / 'nope'} is not a run directory; pass runs/NAME "
        "(the folder that holds trajectories.jsonl)"
    ]
    empty = tmp_path / "empty-run"
    empty.mkdir()
    with pytest.raises(ViewerError, match=r"has no trajectories\.jsonl; run the agent first"):
        build_viewer([empty], tmp_path / "out")
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(ViewerError, match="is a file; pass a directory"):
        build_viewer(runs, target)


def test_unreadable_lines_are_skipped_with_a_warning(runs: list[Path], tmp_path: Path):
    broken = tmp_path / "broken"
    broken.mkdir()
    lines = (runs[0] / "trajectories.jsonl").read_text().splitlines()
    (broken / "trajectories.jsonl").write_text(lines[0] + "\n" + lines[1][:50] + "\n")
    page, warnings = build_viewer([broken], tmp_path / "out")
    assert any("skipped 1 unreadable line" in w for w in warnings)
    assert any("no dataset found" in w for w in warnings)
    index = _details(page)["index"]
    assert [q["id"] for q in index["questions"]] == ["obl-aged-001"]
    assert index["questions"][0]["query"].startswith("What is the aged balance")  # from `input`


def test_output_cap_clips_tool_outputs_and_says_so(runs: list[Path], tmp_path: Path):
    page, _ = build_viewer(runs, tmp_path / "out", output_chars=10)
    call = _details(page)["obl-aged-001"]["runs"][0]["records"][0]["tool_calls"][0]
    assert len(call["output"]) == 10 and call["view_clipped"] is True
    assert call["record_chars"] > 10


browser = pytest.mark.skipif(
    chromium_path() is None,
    reason="chromium not installed: apt-get update && apt-get install -y chromium",
)


@pytest.mark.browser
@browser
def test_follow_a_question_from_the_index_and_screenshot(viewer: Path, tmp_path: Path):
    with Browser(tmp_path / "profile") as page:
        page.navigate(viewer.as_uri())
        page.wait_for("document.body.dataset.rendered === 'index'")
        rows = page.evaluate(
            "[...document.querySelectorAll('table.index tbody tr')].map(r => r.dataset.qid)"
        )
        assert rows == [q.id for q in QUESTIONS]
        # Filter by scenario: one row left, and the filter is in the address.
        page.evaluate(
            "(() => { const s = document.querySelector('select[name=scenario]');"
            " s.value = 'Overdue Invoices'; s.dispatchEvent(new Event('change')); })()"
        )
        assert page.evaluate("document.querySelectorAll('table.index tbody tr').length") == 1
        assert "scenario=Overdue+Invoices" in page.evaluate("location.hash")
        page.navigate(viewer.as_uri() + "#/?status=infra")
        page.wait_for("document.body.dataset.rendered === 'index'")
        assert page.evaluate(
            "[...document.querySelectorAll('table.index tbody tr')].map(r => r.dataset.qid)"
        ) == ["brief-003"]
        page.navigate(viewer.as_uri())
        page.wait_for("document.body.dataset.rendered === 'index'")
        page.evaluate("document.querySelector('a.qlink[href=\"#/q/obl-aged-001\"]').click()")
        page.wait_for("document.body.dataset.rendered === 'q/obl-aged-001'")
        text = page.evaluate("document.getElementById('app').innerText")
        assert QUESTIONS[0].query in text
        assert "USD 12,500.00" in text and "of which USD 4,000.00" in text  # reference answer
        assert "Balance stated, aging missing." in text  # a judge verdict with its reason
        assert page.evaluate("document.querySelectorAll('section.run').length") == 2  # side by side
        assert page.evaluate("document.querySelectorAll('details.tool').length") == 2
        assert page.evaluate("document.querySelector('.md table td').textContent") == "INV-1"
        assert page.evaluate("document.title") == "obl-aged-001 — LedgerBench viewer"
        shot = (
            Path(os.environ.get("LEDGERBENCH_SCREENSHOT_DIR", tmp_path)) / "viewer-screenshot.png"
        )
        page.screenshot(shot)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 40_000
        assert not [line for line in page.console if "Content Security Policy" in line]


@pytest.mark.browser
@browser
def test_no_script_from_answers_tool_outputs_or_reasons_runs(viewer: Path, tmp_path: Path):
    with Browser(tmp_path / "profile") as page:
        page.navigate(viewer.as_uri() + "#/q/obl-aged-001")
        page.wait_for("document.body.dataset.rendered === 'q/obl-aged-001'")
        # Open every collapsed tool call so its output is in the rendered page too.
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        text = page.evaluate("document.getElementById('app').innerText")
        assert SCRIPT_PAYLOAD in text  # shown as text, in the answer, tool output and reason
        assert text.count(SCRIPT_PAYLOAD) >= 3
        assert ONERROR_PAYLOAD.replace('"', '"') in text or "onerror=" in text
        assert page.evaluate("document.title") == "obl-aged-001 — LedgerBench viewer"
        assert page.evaluate("window.__xss === undefined")
        assert page.evaluate("document.body.dataset.xss === undefined")
        assert (
            page.evaluate("document.querySelectorAll('#app img, #app script, [onerror]').length")
            == 0
        )
        # The javascript: link is shown as text, not as a link.
        hrefs = page.evaluate(
            "[...document.querySelectorAll('#app a')].map(a => a.getAttribute('href'))"
        )
        assert not any(h.lower().startswith("javascript") for h in hrefs)
        assert LINK_PAYLOAD in text
        # The only <script> elements are the viewer's own and its data blocks.
        kinds = page.evaluate("[...document.scripts].map(s => s.type || 'classic')")
        assert kinds.count("classic") == 1


# ---------------------------------------------------------------------------------------------
# The index: question text, a summary row per run, sorting, the disagreements filter
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_judge_viewer(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample runs with a second judge on run B that disagrees with the rules judge on
    obl-aged-001 only (0.25 -> 1.0)."""
    import shutil

    root = tmp_path_factory.mktemp("two-judges")
    copies = [Path(shutil.copytree(run, root / run.name)) for run in runs]
    rules = (copies[1] / "scores" / "rules.jsonl").read_text().splitlines()
    second = []
    for line in rules:
        score = json.loads(line)
        score["judge"] = "second"
        if score["question_id"] == "obl-aged-001":
            score["overall"] = 1.0
            score["dimensions"]["accuracy"]["score"] = 1.0
        second.append(json.dumps(score))
    (copies[1] / "scores" / "second.jsonl").write_text("\n".join(second) + "\n")
    page, _ = build_viewer(copies, root / "viewer")
    return page


def test_the_index_has_a_summary_of_each_run(two_judge_viewer: Path):
    index = _details(two_judge_viewer)["index"]
    a, b = (run["summary"] for run in index["runs"])
    # The Overall (judge.run_overall): A has obligations accuracy 1.0 and 0.5 (its brief failed:
    # not judged); B has obligations accuracy 0.25, 0.0 and a brief's structure at 0.75.
    assert a["overall"] == {"rules": pytest.approx(0.75)}
    assert b["overall"]["rules"] == pytest.approx((0.125 + 0.75) / 2)
    assert b["overall"]["second"] == pytest.approx(((1.0 + 0.0) / 2 + 0.75) / 2)
    assert (a["errors"], a["timeouts"]) == (1, 0)  # the provider outage
    assert (b["errors"], b["timeouts"]) == (0, 1)
    assert a["cost_usd"] is None


def _shown(page: Browser) -> list[str]:
    return page.evaluate(
        "[...document.querySelectorAll('table.index tbody tr')].map(r => r.dataset.qid)"
    )


@pytest.mark.browser
@browser
def test_the_index_sorts_summarizes_and_filters_disagreements(
    two_judge_viewer: Path, tmp_path: Path
):
    with Browser(tmp_path / "profile") as page:
        page.navigate(two_judge_viewer.as_uri())
        page.wait_for("document.body.dataset.rendered === 'index'")
        texts = page.evaluate(
            "[...document.querySelectorAll('table.index tbody td.qtext')].map(t => t.textContent)"
        )
        assert texts == [q.query for q in QUESTIONS]
        summary = page.evaluate("document.querySelector('tr.summary-row').innerText")
        assert "Overall 0.75" in summary and "1 errors" in summary and "1 timeouts" in summary
        # Sort by run B's score (rules): 0.0, 0.25, 0.75; again for descending.
        page.evaluate("document.querySelector('th[data-sort=r1]').click()")
        assert _shown(page) == ["obl-overdue-002", "obl-aged-001", "brief-003"]
        assert "sort=r1" in page.evaluate("location.hash")
        page.evaluate("document.querySelector('th[data-sort=r1]').click()")
        assert _shown(page) == ["brief-003", "obl-aged-001", "obl-overdue-002"]
        page.evaluate("document.querySelector('th[data-sort=text]').click()")
        assert _shown(page) == sorted(
            (q.id for q in QUESTIONS), key=lambda i: next(q.query for q in QUESTIONS if q.id == i)
        )
        # Disagreements: the judges differ on obl-aged-001 only (in run B).
        page.evaluate("document.body.removeAttribute('data-rendered')")
        page.navigate(two_judge_viewer.as_uri() + "#/?dis=judges")
        page.wait_for("document.body.dataset.rendered === 'index'")
        assert _shown(page) == ["obl-aged-001"]
        page.evaluate("document.body.removeAttribute('data-rendered')")
        page.navigate(two_judge_viewer.as_uri() + "#/?dis=any")
        page.wait_for("document.body.dataset.rendered === 'index'")
        assert len(_shown(page)) == 3  # the runs differ on every question
        assert not [line for line in page.console if "Content Security Policy" in line]


_BROKEN_TEXT = re.compile(r"\[object|undefined|NaN")


def _rendered_text(page: Browser, url: str, rendered: str) -> str:
    page.evaluate("document.body && document.body.removeAttribute('data-rendered')")
    page.navigate(url)
    page.wait_for(f"document.body.dataset.rendered === {json.dumps(rendered)}")
    return page.evaluate("document.getElementById('app').innerText")


@pytest.mark.browser
@browser
def test_index_and_question_pages_read_as_text(two_judge_viewer: Path, tmp_path: Path):
    """What a person reads: no `[object HTMLSpanElement]`, `undefined` or `NaN` on the index
    (each run's line names its judges with their Overall) or on any question's page."""
    with Browser(tmp_path / "profile") as page:
        index = _rendered_text(page, two_judge_viewer.as_uri(), "index")
        assert not _BROKEN_TEXT.search(index), _BROKEN_TEXT.search(index)
        run_lines = page.evaluate(
            "[...document.querySelectorAll('ul.runs li')].map(l => l.innerText)"
        )
        assert len(run_lines) == 2
        # each judge's Overall, then what it covers where it did not score the whole run
        assert "judges: rules (Overall 0.750" in run_lines[0], run_lines[0]
        assert re.search(
            r"judges: rules \(Overall [0-9.]+.*\), second \(Overall [0-9.]+", run_lines[1]
        )
        texts = {}
        for question in QUESTIONS:
            text = texts[question.id] = _rendered_text(
                page, f"{two_judge_viewer.as_uri()}#/q/{question.id}", f"q/{question.id}"
            )
            assert question.query in text
            assert not _BROKEN_TEXT.search(text), (question.id, _BROKEN_TEXT.search(text))
            # A long unbroken string (run A's answer to obl-overdue-002) wraps in its column.
            overflowing = page.evaluate(
                "[...document.querySelectorAll('section.run')]"
                ".filter(s => s.scrollWidth > s.clientWidth + 1).length"
            )
            assert overflowing == 0, question.id
        assert LONG_TOKEN in texts["obl-overdue-002"]
