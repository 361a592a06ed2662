"""People as judges: blinded packet out, grades in (from the HTML form driven in headless Chromium
over the DevTools protocol, and from the CSV sheet), then compared with the rules judge."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from judge._agreement import quadratic_weighted_kappa
from judge._runner import read_scores
from ledgerbench_core.dataset import Dimension, ExpectedFact
from tests.conftest import REPO_ROOT
from tests.fakes.judge_data import question, trajectory, write_run

pytestmark = pytest.mark.timeout(180)

CLARITY = ["clarity.acronyms", "clarity.consistent_terms"]


def make_runs(root: Path) -> list[Path]:
    """Two runs by two agents over 6 questions; every other answer states a wrong balance."""
    questions, runs = [], []
    for i in range(6):
        amount = 1000.0 + 111.11 * i
        questions.append(
            question(
                f"q{i}",
                tags={Dimension.accuracy: ["accuracy.ground_truth"], Dimension.clarity: CLARITY},
                expected=[ExpectedFact(kind="amount", field="balance", value=amount)],
                ground_truth=f"The balance is USD {amount:,.2f}.",
                query=f"What is the open balance of account {i}?",
            )
        )
    for agent, (harness, model) in {
        "gpt": ("openai", "gpt-5.2"),
        "claude": ("claude", "claude-x"),
    }.items():
        answers = []
        for i, q in enumerate(questions):
            amount = q.expected[0].value * (1.0 if (i + len(agent)) % 2 else 1.1)
            answers.append(
                trajectory(q.id, answer=f"The balance is USD {amount:,.2f}, says {model}.")
            )
        runs.append(write_run(root / agent, questions, answers, harness=harness, model=model))
    return runs


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
    )


def human(*args: str) -> subprocess.CompletedProcess:
    """``python -m judge.human ARGS`` run in this process: the same ``main``, without paying a new
    interpreter's start-up for every error case (the real entry point is run as a subprocess in
    ``test_packet_is_blind_shuffled_and_self_contained`` and the browser round trip)."""
    from judge.human import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as stop:  # argparse's usage errors
            code = stop.code if isinstance(stop.code, int) else 1
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


@pytest.fixture
def packet(tmp_path: Path) -> tuple[list[Path], Path]:
    runs = make_runs(tmp_path / "runs")
    out = tmp_path / "packet"
    done = human("export", *map(str, runs), "--n", "8", "--seed", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "8 answers" in done.stdout
    return runs, out


def test_packet_is_blind_shuffled_and_self_contained(packet) -> None:
    runs, out = packet
    page = (out / "packet.html").read_text()
    assert "gpt-5.2" not in page and "claude-x" not in page and "openai" not in page
    assert "[agent]" in page
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    assert "http://" not in page and "https://" not in page  # no network at all
    key = json.loads((out / "key.json").read_text())
    assert len(key["items"]) == 8
    assert {Path(v["run_dir"]).name for v in key["items"].values()} == {"gpt", "claude"}
    order = [(Path(v["run_dir"]).name, v["question_id"]) for v in key["items"].values()]
    assert order != sorted(order)  # shuffled
    rows = list(csv.DictReader((out / "sheet.csv").open()))
    assert len(rows) == 8 * 3 and {r["grade"] for r in rows} == {""}
    assert all(r["reference"].startswith("The balance is USD") for r in rows)
    again = cli("judge.human", "export", *map(str, runs), "--n", "8", "--out", str(out))
    assert again.returncode == 2 and "choose a new --out" in again.stderr


def _grades_json(out: Path, rows: list[dict]) -> Path:
    key = json.loads((out / "key.json").read_text())
    path = out / "grades.json"
    path.write_text(json.dumps({"packet_id": key["packet_id"], "grades": rows}))
    return path


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"item": "A001", "assertion_id": "accuracy.ground_truth", "grade": 0.3}, "off the scale"),
        (
            {"item": "A001", "assertion_id": "accuracy.ground_truth", "grade": "good"},
            "not a number",
        ),
        (
            {"item": "Z999", "assertion_id": "accuracy.ground_truth", "grade": 1},
            "not in this packet",
        ),
        ({"item": "A001", "assertion_id": "depth.nope", "grade": 1}, "has no assertion"),
        ({"item": "A001", "assertion_id": "accuracy.ground_truth", "grade": 0.5}, "graded twice"),
    ],
)
def test_import_rejects_bad_rows_with_their_number(packet, row: dict, message: str) -> None:
    runs, out = packet
    first = {"item": "A001", "assertion_id": "accuracy.ground_truth", "grade": 1}
    path = _grades_json(out, [first, row])
    done = human("import", str(path), "--as", "human-alice")
    assert done.returncode == 2
    assert done.stderr.startswith("error: row 2: ") and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not any((run / "scores" / "human-alice.jsonl").exists() for run in runs)


def test_import_needs_the_key_and_a_human_name(packet, tmp_path) -> None:
    _, out = packet
    path = _grades_json(out, [{"item": "A001", "assertion_id": "clarity.acronyms", "grade": 1}])
    moved = tmp_path / "elsewhere.json"
    shutil.copy(path, moved)
    done = human("import", str(moved), "--as", "human-alice")
    assert done.returncode == 2 and "--key" in done.stderr
    done = human("import", str(path), "--as", "alice")
    assert done.returncode == 2 and "human-NAME" in done.stderr


# ---------------------------------------------------------------------------------------------
# The round trip in headless Chromium
# ---------------------------------------------------------------------------------------------


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class DevTools:
    """A minimal Chrome DevTools Protocol client over the browser websocket."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        self._connection = connect(url, max_size=None, open_timeout=30)
        self.socket = self._connection.__enter__()
        self.next_id = 0

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        while True:
            reply = json.loads(self.socket.recv(timeout=60))
            if reply.get("id") == self.next_id:
                assert "error" not in reply, reply
                return reply["result"]

    def evaluate(self, session: str, expression: str):
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session,
        )
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def close(self) -> None:
        self._connection.__exit__(None, None, None)


def _start_chromium(profile: Path) -> tuple[subprocess.Popen, str]:
    args = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "about:blank",
    ]
    env = {**os.environ, "HOME": str(profile)}
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if port_file.exists() and len(port_file.read_text().splitlines()) >= 2:
            port, path = port_file.read_text().splitlines()[:2]
            return process, f"ws://127.0.0.1:{port}{path}"
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with {process.returncode}")
        time.sleep(0.2)
    process.kill()
    raise TimeoutError("chromium wrote no DevToolsActivePort within 60 s")


def _wait_for(predicate, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"timed out waiting for {what}")


def fill_and_save_in_browser(page: Path, grades: dict[str, str], downloads: Path) -> Path:
    """Open the packet, click one radio button per statement, type a name, press Save."""
    profile = downloads.parent / "profile"
    profile.mkdir()
    process, url = _start_chromium(profile)
    tools = DevTools(url)
    try:
        tools.send(
            "Browser.setDownloadBehavior",
            {"behavior": "allow", "downloadPath": str(downloads), "eventsEnabled": True},
        )
        target = tools.send("Target.createTarget", {"url": page.resolve().as_uri()})["targetId"]
        session = tools.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        _wait_for(
            lambda: tools.evaluate(session, "document.body && document.body.dataset.ready"),
            what="the form to render",
        )
        clicked = tools.evaluate(
            session,
            f"""(() => {{
              const grades = {json.dumps(grades)};
              let clicked = 0;
              for (const [key, value] of Object.entries(grades)) {{
                const selector = 'input[name="' + CSS.escape(key) + '"][value="' + value + '"]';
                document.querySelector(selector).click();
                clicked += 1;
              }}
              const name = document.getElementById('grader');
              name.value = 'Alice';
              name.dispatchEvent(new Event('input'));
              return clicked;
            }})()""",
        )
        assert clicked == len(grades)
        assert tools.evaluate(session, "document.body.dataset.graded") == str(len(grades))
        tools.evaluate(session, "document.getElementById('save').click()")
        return _wait_for(
            lambda: next(
                (p for p in downloads.glob("grades-*.json") if p.stat().st_size > 0), None
            ),
            what="the grades download",
        )
    finally:
        tools.close()
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.browser
@pytest.mark.slow  # a real Chromium session fills the packet form
@pytest.mark.skipif(_chromium() is None, reason="chromium not installed: apt-get install chromium")
def test_round_trip_browser_import_compare(packet, tmp_path) -> None:
    runs, out = packet
    page_data = json.loads(
        (out / "packet.html")
        .read_text()
        .split('id="packet-data">', 1)[1]
        .split("</script>", 1)[0]
        .replace("<\\/", "</")
    )
    rng = np.random.default_rng(7)
    scale = ["0", "0.25", "0.5", "0.75", "1"]
    alice: dict[str, str] = {}
    for item in page_data["items"]:
        right = (
            "says" in item["answer"]
            and item["reference"].split("USD ")[1].rstrip(".") in (item["answer"])
        )
        for assertion in item["assertions"]:
            key = f"{item['item']}|{assertion['id']}"
            if assertion["id"].startswith("accuracy."):
                alice[key] = "1" if right else "0"
            else:
                alice[key] = scale[int(rng.integers(2, 5))]
    alice[f"{page_data['items'][0]['item']}|clarity.acronyms"] = "n/a"

    downloads = tmp_path / "downloads"
    downloads.mkdir()
    saved = fill_and_save_in_browser(out / "packet.html", alice, downloads)
    saved_data = json.loads(saved.read_text())
    assert saved_data["grader"] == "Alice" and len(saved_data["grades"]) == len(alice)

    done = cli(
        "judge.human", "import", str(saved), "--as", "human-alice", "--key", str(out / "key.json")
    )
    assert done.returncode == 0, done.stderr
    records = [r for run in runs for r in read_scores(run / "scores" / "human-alice.jsonl")[0]]
    assert len(records) == 8
    key = json.loads((out / "key.json").read_text())
    for record in records:
        code = record.extra["packet_item"]
        assert key["items"][code]["question_id"] == record.question_id
        accuracy = record.dimensions[Dimension.accuracy].assertions[0]
        assert accuracy.decided_by == "human"
        assert accuracy.score == float(alice[f"{code}|accuracy.ground_truth"])

    # a second person grades in the CSV sheet: the same accuracy grades, clarity one step lower
    rows = list(csv.DictReader((out / "sheet.csv").open()))
    bob = {}
    for row in rows:
        grade = alice[f"{row['item']}|{row['assertion_id']}"]
        if row["assertion_id"].startswith("clarity.") and grade not in ("n/a", "0"):
            grade = scale[scale.index(grade) - 1]
        row["grade"] = grade
        bob[(row["item"], row["assertion_id"])] = grade
    sheet = tmp_path / "bob.csv"
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    done = cli(
        "judge.human", "import", str(sheet), "--as", "human-bob", "--key", str(out / "key.json")
    )
    assert done.returncode == 0, done.stderr

    for run in runs:
        assert cli("judge.run", str(run), "--judge", "rules", "--no-progress").returncode == 0
    report = tmp_path / "compare"
    done = cli(
        "judge.compare",
        *map(str, runs),
        "--judges",
        "rules",
        "human-alice",
        "human-bob",
        "--min-pairs",
        "3",
        "--bootstrap",
        "200",
        "--no-plots",
        "--out",
        str(report),
    )
    assert done.returncode == 0, done.stderr
    text = (report / "agreement.md").read_text()
    assert "Quadratic-weighted Cohen's kappa" in text and "Krippendorff's alpha" in text
    assert "rules agrees with people" in text
    data = json.loads((report / "agreement.json").read_text())
    kappa = next(
        k
        for k in data["kappas"]
        if {k["judge_a"], k["judge_b"]} == {"human-alice", "human-bob"}
        and k["dimension"] == "clarity"
    )
    pairs = [
        (float(alice[f"{item}|{aid}"]), float(bob[(item, aid)]))
        for item, aid in bob
        if aid.startswith("clarity.") and bob[(item, aid)] != "n/a"
    ]
    expected = quadratic_weighted_kappa([a for a, _ in pairs], [b for _, b in pairs])
    assert kappa["kappa"]["value"] == pytest.approx(expected)
    assert kappa["kappa"]["low"] <= kappa["kappa"]["value"] <= kappa["kappa"]["high"]
    accuracy_kappa = next(
        k
        for k in data["kappas"]
        if {k["judge_a"], k["judge_b"]} == {"rules", "human-alice"} and k["dimension"] == "accuracy"
    )
    assert accuracy_kappa["kappa"]["value"] == pytest.approx(1.0)  # the rules read it as Alice did


# ---------------------------------------------------------------------------------------------
# Answers as the user sees them (issue 25)
# ---------------------------------------------------------------------------------------------

RECORDS = [f"SYNCUS-{n:04d}" for n in range(1, 26)]
RENDERED_ANSWER = (
    "**25 customers** are on credit hold, first "
    "[SYNCUS-0001](http://erp.ledgerbench.test/erp/USMF/customers/SYNCUS-0001):\n\n"
    "| Account | Balance |\n|---|---|\n"
    + "".join(f"| {r} | USD {n},000.00 |\n" for n, r in enumerate(RECORDS, start=1))
    + "\n- checked in the ERP\n- nothing else to report\n\n"
    '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> '
    "[click me](javascript:window.pwned=3)"
)


def _rendering_packet(tmp_path: Path) -> Path:
    reference = "25 customer(s) are on credit hold: " + "; ".join(RECORDS) + "."
    q = question(
        "q0",
        tags={Dimension.accuracy: ["accuracy.ground_truth"], Dimension.structure: ["structure.x"]},
        ground_truth=reference,
        query="Who is on credit hold in USMF?",
    )
    run = write_run(tmp_path / "runs" / "a", [q], [trajectory("q0", answer=RENDERED_ANSWER)])
    out = tmp_path / "packet"
    done = human("export", str(run), "--n", "1", "--seed", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out / "packet.html"


def test_packet_embeds_the_viewers_renderer_under_a_strict_csp(tmp_path) -> None:
    from ledgerbench.viewer import markdown_script

    page = _rendering_packet(tmp_path).read_text()
    assert markdown_script() in page  # the viewer's renderer itself, not a second one
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp
    assert len(re.findall(r"<script>", page)) == 1  # run content is JSON data, never markup
    assert "<img src=x" not in page and "<script>window" not in page


@pytest.mark.browser
@pytest.mark.slow  # a real Chromium session renders the packet
@pytest.mark.skipif(_chromium() is None, reason="chromium not installed: apt-get install chromium")
def test_packet_shows_tables_links_and_the_whole_reference_safely(tmp_path) -> None:
    from tests.cdp import Browser

    page = _rendering_packet(tmp_path)
    with Browser(tmp_path / "profile") as browser:
        browser.navigate(page.resolve().as_uri())
        browser.wait_for("document.body && document.body.dataset.ready === '1'")
        seen = browser.evaluate(
            """(() => {
              const answer = document.querySelector('.answer');
              const reference = document.querySelector('.reference');
              const table = answer.querySelector('table');
              return {
                header: [...table.querySelectorAll('th')].map((c) => c.textContent),
                rows: table.querySelectorAll('tbody tr').length,
                last: [...table.querySelectorAll('tbody tr:last-child td')]
                  .map((c) => c.textContent),
                links: [...answer.querySelectorAll('a')].map((a) => [a.textContent, a.href]),
                strong: answer.querySelector('strong').textContent,
                items: answer.querySelectorAll('li').length,
                pipes: answer.textContent.includes('|---|'),
                scripts: answer.querySelectorAll('script, img').length,
                owned: window.pwned === undefined ? null : window.pwned,
                text: answer.textContent,
                reference: reference.textContent,
              };
            })()"""
        )
    assert seen["header"] == ["Account", "Balance"] and seen["rows"] == 25
    assert seen["last"] == ["SYNCUS-0025", "USD 25,000.00"] and not seen["pipes"]
    assert seen["links"] == [
        ["SYNCUS-0001", "http://erp.ledgerbench.test/erp/USMF/customers/SYNCUS-0001"]
    ]  # the javascript: link stays text
    assert seen["strong"] == "25 customers" and seen["items"] == 2
    assert seen["scripts"] == 0 and seen["owned"] is None
    assert "<script>window.pwned = 1</script>" in seen["text"]  # shown as text
    assert all(r in seen["reference"] for r in RECORDS) and "more" not in seen["reference"]
