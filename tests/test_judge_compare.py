"""Aggregation by hand-computed examples, and judge-agreement statistics against scipy directly."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest
from scipy import stats

from judge import (
    AssertionScore,
    DimensionScore,
    DimensionStatus,
    ScoreRecord,
    ScoreStatus,
    compare_judges,
    dimension_from_assertions,
    kendalls_w,
    overall_score,
    summarize,
)
from judge.compare import main as compare_main
from judge.summary import main as summary_main
from ledgerbench_core.dataset import Dimension, TaskType

pytestmark = pytest.mark.timeout(60)

NOW = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)


def scored(value: float) -> DimensionScore:
    return DimensionScore(status=DimensionStatus.scored, score=value)


def record(qid: str, task_type: TaskType, dims: dict[Dimension, DimensionScore], judge: str = "a",
           status: ScoreStatus = ScoreStatus.scored) -> ScoreRecord:  # fmt: skip
    return ScoreRecord(
        question_id=qid,
        task_type=task_type,
        judge=judge,
        status=status,
        dimensions=dims,
        overall=overall_score(dims),
        answer_sha256="x",
        judged_at=NOW,
    )


# -- aggregation --------------------------------------------------------------------------------


def test_dimension_is_the_mean_of_non_null_assertions() -> None:
    assertions = [
        AssertionScore(assertion_id="a", score=1.0),
        AssertionScore(assertion_id="b", score=0.5),
        AssertionScore(assertion_id="c", score=None),
    ]
    dim = dimension_from_assertions(assertions, undecided_status=DimensionStatus.not_applicable)
    assert dim.status is DimensionStatus.scored and dim.score == 0.75


def test_overall_leaves_out_judge_errors_and_not_applicable() -> None:
    dims = {
        Dimension.accuracy: scored(0.75),
        Dimension.clarity: scored(0.25),
        Dimension.depth: DimensionScore(status=DimensionStatus.judge_error, error="x"),
        Dimension.recency: DimensionScore(status=DimensionStatus.not_applicable),
    }
    assert overall_score(dims) == 0.5


def test_summary_by_task_type_and_equal_weight() -> None:
    records = [
        record(
            "o1",
            TaskType.obligations,
            {Dimension.accuracy: scored(1.0), Dimension.clarity: scored(1.0)},
        ),
        record(
            "o2",
            TaskType.obligations,
            {Dimension.accuracy: scored(0.5), Dimension.clarity: scored(0.5)},
        ),
        record("o3", TaskType.obligations, {}, status=ScoreStatus.infra_error),
        record("r1", TaskType.entity_performance, {Dimension.clarity: scored(0.25)}),
        record(
            "r2",
            TaskType.entity_performance,
            {
                Dimension.clarity: DimensionScore(
                    status=DimensionStatus.judge_error, error="bad reply"
                )
            },
        ),
    ]
    summary = summarize(records)
    assert summary["records"] == 5 and summary["infra_errors"] == 1 and summary["judge_errors"] == 1
    obligations = summary["task_types"]["obligations"]
    assert obligations["scores"]["overall"] == {"mean": 0.75, "n": 2}
    assert obligations["scores"]["accuracy"] == {"mean": 0.75, "n": 2}
    research = summary["task_types"]["entity_performance"]
    assert research["scores"]["clarity"] == {"mean": 0.25, "n": 1}
    assert research["judge_error_by_dimension"] == {"clarity": 1}
    # The judge's per-answer mean, equal weight: (0.75 + 0.25) / 2, not the pooled
    # (1 + 0.5 + 0.25) / 3.
    assert summary["equal_weight"]["answer_mean"]["mean"] == pytest.approx(0.5)
    # The Overall (the paper's): the mean of the dimensions, each equal-weight over task types:
    # accuracy 0.75 (obligations only), clarity (0.75 + 0.25) / 2 = 0.5 -> 0.625.
    assert summary["equal_weight"]["overall"]["mean"] == pytest.approx(0.625)
    assert summary["overall"] == pytest.approx(0.625)
    assert summary["equal_weight"]["clarity"]["mean"] == pytest.approx(0.5)
    assert summary["equal_weight"]["accuracy"] == {"mean": 0.75, "task_types": 1}


# -- agreement ----------------------------------------------------------------------------------

GRID = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


def judge_scores(seed: int, shift: int) -> dict[str, list[ScoreRecord]]:
    """Three judges over 12 obligation and 4 research answers; judge b scores ``shift`` steps
    higher."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 5, size=16)
    noise = {
        "a": np.zeros(16, int),
        "b": shift + rng.integers(-1, 2, 16),
        "c": rng.integers(-1, 2, 16),
    }
    out: dict[str, list[ScoreRecord]] = {}
    for name, delta in noise.items():
        idx = np.clip(base + delta, 0, 4)
        out[name] = [
            record(
                f"q{i}",
                TaskType.obligations if i < 12 else TaskType.entity_performance,
                {Dimension.clarity: scored(float(GRID[idx[i]]))},
                judge=name,
            )
            for i in range(16)
        ]
    return out


def values(records: list[ScoreRecord]) -> np.ndarray:
    return np.array(
        [
            r.dimensions[Dimension.clarity].score
            for r in records
            if r.task_type is TaskType.obligations
        ]
    )


def bh_by_hand(p: list[float]) -> list[float]:
    m = len(p)
    order = np.argsort(p)
    ranked = np.array(p)[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1)
    out = np.empty(m)
    out[order] = q
    return out.tolist()


def test_pair_statistics_match_scipy() -> None:
    scores = judge_scores(seed=3, shift=1)
    comparison = compare_judges(scores, threshold=0.05, min_pairs=5)
    cells = {(c.judge_a, c.judge_b, c.task_type, c.dimension): c for c in comparison.pairs}
    # Research has 4 answers: below min_pairs, skipped.
    assert not any(key[2] == "entity_performance" for key in cells)
    assert any(s["task_type"] == "entity_performance" for s in comparison.skipped_cells)

    a, b = values(scores["a"]), values(scores["b"])
    cell = cells[("a", "b", "obligations", "clarity")]
    assert cell.n == 12
    assert cell.mean_shift == pytest.approx(np.mean(b - a))
    # Grid scores tie, so the tie-corrected normal approximation is the method (as in R).
    assert cell.wilcoxon_p == pytest.approx(stats.wilcoxon(b, a, method="approx").pvalue)
    assert cell.spearman_rho == pytest.approx(stats.spearmanr(a, b).statistic)
    sd = np.std(b - a, ddof=1)
    assert cell.bland_altman_lower == pytest.approx(np.mean(b - a) - 1.96 * sd)
    assert cell.bland_altman_upper == pytest.approx(np.mean(b - a) + 1.96 * sd)
    assert cell.flagged == (abs(cell.mean_shift) >= 0.05)
    assert cell.flagged  # judge b was built a step higher

    ps = [c.wilcoxon_p for c in comparison.pairs]
    assert [c.bh_q for c in comparison.pairs] == pytest.approx(bh_by_hand(ps))


def test_wilcoxon_without_ties_uses_scipy_default() -> None:
    a = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    b = a + np.array([0.01, 0.03, -0.02, 0.05, 0.07, 0.11])
    scores = {
        name: [
            record(f"q{i}", TaskType.obligations, {Dimension.clarity: scored(float(v))}, judge=name)
            for i, v in enumerate(vals)
        ]
        for name, vals in (("a", a), ("b", b))
    }
    cell = compare_judges(scores).pairs[0]
    assert cell.wilcoxon_p == pytest.approx(stats.wilcoxon(b, a).pvalue)


def test_identical_judges_agree_perfectly() -> None:
    scores = judge_scores(seed=5, shift=0)
    scores = {
        "a": scores["a"],
        "copy": [r.model_copy(update={"judge": "copy"}) for r in scores["a"]],
    }
    cell = compare_judges(scores).pairs[0]
    assert (
        cell.mean_shift == 0 and cell.wilcoxon_p == 1.0 and cell.spearman_rho == pytest.approx(1.0)
    )
    assert not cell.flagged and not cell.significant


def test_kendalls_w_matches_friedman() -> None:
    scores = judge_scores(seed=11, shift=1)
    comparison = compare_judges(scores)
    w = {(c.task_type, c.dimension): c.kendall_w for c in comparison.concordance}
    matrix = np.column_stack([values(scores[j]) for j in ("a", "b", "c")])  # items x judges
    n, m = matrix.shape
    chi2 = stats.friedmanchisquare(*matrix).statistic  # items as treatments, judges as blocks
    assert w[("obligations", "clarity")] == pytest.approx(chi2 / (m * (n - 1)))
    # Perfect agreement in ranks gives W = 1.
    ranks = np.arange(6, dtype=float)
    assert kendalls_w(np.column_stack([ranks, ranks * 2, ranks + 1])) == pytest.approx(1.0)


def test_compare_and_summary_cli(tmp_path, capsys) -> None:
    scores_dir = tmp_path / "scores"
    scores_dir.mkdir()
    for name, records in judge_scores(seed=3, shift=1).items():
        (scores_dir / f"{name}.jsonl").write_text(
            "".join(r.model_dump_json() + "\n" for r in records)
        )
    assert compare_main([str(tmp_path), "--judges", "a", "b", "c"]) == 0
    out_dir = scores_dir / "compare-a-vs-b-vs-c"
    data = json.loads((out_dir / "agreement.json").read_text())
    assert len(data["pairs"]) == 3 * 2  # 3 judge pairs x (obligations clarity + overall)
    assert data["concordance"] and (out_dir / "agreement.md").read_text().startswith(
        "# Judge agreement"
    )
    pngs = sorted(p.name for p in out_dir.glob("*.png"))
    assert pngs == ["bland_altman_a_vs_b.png", "bland_altman_a_vs_c.png", "bland_altman_b_vs_c.png"]
    assert (out_dir / pngs[0]).read_bytes()[:4] == b"\x89PNG"
    assert "Kendall" in capsys.readouterr().out

    assert summary_main([str(tmp_path), "--judge", "a"]) == 0
    assert "equal weight" in capsys.readouterr().out

    assert compare_main([str(tmp_path), "--judges", "a", "zz"]) == 2
    assert "available judges: a, b, c" in capsys.readouterr().err
    assert compare_main([str(tmp_path), "--judges", "a"]) == 2
