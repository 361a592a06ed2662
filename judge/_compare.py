"""Judge agreement: the same answers scored by several judges, compared per (task type, dimension).

For every judge pair and every cell with at least ``min_pairs`` answers scored by both: mean shift
(second minus first), Wilcoxon signed-rank p (see :func:`wilcoxon_method`) with Benjamini-Hochberg
q over all tested cells, Spearman rho, Bland-Altman bias and 95% limits of agreement (with a plot).
With three or more judges, Kendall's W over the answers every judge scored. Cells whose mean shift
reaches the practical threshold are flagged.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from judge._summary import OVERALL
from judge.records import DimensionStatus, ScoreRecord, ScoreStatus
from ledgerbench.dataset import Dimension

DEFAULT_THRESHOLD = 0.05
DEFAULT_MIN_PAIRS = 5

Key = tuple[str, int]


@dataclass
class PairCell:
    judge_a: str
    judge_b: str
    task_type: str
    dimension: str
    n: int
    mean_a: float
    mean_b: float
    mean_shift: float
    """Mean of (B - A)."""
    wilcoxon_p: float | None
    bh_q: float | None = None
    spearman_rho: float | None = None
    bland_altman_bias: float = 0.0
    bland_altman_lower: float = 0.0
    bland_altman_upper: float = 0.0
    flagged: bool = False
    """|mean shift| >= threshold."""
    significant: bool = False
    """BH q < alpha."""
    differences: list[float] = field(default_factory=list, repr=False)
    means: list[float] = field(default_factory=list, repr=False)


@dataclass
class ConcordanceCell:
    task_type: str
    dimension: str
    judges: list[str]
    n: int
    kendall_w: float | None


@dataclass
class Comparison:
    judges: list[str]
    threshold: float
    min_pairs: int
    alpha: float
    pairs: list[PairCell]
    concordance: list[ConcordanceCell]
    skipped_cells: list[dict[str, Any]]


def record_values(records: list[ScoreRecord]) -> dict[tuple[str, str], dict[Key, float]]:
    """(task type, dimension or overall) -> {(question id, trial): score} for scored values only."""
    table: dict[tuple[str, str], dict[Key, float]] = defaultdict(dict)
    for record in records:
        if record.status is not ScoreStatus.scored:
            continue
        key = (record.question_id, record.trial)
        for dimension, score in record.dimensions.items():
            if score.status is DimensionStatus.scored and score.score is not None:
                table[(record.task_type.value, dimension.value)][key] = score.score
        if record.overall is not None:
            table[(record.task_type.value, OVERALL)][key] = record.overall
    return table


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    from scipy import stats

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(stats.spearmanr(a, b).statistic)


def wilcoxon_method(differences: np.ndarray) -> str:
    """scipy's ``auto`` choice, except that zeros or ties use the normal approximation.

    Scores on a 0.25 grid nearly always tie; scipy would then run a slow permutation test (seconds
    per cell). The tie-corrected normal approximation is what R's ``wilcox.test`` uses there too.
    """
    magnitudes = np.abs(differences)
    if np.any(magnitudes == 0) or len(np.unique(magnitudes)) < len(magnitudes):
        return "approx"
    return "auto"


def _wilcoxon(a: np.ndarray, b: np.ndarray) -> float:
    from scipy import stats

    differences = b - a
    if np.all(differences == 0):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.wilcoxon(b, a, method=wilcoxon_method(differences)).pvalue)


def pair_cell(
    judge_a: str, judge_b: str, task_type: str, dimension: str, a: np.ndarray, b: np.ndarray
) -> PairCell:
    differences = b - a
    sd = float(np.std(differences, ddof=1)) if len(differences) > 1 else 0.0
    bias = float(np.mean(differences))
    return PairCell(
        judge_a=judge_a,
        judge_b=judge_b,
        task_type=task_type,
        dimension=dimension,
        n=len(a),
        mean_a=float(np.mean(a)),
        mean_b=float(np.mean(b)),
        mean_shift=bias,
        wilcoxon_p=_wilcoxon(a, b),
        spearman_rho=_spearman(a, b),
        bland_altman_bias=bias,
        bland_altman_lower=bias - 1.96 * sd,
        bland_altman_upper=bias + 1.96 * sd,
        differences=differences.tolist(),
        means=((a + b) / 2).tolist(),
    )


def kendalls_w(ratings: np.ndarray) -> float | None:
    """Kendall's W of an (items x judges) matrix, with the correction for ties.

    Each judge's scores are ranked across items (average ranks for ties);
    W = 12 S / (m^2 (n^3 - n) - m T), S the squared deviations of the items' rank sums.
    """
    from scipy import stats

    n, m = ratings.shape
    if n < 2 or m < 2:
        return None
    ranks = np.column_stack([stats.rankdata(ratings[:, j]) for j in range(m)])
    rank_sums = ranks.sum(axis=1)
    s = float(np.sum((rank_sums - rank_sums.mean()) ** 2))
    ties = 0.0
    for j in range(m):
        _, counts = np.unique(ratings[:, j], return_counts=True)
        ties += float(np.sum(counts**3 - counts))
    denominator = m**2 * (n**3 - n) - m * ties
    if denominator <= 0:
        return None
    return 12 * s / denominator


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    from scipy import stats

    if not p_values:
        return []
    return [float(q) for q in stats.false_discovery_control(np.array(p_values), method="bh")]


def compare_judges(
    scores: dict[str, list[ScoreRecord]],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_pairs: int = DEFAULT_MIN_PAIRS,
    alpha: float = 0.05,
) -> Comparison:
    """Agreement statistics for every judge pair and (task type, dimension) cell."""
    judges = list(scores)
    values = {name: record_values(records) for name, records in scores.items()}
    cells = sorted({cell for table in values.values() for cell in table}, key=_cell_order)
    pairs: list[PairCell] = []
    skipped: list[dict[str, Any]] = []
    for judge_a, judge_b in itertools.combinations(judges, 2):
        for task_type, dimension in cells:
            va = values[judge_a].get((task_type, dimension), {})
            vb = values[judge_b].get((task_type, dimension), {})
            keys = sorted(set(va) & set(vb))
            if len(keys) < min_pairs:
                if keys or va or vb:
                    skipped.append(
                        {
                            "judges": [judge_a, judge_b],
                            "task_type": task_type,
                            "dimension": dimension,
                            "pairs": len(keys),
                        }
                    )
                continue
            a = np.array([va[k] for k in keys])
            b = np.array([vb[k] for k in keys])
            pairs.append(pair_cell(judge_a, judge_b, task_type, dimension, a, b))
    q_values = benjamini_hochberg([cell.wilcoxon_p for cell in pairs])
    for cell, q in zip(pairs, q_values, strict=True):
        cell.bh_q = q
        cell.flagged = abs(cell.mean_shift) >= threshold - 1e-12
        cell.significant = q < alpha
    concordance = []
    if len(judges) >= 3:
        for task_type, dimension in cells:
            tables = [values[j].get((task_type, dimension), {}) for j in judges]
            keys = sorted(set.intersection(*(set(t) for t in tables)))
            if len(keys) < min_pairs:
                continue
            matrix = np.array([[t[k] for t in tables] for k in keys])
            concordance.append(
                ConcordanceCell(task_type, dimension, judges, len(keys), kendalls_w(matrix))
            )
    return Comparison(judges, threshold, min_pairs, alpha, pairs, concordance, skipped)


def _cell_order(cell: tuple[str, str]) -> tuple[str, int]:
    order = [d.value for d in Dimension] + [OVERALL]
    return (cell[0], order.index(cell[1]) if cell[1] in order else len(order))


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    data = asdict(comparison)
    for cell in data["pairs"]:
        cell.pop("differences")
        cell.pop("means")
    return data


def comparison_markdown(comparison: Comparison) -> str:
    lines = [
        "# Judge agreement",
        "",
        f"Judges: {', '.join(comparison.judges)}. "
        f"Cells with at least {comparison.min_pairs} pairs; "
        f"shift = second judge minus first; flagged when |shift| >= {comparison.threshold}; "
        f"q = Benjamini-Hochberg over all {len(comparison.pairs)} tested cells.",
        "",
        "| judges | task type | dimension | n | mean A | mean B | shift | Wilcoxon p | BH q | "
        "Spearman rho | BA bias | BA limits | flag |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for c in comparison.pairs:
        flag = ("**shift**" if c.flagged else "") + (" sig." if c.significant else "")
        lines.append(
            f"| {c.judge_a} vs {c.judge_b} | {c.task_type} | {c.dimension} | {c.n} | "
            f"{_fmt(c.mean_a)} | {_fmt(c.mean_b)} | {c.mean_shift:+.3f} | "
            f"{_fmt(c.wilcoxon_p, 4)} | {_fmt(c.bh_q, 4)} | "
            f"{_fmt(c.spearman_rho)} | {c.bland_altman_bias:+.3f} | "
            f"[{c.bland_altman_lower:+.3f}, {c.bland_altman_upper:+.3f}] | {flag.strip()} |"
        )
    if not comparison.pairs:
        lines.append("| (no cell has enough pairs) | | | | | | | | | | | | |")
    if comparison.concordance:
        lines += [
            "",
            "## Kendall's W (all judges)",
            "",
            "| task type | dimension | n | W |",
            "|---|---|---:|---:|",
        ]
        for c in comparison.concordance:
            lines.append(f"| {c.task_type} | {c.dimension} | {c.n} | {_fmt(c.kendall_w)} |")
    if comparison.skipped_cells:
        lines += [
            "",
            f"{len(comparison.skipped_cells)} cell(s) skipped with fewer than "
            f"{comparison.min_pairs} pairs.",
        ]
    return "\n".join(lines) + "\n"


def plot_bland_altman(comparison: Comparison, out_dir: Path) -> list[Path]:
    """One PNG per judge pair, one Bland-Altman panel per tested cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    by_pair: dict[tuple[str, str], list[PairCell]] = defaultdict(list)
    for cell in comparison.pairs:
        by_pair[(cell.judge_a, cell.judge_b)].append(cell)
    for (judge_a, judge_b), cells in by_pair.items():
        columns = min(4, len(cells))
        rows = math.ceil(len(cells) / columns)
        figure, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.2 * rows), squeeze=False)
        for axis, cell in zip(axes.flat, cells, strict=False):
            axis.scatter(cell.means, cell.differences, s=12, alpha=0.6)
            axis.axhline(cell.bland_altman_bias, color="black")
            axis.axhline(cell.bland_altman_lower, color="grey", linestyle="--")
            axis.axhline(cell.bland_altman_upper, color="grey", linestyle="--")
            axis.set_title(f"{cell.task_type} / {cell.dimension} (n={cell.n})", fontsize=9)
            axis.set_xlabel("mean of judges", fontsize=8)
            axis.set_ylabel(f"{judge_b} - {judge_a}", fontsize=8)
            axis.set_ylim(-1.05, 1.05)
        for axis in list(axes.flat)[len(cells) :]:
            axis.axis("off")
        figure.tight_layout()
        path = out_dir / f"bland_altman_{judge_a}_vs_{judge_b}.png"
        figure.savefig(path, dpi=80)
        plt.close(figure)
        written.append(path)
    return written
