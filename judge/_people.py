"""Rater agreement for ``judge.compare``: weighted kappa per pair, Krippendorff's alpha, and whether
the LLM judge agrees with people as well as people agree with each other.

Units are graded assertions (answer x assertion id) of one dimension, so the grades stay on the
0 / .25 / .5 / .75 / 1 grid. People are the judges named ``human-*`` (``judge.human import``).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from judge._agreement import (
    GRID,
    Estimate,
    alpha_estimate,
    grid_index,
    kappa_estimate,
    quadratic_weighted_kappa,
)

if TYPE_CHECKING:
    from judge._compare import AssertionTable, Comparison

HUMAN_PREFIX = "human-"

Unit = tuple[tuple[str, int], str, str]
"""((question id, trial), dimension, assertion id)."""


def is_person(judge: str) -> bool:
    return judge.startswith(HUMAN_PREFIX)


def _grades(table: AssertionTable) -> dict[Unit, float]:
    return {
        (key, dimension, assertion_id): score
        for key, (_, dimensions) in table.items()
        for dimension, verdicts in dimensions.items()
        for assertion_id, score in verdicts.items()
    }


def _on_grid(grades: dict[Unit, float]) -> bool:
    try:
        grid_index(list(grades.values()))
    except ValueError:
        return False
    return True


def add_rater_agreement(
    comparison: Comparison, tables: dict[str, AssertionTable], *, bootstrap: int, seed: int
) -> None:
    """Fill ``comparison.kappas``, ``.alphas`` and ``.people``."""
    from judge._compare import AlphaCell, KappaCell

    grades = {judge: _grades(table) for judge, table in tables.items()}
    off_grid = {judge for judge, g in grades.items() if not _on_grid(g)}
    dimensions = sorted({unit[1] for g in grades.values() for unit in g})
    for judge_a, judge_b in itertools.combinations(comparison.judges, 2):
        for dimension in dimensions:
            units = sorted(
                u for u in set(grades[judge_a]) & set(grades[judge_b]) if u[1] == dimension
            )
            if not units:
                continue
            if off_grid & {judge_a, judge_b}:
                reason = f"{sorted(off_grid & {judge_a, judge_b})[0]} scores off the 5-point grid"
                estimate = Estimate(None, n=len(units), reason=reason)
            else:
                estimate = kappa_estimate(
                    [grades[judge_a][u] for u in units],
                    [grades[judge_b][u] for u in units],
                    names=(judge_a, judge_b),
                    replicates=bootstrap,
                    seed=seed,
                )
            comparison.kappas.append(KappaCell(judge_a, judge_b, dimension, estimate))
    raters = [j for j in comparison.judges if j not in off_grid]
    if len(raters) >= 3:
        for dimension in dimensions:
            units = sorted({u for r in raters for u in grades[r] if u[1] == dimension})
            matrix = np.array([[grades[r].get(u, np.nan) for u in units] for r in raters])
            estimate = alpha_estimate(matrix, replicates=bootstrap, seed=seed)
            comparison.alphas.append(AlphaCell(dimension, raters, estimate))
    comparison.people = people_lines(grades, comparison.judges, off_grid, bootstrap, seed)


def people_lines(
    grades: dict[str, dict[Unit, float]],
    judges: list[str],
    off_grid: set[str],
    bootstrap: int,
    seed: int,
) -> list[str]:
    people = [j for j in judges if is_person(j) and j not in off_grid]
    machines = [j for j in judges if not is_person(j) and j not in off_grid]
    if not people or not machines:
        return []
    if len(people) < 2:
        return [
            "Whether a judge agrees with people as well as people agree with each other needs "
            f"grades from two or more people (human-*); only {people[0]} graded."
        ]
    return [_machine_vs_people(machine, people, grades, bootstrap, seed) for machine in machines]


def _pair_arrays(
    grades: dict[str, dict[Unit, float]], a: str, b: str, key_index: dict
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    units = sorted(set(grades[a]) & set(grades[b]))
    keys = np.array([key_index[u[0]] for u in units], dtype=int)
    return keys, np.array([grades[a][u] for u in units]), np.array([grades[b][u] for u in units])


def _mean_kappa(
    pairs: list[tuple[np.ndarray, np.ndarray, np.ndarray]], weights: np.ndarray | None
) -> float | None:
    values = []
    for keys, a, b in pairs:
        if weights is not None:
            repeat = weights[keys]
            a, b = np.repeat(a, repeat), np.repeat(b, repeat)
        if len(a) < 2:
            continue
        kappa = quadratic_weighted_kappa(a, b, GRID)
        if kappa is not None:
            values.append(kappa)
    return float(np.mean(values)) if values else None


def _machine_vs_people(
    machine: str,
    people: list[str],
    grades: dict[str, dict[Unit, float]],
    bootstrap: int,
    seed: int,
) -> str:
    answers = sorted({u[0] for g in grades.values() for u in g})
    key_index = {key: i for i, key in enumerate(answers)}
    between_people = [
        _pair_arrays(grades, a, b, key_index) for a, b in itertools.combinations(people, 2)
    ]
    with_machine = [_pair_arrays(grades, machine, p, key_index) for p in people]
    people_kappa = _mean_kappa(between_people, None)
    machine_kappa = _mean_kappa(with_machine, None)
    if people_kappa is None or machine_kappa is None:
        return (
            f"{machine}: too few assertions graded by it and by two people to compare its "
            "agreement with theirs."
        )
    rng = np.random.default_rng(seed)
    differences = []
    for _ in range(bootstrap):
        weights = np.bincount(rng.integers(0, len(answers), len(answers)), minlength=len(answers))
        p, m = _mean_kappa(between_people, weights), _mean_kappa(with_machine, weights)
        if p is not None and m is not None:
            differences.append(m - p)
    difference = machine_kappa - people_kappa
    if len(differences) < bootstrap / 2:
        return (
            f"{machine}: kappa with people {machine_kappa:.2f}, between people "
            f"{people_kappa:.2f}; too little variation for an interval."
        )
    low, high = (float(v) for v in np.percentile(differences, [2.5, 97.5]))
    if low > 0:
        verdict = "better than people agree with each other"
    elif high < 0:
        verdict = "less well than people agree with each other"
    else:
        verdict = "as well as people agree with each other (the interval includes 0)"
    return (
        f"{machine} agrees with people {verdict}: mean weighted kappa with people "
        f"{machine_kappa:.2f} vs {people_kappa:.2f} between people, difference "
        f"{difference:+.2f} [{low:+.2f}, {high:+.2f}] (95% bootstrap over answers)."
    )
