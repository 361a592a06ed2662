"""Benchmark: how often the report's paired tests reject a true null when items come in templates.

Run: ``.venv/bin/python bench/bench_clustered_null.py`` (optionally ``--simulations 1000
--templates 20 --items 10 --icc 0.5``). Each simulation draws two agents with no true difference
on ``templates x items`` items of one task type; each agent's score has its own effect per
template, so the paired difference of the items of one template is correlated (intra-class
correlation ``--icc``). The tests are the report's own code: the mixed-model Wald test of a
dimension (``analysis._stats.fit_metric``: cluster-robust sandwich error, clusters - 1 df) and the
Overall's test (``linear_t_test``: the paired difference over its cluster-robust SE, t with
Satterthwaite df), once clustered by template
(what the report does by default) and once naive (every item its own cluster, ``--cluster none``).
Also the paired cluster bootstrap's own p-value (recorded as ``bootstrap_p``, not the reported
test: with 20 clusters its percentile p over-rejects). Prints each rejection rate at the 5% level
with its Monte Carlo 95% band. Target: the reported clustered tests reject at 5% +- 2%.

``--model pooled`` tests the paper's pooled model instead: three agents with no true difference,
in two task types of ``templates x items`` items each, one fit for all; the reported test is B vs
A's equal-weight contrast with the pooled fit's cluster-robust error (task types as strata).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd

from analysis._schema import EQUAL_WEIGHT, ModelKind, Settings
from analysis._stats import Bootstrap, attach_bootstrap, fit_metric, linear_t_test


def simulate(
    rng: np.random.Generator,
    templates: int,
    items: int,
    icc: float,
    agents: tuple[str, ...] = ("A", "B"),
    task_types: tuple[str, ...] = ("obligations",),
) -> pd.DataFrame:
    """Per-question scores of the agents; null: no difference between them on average."""
    residual_sd = 0.1
    template_sd = residual_sd * math.sqrt(icc / (1 - icc))  # ICC of the paired difference
    n = templates * items
    template = np.repeat(np.arange(templates), items)
    rows = []
    for task_index, task_type in enumerate(task_types):
        shared = rng.normal(0, 0.1, templates)[template] + rng.normal(0, 0.1, n)
        for agent in agents:
            own = rng.normal(0, template_sd, templates)[template]
            scores = 0.5 + shared + own + rng.normal(0, residual_sd, n)
            qids = [f"q{task_index}.{t}-{i % items}" for i, t in enumerate(template)]
            rows.append(
                pd.DataFrame(
                    {
                        "provider": agent,
                        "metric": "clarity",
                        "task_type": task_type,
                        "question_id": qids,
                        "score": scores,
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


def tests(
    data: pd.DataFrame,
    clusters: dict[str, str] | None,
    bootstrap: int,
    seed: int,
    model_kind: ModelKind = ModelKind.pairwise,
):
    """(mixed-model p, Overall-style t p, bootstrap p) of B vs A, as the report computes them."""
    names = sorted(set(data["provider"]))
    settings = Settings(
        reference="A", judge="sim", bootstrap=bootstrap, seed=seed, model=model_kind
    )
    boot = Bootstrap.run(data, names, ["clarity"], settings, clusters)
    model = fit_metric(data, "clarity", names, settings, [], boot, clusters)
    contrast = next(
        c for c in model.contrasts if (c.provider, c.reference, c.scope) == ("B", "A", EQUAL_WEIGHT)
    )
    attach_bootstrap(contrast, boot, names, settings, [])
    overall_style = contrast.model_copy(update={"p_value": None})
    linear_t_test(overall_style, boot, names.index("A"), names.index("B"))
    return contrast.p_value, overall_style.p_value, contrast.bootstrap_p


def band(rate: float, n: int) -> str:
    half = 1.96 * math.sqrt(0.05 * 0.95 / n)
    inside = abs(rate - 0.05) <= 0.02
    verdict = "within" if inside else "OUTSIDE"
    return f"{rate:6.1%}  (Monte Carlo 95% band +-{half:.1%}; {verdict} 5% +- 2%)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--templates", type=int, default=20)
    parser.add_argument("--items", type=int, default=10, help="items per template")
    parser.add_argument("--icc", type=float, default=0.5, help="ICC of the paired difference")
    parser.add_argument("--bootstrap", type=int, default=1000, help="resamples B (default 1000)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--model",
        choices=[k.value for k in ModelKind],
        default="pairwise",
        help="pairwise (two agents, one task type; default) or pooled (three agents, two task "
        "types, one fit)",
    )
    args = parser.parse_args()
    model_kind = ModelKind(args.model)
    agents, task_types = (
        (("A", "B"), ("obligations",))
        if model_kind == ModelKind.pairwise
        else (("A", "B", "C"), ("obligations", "entity_performance"))
    )
    rng = np.random.default_rng(args.seed)
    kinds = ("model", "linear", "boot")
    rejected = {f"{k} {g}": 0 for k in kinds for g in ("clustered", "naive")}
    started = time.perf_counter()
    for sim in range(args.simulations):
        data = simulate(rng, args.templates, args.items, args.icc, agents, task_types)
        clusters = {q: q.split("-")[0] for q in data["question_id"]}
        for label, grouping in (("clustered", clusters), ("naive", None)):
            found = tests(data, grouping, args.bootstrap, sim, model_kind)
            for kind, p in zip(kinds, found, strict=True):
                rejected[f"{kind} {label}"] += p is not None and p < 0.05
    elapsed = time.perf_counter() - started
    n = args.simulations
    print(
        f"{n} simulations of a true null: {args.templates} templates x {args.items} items "
        f"in {len(task_types)} task type(s), {len(agents)} agents, --model {model_kind.value} "
        f"(B vs A), ICC {args.icc} of the paired difference, B = {args.bootstrap} "
        f"({elapsed:.0f} s)"
    )
    print("rejection rate at the 5% level:")
    print(f"  mixed-model test, clustered (reported) {band(rejected['model clustered'] / n, n)}")
    print(f"  mixed-model test, naive                {rejected['model naive'] / n:6.1%}")
    print(f"  Overall's t test, clustered (reported) {band(rejected['linear clustered'] / n, n)}")
    print(f"  Overall's t test, naive                {rejected['linear naive'] / n:6.1%}")
    print(f"  bootstrap p, clustered (not reported)  {rejected['boot clustered'] / n:6.1%}")
    print(f"  bootstrap p, naive                     {rejected['boot naive'] / n:6.1%}")


if __name__ == "__main__":
    main()
