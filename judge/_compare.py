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

from judge._agreement import DEFAULT_BOOTSTRAP, Estimate
from judge._summary import OVERALL
from ledgerbench_core.dataset import Dimension
from ledgerbench_core.scores import DimensionStatus, ScoreRecord, ScoreStatus

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
    rank_note: str | None = None
    """Why ``spearman_rho`` is None (a judge constant in the cell)."""
    differences: list[float] = field(default_factory=list, repr=False)
    means: list[float] = field(default_factory=list, repr=False)


@dataclass
class ConcordanceCell:
    task_type: str
    dimension: str
    judges: list[str]
    n: int
    kendall_w: float | None
    note: str | None = None
    """Why ``kendall_w`` is None."""


@dataclass
class KappaCell:
    judge_a: str
    judge_b: str
    dimension: str
    kappa: Estimate


@dataclass
class AlphaCell:
    dimension: str
    raters: list[str]
    alpha: Estimate


@dataclass
class PairCoverage:
    judge_a: str
    judge_b: str
    shared: int
    """Assertion verdicts both judges decided (the only ones compared)."""
    only_a: int
    only_b: int


@dataclass
class Comparison:
    judges: list[str]
    threshold: float
    min_pairs: int
    alpha: float
    pairs: list[PairCell]
    concordance: list[ConcordanceCell]
    skipped_cells: list[dict[str, Any]]
    coverage: list[PairCoverage] = field(default_factory=list)
    kappas: list[KappaCell] = field(default_factory=list)
    alphas: list[AlphaCell] = field(default_factory=list)
    people: list[str] = field(default_factory=list)
    """One line per non-human judge: does it agree with people as people agree with each other."""


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


AssertionTable = dict[Key, tuple[str, dict[str, dict[str, float]]]]
"""(question id, trial) -> (task type, {dimension: {assertion id: score}}), decided scores only."""


def assertion_table(records: list[ScoreRecord]) -> AssertionTable:
    """Every decided (non-null) assertion score of the scored dimensions, by answer."""
    table: AssertionTable = {}
    for record in records:
        if record.status is not ScoreStatus.scored:
            continue
        dimensions: dict[str, dict[str, float]] = {}
        for dimension, score in record.dimensions.items():
            if score.status is not DimensionStatus.scored:
                continue
            decided = {a.assertion_id: a.score for a in score.assertions if a.score is not None}
            if not score.assertions and score.score is not None:  # a score without its verdicts
                decided = {dimension.value: score.score}
            if decided:
                dimensions[dimension.value] = decided
        table[(record.question_id, record.trial)] = (record.task_type.value, dimensions)
    return table


@dataclass
class CommonAssertions:
    """What two judges both decided, and what one of them decided alone (left out)."""

    values_a: dict[tuple[str, str], dict[Key, float]]
    values_b: dict[tuple[str, str], dict[Key, float]]
    shared: int = 0
    only_a: int = 0
    only_b: int = 0


def common_values(a: AssertionTable, b: AssertionTable) -> CommonAssertions:
    """Both judges' dimension and overall scores recomputed on the assertions both decided.

    A rules judge decides accuracy and citations checks and leaves the rest open; compared with an
    LLM judge on its own assertion set it would measure different things, not disagreement.
    """
    result = CommonAssertions(defaultdict(dict), defaultdict(dict))
    for key in sorted(set(a) & set(b)):
        task_type, dims_a = a[key]
        _, dims_b = b[key]
        overall_a, overall_b = [], []
        for dimension in sorted(set(dims_a) | set(dims_b)):
            va, vb = dims_a.get(dimension, {}), dims_b.get(dimension, {})
            both = sorted(set(va) & set(vb))
            result.shared += len(both)
            result.only_a += len(set(va) - set(vb))
            result.only_b += len(set(vb) - set(va))
            if not both:
                continue
            mean_a = float(np.mean([va[i] for i in both]))
            mean_b = float(np.mean([vb[i] for i in both]))
            result.values_a[(task_type, dimension)][key] = mean_a
            result.values_b[(task_type, dimension)][key] = mean_b
            overall_a.append(mean_a)
            overall_b.append(mean_b)
        if overall_a:
            result.values_a[(task_type, OVERALL)][key] = float(np.mean(overall_a))
            result.values_b[(task_type, OVERALL)][key] = float(np.mean(overall_b))
    return result


def constant_reason(columns: dict[str, np.ndarray]) -> str | None:
    """Why no rank statistic: the judges whose scores are all equal in the cell."""
    constant = [
        f"{name} gave {values[0]:g} to all {len(values)}"
        for name, values in columns.items()
        if len(values) and np.ptp(values) == 0
    ]
    if not constant:
        return None
    return "; ".join(constant) + ": no rank statistic for a constant judge"


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
    rank_note = constant_reason({judge_a: a, judge_b: b})
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
        spearman_rho=None if rank_note else _spearman(a, b),
        rank_note=rank_note,
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
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> Comparison:
    """Agreement statistics for every judge pair and (task type, dimension) cell, computed only on
    the assertions both judges decided; kappa and alpha on the assertion grades."""
    judges = list(scores)
    tables = {name: assertion_table(records) for name, records in scores.items()}
    pairs: list[PairCell] = []
    skipped: list[dict[str, Any]] = []
    coverage: list[PairCoverage] = []
    for judge_a, judge_b in itertools.combinations(judges, 2):
        common = common_values(tables[judge_a], tables[judge_b])
        coverage.append(PairCoverage(judge_a, judge_b, common.shared, common.only_a, common.only_b))
        cells = sorted(set(common.values_a) | set(common.values_b), key=_cell_order)
        for task_type, dimension in cells:
            va = common.values_a.get((task_type, dimension), {})
            vb = common.values_b.get((task_type, dimension), {})
            keys = sorted(set(va) & set(vb))
            if len(keys) < min_pairs:
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
    comparison = Comparison(judges, threshold, min_pairs, alpha, pairs, [], skipped, coverage)
    if len(judges) >= 3:
        comparison.concordance = _concordance(judges, tables, min_pairs)
    from judge._people import add_rater_agreement

    add_rater_agreement(comparison, tables, bootstrap=bootstrap, seed=seed)
    return comparison


def _concordance(
    judges: list[str], tables: dict[str, AssertionTable], min_pairs: int
) -> list[ConcordanceCell]:
    """Kendall's W per cell over answers and assertions every judge decided."""
    values: dict[tuple[str, str], dict[Key, list[float]]] = defaultdict(dict)
    keys = set.intersection(*(set(t) for t in tables.values()))
    for key in sorted(keys):
        task_type = tables[judges[0]][key][0]
        per_judge = [tables[j][key][1] for j in judges]
        dimensions = set.intersection(*(set(d) for d in per_judge))
        overall = [[] for _ in judges]
        for dimension in sorted(dimensions):
            ids = set.intersection(*(set(d[dimension]) for d in per_judge))
            if not ids:
                continue
            means = [float(np.mean([d[dimension][i] for i in ids])) for d in per_judge]
            values[(task_type, dimension)][key] = means
            for column, value in zip(overall, means, strict=True):
                column.append(value)
        if overall[0]:
            values[(task_type, OVERALL)][key] = [float(np.mean(c)) for c in overall]
    cells = []
    for cell in sorted(values, key=_cell_order):
        rows = values[cell]
        if len(rows) < min_pairs:
            continue
        matrix = np.array(list(rows.values()))
        note = constant_reason({j: matrix[:, i] for i, j in enumerate(judges)})
        w = None if note else kendalls_w(matrix)
        cells.append(ConcordanceCell(cell[0], cell[1], judges, len(rows), w, note))
    return cells


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
    data = asdict(comparison)  # Estimate is a dataclass too: value, low, high, n, reason
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
    ]
    lines += _coverage_lines(comparison)
    lines += [
        "| judges | task type | dimension | n | mean A | mean B | shift | Wilcoxon p | BH q | "
        "Spearman rho | BA bias | BA limits | flag |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for c in comparison.pairs:
        flag = ("**shift**" if c.flagged else "") + (" sig." if c.significant else "")
        rho = _fmt(c.spearman_rho) if c.rank_note is None else "- (constant)"
        lines.append(
            f"| {c.judge_a} vs {c.judge_b} | {c.task_type} | {c.dimension} | {c.n} | "
            f"{_fmt(c.mean_a)} | {_fmt(c.mean_b)} | {c.mean_shift:+.3f} | "
            f"{_fmt(c.wilcoxon_p, 4)} | {_fmt(c.bh_q, 4)} | "
            f"{rho} | {c.bland_altman_bias:+.3f} | "
            f"[{c.bland_altman_lower:+.3f}, {c.bland_altman_upper:+.3f}] | {flag.strip()} |"
        )
    if not comparison.pairs:
        lines.append("| (no cell has enough pairs) | | | | | | | | | | | | |")
    notes = sorted({c.rank_note for c in comparison.pairs if c.rank_note})
    if notes:
        lines += ["", "No Spearman rho where a judge is constant:"]
        lines += [f"- {note}" for note in notes[:20]]
    if comparison.concordance:
        lines += [
            "",
            "## Kendall's W (all judges)",
            "",
            "| task type | dimension | n | W |",
            "|---|---|---:|---:|",
        ]
        for c in comparison.concordance:
            w = _fmt(c.kendall_w) if c.note is None else f"- ({c.note})"
            lines.append(f"| {c.task_type} | {c.dimension} | {c.n} | {w} |")
    lines += _rater_lines(comparison)
    if comparison.skipped_cells:
        lines += [
            "",
            f"{len(comparison.skipped_cells)} cell(s) skipped with fewer than "
            f"{comparison.min_pairs} pairs.",
        ]
    return "\n".join(lines) + "\n"


def _coverage_lines(comparison: Comparison) -> list[str]:
    lines = []
    for c in comparison.coverage:
        left_out = ""
        if c.only_a or c.only_b:
            left_out = (
                f"; left out: {c.only_a} decided only by {c.judge_a}, "
                f"{c.only_b} only by {c.judge_b}"
            )
        lines.append(
            f"- {c.judge_a} vs {c.judge_b}: compared on the {c.shared} assertion verdicts both "
            f"decided{left_out}."
        )
    return [*lines, ""] if lines else []


def _rater_lines(comparison: Comparison) -> list[str]:
    lines = []
    if comparison.kappas:
        lines += [
            "",
            "## Quadratic-weighted Cohen's kappa (assertion grades, 95% bootstrap interval)",
            "",
            "| judges | dimension | n | kappa |",
            "|---|---|---:|---|",
        ]
        for k in comparison.kappas:
            lines.append(
                f"| {k.judge_a} vs {k.judge_b} | {k.dimension} | {k.kappa.n} | {k.kappa.text()} |"
            )
    if comparison.alphas:
        lines += [
            "",
            f"## Krippendorff's alpha, ordinal ({', '.join(comparison.alphas[0].raters)})",
            "",
            "| dimension | pairable units | alpha |",
            "|---|---:|---|",
        ]
        for a in comparison.alphas:
            lines.append(f"| {a.dimension} | {a.alpha.n} | {a.alpha.text()} |")
    if comparison.people:
        lines += ["", "## The judge and people", "", *comparison.people]
    return lines


def plot_bland_altman(comparison: Comparison, out_dir: Path) -> list[Path]:
    """One PNG per judge pair, one Bland-Altman panel per tested cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    by_pair: dict[tuple[str, str], list[PairCell]] = defaultdict(list)
    for cell in comparison.pairs:
        by_pair[(cell.judge_a, cell.judge_b)].append(cell)
    rng = np.random.default_rng(0)
    for (judge_a, judge_b), cells in by_pair.items():
        columns = min(4, len(cells))
        rows = math.ceil(len(cells) / columns)
        figure, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.2 * rows), squeeze=False)
        for axis, cell in zip(axes.flat, cells, strict=False):
            # Grid scores tie constantly: jitter (+/- 0.03, drawn only) so stacked points show.
            jitter = rng.uniform(-0.03, 0.03, size=(2, len(cell.means)))
            axis.scatter(
                np.array(cell.means) + jitter[0],
                np.array(cell.differences) + jitter[1],
                s=12,
                alpha=0.5,
            )
            axis.axhline(cell.bland_altman_bias, color="black")
            axis.axhline(cell.bland_altman_lower, color="grey", linestyle="--")
            axis.axhline(cell.bland_altman_upper, color="grey", linestyle="--")
            axis.set_title(f"{cell.task_type} / {cell.dimension} (n={cell.n})", fontsize=9)
            axis.set_xlabel("mean of judges (points jittered)", fontsize=8)
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
