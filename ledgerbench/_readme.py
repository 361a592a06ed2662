"""The README's figures and screenshots, produced from real runs (``scripts/refresh-docs``).

- The demo headline (the ```text block after "Two commands") is what ``ledgerbench`` printed in a
  fresh workspace, between ``<!-- demo-headline:start -->`` and ``<!-- demo-headline:end -->``; a
  slow test runs the demo and fails when the README differs.
- ``docs/report-screenshot.png`` is that run's report; ``docs/viewer-screenshot.png`` the viewer of
  its two runs on a question where they differ.
- The floor figures in harnesses/README.md (``--harness nothing`` vs ``scripted`` on the shipped
  obligations, rules judge) sit between ``<!-- floor:start -->`` and ``<!-- floor:end -->``.

``python -m ledgerbench._readme`` (what ``scripts/refresh-docs`` runs) redoes all of it; it needs
Chromium for the screenshots and takes a few minutes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
HARNESS_README = ROOT / "harnesses" / "README.md"
HEADLINE = ("<!-- demo-headline:start -->", "<!-- demo-headline:end -->")
FLOOR = ("<!-- floor:start -->", "<!-- floor:end -->")


def between(text: str, markers: tuple[str, str]) -> str:
    """The text between two markers (ValueError when they are missing)."""
    start, end = markers
    if start not in text or end not in text:
        raise ValueError(f"markers {start} ... {end} not found")
    return text.split(start, 1)[1].split(end, 1)[0]


def replace_between(text: str, markers: tuple[str, str], body: str) -> str:
    start, end = markers
    head, rest = text.split(start, 1)
    return f"{head}{start}{body}{end}{rest.split(end, 1)[1]}"


def readme_headline(readme: str | None = None) -> list[str]:
    """The headline lines the README shows (inside the ```text block between the markers)."""
    block = between(readme if readme is not None else README.read_text(), HEADLINE)
    match = re.search(r"```text\n(.*?)```", block, re.S)
    if match is None:
        raise ValueError("no ```text block between the demo-headline markers")
    return match.group(1).rstrip("\n").splitlines()


def demo_headline(stdout: str) -> list[str]:
    """The headline of a demo run: its stdout from the last ``Report:`` line (the report stage
    prints one of its own before) up to the ``Done in`` line."""
    lines = stdout.splitlines()
    end = next(n for n, line in enumerate(lines) if line.startswith("Done in "))
    start = max(n for n, line in enumerate(lines[:end]) if line.startswith("Report: "))
    return lines[start:end]


def run_demo(folder: Path) -> tuple[list[str], Path]:
    """Run ``ledgerbench`` (the demo, default settings) in ``folder``: (headline, workspace)."""
    env = dict(os.environ, COLUMNS="200")
    completed = subprocess.run(
        [sys.executable, "-m", "ledgerbench"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the demo failed: {completed.stderr.strip().splitlines()[-1:]}")
    return demo_headline(completed.stdout), folder / "runs" / "pipeline"


def headline_block(lines: list[str]) -> str:
    return "\n\n```text\n" + "\n".join(lines) + "\n```\n\n"


def _screenshot(page_url: str, out: Path, wait: str, *, width: int, height: int) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.cdp import Browser

    with (
        tempfile.TemporaryDirectory() as profile,
        Browser(Path(profile), width=width, height=height) as page,
    ):
        page.navigate(page_url)
        page.wait_for(wait, timeout=120)
        page.screenshot(out, full_page=False)


def _differing_question(viewer: Path) -> str:
    """A question where the demo's two runs differ (the viewer's disagreements filter)."""
    text = viewer.read_text()
    index = json.loads(re.search(r'id="lb-index">(.*?)</script>', text, re.S).group(1))  # type: ignore[union-attr]
    for question in index["questions"]:
        scores = [(cell[0]["sc"] or {}).get("rules") for cell in question["cells"] if cell]
        if len(scores) == 2 and None not in scores and abs(scores[0] - scores[1]) >= 0.25:
            return question["id"]
    return index["questions"][0]["id"]


def refresh_screenshots(workspace: Path) -> None:
    report = workspace / "report" / "report.html"
    _screenshot(
        report.as_uri(),
        ROOT / "docs" / "report-screenshot.png",
        "document.readyState === 'complete'",
        width=1280,
        height=1400,
    )
    viewer = workspace / "viewer"
    subprocess.run(
        [
            *(sys.executable, "-m", "ledgerbench", "view"),
            *(str(workspace / "runs" / name) for name in ("scripted", "scripted-faulty-erp-world")),
            *("--out", str(viewer)),
        ],
        check=True,
        capture_output=True,
    )
    question = _differing_question(viewer / "index.html")
    _screenshot(
        f"{(viewer / 'index.html').as_uri()}#/q/{question}",
        ROOT / "docs" / "viewer-screenshot.png",
        f"document.body.dataset.rendered === 'q/{question}'",
        width=1400,
        height=1300,
    )


def floor_figures(folder: Path) -> str:
    """The scripted agent and ``--harness nothing`` on the shipped obligations, rules judge."""
    summaries = {}
    for harness in ("scripted", "nothing"):
        run = folder / "runs" / harness
        dataset = ROOT / "datasets" / "obligations.yaml"
        subprocess.run(
            [
                *(sys.executable, "-m", "harnesses.run", "--harness", harness, "--no-progress"),
                *("--dataset", str(dataset), "--out", str(run)),
            ],
            check=True,
            capture_output=True,
            cwd=folder,
        )
        subprocess.run(
            [sys.executable, "-m", "judge.run", str(run), "--judge", "rules"],
            check=True,
            capture_output=True,
        )
        summary = subprocess.run(
            [sys.executable, "-m", "judge.summary", str(run), "--judge", "rules", "--json"],
            check=True,
            capture_output=True,
            text=True,
        )
        scores = json.loads(summary.stdout)["rules"]["equal_weight"]
        summaries[harness] = {name: cell["mean"] for name, cell in scores.items()}
    scripted, nothing = summaries["scripted"], summaries["nothing"]
    return (
        "\nMeasured on the shipped `datasets/obligations.yaml` (100 items, default ERP seed 42), "
        f"rules judge:\nscripted accuracy {scripted['accuracy']:.3f} (citations "
        f"{scripted['citations']:.3f}, overall {scripted['overall']:.3f}); `--harness nothing` "
        f"accuracy {nothing['accuracy']:.3f}\n(overall {nothing['overall']:.3f}), which is the "
        "floor the none / zero / no-such-party items give (`scripts/refresh-docs` measures it).\n"
    )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ledgerbench-docs-") as work:
        folder = Path(work)
        print("running the demo in a fresh workspace ...", file=sys.stderr)
        lines, workspace = run_demo(folder)
        README.write_text(replace_between(README.read_text(), HEADLINE, headline_block(lines)))
        print("README headline:\n" + "\n".join(lines), file=sys.stderr)
        print("screenshots ...", file=sys.stderr)
        refresh_screenshots(workspace)
        print("the --harness nothing floor ...", file=sys.stderr)
        floor = floor_figures(folder)
        HARNESS_README.write_text(replace_between(HARNESS_README.read_text(), FLOOR, floor))
        print(floor.strip(), file=sys.stderr)
    print("wrote README.md, harnesses/README.md, docs/*-screenshot.png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
