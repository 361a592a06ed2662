"""Rater agreement on the 0 / .25 / .5 / .75 / 1 grid: weighted kappa, Krippendorff's alpha.

Both are computed here (numpy only) and checked in the tests against hand-computed examples and
the worked example of Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability".
Bootstrap intervals resample units (the graded answer-assertions) with replacement.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
DEFAULT_BOOTSTRAP = 1000


@dataclass(frozen=True)
class Estimate:
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0
    """Units used (pairs for kappa, pairable units for alpha)."""
    reason: str = ""
    """Why there is no value (e.g. a rater gave one grade to everything)."""

    def text(self, digits: int = 2) -> str:
        if self.value is None:
            return f"- ({self.reason})" if self.reason else "-"
        interval = ""
        if self.low is not None and self.high is not None:
            interval = f" [{self.low:.{digits}f}, {self.high:.{digits}f}]"
        return f"{self.value:.{digits}f}{interval}"


def grid_index(values: Sequence[float], categories: Sequence[float] = GRID) -> np.ndarray:
    """Category index of each value (values must lie on ``categories``)."""
    lookup = {round(c, 6): i for i, c in enumerate(categories)}
    try:
        return np.array([lookup[round(float(v), 6)] for v in values], dtype=int)
    except KeyError as missing:
        raise ValueError(
            f"value {missing.args[0]} is not on the scale {list(categories)}"
        ) from None


def quadratic_weighted_kappa(
    a: Sequence[float], b: Sequence[float], categories: Sequence[float] = GRID
) -> float | None:
    """Cohen's kappa with quadratic disagreement weights ((i - j) / (k - 1))^2.

    None when the expected disagreement is zero (both raters constant on the same grade).
    """
    if len(a) != len(b):
        raise ValueError("the two raters must grade the same units")
    if len(a) == 0:
        return None
    k = len(categories)
    ia, ib = grid_index(a, categories), grid_index(b, categories)
    observed = np.zeros((k, k))
    np.add.at(observed, (ia, ib), 1.0)
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    steps = np.arange(k)
    weights = (steps[:, None] - steps[None, :]) ** 2 / (k - 1) ** 2
    expected_disagreement = float((weights * expected).sum())
    if expected_disagreement == 0:
        return None
    return 1.0 - float((weights * observed).sum()) / expected_disagreement


def _coincidences(data: np.ndarray, k: int) -> np.ndarray:
    """Krippendorff's coincidence matrix from a (raters x units) matrix of category indexes
    (-1 = missing); units with fewer than two values are not pairable and left out."""
    counts = np.zeros((data.shape[1], k))
    for rater in data:  # one-hot per rater, summed: counts[u, c] = raters giving c to unit u
        present = rater >= 0
        counts[np.flatnonzero(present), rater[present]] += 1
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    weighted = counts / (m - 1)[:, None]
    # sum over units of (outer(c, c) - diag(c)) / (m - 1): ordered pairs of different raters
    return weighted.T @ counts - np.diag(weighted.sum(axis=0))


def _ordinal_distance(totals: np.ndarray) -> np.ndarray:
    k = len(totals)
    distance = np.zeros((k, k))
    for c in range(k):
        for j in range(c, k):
            between = totals[c : j + 1].sum() - (totals[c] + totals[j]) / 2
            distance[c, j] = distance[j, c] = between**2
    return distance


def krippendorff_alpha(data: np.ndarray, k: int, metric: str = "ordinal") -> float | None:
    """Krippendorff's alpha of a (raters x units) matrix of category indexes 0..k-1 (-1 missing).

    ``metric`` is ``ordinal`` (default), ``interval`` or ``nominal``. None when there are no
    pairable values or no variation at all.
    """
    coincidences = _coincidences(np.asarray(data, dtype=int), k)
    totals = coincidences.sum(axis=1)
    n = totals.sum()
    if n <= 1:
        return None
    if metric == "ordinal":
        distance = _ordinal_distance(totals)
    elif metric == "interval":
        steps = np.arange(k)
        distance = (steps[:, None] - steps[None, :]) ** 2.0
    elif metric == "nominal":
        distance = 1.0 - np.eye(k)
    else:
        raise ValueError(f"metric {metric!r}: use ordinal, interval or nominal")
    expected = float((np.outer(totals, totals) * distance).sum())
    if expected == 0:
        return None
    return 1.0 - (n - 1) * float((coincidences * distance).sum()) / expected


def bootstrap_interval(
    statistic: Callable[[np.ndarray], float | None],
    n_units: int,
    *,
    replicates: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile interval of ``statistic(unit indexes)`` over resampled units."""
    if n_units < 2 or replicates < 1:
        return None, None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(replicates):
        value = statistic(rng.integers(0, n_units, n_units))
        if value is not None and not math.isnan(value):
            values.append(value)
    if len(values) < replicates / 2:  # most resamples degenerate: no honest interval
        return None, None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def _constant_reason(a: Sequence[float], b: Sequence[float], names: tuple[str, str]) -> str:
    for values, name in zip((a, b), names, strict=True):
        if len(set(values)) == 1:
            return f"{name} gave {values[0]:g} to all {len(values)}"
    return "no variation"


def kappa_estimate(
    a: Sequence[float],
    b: Sequence[float],
    *,
    names: tuple[str, str] = ("A", "B"),
    replicates: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> Estimate:
    """Quadratic-weighted kappa with a bootstrap interval over the graded units."""
    if len(a) < 2:
        return Estimate(None, n=len(a), reason=f"{len(a)} unit(s) graded by both")
    value = quadratic_weighted_kappa(a, b)
    if value is None:
        return Estimate(None, n=len(a), reason=_constant_reason(a, b, names))
    xa, xb = np.asarray(a), np.asarray(b)
    low, high = bootstrap_interval(
        lambda idx: quadratic_weighted_kappa(xa[idx], xb[idx]),
        len(a),
        replicates=replicates,
        seed=seed,
    )
    return Estimate(value, low, high, n=len(a))


def alpha_estimate(
    grades: np.ndarray,
    *,
    replicates: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> Estimate:
    """Ordinal Krippendorff's alpha of a (raters x units) grade matrix (NaN = missing)."""
    grades = np.asarray(grades, dtype=float)
    index = np.full(grades.shape, -1, dtype=int)
    present = ~np.isnan(grades)
    index[present] = grid_index(grades[present])
    pairable = int(((index >= 0).sum(axis=0) >= 2).sum())
    if pairable < 2:
        return Estimate(None, n=pairable, reason=f"{pairable} unit(s) graded by 2+ raters")
    value = krippendorff_alpha(index, len(GRID))
    if value is None:
        return Estimate(None, n=pairable, reason="every rater gave the same grade to everything")
    low, high = bootstrap_interval(
        lambda idx: krippendorff_alpha(index[:, idx], len(GRID)),
        index.shape[1],
        replicates=replicates,
        seed=seed,
    )
    return Estimate(value, low, high, n=pairable)
