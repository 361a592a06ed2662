"""PNG plots for the report (matplotlib, Agg backend; each function returns PNG bytes or None)."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd

from analysis._data import METRIC_LABELS, RESEARCH_METRICS, TASK_LABELS
from analysis._schema import EQUAL_WEIGHT, ScoreCell, Stats

PALETTE = ("#1f5f8b", "#e07b39", "#3a9e6e", "#b5446e", "#7a6bb0", "#8c7b45", "#4aa3c4", "#999999")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "figure.dpi": 110,
            "font.size": 9.5,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.25,
            "axes.axisbelow": True,
        }
    )
    return plt


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buffer.getvalue()


def colors(stats: Stats) -> dict[str, str]:
    return {p.name: PALETTE[i % len(PALETTE)] for i, p in enumerate(stats.providers)}


def score_bars(stats: Stats) -> bytes | None:
    """Equal-weight score per metric and provider, 95% intervals, stars against the reference."""
    return metric_bars(stats, stats.metrics, "Scores by metric")


def research_bars(stats: Stats) -> bytes | None:
    """The extension's research accuracy, retrieval recall and citation figures (equal-weight
    over the research task types), 95% intervals, stars against the reference."""
    metrics = [m for m in RESEARCH_METRICS if m in stats.research_metrics]
    return metric_bars(stats, metrics, "Research: accuracy, retrieval and citations")


def metric_bars(stats: Stats, chosen: list[str], title: str) -> bytes | None:
    names = [p.name for p in stats.providers]
    cells = {(c.provider, c.metric): c for c in stats.scores if c.scope == EQUAL_WEIGHT}
    stars = {
        (c.provider, c.metric): c.significance
        for m in stats.models
        for c in m.contrasts
        if c.scope == EQUAL_WEIGHT
    }
    metrics = [m for m in chosen if any((n, m) in cells for n in names)]
    if not metrics:
        return None
    plt = _pyplot()
    bars = len(metrics) * len(names)
    fig, ax = plt.subplots(figsize=(min(11.0, max(7.5, 1.5 + 0.26 * bars)), 4.2))
    width = 0.8 / len(names)
    palette = colors(stats)
    for i, name in enumerate(names):
        xs, ys, lows, highs = [], [], [], []
        for j, metric in enumerate(metrics):
            cell = cells.get((name, metric))
            if cell is None or cell.score.estimate is None:
                continue
            x = j - 0.4 + width * (i + 0.5)
            xs.append(x)
            ys.append(cell.score.estimate)
            lows.append(cell.score.estimate - (cell.score.ci_low or cell.score.estimate))
            highs.append((cell.score.ci_high or cell.score.estimate) - cell.score.estimate)
            mark = stars.get((name, metric), "")
            if mark:
                top = cell.score.ci_high or cell.score.estimate
                ax.text(x, top + 0.015, mark, ha="center", va="bottom", fontsize=8, color="#222")
        label = f"{name} (reference)" if i == 0 and len(names) > 1 else name
        ax.bar(xs, ys, width * 0.92, color=palette[name], label=label)
        ax.errorbar(xs, ys, yerr=[lows, highs], fmt="none", ecolor="#333", elinewidth=1, capsize=2)
    labels = [METRIC_LABELS.get(m, m.capitalize()) for m in metrics]
    crowded = len(metrics) > 5 or sum(map(len, labels)) > 60
    ax.set_xticks(
        range(len(metrics)),
        labels,
        rotation=20 if crowded else 0,
        ha="right" if crowded else "center",
    )
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("Equal-weight score (95% bootstrap CI)")
    ax.set_title(title + (" — stars: tests vs reference" if len(names) > 1 else ""))
    if len(names) > 1:
        ax.legend(
            ncols=min(4, len(names)),
            loc="upper center",
            bbox_to_anchor=(0.5, -0.16 if crowded else -0.1),
            frameon=False,
        )
    return _png(fig)


def scenario_bars(stats: Stats) -> bytes | None:
    """Obligations accuracy per scenario and provider (horizontal bars with intervals)."""
    if not stats.scenarios:
        return None
    names = [p.name for p in stats.providers]
    counts: dict[str, int] = {}
    for cell in stats.scenarios:
        counts[cell.scenario] = max(counts.get(cell.scenario, 0), cell.n)
    scenarios = sorted(counts, key=lambda s: (-counts[s], s))
    cells = {(c.provider, c.scenario): c for c in stats.scenarios}
    plt = _pyplot()
    height = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.32 * len(scenarios) * max(1.5, len(names) * 0.6)))
    palette = colors(stats)
    for i, name in enumerate(names):
        ys, xs, lows, highs = [], [], [], []
        for j, scenario in enumerate(scenarios):
            cell = cells.get((name, scenario))
            if cell is None or cell.accuracy.estimate is None:
                continue
            est = cell.accuracy.estimate
            ys.append(j - 0.4 + height * (i + 0.5))
            xs.append(est)
            lows.append(est - (cell.accuracy.ci_low if cell.accuracy.ci_low is not None else est))
            highs.append(
                (cell.accuracy.ci_high if cell.accuracy.ci_high is not None else est) - est
            )
        ax.barh(ys, xs, height * 0.92, color=palette[name], label=name)
        ax.errorbar(
            xs, ys, xerr=[lows, highs], fmt="none", ecolor="#333", elinewidth=0.8, capsize=1.5
        )
        # A marker at each estimate keeps a score of 0 visible (a bar of length 0 is not).
        ax.scatter(xs, ys, marker="|", s=60, color=palette[name], linewidths=2, zorder=3)
        if len(names) == 1:
            for x, y in zip(xs, ys, strict=True):
                ax.text(
                    1.01,
                    y,
                    f"{x:.2f}",
                    va="center",
                    ha="left",
                    fontsize=8,
                    color="#333",
                    transform=ax.get_yaxis_transform(),
                )
    ax.set_yticks(range(len(scenarios)), [f"{s} (n={counts[s]})" for s in scenarios])
    ax.invert_yaxis()
    ax.set_xlim(-0.01, 1.06)
    ax.set_xlabel("Obligations accuracy (95% bootstrap CI; none below 5 answers)")
    ax.set_title("Financial obligations: accuracy by scenario")
    if len(names) > 1:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
    return _png(fig)


def _by_task(trajectories: pd.DataFrame, stats: Stats) -> list[str]:
    return [t for t in stats.task_types if t in set(trajectories["task_type"])]


def latency_plot(stats: Stats, trajectories: pd.DataFrame) -> bytes | None:
    """Latency per task type and provider (box + points), budget or run timeout marked."""
    data = trajectories.dropna(subset=["latency_s"])
    if data.empty:
        return None
    budgets = stats.settings.latency_budget
    return _box_panels(
        stats,
        data,
        "latency_s",
        "Latency (s)",
        "Latency by task type",
        lambda task, cell: (
            (budgets[task], "budget")
            if task in budgets
            else (float(cell["timeout_s"].min()), "run timeout")
            if cell["timeout_s"].notna().any()
            else None
        ),
    )


def tool_call_plot(stats: Stats, trajectories: pd.DataFrame) -> bytes | None:
    data = trajectories.dropna(subset=["tool_calls"])
    if data.empty:
        return None
    return _box_panels(stats, data, "tool_calls", "Tool calls per question", "Tool calls", None)


def _box_panels(stats, data, column, ylabel, title, marker) -> bytes:
    plt = _pyplot()
    names = [p.name for p in stats.providers]
    tasks = _by_task(data, stats)
    fig, axes = plt.subplots(
        1, len(tasks), figsize=(max(4.0, 3.3 * len(tasks)), 3.6), squeeze=False, sharey=False
    )
    palette = colors(stats)
    rng = np.random.default_rng(0)
    for ax, task in zip(axes[0], tasks, strict=True):
        cell = data[data["task_type"] == task]
        series = [cell.loc[cell["provider"] == n, column].astype(float).to_numpy() for n in names]
        present = [i for i, s in enumerate(series) if len(s)]
        box = ax.boxplot(
            [series[i] for i in present],
            positions=list(range(len(present))),
            widths=0.55,
            patch_artist=True,
            showfliers=False,
            medianprops={"color": "#111"},
        )
        for patch, i in zip(box["boxes"], present, strict=True):
            patch.set_facecolor(palette[names[i]])
            patch.set_alpha(0.55)
        for pos, i in enumerate(present):
            jitter = rng.uniform(-0.18, 0.18, len(series[i]))
            ax.scatter(pos + jitter, series[i], s=5, color=palette[names[i]], alpha=0.6, lw=0)
        ax.set_xticks(range(len(present)), [_short(names[i]) for i in present], rotation=20)
        ax.set_title(TASK_LABELS.get(task, task))
        mark = marker(task, cell) if marker else None
        if mark and math.isfinite(mark[0]):
            ax.axhline(mark[0], color="#c0392b", ls="--", lw=1)
            ax.text(
                len(present) - 0.5,
                mark[0],
                f" {mark[1]} {mark[0]:g} s",
                color="#c0392b",
                va="bottom",
                ha="right",
                fontsize=8,
            )
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title, y=0.99)
    fig.tight_layout()
    return _png(fig)


def _short(name: str, width: int = 16) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _cost_metric(stats: Stats) -> tuple[str, str, str]:
    """(metric, score scope, operations scope) the cost plot shows: obligations accuracy if
    present, else the equal-weight Overall."""
    if "accuracy" in stats.metrics:
        return "accuracy", "obligations", "obligations"
    return "overall", EQUAL_WEIGHT, "all"


def cost_points(stats: Stats) -> tuple[list[tuple[str, float, ScoreCell]], list[str]]:
    """The cost plot's points (provider, cost per question, score cell) and the providers with a
    score but no known cost (every record's cost unknown), in provider order."""
    metric, scope, ops_scope = _cost_metric(stats)
    costs = {
        o.provider: o.cost_per_question
        for o in stats.operations
        if o.task_type == ops_scope or (ops_scope == "all" and len(stats.task_types) == 1)
    }
    cells = {c.provider: c for c in stats.scores if c.metric == metric and c.scope == scope}
    scored = [
        name
        for name in (p.name for p in stats.providers)
        if name in cells and cells[name].score.estimate is not None
    ]
    points = [(name, costs[name], cells[name]) for name in scored if costs.get(name) is not None]
    return points, [name for name in scored if costs.get(name) is None]


def cost_plot(stats: Stats) -> bytes | None:
    """Score against cost per question, one point per provider (obligations accuracy if present)."""
    metric = _cost_metric(stats)[0]
    points, _unknown = cost_points(stats)
    if not points:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    palette = colors(stats)
    for name, cost, cell in points:
        est = cell.score.estimate
        low = est - (cell.score.ci_low if cell.score.ci_low is not None else est)
        high = (cell.score.ci_high if cell.score.ci_high is not None else est) - est
        ax.errorbar(
            [cost], [est], yerr=[[low], [high]], fmt="o", color=palette[name], capsize=3, ms=7
        )
        ax.annotate(name, (cost, est), textcoords="offset points", xytext=(7, 4), fontsize=8.5)
    front = pareto_front([(name, cost, cell.score.estimate) for name, cost, cell in points])
    if len(front) > 1:
        ax.plot(
            [cost for _, cost, _ in front],
            [score for _, _, score in front],
            linestyle="--",
            color="0.4",
            linewidth=1,
            label="Pareto front (no other agent is cheaper and better)",
        )
        ax.legend(loc="lower right", fontsize=8)
    for _name, cost, score in front:
        ax.scatter([cost], [score], s=160, facecolors="none", edgecolors="0.2", linewidths=1.2)
    ax.set_xlabel("Cost per question (USD)")
    label = "Obligations accuracy" if metric == "accuracy" else "Equal-weight overall score"
    ax.set_ylabel(f"{label} (95% CI)")
    ax.set_ylim(0, 1.05)
    # a little room left of $0, so a model-free agent's point (a known $0) is not cut in half
    span = max(c for _, c, _ in points) * 1.3 or 0.01
    ax.set_xlim(left=-0.04 * span, right=span)
    ax.set_title(f"{label} against cost (circled: Pareto front)")
    return _png(fig)


def pareto_front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """(name, cost, score) points no other point beats (cheaper or equal and better, or better
    or equal and cheaper), by increasing cost."""
    front = [
        p
        for p in points
        if not any(q[1] <= p[1] and q[2] >= p[2] and (q[1] < p[1] or q[2] > p[2]) for q in points)
    ]
    return sorted(front, key=lambda p: (p[1], -p[2]))


def all_plots(stats: Stats, trajectories: pd.DataFrame) -> dict[str, bytes]:
    """name -> PNG bytes, in report order; plots without data are left out."""
    plots = {
        "scores.png": score_bars(stats),
        "scenarios.png": scenario_bars(stats),
        "research.png": research_bars(stats),
        "latency.png": latency_plot(stats, trajectories),
        "tool_calls.png": tool_call_plot(stats, trajectories),
        "cost.png": cost_plot(stats),
    }
    return {name: png for name, png in plots.items() if png is not None}
