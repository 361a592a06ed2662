"""The report's research section (issue 24): research accuracy kept out of the paper's rows,
retrieval and citation figures with the same intervals and paired tests, runs labelled by their
research mode, and the world vs golden (and none) gaps. Runs are written with the real record
models (analysis._synthetic), with planted effects."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from analysis import Stats, load_provider
from analysis._synthetic import ProviderSpec, SyntheticConfig, write_runs
from analysis.compare import main
from judge._grading import RULES_GRADING
from ledgerbench_core._overall import run_overall, scored_answers
from ledgerbench_core.scores import ScoreRecord

pytestmark = pytest.mark.timeout(180)

QUESTIONS = {"obligations": 20, "entity_performance": 16, "business_brief": 8}
RESEARCH_TYPES = ("entity_performance", "business_brief")
GOLDEN_EFFECT = 0.25
NONE_EFFECT = -0.4
MODES = ("world", "golden", "none")


def _config(**kw) -> SyntheticConfig:
    specs = [
        ProviderSpec("world", harness="scripted", research="world"),
        ProviderSpec(
            "golden", harness="scripted", research="golden", research_effect=GOLDEN_EFFECT
        ),
        ProviderSpec("none", harness="scripted", research="none", research_effect=NONE_EFFECT),
    ]
    return SyntheticConfig(specs, questions=QUESTIONS, seed=4, research_keys=True, **kw)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_runs(tmp_path_factory.mktemp("research-runs"), _config())


def _compare(runs: list[Path], out: Path, *extra: str) -> Stats:
    args = [*map(str, runs), "--judge", "rules", "--out", str(out), "--bootstrap", "200"]
    assert main([*args, "--seed", "5", "--quiet", *extra]) == 0
    return Stats.model_validate_json((out / "stats.json").read_text())


@pytest.fixture(scope="module")
def report(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Stats, Path]:
    out = tmp_path_factory.mktemp("research-report")
    return _compare(runs, out), out


def _records(run: Path) -> list[ScoreRecord]:
    lines = (run / "scores" / "rules.jsonl").read_text().splitlines()
    return [ScoreRecord.model_validate_json(line) for line in lines if line.strip()]


def _by_hand(run: Path, figure) -> dict[str, float]:
    """Task type -> mean over questions of ``figure(record)`` (None = missing)."""
    per_task: dict[str, list[float]] = defaultdict(list)
    for record in _records(run):
        value = figure(record)
        if value is not None:
            per_task[str(record.task_type)].append(value)
    return {task: float(np.mean(values)) for task, values in per_task.items()}


def _accuracy(record: ScoreRecord) -> float | None:
    score = record.dimensions.get("accuracy")
    return score.score if score is not None and str(score.status) == "scored" else None


def _cell(stats: Stats, provider: str, metric: str, scope: str):
    return next(
        c for c in stats.scores if (c.provider, c.metric, c.scope) == (provider, metric, scope)
    )


def _section(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def test_research_accuracy_stays_out_of_the_paper_rows_and_the_overall(report, runs) -> None:
    stats, out = report
    assert stats.research_metrics == [
        "research_accuracy",
        "shown_recall",
        "fetched_recall",
        "citation_precision",
        "citation_recall",
    ]
    assert not set(stats.research_metrics) & set(stats.metrics)
    models = {m.metric: m for m in stats.models}
    assert models["accuracy"].task_types == ["obligations"]
    assert models["research_accuracy"].task_types == list(RESEARCH_TYPES)
    for run, row in zip(runs, stats.headline, strict=True):
        by_hand = _by_hand(run, _accuracy)  # the scores file has accuracy on all three types
        assert set(by_hand) == set(QUESTIONS)
        assert row.accuracy.score == pytest.approx(by_hand["obligations"], abs=1e-12)
        # the one Overall definition, which leaves the extension's cells out
        expected_overall = run_overall(scored_answers(_records(run)))
        assert row.overall.score == pytest.approx(expected_overall, abs=1e-12)
        # its interval comes from resamples of the same formula (no extension cells in them)
        assert row.overall.ci_low <= row.overall.score <= row.overall.ci_high
        research = _cell(stats, row.provider, "research_accuracy", "equal_weight")
        assert research.score.estimate == pytest.approx(
            np.mean([by_hand[t] for t in RESEARCH_TYPES]), abs=1e-12
        )
    text = (out / "report.md").read_text()
    headline = _section(text, "## Headline scores", "### Differences")
    assert "| Accuracy |" in headline and "Research_accuracy" not in headline
    by_task = _section(text, "### Entity performance", "### Business briefs")
    assert "Accuracy" not in by_task.splitlines()[2]  # the header row of that table
    paper_contrasts = _section(text, "## Contrasts", "## Research (LedgerBench extension)")
    for metric in stats.research_metrics:
        assert metric not in paper_contrasts


def test_retrieval_figures_are_the_judges_per_answer_figures_averaged(report, runs) -> None:
    stats, _ = report
    world = stats.providers[0].name
    for metric in ("shown_recall", "fetched_recall", "citation_precision", "citation_recall"):
        by_hand = _by_hand(runs[0], lambda r, m=metric: (r.extra.get("research") or {}).get(m))
        assert set(by_hand) == set(RESEARCH_TYPES)
        for task in RESEARCH_TYPES:
            cell = _cell(stats, world, metric, task)
            assert cell.score.estimate == pytest.approx(by_hand[task], abs=1e-12)
            assert cell.score.ci_low < cell.score.estimate < cell.score.ci_high
        assert _cell(stats, world, metric, "equal_weight").score.estimate == pytest.approx(
            np.mean(list(by_hand.values())), abs=1e-12
        )
    # an answer that cites nothing has no citation precision: left out, never counted as 0
    research = [r.extra["research"] for r in _records(runs[0]) if "research" in r.extra]
    uncited = sum(f["citation_precision"] is None for f in research)
    assert 0 < uncited < len(research)
    precision = [_cell(stats, world, "citation_precision", t).n for t in RESEARCH_TYPES]
    assert sum(precision) == len(research) - uncited
    assert sum(_cell(stats, world, "shown_recall", t).n for t in RESEARCH_TYPES) == len(research)


def test_runs_are_labelled_by_their_research_mode(report) -> None:
    stats, out = report
    assert [p.name for p in stats.providers] == [f"scripted · {m}" for m in MODES]
    assert [p.research for p in stats.providers] == list(MODES)
    text = (out / "report.md").read_text()
    for mode in MODES:
        assert f"| scripted · {mode}{' (ref.)' if mode == 'world' else ''} | {mode} |" in text
    assert "Research mode per run: scripted · world; scripted · golden; scripted · none" in text
    method = text.split("## Method", 1)[1]
    assert "(harness scripted, model –), research golden," in method


def test_research_contrasts_are_the_same_paired_tests(report) -> None:
    stats, out = report
    model = next(m for m in stats.models if m.metric == "research_accuracy")
    golden = next(
        c
        for c in model.contrasts
        if c.provider == "scripted · golden"
        and c.reference == "scripted · world"
        and c.scope == "equal_weight"
    )
    assert golden.tested and golden.fit == "pairwise" and golden.p_value < 0.001
    assert golden.bootstrap.ci_low > 0 and golden.direction == "higher"
    assert golden.task_types == list(RESEARCH_TYPES)
    text = (out / "report.md").read_text()
    section = text.split("## Research (LedgerBench extension)", 1)[1]
    assert "### Research contrasts" in section and "| scripted · golden vs scripted · world |" in (
        section
    )
    assert "![Research: accuracy, retrieval and citations](research.png)" in section
    assert (out / "research.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Research: accuracy, retrieval and citations" in (out / "report.html").read_text()


def test_golden_minus_world_is_what_retrieval_costs(report, runs) -> None:
    stats, out = report
    gaps = {(g.gap, g.metric, g.scope): g for g in stats.research_gaps}
    by_mode = {m: _by_hand(run, _accuracy) for m, run in zip(MODES, runs, strict=True)}
    golden = gaps[("golden - world", "research_accuracy", "equal_weight")]
    assert golden.minuend == "scripted · golden" and golden.subtrahend == "scripted · world"
    expected = np.mean([by_mode["golden"][t] - by_mode["world"][t] for t in RESEARCH_TYPES])
    assert golden.difference.estimate == pytest.approx(expected, abs=1e-12)
    assert golden.difference.estimate == pytest.approx(GOLDEN_EFFECT, abs=0.08)  # as planted
    assert golden.difference.ci_low > 0.1
    assert golden.p_value < 0.001 and golden.significance == "***"
    for task in RESEARCH_TYPES:
        cell = gaps[("golden - world", "research_accuracy", task)]
        assert cell.difference.estimate == pytest.approx(
            by_mode["golden"][task] - by_mode["world"][task], abs=1e-12
        )
    # obligations: the paper's accuracy, nothing planted there
    obligations = gaps[("golden - world", "accuracy", "obligations")]
    assert obligations.difference.estimate == pytest.approx(
        by_mode["golden"]["obligations"] - by_mode["world"]["obligations"], abs=1e-12
    )
    assert abs(obligations.difference.estimate) < 0.08
    overall = gaps[("golden - world", "overall", "equal_weight")]
    world_overall, golden_overall = (row.overall.score for row in stats.headline[:2])
    assert overall.difference.estimate == pytest.approx(golden_overall - world_overall, abs=1e-12)
    floor = gaps[("world - none", "research_accuracy", "equal_weight")]
    assert floor.minuend == "scripted · world" and floor.subtrahend == "scripted · none"
    assert floor.difference.ci_low > 0.2
    text = (out / "report.md").read_text()
    section = _section(text, "### World vs golden: what retrieval costs", "## ")
    assert "what retrieval costs the agent" in section
    assert "memorisation floor" in section
    assert "| scripted | golden - world (scripted · golden − scripted · world) | Research " in (
        section
    )


def test_research_metrics_are_a_correction_family_of_their_own(runs, tmp_path) -> None:
    from statsmodels.stats.multitest import multipletests

    stats = _compare(runs, tmp_path / "holm", "--correction", "holm")
    family = [
        c
        for m in stats.models
        for c in m.contrasts
        if c.provider == "scripted · golden"
        and c.reference == "scripted · world"
        and c.scope == "equal_weight"
        and c.tested
    ]
    paper = [c for c in family if c.metric not in stats.research_metrics]
    research = [c for c in family if c.metric in stats.research_metrics]
    assert len(paper) >= 8 and len(research) == 5
    for group in (paper, research):
        adjusted = multipletests([c.p_value for c in group], method="holm")[1]
        assert [c.p_adjusted for c in group] == pytest.approx(list(adjusted))


def test_research_mode_of_manifests_older_than_the_switch(tmp_path) -> None:
    from ledgerbench_core.trajectory import RunManifest

    (run,) = write_runs(tmp_path, SyntheticConfig([ProviderSpec("old")], questions=QUESTIONS))
    assert load_provider(run, "rules").info.research == "web"
    manifest_path = run / "manifest.json"
    manifest = RunManifest.model_validate_json(manifest_path.read_text())
    manifest.world_id = "wdbc7271962"
    manifest_path.write_text(manifest.model_dump_json())
    assert load_provider(run, "rules").info.research == "world"
    manifest.config = {"research": "golden"}
    manifest_path.write_text(manifest.model_dump_json())
    assert load_provider(run, "rules").info.research == "golden"


def test_loaded_rows_name_the_extensions_metrics(runs) -> None:
    data = load_provider(runs[0], "rules")
    rows = data.scores
    research = rows[rows["task_type"].isin(RESEARCH_TYPES)]
    assert "accuracy" not in set(research["metric"])
    assert (research["metric"] == "research_accuracy").sum() == sum(
        QUESTIONS[t] for t in RESEARCH_TYPES
    )
    obligations = rows[rows["task_type"] == "obligations"]
    assert not set(obligations["metric"]) & {"research_accuracy", "shown_recall"}
    precision = research[research["metric"] == "citation_precision"]
    nones = sum(
        r.extra["research"]["citation_precision"] is None
        for r in _records(runs[0])
        if "research" in r.extra
    )
    assert (precision["status"] == "not_applicable").sum() == nones
    assert precision.loc[precision["status"] == "not_applicable", "score"].isna().all()


def test_runs_without_research_keys_have_no_research_section(tmp_path) -> None:
    config = SyntheticConfig([ProviderSpec("A"), ProviderSpec("B")], questions=QUESTIONS)
    stats = _compare(write_runs(tmp_path / "runs", config), tmp_path / "out")
    assert stats.research_metrics == [] and stats.research_gaps == []
    text = (tmp_path / "out" / "report.md").read_text()
    assert "## Research (LedgerBench extension)" not in text
    assert not (tmp_path / "out" / "research.png").exists()
    assert "| A (ref.) | web |" in text


def test_judge_summary_prints_the_extension_beside_the_overall(runs, capsys) -> None:
    from judge.summary import main as summary_main

    run = runs[0]
    by_hand = _by_hand(run, _accuracy)
    assert summary_main([str(run), "--judge", "rules", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["rules"]
    assert summary["overall"] == pytest.approx(run_overall(scored_answers(_records(run))))
    equal = summary["equal_weight"]
    assert equal["accuracy"] == {"mean": pytest.approx(by_hand["obligations"]), "task_types": 1}
    assert equal["research_accuracy"]["mean"] == pytest.approx(
        np.mean([by_hand[t] for t in RESEARCH_TYPES])
    )
    assert summary["extension"]["research_accuracy"] == {
        t: pytest.approx(by_hand[t]) for t in RESEARCH_TYPES
    }
    entity = summary["task_types"]["entity_performance"]["scores"]
    assert "accuracy" not in entity and entity["research_accuracy"]["n"] == 16
    assert summary_main([str(run), "--judge", "rules"]) == 0
    text = capsys.readouterr().out
    overall_line = next(line for line in text.splitlines() if line.startswith("Overall "))
    interval = summary["overall_interval"]
    assert overall_line == (
        f"Overall {summary['overall']:.3f} [{interval['low']:.3f}, {interval['high']:.3f}] "
        f"(95%, clustered: items as the unit) (grading {RULES_GRADING}) · LedgerBench extension "
        "(not in the Overall): "
        f"research accuracy entity_performance {by_hand['entity_performance']:.3f}, "
        f"business_brief {by_hand['business_brief']:.3f}"
    )
    header = next(line for line in text.splitlines() if line.startswith("| task type"))
    columns = [c.strip() for c in header.split("|")[1:-1]]
    rows = {
        cells[0]: cells
        for line in text.splitlines()
        if line.startswith("| ") and (cells := [c.strip() for c in line.split("|")[1:-1]])
    }
    entity_row, obligations_row = rows["entity_performance"], rows["obligations"]
    assert entity_row[columns.index("accuracy")] == "-"
    assert entity_row[columns.index("research_accuracy")].startswith(
        f"{by_hand['entity_performance']:.3f} ("
    )
    assert obligations_row[columns.index("research_accuracy")] == "-"
    assert "LedgerBench's extension" in text


# -- end to end: the scripted agent on a small world, the real rules judge, the report ---------


@pytest.fixture(scope="module")
def world_runs(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str, erp_db_url: str
) -> tuple[list[Path], Path]:
    from harnesses import RunConfig
    from harnesses._runner import run
    from judge import JudgeRunConfig, run_judge
    from tests.world_fixtures import question_set, shared_folder, small_world

    folder = shared_folder(tmp_path_factory, worker_id, "world")
    world = small_world(erp_db_url, folder)
    dataset = question_set(world, erp_db_url, folder, "entity_performance", 12)
    root = tmp_path_factory.mktemp("world-runs")
    runs = []
    for harness in ("scripted", "nothing"):
        out = root / harness
        config = RunConfig(
            dataset=dataset,
            harness=harness,
            erp_db=erp_db_url,
            world_db=f"sqlite:///{world}",
            out=out,
            progress=False,
            concurrency=4,
        )
        assert run(config, log=lambda _m: None) is not None
        judged = JudgeRunConfig(
            run_dir=out, judge="rules", dataset=str(dataset), erp_db=erp_db_url, progress=False
        )
        run_judge(judged)
        runs.append(out)
    return runs, dataset


@pytest.mark.slow  # builds a small world and runs two agents on it (~40 s of CPU)
def test_a_world_run_judged_by_the_rules_judge_fills_the_research_section(
    world_runs: tuple[list[Path], Path], tmp_path: Path
) -> None:
    from ledgerbench_core.dataset import load_dataset

    runs, dataset = world_runs
    stats = _compare(runs, tmp_path / "out", "--min-observations", "3")
    assert [(p.name, p.research) for p in stats.providers] == [
        ("scripted", "world"),
        ("nothing", "world"),
    ]
    assert {"research_accuracy", "shown_recall", "fetched_recall"} <= set(stats.research_metrics)
    assert "accuracy" not in {
        m.metric for m in stats.models if "entity_performance" in m.task_types
    }
    # the judge's own figures, averaged over questions
    records = {r.question_id: r for r in _records(runs[0])}
    figures = [r.extra["research"] for r in records.values() if "research" in r.extra]
    assert len(figures) >= 8  # the items with gold documents (not the "not disclosed" ones)
    for metric in ("shown_recall", "fetched_recall"):
        values = [f[metric] for f in figures if f[metric] is not None]
        cell = _cell(stats, "scripted", metric, "entity_performance")
        assert cell.n == len(values) and cell.score.estimate == pytest.approx(np.mean(values))
    # the scripted baseline reads the gold documents; the do-nothing agent reads none
    assert _cell(stats, "scripted", "fetched_recall", "entity_performance").score.estimate > 0.5
    nothing = _cell(stats, "nothing", "fetched_recall", "entity_performance").score.estimate
    assert nothing == 0.0
    items = {i.id: i for i in load_dataset(dataset).items}
    positive = [q for q in records if not items[q].metadata["negative"]]
    assert positive and all(records[q].dimensions["accuracy"].score == 1.0 for q in positive)
    scripted = _cell(stats, "scripted", "research_accuracy", "entity_performance").score.estimate
    assert scripted == 1.0
    text = (tmp_path / "out" / "report.md").read_text()
    section = text.split("## Research (LedgerBench extension)", 1)[1].split("\n## ", 1)[0]
    assert "| scripted | world | Entity performance |" in section
    assert "| nothing vs scripted | research_accuracy |" in section
