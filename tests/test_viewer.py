"""`ledgerbench view`: the static trajectory viewer, built from real run files and opened in
headless Chromium."""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harnesses._protocol import TrajectoryDraft
from harnesses.records import (
    RunManifest,
    Termination,
    TerminationReason,
    TrajectoryRecord,
    Usage,
)
from judge.records import AssertionScore, DimensionScore, DimensionStatus, ScoreRecord
from ledgerbench.dataset import (
    Assertion,
    Dataset,
    DatasetHeader,
    Dimension,
    Question,
    TaskType,
    write_dataset,
)
from ledgerbench.viewer import ViewerError, build_viewer
from tests.cdp import Browser, chromium_path

REPO = Path(__file__).resolve().parents[1]
START = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
TAGS = {Dimension.accuracy: [Assertion(id="accuracy.balance", text="The figures are right.")]}
# Payloads that, if any ran, would change the title or leave a marker on the page.
SCRIPT_PAYLOAD = "<script>document.title='XSS';window.__xss=1</script>"
ONERROR_PAYLOAD = "<img src=x onerror=\"document.title='XSS';document.body.dataset.xss=1\">"
BREAKOUT_PAYLOAD = "</script><script>window.__xss=2</script>"
LINK_PAYLOAD = "[click me](javascript:window.__xss=3)"

QUESTIONS = [
    Question(
        id="obl-aged-001",
        query="What is the aged balance of customer SYNCUS-0001 in USMF as of 2025-12-31?",
        tags=TAGS,
        task_type=TaskType.obligations,
        segment="AR",
        scenario="Aged Balance",
        ground_truth="SYNCUS-0001 owes **USD 12,500.00**, of which USD 4,000.00 is over 90 days.",
    ),
    Question(
        id="obl-overdue-002",
        query="Which invoices of vendor SYNVEN-0002 are overdue?",
        tags=TAGS,
        task_type=TaskType.obligations,
        segment="AP",
        scenario="Overdue Invoices",
        ground_truth="Two invoices: INV-7 and INV-9.",
    ),
    Question(
        id="brief-003",
        query="Write a one-page brief on Contoso's receivables.",
        tags={Dimension.structure: [Assertion(id="structure.sections", text="Has sections.")]},
        task_type=TaskType.business_brief,
        segment="brief",
        scenario="receivables",
    ),
]


def _record(question: Question, harness: str, answer: str, tool_output: str, **kw) -> dict:
    draft = TrajectoryDraft()
    draft.add_message("user", question.query)
    draft.add_message("assistant", "I will look up the aging first.", reasoning="Aging, then sum.")
    draft.add_model_event(
        0.0,
        duration_s=1.5,
        usage=Usage(input_tokens=900, output_tokens=40),
        request_id="req_abc123",
        model="m-1",
    )
    draft.add_tool_call(
        "get_aging",
        {"party_id": "SYNCUS-0001"},
        tool_output,
        server="erp",
        started_s=1.6,
        duration_s=0.2,
    )
    draft.add_message("assistant", answer)
    draft.add_model_event(
        1.9, duration_s=2.0, usage=Usage(input_tokens=1400, output_tokens=120), model="m-1"
    )
    reason = kw.pop("reason", TerminationReason.completed)
    record = TrajectoryRecord(
        question_id=question.id,
        task_type=question.task_type,
        harness=harness,
        model="m-1",
        answer=answer,
        status=Termination.of(reason).status,
        termination=Termination.of(reason, kw.pop("detail", None)),
        latency_s=4.2,
        timeout_s=60,
        tool_calls=draft.tool_calls,
        usage=Usage(input_tokens=2300, output_tokens=160),
        turns=2,
        started_at=START,
        finished_at=START + dt.timedelta(seconds=4.2),
        input=question.query,
        messages=draft.messages,
        events=draft.events,
        working_time_s=4.0,
        **kw,
    )
    return json.loads(record.model_dump_json(by_alias=True))


def _score(record: dict, overall: float, reason: str) -> str:
    assertion = AssertionScore(
        assertion_id="accuracy.balance", score=overall, reason=reason, decided_by="amount_rule"
    )
    score = ScoreRecord(
        question_id=record["question_id"],
        task_type=record["task_type"],
        judge="rules",
        status="scored",
        dimensions={
            "accuracy": DimensionScore(
                status=DimensionStatus.scored, score=overall, assertions=[assertion]
            )
        },
        overall=overall,
        answer_sha256="0" * 64,
        judged_at=START,
    )
    return score.model_dump_json()


def _write_run(
    root: Path, name: str, dataset: Path, records: list[dict], scores: list[str]
) -> Path:
    run = root / name
    (run / "scores").mkdir(parents=True)
    (run / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "scores" / "rules.jsonl").write_text("".join(s + "\n" for s in scores))
    manifest = RunManifest(
        run_id=name,
        command=["test"],
        config={},
        config_fingerprint="f",
        harness=records[0]["harness"],
        model="m-1",
        timeouts={"obligations": 60.0},
        dataset_path=str(dataset),
        dataset_hash="h",
        question_count=len(QUESTIONS),
        system_prompt_hash="abc",
        system_prompt="You are a careful finance analyst.",
        started_at=START,
    )
    (run / "manifest.json").write_text(manifest.model_dump_json())
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("viewer-runs")
    dataset = root / "dataset.yaml"
    write_dataset(Dataset(header=DatasetHeader(name="viewer-test"), items=QUESTIONS), dataset)
    hostile = (
        f"The balance is USD 12,500.00.\n\n{SCRIPT_PAYLOAD}\n\n{ONERROR_PAYLOAD}\n\n"
        f"{BREAKOUT_PAYLOAD}\n\n{LINK_PAYLOAD}\n\n"
        "| invoice | amount |\n|---|---|\n| INV-1 | 4,000.00 |"
    )
    aging = json.dumps(
        {"rows": [{"bucket": "90+", "amount": 4000}], "note": ONERROR_PAYLOAD + SCRIPT_PAYLOAD}
    )
    a_records = [
        _record(QUESTIONS[0], "openai", hostile, aging),
        _record(QUESTIONS[1], "openai", "INV-7 and INV-9 are overdue.", '{"rows": []}'),
        _record(
            QUESTIONS[2],
            "openai",
            "",
            "{}",
            reason=TerminationReason.provider_unavailable,
            detail="HTTP 503 from the provider x4",
        ),
    ]
    b_records = [
        _record(QUESTIONS[0], "scripted", "SYNCUS-0001 owes USD 12,500.00.", '{"rows": []}'),
        _record(
            QUESTIONS[1],
            "scripted",
            "No overdue invoices.",
            "{}",
            reason=TerminationReason.time_limit,
        ),
    ]
    # Run B's third record is a version-1 line: no termination, no transcript.
    v1 = {
        k: v
        for k, v in _record(QUESTIONS[2], "scripted", "Brief text.", "{}").items()
        if k
        not in {
            "termination",
            "input",
            "messages",
            "events",
            "working_time_s",
            "system_prompt_hash",
            "previous_attempts",
        }
    }
    v1["version"] = 1
    b_records.append(v1)
    run_a = _write_run(
        root,
        "run-a",
        dataset,
        a_records,
        [
            _score(a_records[0], 1.0, f"Balance matches. {SCRIPT_PAYLOAD}"),
            _score(a_records[1], 0.5, "One of two invoices named."),
        ],
    )
    run_b = _write_run(
        root,
        "run-b",
        dataset,
        b_records,
        [
            _score(b_records[0], 0.25, "Balance stated, aging missing."),
            _score(b_records[1], 0.0, "Wrong: says none are overdue."),
            _score(b_records[2], 0.75, "Brief is fine."),
        ],
    )
    return [run_a, run_b]


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
