"""The analysis report links each task type, scenario and contrast to its viewer questions."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote_plus, urljoin

import pytest

from analysis._synthetic import ProviderSpec, SyntheticConfig, question_ids, write_runs
from analysis.compare import main as compare_main
from ledgerbench.viewer import build_viewer
from tests.cdp import Browser, chromium_path

QUESTIONS = {"obligations": 12, "business_brief": 3}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("links")
    config = SyntheticConfig(
        [ProviderSpec("A"), ProviderSpec("B", effect=0.1)], questions=QUESTIONS, seed=4
    )
    runs = write_runs(root / "runs", config)
    _, warnings = build_viewer(runs, root / "viewer")
    assert warnings == []
    args = [*map(str, runs), "--judge", "rules", "--out", str(root / "report")]
    assert compare_main([*args, "--viewer", "../viewer", "--bootstrap", "50", "--quiet"]) == 0
    return root


def test_report_links_scenarios_and_contrasts_to_the_viewer(built: Path):
    html = (built / "report" / "report.html").read_text()
    links = dict(
        (label, unquote_plus(href.replace("&amp;", "&")))
        for href, label in re.findall(r'<a href="([^"]+)">([^<]+)</a>', html)
    )
    scenarios = {s for _, t, s in question_ids(QUESTIONS) if t == "obligations"}
    for scenario in scenarios:
        assert links[f"Obligations / {scenario}"] == (
            f"../viewer/index.html#/?judge=rules&type=obligations&scenario={scenario}"
        )
    contrast = next(label for label in links if label.startswith("B vs A"))
    assert links[contrast].endswith("score=differ")
    markdown = (built / "report" / "report.md").read_text()
    assert (
        "## Questions behind the numbers" in markdown and "](<../viewer/index.html#/?" in markdown
    )


def test_without_a_viewer_the_report_has_no_links(built: Path, tmp_path: Path):
    runs = sorted((built / "runs").glob("[AB]"))
    assert (
        compare_main([*map(str, runs), "--out", str(tmp_path), "--bootstrap", "50", "--quiet"]) == 0
    )
    assert "Questions behind the numbers" not in (tmp_path / "report.html").read_text()


@pytest.mark.browser
@pytest.mark.browser
@pytest.mark.skipif(chromium_path() is None, reason="chromium not installed")
def test_a_scenario_link_opens_the_viewer_on_exactly_its_questions(built: Path, tmp_path: Path):
    report = (built / "report" / "report.html").resolve()
    html = report.read_text()
    scenario = sorted({s for _, t, s in question_ids(QUESTIONS) if t == "obligations"})[0]
    href = re.search(rf'<a href="([^"]+)">Obligations / {re.escape(scenario)}</a>', html).group(1)
    url = urljoin(report.as_uri(), href.replace("&amp;", "&"))
    expected = [q for q, t, s in question_ids(QUESTIONS) if s == scenario and t == "obligations"]
    with Browser(tmp_path / "profile") as page:
        page.navigate(url)
        page.wait_for("document.body.dataset.rendered === 'index'")
        shown = page.evaluate(
            "[...document.querySelectorAll('table.index tbody tr')].map(r => r.dataset.qid)"
        )
        assert sorted(shown) == sorted(expected) and shown
        assert page.evaluate("document.querySelector('select[name=scenario]').value") == scenario
