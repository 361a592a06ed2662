"""Rater agreement: weighted kappa and Krippendorff's alpha against hand-computed examples, and
judge.compare on the assertions both judges decided."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from judge._agreement import (
    alpha_estimate,
    kappa_estimate,
    krippendorff_alpha,
    quadratic_weighted_kappa,
)
from judge._compare import compare_judges, comparison_markdown
from ledgerbench_core.dataset import Dimension, TaskType
from ledgerbench_core.scores import (
    AssertionScore,
    DimensionScore,
    DimensionStatus,
    ScoreRecord,
    ScoreStatus,
)

pytestmark = pytest.mark.timeout(60)


def test_quadratic_weighted_kappa_by_hand() -> None:
    # Grades 0, .5, 1 (indexes 0, 2, 4 of the 5-point grid). Observed pairs: (0,0) (.5,1) (1,1)
    # (1,.5): weights 0, 1/16... scaled, mean observed disagreement 0.125 on a 0-1 index scale;
    # marginals both (1/4, 1/4, 1/2): expected disagreement 22/64 -> kappa = 1 - 0.125 / (22/64)
    # = 7/11.
    assert quadratic_weighted_kappa([0, 0.5, 1, 1], [0, 1, 1, 0.5]) == pytest.approx(7 / 11)
    assert quadratic_weighted_kappa([0, 0.25, 1], [0, 0.25, 1]) == pytest.approx(1.0)
    # perfect disagreement on two grades: observed = expected * 2 -> kappa -1
    assert quadratic_weighted_kappa([0, 1], [1, 0]) == pytest.approx(-1.0)
    assert quadratic_weighted_kappa([1, 1, 1], [1, 1, 1]) is None  # no variation at all
    with pytest.raises(ValueError, match="not on the scale"):
        quadratic_weighted_kappa([0.3], [0.25])


def test_krippendorff_alpha_matches_the_published_example() -> None:
    """Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the 4 observers x 12
    units example with missing values: nominal .743, interval .849, ordinal .815."""
    missing = -1
    observers = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, missing, missing, missing],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, missing, 3],
        [missing, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, missing],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, missing],
    ]
    data = np.array([[v - 1 if v > 0 else -1 for v in row] for row in observers])
    assert krippendorff_alpha(data, 5, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(data, 5, "interval") == pytest.approx(0.849, abs=5e-4)
    assert krippendorff_alpha(data, 5, "ordinal") == pytest.approx(0.815, abs=5e-4)


def test_krippendorff_alpha_small_example_by_hand() -> None:
    # Two raters, two units: (0, 0) and (1, 1) on a 2-category scale: perfect agreement -> 1.
    assert krippendorff_alpha(np.array([[0, 1], [0, 1]]), 2, "nominal") == pytest.approx(1.0)
    # (0, 1) and (1, 0): coincidences o01 = o10 = 2, n = 4: alpha = 1 - 3 * 4 / (2*2*2) = -0.5
    assert krippendorff_alpha(np.array([[0, 1], [1, 0]]), 2, "nominal") == pytest.approx(-0.5)


def test_estimates_have_bootstrap_intervals_and_reasons() -> None:
    rng = np.random.default_rng(0)
    grid = np.array([0, 0.25, 0.5, 0.75, 1.0])
    a = rng.choice(grid, 60)
    b = np.clip(a + rng.choice([-0.25, 0, 0.25], 60), 0, 1)
    estimate = kappa_estimate(a, b, replicates=300)
    assert estimate.low < estimate.value < estimate.high and estimate.n == 60
    constant = kappa_estimate([1.0] * 5, [1.0] * 5, names=("rules", "human-a"))
    assert constant.value is None and "rules gave 1 to all 5" in constant.reason
    grades = np.vstack([a, b, np.where(rng.random(60) < 0.3, np.nan, a)])
    alpha = alpha_estimate(grades, replicates=300)
    assert alpha.low < alpha.value < alpha.high


NOW = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)


def _record(qid: str, judge: str, verdicts: dict[str, float | None]) -> ScoreRecord:
    assertions = [AssertionScore(assertion_id=k, score=v) for k, v in verdicts.items()]
    scored = [v for v in verdicts.values() if v is not None]
    dims = {
        Dimension.accuracy: DimensionScore(
            status=DimensionStatus.scored if scored else DimensionStatus.needs_llm,
            score=sum(scored) / len(scored) if scored else None,
            assertions=assertions,
        )
    }
    return ScoreRecord(
        question_id=qid, task_type=TaskType.obligations, judge=judge,
        status=ScoreStatus.scored, dimensions=dims, overall=dims[Dimension.accuracy].score,
        answer_sha256="x", judged_at=NOW,
    )  # fmt: skip


def test_compare_uses_only_assertions_both_judges_decided_and_no_rank_for_a_constant() -> None:
    rng = np.random.default_rng(1)
    grid = [0.0, 0.25, 0.5, 0.75, 1.0]
    rules, llm = [], []
    for i in range(8):
        # the rules decide the first assertion only (always 1); the LLM grades both
        rules.append(_record(f"q{i}", "rules", {"accuracy.a": 1.0, "accuracy.b": None}))
        llm.append(
            _record(f"q{i}", "llm", {"accuracy.a": 1.0, "accuracy.b": float(rng.choice(grid))})
        )
    comparison = compare_judges({"rules": rules, "llm": llm}, min_pairs=5, bootstrap=50)
    (coverage,) = comparison.coverage
    assert (coverage.shared, coverage.only_a, coverage.only_b) == (8, 0, 8)
    cell = next(c for c in comparison.pairs if c.dimension == "accuracy")
    assert cell.mean_a == cell.mean_b == 1.0 and cell.mean_shift == 0.0  # same assertion set
    assert cell.spearman_rho is None and "rules gave 1 to all 8" in cell.rank_note
    text = comparison_markdown(comparison)
    assert "compared on the 8 assertion verdicts both decided" in text
    assert "left out: 0 decided only by rules, 8 only by llm" in text
    assert "no rank statistic for a constant judge" in text
    three = compare_judges(
        {"rules": rules, "llm": llm, "copy": [r.model_copy(update={"judge": "copy"}) for r in llm]},
        min_pairs=5,
        bootstrap=50,
    )
    w = next(c for c in three.concordance if c.dimension == "accuracy")
    assert w.kendall_w is None and "constant" in w.note
