"""Benchmark: whole analysis, 4 providers x 251 questions x 3 trials x 9 metrics, B = 1000.

Run: ``.venv/bin/python bench/bench_analysis.py`` (optionally ``--bootstrap 1000 --repeat 3
--model pooled``). The default model is pairwise: 6 pairs x 9 metrics x 3 task types = 162 fits.
Prints wall and CPU seconds for each part: loading the runs, the bootstrap, the mixed models, the
rest of the statistics, plots + report, and the whole ``compare`` call. The work is single-threaded,
so on a busy shared machine the CPU time is the better estimate of the unloaded wall time.
``--research-keys``: the research items are keyed on a world (LedgerBench's extension), which adds
research accuracy and four retrieval figures: 14 metrics. Items come in templates of 3 (clustered
intervals, cluster bootstrap, cluster-robust mixed-model errors). Target: whole analysis under 15 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from analysis import CompareConfig, Settings, compare, compute_stats, load_provider
from analysis._plots import all_plots
from analysis._report import build_report, to_html, to_markdown
from analysis._schema import ModelKind
from analysis._stats import combine
from analysis._synthetic import ProviderSpec, SyntheticConfig, write_runs


def synthetic_runs(
    root: Path, research_keys: bool = False, trials: int = 3, template_size: int = 3
) -> list[Path]:
    specs = [
        ProviderSpec("A", latency_scale=25, cost_per_question=0.03),
        ProviderSpec("B", effect=0.05, latency_scale=40, cost_per_question=0.08),
        ProviderSpec("C", effect=-0.03, judge_error_rate=0.03, error_rate=0.02),
        ProviderSpec("D", effect=0.0, latency_scale=15, cost_per_question=0.01),
    ]
    config = SyntheticConfig(
        specs,
        seed=1,
        quantize=True,
        research_keys=research_keys,
        trials=trials,
        template_size=template_size,
        provider_template_sd=0.05,
    )
    return write_runs(root, config)


class Clock:
    def __init__(self) -> None:
        self.parts: dict[str, list[tuple[float, float]]] = {}

    def measure(self, name: str, work):
        wall, cpu = time.perf_counter(), time.process_time()
        result = work()
        self.add(name, time.perf_counter() - wall, time.process_time() - cpu)
        return result

    def add(self, name: str, wall: float, cpu: float) -> None:
        self.parts.setdefault(name, []).append((wall, cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=1000, help="resamples B (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (median shown)")
    parser.add_argument(
        "--model", choices=[m.value for m in ModelKind], default="pairwise", help="contrast model"
    )
    parser.add_argument(
        "--research-keys",
        action="store_true",
        help="research items keyed on a world: + research accuracy and 4 retrieval figures",
    )
    parser.add_argument("--trials", type=int, default=3, help="trials per question (default 3)")
    parser.add_argument(
        "--template-size",
        type=int,
        default=3,
        help="items per template, clustered by (default 3; 0: no templates, items the unit)",
    )
    args = parser.parse_args()
    metrics = 14 if args.research_keys else 9
    model = ModelKind(args.model)
    clock = Clock()
    with tempfile.TemporaryDirectory() as tmp:
        runs = synthetic_runs(
            Path(tmp) / "runs", args.research_keys, args.trials, args.template_size
        )
        for i in range(args.repeat):
            providers = clock.measure(
                "load 4 runs", lambda: [load_provider(run, "rules") for run in runs]
            )
            settings = Settings(reference="A", judge="rules", bootstrap=args.bootstrap, model=model)
            cpu = time.process_time()
            stats = clock.measure(
                "statistics (all)", lambda p=providers, s=settings: compute_stats(p, s)
            )
            cpu = time.process_time() - cpu
            timings = stats.timings_s
            # Sub-parts: wall from the stats document; CPU apportioned by the wall shares.
            total = sum(timings.values())
            for key, label in (
                ("bootstrap", "  bootstrap"),
                ("lmm", f"  mixed models ({metrics} metrics, {model.value})"),
                ("other", "  other statistics"),
            ):
                clock.add(label, timings[key], cpu * timings[key] / total)

            def report(stats=stats, providers=providers):
                images = all_plots(stats, combine(providers, {}).trajectories)
                built = build_report(stats, list(images))
                return to_markdown(built), to_html(built, images)

            clock.measure("plots + report", report)
            config = CompareConfig(
                inputs=runs,
                out=Path(tmp) / f"report{i}",
                judge="rules",
                reference="A",
                bootstrap=args.bootstrap,
                model=model,
            )
            clock.measure("WHOLE compare (load+stats+plots+files)", lambda c=config: compare(c))
    print(
        f"4 providers x 251 questions x {args.trials} trials ({4 * 251 * args.trials:,} answers) "
        f"x {metrics} metrics, B = {args.bootstrap}, model {model.value}, templates of "
        f"{args.template_size or 'none (items)'}"
    )
    print(f"median of {args.repeat} runs; load average now {os.getloadavg()[0]:.1f}")
    print(f"  {'part':<42} {'wall s':>7} {'CPU s':>7}")
    for name, values in clock.parts.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"  {name:<42} {wall:7.2f} {cpu:7.2f}")


if __name__ == "__main__":
    main()
