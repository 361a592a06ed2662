"""``python -m analysis.compare`` end to end on synthetic runs with known effects."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import Stats
from analysis._synthetic import ProviderSpec, SyntheticConfig, write_runs
from analysis.compare import main

pytestmark = pytest.mark.timeout(180)

QUESTIONS = {"obligations": 30, "entity_performance": 24, "business_brief": 10}
PLANTED = 0.08


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    config = SyntheticConfig(
        [
            ProviderSpec("A", latency_scale=20.0, cost_per_question=0.02),
            ProviderSpec("B", effect=PLANTED, latency_scale=35.0, cost_per_question=0.05),
            ProviderSpec("C", judge_error_rate=0.1, error_rate=0.05, cost_per_question=None),
        ],
        questions=QUESTIONS,
        seed=1,
        question_sd=0.1,
        noise_sd=0.06,
    )
    return write_runs(tmp_path_factory.mktemp("runs"), config)


@pytest.fixture(scope="module")
def report(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    args = [*map(str, runs), "--reference", "A", "--judge", "rules", "--out", str(out)]
    assert (
        main([*args, "--bootstrap", "300", "--seed", "3", "--pass-threshold", "0.6", "--quiet"])
        == 0
    )
    return out


def load_stats(out: Path) -> Stats:
    return Stats.model_validate_json((out / "stats.json").read_text())


def ew_contrast(stats: Stats, provider: str, metric: str):
    model = next(m for m in stats.models if m.metric == metric)
    return next(c for c in model.contrasts if c.provider == provider and c.scope == "equal_weight")


def ew_score(stats: Stats, provider: str, metric: str):
    return next(
        c
        for c in stats.scores
        if (c.provider, c.metric, c.scope) == (provider, metric, "equal_weight")
    )


def test_outputs_exist_and_stats_follow_the_schema(report: Path):
    for name in ("stats.json", "report.md", "report.html", "scores.png", "latency.png"):
        assert (report / name).stat().st_size > 0, name
    for png in report.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    stats = load_stats(report)
    assert [p.name for p in stats.providers] == ["A", "B", "C"]
    assert stats.metrics[0] == "overall" and stats.metrics[-1] == "answer_mean"
    assert len(stats.metrics) == 10
    assert stats.task_types == list(QUESTIONS)
    accuracy = next(m for m in stats.models if m.metric == "accuracy")
    assert accuracy.task_types == ["obligations"]
    answer_mean = next(m for m in stats.models if m.metric == "answer_mean")
    # Pairwise default: one fit per pair and task type, three pairs of three providers.
    assert len(answer_mean.fits) == 3 * len(QUESTIONS)
    assert {tuple(f.providers) for f in answer_mean.fits} == {("A", "B"), ("A", "C"), ("B", "C")}


def test_planted_effect_recovered_by_model_and_bootstrap(report: Path):
    stats = load_stats(report)
    c = ew_contrast(stats, "B", "answer_mean")
    assert c.tested and c.significance == "***" and c.direction == "higher"
    assert c.lmm_estimate - 1.96 * c.lmm_se <= PLANTED <= c.lmm_estimate + 1.96 * c.lmm_se
    diff = ew_score(stats, "B", "overall").difference
    assert diff.ci_low <= PLANTED <= diff.ci_high
    # Overall (the paper's) is tested by the t test on its paired difference (cluster-robust
    # SE; items are their own clusters here), no longer capped by the bootstrap's 2/(B+1).
    overall = ew_contrast(stats, "B", "overall")
    assert overall.fit == "clustered t" and overall.significance == "***"
    assert overall.p_value < overall.bootstrap_p
    assert overall.bootstrap.ci_low <= PLANTED <= overall.bootstrap.ci_high
    null = ew_contrast(stats, "C", "answer_mean")
    assert null.tested and null.p_value > 0.01
    row = next(r for r in stats.headline if r.provider == "B")
    assert row.overall.significance == "***" and row.overall.difference > 0


def test_missing_scores_are_counted_not_zeroed(report: Path):
    stats = load_stats(report)
    missing = [m for m in stats.missing if m.provider == "C" and m.metric == "clarity"]
    assert sum(m.judge_error for m in missing) > 0
    assert sum(m.infra_error for m in missing) > 0
    obligations = next(m for m in missing if m.task_type == "obligations")
    score = next(
        c
        for c in stats.scores
        if (c.provider, c.metric, c.scope) == ("C", "clarity", "obligations")
    )
    assert score.n == obligations.scored < QUESTIONS["obligations"]
    # A scored mean near 0.6 shows the missing ones did not enter as zeros.
    assert score.score.estimate > 0.45


def test_operations_table(report: Path):
    stats = load_stats(report)
    ops = {(o.provider, o.task_type): o for o in stats.operations}
    a = ops[("A", "obligations")]
    assert a.trajectories == QUESTIONS["obligations"]
    assert a.answered_rate + a.timeout_rate + a.max_turns_rate + a.error_rate == pytest.approx(1)
    assert a.latency_s.p50 <= a.latency_s.p90 <= a.latency_s.max
    assert ops[("B", "obligations")].latency_s.p50 > a.latency_s.p50
    assert a.cost_per_question == pytest.approx(0.02)
    assert a.correct > 0
    assert a.cost_per_correct == pytest.approx(0.02 * a.trajectories / a.correct)
    assert a.tokens_per_correct == pytest.approx(a.tokens_per_question * a.trajectories / a.correct)
    assert a.correct is not None and ops[("A", "entity_performance")].correct is None
    assert ops[("C", "all")].cost_per_question is None and ops[("C", "all")].error_rate > 0


def test_report_reads_like_a_report(report: Path):
    text = (report / "report.md").read_text()
    summary = text.split("## Headline scores")[0]
    assert "Highest equal-weight overall score: **B**" in summary
    assert "**B** vs A: Overall +" in summary and "significant" in summary
    for heading in (
        "## Headline scores",
        "### Differences from the reference",
        "## By task type",
        "### Financial obligations",
        "## Contrasts",
        "### How sure is sure enough",
        "## Operations",
        "## Missing scores",
        "## Guards and caveats",
        "No multiple-comparison correction",
    ):
        assert heading in text, heading
    # Tools "–": the synthetic runs record none; then the Judged column
    assert re.search(r"\| B \| web \| – \| [^|]+ \| 0\.\d\d \[0\.\d\d, 0\.\d\d\] \*\*", text)
    html = (report / "report.html").read_text()
    assert "http://" not in html and "https://" not in html and "<link" not in html
    assert html.count('src="data:image/png;base64,') == len(list(report.glob("*.png")))


def test_single_provider_report_says_there_is_no_comparison(runs: list[Path], tmp_path: Path):
    out = tmp_path / "single"
    assert main([str(runs[0]), "--out", str(out), "--bootstrap", "100", "--quiet"]) == 0
    stats = load_stats(out)
    assert [p.name for p in stats.providers] == ["A"]
    assert all(m.contrasts == [] for m in stats.models)
    assert all(c.difference is None for c in stats.scores)
    assert stats.headline[0].overall.ci_low is not None
    text = (out / "report.md").read_text()
    assert "No comparison was made" in text and "Only one provider" in text
    assert "## Operations" in text and (out / "scores.png").exists()


def test_latency_budget_rescores_slow_answers_and_says_so(runs: list[Path], tmp_path: Path):
    out = tmp_path / "budget"
    args = [str(runs[0]), str(runs[1]), "--out", str(out), "--bootstrap", "100", "--quiet"]
    assert main([*args, "--latency-budget", "obligations=25"]) == 0
    stats = load_stats(out)
    slow = {o.provider: o.over_budget for o in stats.operations if o.task_type == "obligations"}
    assert slow["B"] > slow["A"] > 0
    accuracy = {m.provider: m for m in stats.missing if m.metric == "accuracy"}
    assert accuracy["B"].rescored_as_failure == slow["B"]
    assert stats.settings.latency_budget == {"obligations": 25.0}
    assert any("LATENCY BUDGET APPLIED" in c for c in stats.caveats)
    assert "Latency budget applied" in (out / "report.md").read_text()
    plain = tmp_path / "plain"
    assert main([*args[:2], "--out", str(plain), "--bootstrap", "100", "--quiet"]) == 0
    before = ew_score(load_stats(plain), "B", "accuracy").score.estimate
    after = ew_score(stats, "B", "accuracy").score.estimate
    assert after < before


def test_correction_and_trials(tmp_path: Path):
    config = SyntheticConfig(
        [ProviderSpec("A"), ProviderSpec("B", effect=0.03)],
        questions={"obligations": 15, "entity_performance": 10},
        trials=3,
        seed=5,
        quantize=True,
    )
    runs = write_runs(tmp_path / "runs", config)
    out = tmp_path / "holm"
    args = [*map(str, runs), "--out", str(out), "--bootstrap", "100", "--quiet"]
    assert main([*args, "--correction", "holm", "--pass-threshold", "0.75"]) == 0
    stats = load_stats(out)
    tested = [c for m in stats.models for c in m.contrasts if c.tested]
    assert tested and all(c.p_adjusted >= c.p_value - 1e-12 for c in tested)
    assert any(c.p_adjusted > c.p_value for c in tested)
    pass_k = {(p.provider, p.k): p.value for p in stats.pass_k}
    assert set(pass_k) == {(n, k) for n in "AB" for k in (1, 2, 3)}
    assert pass_k[("A", 1)] >= pass_k[("A", 2)] >= pass_k[("A", 3)]
    assert any(t.trials == 3 and t.mean_variance > 0 for t in stats.trials)
    text = (out / "report.md").read_text()
    assert "## Repeated trials" in text and "pass^3" in text and "holm" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--latency-budget", "obligations=abc"], "needs seconds"),
        (["--latency-budget", "poetry=60"], "unknown task type 'poetry'"),
        (["--reference", "Z"], "--reference 'Z' matches no provider"),
        (["--judge", "nobody"], "nobody.jsonl not found"),
        (["--label", "X", "--label", "X"], "both called 'X'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(runs, tmp_path, capsys, extra, message):
    code = main([str(runs[0]), str(runs[1]), "--out", str(tmp_path / "r"), "--quiet", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_input_via_subprocess_has_no_traceback(tmp_path: Path):
    result = subprocess.run(
        [sys.executable, "-m", "analysis.compare", str(tmp_path / "nope"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert (
        result.stderr.strip() == f"error: {tmp_path / 'nope'} does not exist; pass a run "
        "directory or an eval_results_*.json file"
    )


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.mark.browser
@pytest.mark.skipif(
    _chromium() is None,
    reason="chromium not installed: apt-get update && apt-get install -y chromium",
)
def test_html_report_renders_in_headless_chromium(report: Path, tmp_path: Path):
    chromium = _chromium()
    url = (report / "report.html").resolve().as_uri()
    base = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    env = {**os.environ, "HOME": str(tmp_path)}
    dom = subprocess.run(
        [
            *base,
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    images = len(list(report.glob("*.png")))
    assert f'data-images-ok="{images}/{images}"' in dom.stdout
    assert "Headline scores" in dom.stdout
    console_errors = [
        line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Failed to load" in line
    ]
    assert console_errors == []
    screenshot = report / "report_screenshot.png"
    shot = subprocess.run(
        [*base, "--window-size=1280,2400", f"--screenshot={screenshot}", url],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 50_000  # a rendered page, not a blank one
    print(f"screenshot saved: {screenshot}")


def test_help_has_examples_and_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    help_text = capsys.readouterr().out
    assert "examples:" in help_text and "--latency-budget" in help_text
    with pytest.raises(SystemExit) as done:
        main(["runs/x"])
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert err.strip().splitlines() == [
        "error: the following arguments are required: --out (see python -m analysis.compare --help)"
    ]


def test_guards_show_as_not_tested_in_plain_words(tmp_path: Path):
    config = SyntheticConfig(
        [ProviderSpec("A"), ProviderSpec("B", effect=0.05)],
        questions={"obligations": 12, "business_brief": 3},
        seed=4,
    )
    runs = write_runs(tmp_path / "runs", config)
    out = tmp_path / "guards"
    assert main([*map(str, runs), "--out", str(out), "--bootstrap", "50", "--quiet"]) == 0
    stats = load_stats(out)
    brief = [c for m in stats.models for c in m.contrasts if c.scope == "business_brief"]
    assert brief and not any(c.tested for c in brief)
    text = (out / "report.md").read_text()
    briefs_table = text.split("### Business briefs")[1].split("###")[0]
    assert "(n.t.)" in briefs_table
    guards = text.split("## Guards and caveats")[1]
    assert "**Not tested** (a check stopped the comparison):" in guards
    assert (
        "B and A have 3 paired answer_mean answer(s) in business_brief; at least 5 are needed"
        in guards
    )


def test_ledgerbench_compare_is_the_same_command(runs: list[Path], tmp_path: Path, capsys):
    from ledgerbench.pipeline import main as ledgerbench_main

    out = tmp_path / "lb"
    args = [str(runs[0]), str(runs[1]), "--out", str(out), "--bootstrap", "50"]
    assert ledgerbench_main(["compare", *args]) == 0
    printed = capsys.readouterr().out
    assert f"Report: {out / 'report.html'}" in printed and "B - A: Overall" in printed
    assert (out / "stats.json").exists()
    with pytest.raises(SystemExit) as stopped:
        ledgerbench_main(["compare", str(runs[0]), "--no-such-flag"])
    assert stopped.value.code == 2
    assert "(see ledgerbench compare --help)" in capsys.readouterr().err
