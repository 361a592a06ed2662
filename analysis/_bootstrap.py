"""Paired, stratified percentile bootstrap, vectorised with numpy.

For one stratum (a task type) the data is a matrix ``values[provider, question]`` (NaN = missing). A
resample draws questions with replacement; every provider sees the same draw (paired). The B
resamples are turned into a count matrix ``counts[b, question]`` (how often each question was
drawn), so every resampled mean for every provider is one matrix product: ``(counts @ values.T) /
(counts @ present.T)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def draw_indices(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """``[resamples, n]`` question indices drawn with replacement."""
    return rng.integers(0, n, size=(resamples, n))


def index_counts(indices: np.ndarray, n: int) -> np.ndarray:
    """``[B, n]`` matrix: how many times each question appears in each resample."""
    resamples = indices.shape[0]
    offsets = indices + (np.arange(resamples)[:, None] * n)
    return np.bincount(offsets.ravel(), minlength=resamples * n).reshape(resamples, n).astype(float)


def resampled_means(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``[B, P]`` per-resample mean for each provider row of ``values`` (``[P, n]``, NaN = missing).

    A provider with no observed question in a resample gets NaN for it.
    """
    present = ~np.isnan(values)
    totals = counts @ np.where(present, values, 0.0).T
    sizes = counts @ present.T.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sizes > 0, totals / np.where(sizes > 0, sizes, 1.0), np.nan)


@dataclass
class StratumResult:
    point: np.ndarray
    """``[P]`` observed means (NaN when a provider has no data)."""
    resampled: np.ndarray
    """``[B, P]`` resampled means."""
    n: np.ndarray
    """``[P]`` observed questions."""


def bootstrap_stratum(
    values: np.ndarray, rng: np.random.Generator, resamples: int
) -> StratumResult:
    """Observed and resampled means for one stratum (``values`` is ``[P, n]``)."""
    n = values.shape[1]
    counts = index_counts(draw_indices(rng, n, resamples), n)
    point = resampled_means(values, np.ones((1, n)))[0]
    present = (~np.isnan(values)).sum(axis=1)
    return StratumResult(point, resampled_means(values, counts), present)


def stratum_from_counts(values: np.ndarray, counts: np.ndarray) -> StratumResult:
    """Like :func:`bootstrap_stratum`, with the resample (``counts``) drawn by the caller."""
    n = values.shape[1]
    point = resampled_means(values, np.ones((1, n)))[0]
    present = (~np.isnan(values)).sum(axis=1)
    return StratumResult(point, resampled_means(values, counts), present)


def equal_weight(strata: list[StratumResult]) -> StratumResult:
    """Mean over strata, each weighing the same, per provider; strata a provider lacks are skipped.

    Because every stratum is resampled independently, this is the stratified bootstrap of the
    equal-weight mean.
    """
    point = np.stack([s.point for s in strata])
    resampled = np.stack([s.resampled for s in strata])
    with np.errstate(invalid="ignore"):
        point_mean = _nanmean(point, axis=0)
        resampled_mean = _nanmean(resampled, axis=0)
    n = np.sum([s.n for s in strata], axis=0)
    return StratumResult(point_mean, resampled_mean, n)


def _nanmean(array: np.ndarray, axis: int) -> np.ndarray:
    present = ~np.isnan(array)
    sizes = present.sum(axis=axis)
    totals = np.where(present, array, 0.0).sum(axis=axis)
    return np.where(sizes > 0, totals / np.where(sizes > 0, sizes, 1), np.nan)


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along axis 0, ignoring NaN resamples; NaN where all are NaN."""
    alpha = (1.0 - confidence) / 2.0
    low = np.full(samples.shape[1:], np.nan)
    high = np.full(samples.shape[1:], np.nan)
    has_any = ~np.all(np.isnan(samples), axis=0)
    if np.any(has_any):
        q = np.nanquantile(samples[:, has_any], [alpha, 1.0 - alpha], axis=0)
        low[has_any], high[has_any] = q[0], q[1]
    return low, high
