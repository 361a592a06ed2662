"""The conversations section follows the report's one rule: trials averaged per question, the
template as the cluster, t intervals and tests from cluster-robust errors (checked against
statsmodels), the MDE label, and the one minimum of paired questions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from analysis._conversations import conversation_cells

pytestmark = pytest.mark.timeout(60)

TEMPLATES, PER_TEMPLATE = 6, 3


def _write_run(run: Path, accuracy: dict[tuple[str, int], float]) -> None:
    run.mkdir(parents=True)
    (run / "scores").mkdir()
    trajectories, scores = [], []
    for (qid, trial), value in accuracy.items():
        trajectories.append(
            {
                "question_id": qid,
                "trial": trial,
                "conversation": {"kind": "dispute"},
                "termination": {"reason": "completed", "infrastructure": False},
            }
        )
        metrics = {"accuracy": value, "clarified": True, "violations": [], "agent_turns": 2}
        scores.append({"question_id": qid, "trial": trial, "extra": {"conversation": metrics}})
    (run / "trajectories.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trajectories))
    (run / "scores" / "rules.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scores))


def _design(tmp_path: Path, questions: int = TEMPLATES * PER_TEMPLATE):
    rng = np.random.default_rng(3)
    qids = [f"ops-{i}" for i in range(questions)]
    metadata = {q: {"template": f"T{i // PER_TEMPLATE}"} for i, q in enumerate(qids)}
    a, b = {}, {}
    for i, q in enumerate(qids):
        shift = [0.3, -0.2, 0.1, -0.3, 0.25, 0.0][(i // PER_TEMPLATE) % TEMPLATES]
        for trial in (0, 1):
            a[(q, trial)] = float(np.clip(0.6 + rng.normal(0, 0.1), 0, 1))
            b[(q, trial)] = float(np.clip(0.6 + shift + rng.normal(0, 0.1), 0, 1))
    _write_run(tmp_path / "A", a)
    _write_run(tmp_path / "B", b)
    return qids, metadata, a, b


def _per_question(values: dict[tuple[str, int], float], qids: list[str]) -> np.ndarray:
    return np.array([(values[(q, 0)] + values[(q, 1)]) / 2 for q in qids])


def _statsmodels_cluster(y: np.ndarray, groups: np.ndarray) -> float:
    import statsmodels.api as sm

    fit = sm.OLS(y, np.ones((len(y), 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    return float(fit.bse[0])


def test_accuracy_and_difference_are_clustered_by_template(tmp_path: Path) -> None:
    qids, metadata, a, b = _design(tmp_path)
    runs = [("A", tmp_path / "A"), ("B", tmp_path / "B")]
    cells = conversation_cells(runs, "A", "rules", metadata=metadata)
    cell = next(c for c in cells if (c.provider, c.kind) == ("B", "all"))
    groups = np.array([int(metadata[q]["template"][1:]) for q in qids])
    t = scipy_stats.t.ppf(0.975, TEMPLATES - 1)

    y = _per_question(b, qids)
    se = _statsmodels_cluster(y, groups)
    assert cell.clusters == TEMPLATES
    assert cell.accuracy == pytest.approx(y.mean(), abs=1e-12)
    assert cell.accuracy_low == pytest.approx(max(0.0, y.mean() - t * se), abs=1e-9)
    assert cell.accuracy_high == pytest.approx(min(1.0, y.mean() + t * se), abs=1e-9)

    d = y - _per_question(a, qids)
    se_d = _statsmodels_cluster(d, groups)
    assert cell.vs_reference == pytest.approx(d.mean(), abs=1e-12)
    assert cell.vs_low == pytest.approx(d.mean() - t * se_d, abs=1e-9)
    assert cell.vs_high == pytest.approx(d.mean() + t * se_d, abs=1e-9)
    assert cell.p_value == pytest.approx(2 * scipy_stats.t.sf(abs(d.mean() / se_d), 5))
    mde = (t + scipy_stats.t.ppf(0.8, TEMPLATES - 1)) * se_d
    assert cell.mde == pytest.approx(mde, rel=1e-9)
    assert cell.distinguishable is bool(abs(d.mean()) >= mde)

    # Items as the unit (--cluster none): a narrower, naive interval.
    naive = conversation_cells(runs, "A", "rules", metadata=metadata, cluster="none")
    naive_cell = next(c for c in naive if (c.provider, c.kind) == ("B", "all"))
    assert naive_cell.clusters == len(qids)
    assert naive_cell.vs_high - naive_cell.vs_low < cell.vs_high - cell.vs_low


def test_a_difference_below_the_minimum_of_paired_questions_is_not_tested(tmp_path: Path):
    _qids, metadata, _, _ = _design(tmp_path, questions=4)
    runs = [("A", tmp_path / "A"), ("B", tmp_path / "B")]
    cell = next(
        c
        for c in conversation_cells(runs, "A", "rules", metadata=metadata, minimum=5)
        if (c.provider, c.kind) == ("B", "all")
    )
    assert cell.vs_reference is not None
    assert cell.vs_low is None and cell.p_value is None and cell.mde is None
