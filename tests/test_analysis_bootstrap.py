"""The vectorised bootstrap against a slow, obviously correct loop; its statistical behaviour."""

from __future__ import annotations

import numpy as np
import pytest

from analysis._bootstrap import (
    bootstrap_stratum,
    draw_indices,
    equal_weight,
    index_counts,
    percentile_interval,
    resampled_means,
)

pytestmark = pytest.mark.timeout(60)


def slow_means(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """For each resample and provider: the plain mean of the drawn questions' non-missing scores."""
    out = np.full((indices.shape[0], values.shape[0]), np.nan)
    for b, draw in enumerate(indices):
        for p in range(values.shape[0]):
            picked = [values[p, i] for i in draw if not np.isnan(values[p, i])]
            if picked:
                out[b, p] = sum(picked) / len(picked)
    return out


def slow_percentile(samples: list[float], confidence: float) -> tuple[float, float]:
    clean = sorted(s for s in samples if not np.isnan(s))
    alpha = (1 - confidence) / 2
    return float(np.quantile(clean, alpha)), float(np.quantile(clean, 1 - alpha))


def data_with_gaps(seed: int, providers: int, questions: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=(providers, questions))
    values[rng.random(values.shape) < 0.15] = np.nan
    return values


def test_counts_match_indices():
    rng = np.random.default_rng(0)
    indices = draw_indices(rng, 7, 50)
    counts = index_counts(indices, 7)
    for b in range(50):
        assert counts[b].tolist() == [list(indices[b]).count(i) for i in range(7)]


def test_vectorised_means_equal_slow_loop_with_missing_values():
    values = data_with_gaps(seed=1, providers=3, questions=23)
    indices = draw_indices(np.random.default_rng(2), 23, 300)
    fast = resampled_means(values, index_counts(indices, 23))
    slow = slow_means(values, indices)
    assert np.array_equal(np.isnan(fast), np.isnan(slow))
    assert np.allclose(fast[~np.isnan(fast)], slow[~np.isnan(slow)], atol=1e-12)


def test_stratum_intervals_equal_slow_reference():
    values = data_with_gaps(seed=3, providers=3, questions=30)
    result = bootstrap_stratum(values, np.random.default_rng(9), 400)
    indices = draw_indices(np.random.default_rng(9), 30, 400)  # the same draws
    slow = slow_means(values, indices)
    for p in range(3):
        observed = [v for v in values[p] if not np.isnan(v)]
        assert result.point[p] == pytest.approx(sum(observed) / len(observed))
        assert result.n[p] == len(observed)
    low, high = percentile_interval(result.resampled, 0.95)
    for p in range(3):
        assert (low[p], high[p]) == pytest.approx(slow_percentile(list(slow[:, p]), 0.95))
    # Paired difference: provider 2 minus provider 0 within each resample.
    d_low, d_high = percentile_interval(result.resampled - result.resampled[:, [0]], 0.95)
    assert (d_low[2], d_high[2]) == pytest.approx(
        slow_percentile(list(slow[:, 2] - slow[:, 0]), 0.95)
    )


def test_equal_weight_is_mean_of_strata_per_resample():
    a = bootstrap_stratum(data_with_gaps(4, 2, 40), np.random.default_rng(1), 200)
    b = bootstrap_stratum(data_with_gaps(5, 2, 10), np.random.default_rng(2), 200)
    both = equal_weight([a, b])
    assert np.allclose(both.point, (a.point + b.point) / 2)
    assert np.allclose(both.resampled, (a.resampled + b.resampled) / 2, equal_nan=True)
    assert both.n.tolist() == (a.n + b.n).tolist()


def test_equal_weight_skips_strata_a_provider_lacks():
    a = bootstrap_stratum(np.array([[0.2, 0.4], [0.6, 0.8]]), np.random.default_rng(1), 50)
    b = bootstrap_stratum(np.array([[1.0, 1.0], [np.nan, np.nan]]), np.random.default_rng(2), 50)
    both = equal_weight([a, b])
    assert both.point.tolist() == pytest.approx([(0.3 + 1.0) / 2, 0.7])


def test_interval_covers_true_mean_about_95_percent():
    rng = np.random.default_rng(0)
    covered = 0
    trials = 200
    for _ in range(trials):
        values = rng.normal(0.5, 0.2, size=(1, 60))
        result = bootstrap_stratum(values, rng, 400)
        low, high = percentile_interval(result.resampled, 0.95)
        covered += low[0] <= 0.5 <= high[0]
    assert 0.88 <= covered / trials <= 0.99


def test_pairing_narrows_the_difference_interval_for_correlated_providers():
    rng = np.random.default_rng(3)
    shared = rng.normal(0.5, 0.2, 80)
    values = np.vstack([shared + rng.normal(0, 0.02, 80), shared + 0.01 + rng.normal(0, 0.02, 80)])
    result = bootstrap_stratum(values, rng, 1000)
    low, high = percentile_interval(result.resampled, 0.95)
    d_low, d_high = percentile_interval(result.resampled - result.resampled[:, [0]], 0.95)
    assert (d_high[1] - d_low[1]) < 0.25 * (high[1] - low[1])
