"""The one rule for too little data, used by every contrast (Overall, dimensions, task types,
research metrics; pairwise and pooled models).

A contrast between two providers is tested only when, in every task type it averages over, the
two have at least ``min_observations`` *paired* answers (questions both have a score for). Fewer:
"not tested", with the reason naming the pair, the count and the minimum.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def paired_count(values: np.ndarray) -> int:
    """Questions both providers have a score for; ``values`` is ``[2, n]`` (NaN = missing) or
    ``[metrics, 2, n]`` (a question counts when some metric has both scores)."""
    both = ~np.isnan(values[..., 0, :]) & ~np.isnan(values[..., 1, :])
    if both.ndim > 1:
        both = both.any(axis=0)
    return int(both.sum())


def too_few_paired(
    paired: Mapping[str, int], pair: tuple[str, str], metric: str, minimum: int
) -> str | None:
    """The reason a contrast is not tested (``paired``: task type -> paired answers, for every
    task type the contrast averages over), or None when each has at least ``minimum``."""
    for task_type, count in paired.items():
        if count < minimum:
            first, second = pair
            return (
                f"{second} and {first} have {count} paired {metric} answer(s) in {task_type}; "
                f"at least {minimum} are needed"
            )
    return None
