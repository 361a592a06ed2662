"""The report: one list of blocks rendered to Markdown (``report.md``) and self-contained HTML.

The HTML embeds its images as base64 data URIs and its CSS inline: it needs no network to view.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field

import numpy as np

from analysis._data import (
    METRIC_LABELS,
    RESEARCH_ACCURACY,
    RESEARCH_TASK_TYPES,
    RETRIEVAL_METRICS,
    TASK_LABELS,
)
from analysis._plots import cost_points
from analysis._schema import EQUAL_WEIGHT, Contrast, ResearchGap, ScoreCell, Severity, Stats

IMAGE_TITLES = {
    "scores.png": "Scores by metric",
    "scenarios.png": "Obligations accuracy by scenario",
    "research.png": "Research: accuracy, retrieval and citations",
    "latency.png": "Latency",
    "tool_calls.png": "Tool calls",
    "cost.png": "Accuracy against cost",
}


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Paragraph:
    text: str


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    note: str = ""


@dataclass
class Image:
    name: str
    title: str


@dataclass
class Details:
    """Secondary material: collapsed in HTML, a titled subsection in Markdown."""

    summary: str
    blocks: list = field(default_factory=list)


@dataclass
class Links:
    """(label, address) pairs: links into the trajectory viewer."""

    items: list[tuple[str, str]]


@dataclass
class Report:
    title: str
    blocks: list = field(default_factory=list)

    def add(self, *blocks) -> None:
        self.blocks.extend(blocks)


# ----------------------------------------------------------------------------------------------
# Formatting helpers
# ----------------------------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_ci(estimate: float | None, low: float | None, high: float | None, digits: int = 2) -> str:
    if estimate is None:
        return "–"
    if low is None or high is None:
        return fmt(estimate, digits)
    return f"{estimate:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _bounds(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def fmt_signed_ci(estimate: float | None, low: float | None, high: float | None) -> str:
    if estimate is None:
        return "–"
    if low is None or high is None:
        return f"{estimate:+.3f}"
    return f"{estimate:+.3f} [{low:+.3f}, {high:+.3f}]"


def fmt_p(p: float | None) -> str:
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def p_text(p: float | None, correction: str = "none") -> str:
    name = "p" if correction == "none" else f"{correction}-adjusted p"
    if p is None:
        return f"{name} unknown"
    return f"{name} < 0.001" if p < 0.001 else f"{name} = {p:.3f}"


def task_label(scope: str) -> str:
    return TASK_LABELS.get(scope, scope)


# ----------------------------------------------------------------------------------------------
# Building the report
# ----------------------------------------------------------------------------------------------


def build_report(stats: Stats, images: list[str], viewer: str | None = None) -> Report:
    report = Report(title=_title(stats))
    report.add(Heading("Summary"), Bullets(summary_lines(stats)))
    report.add(*headline_section(stats))
    if "scores.png" in images:
        report.add(Image("scores.png", IMAGE_TITLES["scores.png"]))
    report.add(*task_type_sections(stats))
    if "scenarios.png" in images or stats.scenarios:
        report.add(Heading("Financial obligations by scenario", 3))
        if "scenarios.png" in images:
            report.add(Image("scenarios.png", IMAGE_TITLES["scenarios.png"]))
    report.add(*contrast_section(stats))
    report.add(*research_section(stats, images))
    report.add(*conversation_section(stats.conversations, stats.settings.reference))
    if viewer:
        report.add(*viewer_section(stats, viewer))
    report.add(*operations_section(stats, images))
    report.add(*trials_section(stats))
    report.add(*missing_section(stats))
    report.add(*guards_section(stats))
    report.add(*method_section(stats))
    report.add(*clustering_appendix(stats))
    report.add(*items_appendix(stats))
    return report


def items_appendix(stats: Stats, top: int = 10) -> list:
    """Which items carry the signal (items.json has every item)."""
    if not stats.items and not stats.signal_noise:
        return []
    blocks: list = [Heading("Appendix: items")]
    if stats.signal_noise:
        rows = [
            [
                task_label(c.task_type),
                str(c.agents),
                fmt(c.signal, 3),
                fmt(c.noise, 3),
                fmt(c.ratio, 1),
            ]
            for c in stats.signal_noise
        ]
        blocks.append(
            Table(
                ["Task type", "Agents", "Signal", "Noise", "Signal / noise"],
                rows,
                "Signal: SD across agents of their mean score (the judge's per-answer mean); "
                "noise: mean SD of one agent's mean score between trials (needs 2+ trials). A "
                "low ratio: the task type adds noise more than it separates agents.",
            )
        )
    if stats.items:
        blocks += item_tables(stats, top)
    return blocks


DISCRIMINATING = 0.3
"""r or D above which an item counts as discriminating (the usual rule of thumb for both)."""


def item_tables(stats: Stats, top: int) -> list:
    """Per task type: items, always/never solved, discriminating by r and by D; then the most
    discriminating items (by r with 3+ agents, else by D)."""
    agents = list(dict.fromkeys(a for i in stats.items for a in i.pass_rate))
    rows = []
    for task_type in dict.fromkeys(i.task_type for i in stats.items):
        mine = [i for i in stats.items if i.task_type == task_type]
        r = [i.discrimination for i in mine if i.discrimination is not None]
        d = [i.discrimination_index for i in mine if i.discrimination_index is not None]
        rows.append(
            [
                task_label(task_type),
                str(len(mine)),
                str(sum(i.always_solved for i in mine)),
                str(sum(i.never_solved for i in mine)),
                str(sum(v > DISCRIMINATING for v in r)) if r else "–",
                fmt(float(np.mean(r)), 2) if r else "–",
                str(sum(v > DISCRIMINATING for v in d)) if d else "–",
                fmt(float(np.mean(d)), 2) if d else "–",
            ]
        )
    note = (
        "Per item (items.json): each agent's pass rate; discrimination r, the point-biserial "
        "correlation across agents of the pass rate against the agent's Overall (3+ agents), "
        "and D, the upper-lower index (the pass rate of the better-ranked half of the agents "
        "by Overall minus that of the worse-ranked half); always solved / never solved by every "
        "agent; the scripted and nothing baselines' pass rates when those runs are compared."
    )
    if len(agents) == 2:
        note += (
            " With two agents r is not computed: a correlation over two agents is +1 or -1 "
            "whenever the item separates them and says nothing more. D says the same with its "
            "size: the better agent's pass rate minus the worse one's (-1 to 1)."
        )
    blocks: list = [
        Table(
            [
                "Task type",
                "Items",
                "Always solved",
                "Never solved",
                f"Discriminating (r > {DISCRIMINATING:g})",
                "Mean r",
                f"D > {DISCRIMINATING:g}",
                "Mean D",
            ],
            rows,
            note,
        )
    ]
    by_r = any(i.discrimination is not None for i in stats.items)
    ranked = sorted(
        (
            i
            for i in stats.items
            if (i.discrimination if by_r else i.discrimination_index) is not None
        ),
        key=lambda i: -((i.discrimination if by_r else i.discrimination_index) or 0),
    )[:top]
    if ranked:
        item_rows = [
            [
                i.question_id,
                task_label(i.task_type),
                fmt(i.discrimination, 2),
                fmt(i.discrimination_index, 2),
                *[fmt(i.pass_rate.get(a), 2) for a in agents],
                fmt(i.scripted, 2),
                fmt(i.nothing, 2),
            ]
            for i in ranked
        ]
        header = ["Item", "Task type", "r", "D", *agents, "scripted baseline", "nothing baseline"]
        blocks.append(
            Details(
                f"The {len(ranked)} most discriminating items (by {'r' if by_r else 'D'})",
                [Table(header, item_rows)],
            )
        )
    return blocks


def clustering_appendix(stats: Stats) -> list:
    """What the items were clustered by, and each equal-weight mean's clustered interval beside
    the naive one (every item its own cluster)."""
    rows = [
        [task_label(c.task_type), c.by, str(c.items), str(c.clusters), c.note or ""]
        for c in stats.clustering
    ]
    blocks: list = [
        Heading("Appendix: clustering"),
        Table(["Task type", "Clustered by", "Items", "Clusters", "Note"], rows),
    ]
    cells = [c for c in stats.scores if c.scope == EQUAL_WEIGHT and c.metric in stats.metrics]
    naive_rows = []
    for cell in cells:
        naive = cell.naive
        naive_rows.append(
            [
                cell.provider,
                cell.metric,
                fmt(cell.score.estimate, 3),
                _bounds(cell.score.ci_low, cell.score.ci_high),
                _bounds(naive.ci_low, naive.ci_high) if naive else "–",
                fmt(cell.df, 1),
            ]
        )
    blocks.append(
        Table(
            ["Provider", "Metric", "Mean", "Clustered 95% CI", "Naive 95% CI", "df"],
            naive_rows,
            "Naive: every item its own cluster (the interval that ignores the templates; too "
            "narrow when items of a template are correlated).",
        )
    )
    return blocks


def conversation_section(cells: list, reference: str) -> list:
    from analysis._conversations import conversation_section as section

    return section(cells, reference)


def _title(stats: Stats) -> str:
    names = [p.name for p in stats.providers]
    if len(names) == 1:
        return f"LedgerBench report: {names[0]}"
    return f"LedgerBench comparison: {', '.join(names)} (reference {stats.settings.reference})"


def _score(stats: Stats, provider: str, metric: str, scope: str) -> ScoreCell | None:
    for cell in stats.scores:
        if (cell.provider, cell.metric, cell.scope) == (provider, metric, scope):
            return cell
    return None


def _contrast(
    stats: Stats, provider: str, metric: str, scope: str, reference: str | None = None
) -> Contrast | None:
    reference = reference or stats.settings.reference
    for model in stats.models:
        if model.metric != metric:
            continue
        for contrast in model.contrasts:
            if (contrast.provider, contrast.scope, contrast.reference) == (
                provider,
                scope,
                reference,
            ):
                return contrast
    return None


def _pairs(stats: Stats) -> list[tuple[str, str]]:
    """(reference, provider) for every pair, in provider order (reference first)."""
    names = [p.name for p in stats.providers]
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


def summary_lines(stats: Stats) -> list[str]:
    names = [p.name for p in stats.providers]
    lines: list[str] = []
    metric = (
        "overall" if "overall" in stats.metrics else (stats.metrics[0] if stats.metrics else None)
    )
    if metric is None:
        return [
            "No scored answers were found: nothing to compare. See Operations (error and "
            "timeout rates) and Missing scores for why."
        ]
    ranked = sorted(
        names,
        key=lambda n: -(_est(stats, n, metric) or -1.0),
    )
    if len(names) == 1:
        cell = _score(stats, names[0], metric, EQUAL_WEIGHT)
        lines.append(
            f"One provider, **{names[0]}**: equal-weight {metric} score "
            f"{_ci_text(cell)} over {cell.n if cell else 0} scored answers. No comparison was "
            "made (a single run); add another run to see who wins."
        )
    else:
        best = ranked[0]
        cell = _score(stats, best, metric, EQUAL_WEIGHT)
        lines.append(
            f"Highest equal-weight {metric} score: **{best}** at {_ci_text(cell)}. "
            "Ranking: " + ", ".join(f"{n} {fmt(_est(stats, n, metric))}" for n in ranked) + "."
        )
        for first, second in _pairs(stats):
            lines.append(_provider_summary(stats, second, first))
    lines.extend(_task_summary(stats, metric))
    acc = [n for n in names if _score(stats, n, "accuracy", "obligations")]
    if acc:
        parts = [f"{n} {_ci_text(_score(stats, n, 'accuracy', 'obligations'))}" for n in acc]
        lines.append("Obligations accuracy: " + "; ".join(parts) + ".")
    lines.append(
        "Research mode per run: "
        + "; ".join(_with_mode(stats, n) for n in names)
        + " (world: the research world's tools; web: live web tools; none: no research tools; "
        "golden: gold documents in the prompt)."
    )
    lines.extend(_research_summary(stats, names))
    not_tested = [g for g in stats.guards if g.severity == Severity.not_tested]
    if not_tested:
        lines.append(
            f"{len(not_tested)} check(s) stopped a test (marked 'not tested'); "
            "see Guards and caveats."
        )
    correction = stats.settings.correction.value
    how = (
        f"How sure: {clustering_text(stats)}. Means have 95% t intervals from cluster-robust "
        f"standard errors; differences 95% cluster-bootstrap intervals (B = "
        f"{stats.settings.bootstrap})"
    )
    if len(names) > 1:
        fit = (
            "each pair fitted on its own data"
            if stats.settings.model.value == "pairwise"
            else "one pooled model for all providers"
        )
        how += (
            f", paired across providers; dimension stars come from mixed-model Wald tests with "
            f"cluster-robust errors ({fit}; "
            f"{'no correction across metrics' if correction == 'none' else correction}), "
            "Overall's from a t test of the paired difference with its cluster-robust error; a "
            "difference smaller than its minimum "
            "detectable effect (MDE) is 'not distinguishable at this size', without stars"
        )
    lines.append(how + ".")
    mdd = _mdd_line(stats)
    if mdd:
        lines.append(mdd)
    disagree = [g for g in stats.guards if g.kind.value == "verdicts_disagree"]
    if disagree:
        lines.append(
            f"{len(disagree)} contrast(s) where the bootstrap interval and the p-value disagree "
            "are flagged with the reason (Guards and caveats)."
        )
    if stats.settings.latency_budget:
        lines.append(
            "**Latency budget applied**: answers slower than the budget count as failures here."
        )
    return lines


def _research_summary(stats: Stats, names: list[str]) -> list[str]:
    """One line per provider with the extension's figures, and one per world/golden gap."""
    lines = []
    shown = [RESEARCH_ACCURACY, "fetched_recall", "citation_precision"]
    for name in names:
        parts = []
        for metric in shown:
            cell = _score(stats, name, metric, EQUAL_WEIGHT)
            if cell is not None:
                parts.append(f"{_metric_label(metric).lower()} {_ci_text(cell)}")
        if parts:
            lines.append(
                f"Research (LedgerBench extension, not in the Overall), {name}: "
                + "; ".join(parts)
                + "."
            )
    for gap in stats.research_gaps:
        if (gap.metric, gap.scope) in (
            ("overall", EQUAL_WEIGHT),
            (RESEARCH_ACCURACY, EQUAL_WEIGHT),
        ):
            d = gap.difference
            what = "Overall" if gap.metric == "overall" else "research accuracy"
            lines.append(
                f"{gap.gap} ({gap.minuend} − {gap.subtrahend}), {what}: "
                f"{fmt_signed_ci(d.estimate, d.ci_low, d.ci_high)}"
                + (" — what retrieval costs the agent." if gap.gap == "golden - world" else ".")
            )
    return lines


def _mdd_line(stats: Stats) -> str | None:
    names = [p.name for p in stats.providers]
    if len(names) < 2:
        return None
    parts = []
    for metric in ("overall", "accuracy"):
        contrast = _contrast(stats, names[1], metric, EQUAL_WEIGHT, names[0])
        if contrast and contrast.mdd is not None:
            parts.append(f"{metric} {contrast.mdd:.3f}")
    if not parts:
        return None
    return (
        f"Smallest difference these data detect with {stats.settings.power:.0%} power "
        f"({names[1]} vs {names[0]}): " + ", ".join(parts) + "; a smaller true difference may "
        "go unseen (table under Contrasts)."
    )


def _est(stats: Stats, name: str, metric: str, scope: str = EQUAL_WEIGHT) -> float | None:
    cell = _score(stats, name, metric, scope)
    return cell.score.estimate if cell else None


def _ci_text(cell: ScoreCell | None) -> str:
    if cell is None:
        return "–"
    return fmt_ci(cell.score.estimate, cell.score.ci_low, cell.score.ci_high)


def _provider_summary(stats: Stats, name: str, ref: str) -> str:
    overall = _contrast(stats, name, "overall", EQUAL_WEIGHT, ref)
    correction = stats.settings.correction.value
    head = f"**{name}** vs {ref}"
    if overall and overall.bootstrap and overall.bootstrap.estimate is not None:
        d = overall.bootstrap
        head += f": Overall {fmt_signed_ci(d.estimate, d.ci_low, d.ci_high)}"
        if overall.tested and overall.distinguishable is False:
            head += f" (not distinguishable at this size: MDE {fmt(overall.mdd, 3)})"
        elif overall.tested:
            sure = "significant" if overall.significance else "not significant"
            head += f" ({sure}, clustered t test {p_text(overall.p_adjusted, correction)})"
        else:
            head += f" (not tested: {overall.not_tested_reason})"
    better, worse, tested = [], [], 0
    for metric in stats.metrics:
        if metric in ("overall", "answer_mean"):
            continue
        contrast = _contrast(stats, name, metric, EQUAL_WEIGHT, ref)
        tested += bool(contrast and contrast.tested)
        if contrast and contrast.tested and contrast.significance and contrast.distinguishable:
            target = better if (contrast.raw_difference or 0) > 0 else worse
            p = p_text(contrast.p_adjusted, correction)
            target.append(f"{metric} ({contrast.raw_difference:+.2f}, {p})")
    if better:
        head += "; significantly higher on " + ", ".join(better)
    if worse:
        head += "; significantly lower on " + ", ".join(worse)
    if not tested:
        head += "; no dimension tested (see Guards)"
    elif not better and not worse:
        head += "; no dimension differs significantly"
    return head + "."


def _task_summary(stats: Stats, metric: str) -> list[str]:
    names = [p.name for p in stats.providers]
    if len(names) < 2 or len(stats.task_types) < 2:
        return []
    parts = []
    for task in stats.task_types:
        scored = [(n, _est(stats, n, metric, task)) for n in names]
        scored = [(n, v) for n, v in scored if v is not None]
        if scored:
            best, value = max(scored, key=lambda x: x[1])
            parts.append(f"{task_label(task)}: {best} ({value:.2f})")
    return ["Best per task type (" + metric + "): " + "; ".join(parts) + "."] if parts else []


def _marked_score(stats: Stats, name: str, metric: str, scope: str) -> str:
    """``score [low, high]`` plus the significance stars, or ``(n.t.)`` when a guard stopped it."""
    contrast = _contrast(stats, name, metric, scope)
    mark = contrast.significance if contrast else ""
    if contrast is not None and not contrast.tested:
        mark = "(n.t.)"
    elif contrast is not None and contrast.distinguishable is False:
        mark = "(n.d.)"
    text = _ci_text(_score(stats, name, metric, scope))
    return f"{text} {mark}" if mark else text


def headline_section(stats: Stats) -> list:
    names = [p.name for p in stats.providers]
    judged = {p.name: p.judged or "–" for p in stats.providers}
    header = ["Provider", "Research", "Tools", "Judged", *[m.capitalize() for m in stats.metrics]]
    rows = []
    for name in names:
        row = [name + (" (ref.)" if name == stats.settings.reference and len(names) > 1 else "")]
        row += [research_mode(stats, name), tools_shown(stats, name), judged[name]]
        row += [_marked_score(stats, name, metric, EQUAL_WEIGHT) for metric in stats.metrics]
        rows.append(row)
    note = (
        "Equal-weight means across task types with 95% clustered t intervals (Method, Appendix: "
        "clustering). Overall = the mean of "
        "the provider's dimension scores (the paper's Overall); Answer_mean = the judge's "
        "per-answer mean of scored dimensions, averaged like a dimension (it weighs accuracy by "
        "the few answers it applies to). Research = the run's research mode (world: the research "
        "world's tools; web: live web tools; none: no research tools; golden: gold documents in "
        "the prompt). Tools = the MCP tools the agent was offered (the run's --tools, all "
        "without it, and how many). Accuracy is obligations accuracy, as in the paper: accuracy "
        "of keyed research items is LedgerBench's extension (section Research), never in these "
        "rows. Judged = how much of the run its judge scored ('14/100 scored' when only part: "
        "every figure of that provider rests on those answers) and the grading version."
    )
    if len(names) > 1:
        note += (
            " Marks against the reference: * p<0.05, ** p<0.01, *** p<0.001 (mixed-model Wald "
            "test; Overall: t test on the paired difference, both with cluster-robust errors); "
            "(n.d.) = not distinguishable at this size (the "
            "difference is smaller than the minimum detectable effect); (n.t.) = not tested, see "
            "Guards."
        )
    blocks: list = [Heading("Headline scores"), Table(header, rows, note)]
    if len(names) > 1:
        blocks.append(Heading("Differences from the reference", 3))
        header = ["Provider", *[m.capitalize() for m in stats.metrics]]
        rows = []
        for name in names[1:]:
            row = [name]
            for metric in stats.metrics:
                cell = _score(stats, name, metric, EQUAL_WEIGHT)
                d = cell.difference if cell else None
                row.append(fmt_signed_ci(d.estimate, d.ci_low, d.ci_high) if d else "–")
            rows.append(row)
        blocks.append(
            Table(header, rows, "Provider minus reference, paired cluster-bootstrap 95% CI.")
        )
    return blocks


def task_type_sections(stats: Stats) -> list:
    blocks: list = [Heading("By task type")]
    names = [p.name for p in stats.providers]
    for task in stats.task_types:
        metrics = [m for m in stats.metrics if any(_score(stats, n, m, task) for n in names)]
        if not metrics:
            continue
        header = ["Provider", "n", *[m.capitalize() for m in metrics]]
        rows = []
        for name in names:
            overall = _score(stats, name, metrics[0], task)
            row = [name, str(overall.n if overall else 0)]
            row += [_marked_score(stats, name, metric, task) for metric in metrics]
            rows.append(row)
        blocks.append(Heading(task_label(task), 3))
        blocks.append(Table(header, rows))
    return blocks


def _contrast_row(c: Contrast, with_scope: bool) -> list[str]:
    status = "tested" if c.tested else f"not tested: {c.not_tested_reason}"
    b = c.bootstrap
    row = [f"{c.provider} vs {c.reference}", c.metric]
    if with_scope:
        row.append(task_label(c.scope))
    return [
        *row,
        fmt_signed_ci(b.estimate, b.ci_low, b.ci_high) if b else "–",
        fmt(c.lmm_estimate, 3),
        fmt(c.lmm_se, 3),
        fmt(c.df, 0) if c.df is not None else "∞",
        fmt_p(c.p_value),
        fmt_p(c.p_adjusted),
        c.significance or "",
        fmt(c.mdd, 3),
        verdict(c),
        c.fit or "–",
        c.disagreement or status,
    ]


def verdict(c: Contrast) -> str:
    """What the contrast lets one say: distinguishable or not at this size (or not tested)."""
    if not c.tested:
        return "not tested"
    if c.distinguishable is False:
        return "not distinguishable at this size"
    return "distinguishable" if c.distinguishable else "–"


def clustering_text(stats: Stats) -> str:
    """``items clustered by template (obligations 73 templates / 100 items, ...)``."""
    parts = [
        f"{task_label(c.task_type)} {c.clusters} {c.by}s / {c.items} items"
        if c.by != "item"
        else f"{task_label(c.task_type)} {c.items} items as units"
        for c in stats.clustering
    ]
    if all(c.by == "item" for c in stats.clustering):
        return "items are the unit, no clustering (" + ", ".join(parts) + ")"
    return "items clustered (" + ", ".join(parts) + ")"


def contrast_section(stats: Stats) -> list:
    contrasts = [
        c for m in stats.models if m.metric not in stats.research_metrics for c in m.contrasts
    ]
    if not contrasts:
        return [
            Heading("Contrasts"),
            Paragraph(
                "No contrasts: a single provider has nothing to be compared with. The models "
                "are fitted only when there are at least two providers."
            ),
        ]
    order = {p.name: i for i, p in enumerate(stats.providers)}
    contrasts.sort(key=lambda c: (order[c.reference], order[c.provider]))
    tail = [
        "Difference [95% CI]",
        "Model estimate",
        "SE",
        "df",
        "p",
        "p adj.",
        "",
        "MDE 80%",
        "Verdict",
        "Fit",
        "Status",
    ]
    marginal = [_contrast_row(c, False) for c in contrasts if c.scope == EQUAL_WEIGHT]
    per_task = [_contrast_row(c, True) for c in contrasts if c.scope != EQUAL_WEIGHT]
    fit = (
        "each pair is fitted on its own data, one random-intercept model per task type (question "
        "and residual variances differ by task type), so no third provider changes a pair's "
        "verdict"
        if stats.settings.model.value == "pairwise"
        else "one pooled model with every provider (the paper's), one residual variance"
    )
    note = (
        "Every pair, later provider minus earlier. Difference: paired cluster bootstrap of the raw "
        f"equal-weight scores, over the task types both have. Model: {fit}; equal-weight contrast "
        "= mean of the task-type contrasts, Wald test; SE cluster-robust (sandwich of the fit, "
        "clusters - 1 df, Satterthwaite across task types) where items are clustered, the "
        "model's own otherwise (df ∞). Overall has no single-outcome model: its p is a t test "
        "of the paired difference over its cluster-robust SE. MDE 80% = the smallest true "
        "difference the test finds with 80% power at the 5% level, (t_0.975 + t_0.8) x SE; a "
        "smaller difference is 'not distinguishable at this size' and gets no stars. "
        "Direction comes from the raw difference, significance from the test."
    )
    return [
        Heading("Contrasts"),
        Table(["Pair", "Metric", *tail], marginal, note),
        *power_section(stats),
        Details(
            f"Per-task-type contrasts ({len(per_task)})",
            [Table(["Pair", "Metric", "Task type", *tail], per_task)],
        ),
    ]


def research_mode(stats: Stats, name: str) -> str:
    info = next((p for p in stats.providers if p.name == name), None)
    return (info.research if info else None) or "–"


def tools_shown(stats: Stats, name: str) -> str:
    info = next((p for p in stats.providers if p.name == name), None)
    return (info.tools if info else None) or "–"


def _with_mode(stats: Stats, name: str) -> str:
    """``name: mode``, or the name alone when it already ends with its mode."""
    mode = research_mode(stats, name)
    return name if name.endswith(f" · {mode}") else f"{name}: {mode}"


def _metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric.capitalize())


def research_section(stats: Stats, images: list[str]) -> list:
    """LedgerBench's extension: accuracy of all three task types, retrieval and citation figures
    of world-keyed research items, their contrasts, and the world vs golden (and none) gaps."""
    if not stats.research_metrics and not stats.research_gaps:
        return []
    names = [p.name for p in stats.providers]
    blocks: list = [
        Heading("Research (LedgerBench extension)"),
        Paragraph(
            "FORCE-Bench scored accuracy on obligations only: its research items had no answer "
            "key. LedgerBench's research world keys every entity-performance and brief item, so "
            "this section measures how well each agent researched. These figures are the "
            "extension's own: they never enter the headline table, Table 1's accuracy row or the "
            "Overall."
        ),
        Heading("Accuracy per task type", 3),
        Table(*_research_accuracy_table(stats, names)),
    ]
    retrieval = [m for m in RETRIEVAL_METRICS if m in stats.research_metrics]
    if retrieval:
        blocks += [Heading("Retrieval and citations", 3), Table(*_retrieval_table(stats, names))]
    if "research.png" in images:
        blocks.append(Image("research.png", IMAGE_TITLES["research.png"]))
    blocks += _research_contrasts(stats)
    blocks += _gap_blocks(stats)
    return blocks


def _research_accuracy_table(
    stats: Stats, names: list[str]
) -> tuple[list[str], list[list[str]], str]:
    cells = [("accuracy", "obligations")] + [(RESEARCH_ACCURACY, t) for t in RESEARCH_TASK_TYPES]
    cells.append((RESEARCH_ACCURACY, EQUAL_WEIGHT))
    header = [
        "Provider",
        "Research",
        "Financial obligations (paper)",
        *[task_label(t) for t in RESEARCH_TASK_TYPES],
        "Research, equal-weight",
    ]
    rows = [
        [name, research_mode(stats, name), *[_marked_score(stats, name, m, t) for m, t in cells]]
        for name in names
    ]
    note = (
        "Accuracy with 95% bootstrap intervals. Obligations: the paper's accuracy (the headline's "
        "Accuracy column). Entity performance and briefs: accuracy of items keyed on the research "
        "world (facts against the key, within tolerance, right period, unit and basis). "
        "Marks against the reference as everywhere (mixed-model Wald test); the research metrics "
        "are corrected as a family of their own."
    )
    return header, rows, note


def _retrieval_table(stats: Stats, names: list[str]) -> tuple[list[str], list[list[str]], str]:
    metrics = [m for m in RETRIEVAL_METRICS if m in stats.research_metrics]
    scopes = [
        t
        for t in (*RESEARCH_TASK_TYPES, EQUAL_WEIGHT)
        if t in stats.task_types or t == EQUAL_WEIGHT
    ]
    header = ["Provider", "Research", "Task type", "n", *[_metric_label(m) for m in metrics]]
    rows = []
    for name in names:
        for scope in scopes:
            found = [_score(stats, name, m, scope) for m in metrics]
            if not any(found):
                continue
            n = max(c.n for c in found if c)
            row = [name, research_mode(stats, name), task_label(scope), str(n)]
            rows.append(row + [_marked_score(stats, name, m, scope) for m in metrics])
    note = (
        "Per answer, over the item's gold documents (the documents that state its key's facts): "
        "Recall (shown) = share of them among the results the agent's searches returned; "
        "Recall (fetched) = share among the documents it fetched; Citation precision = share of "
        "the world documents the answer cites that are gold (answers that cite one); Citation "
        "recall = share of gold documents the answer cites. n = answers with these figures. "
        "Means over questions with 95% bootstrap intervals; marks against the reference."
    )
    return header, rows, note


def _research_contrasts(stats: Stats) -> list:
    contrasts = [c for m in stats.models if m.metric in stats.research_metrics for c in m.contrasts]
    if not contrasts:
        return []
    order = {p.name: i for i, p in enumerate(stats.providers)}
    contrasts.sort(key=lambda c: (order[c.reference], order[c.provider]))
    tail = ["Difference [95% CI]", "Model estimate", "SE", "p", "p adj.", "", "MDD 80%", "Fit"]
    tail.append("Status")
    marginal = [_contrast_row(c, False) for c in contrasts if c.scope == EQUAL_WEIGHT]
    per_task = [_contrast_row(c, True) for c in contrasts if c.scope != EQUAL_WEIGHT]
    return [
        Heading("Research contrasts", 3),
        Table(
            ["Pair", "Metric", *tail],
            marginal,
            "The same paired tests as the paper's metrics (section Contrasts): paired "
            "cluster-bootstrap difference, one mixed model per pair and task type, equal-weight "
            "over the research task types both have; corrected across the research metrics only.",
        ),
        Details(
            f"Per-task-type research contrasts ({len(per_task)})",
            [Table(["Pair", "Metric", "Task type", *tail], per_task)],
        ),
    ]


GAP_MEANINGS = {
    "golden - world": "what retrieval costs the agent: the same agent with the item's gold "
    "documents in its prompt (the reasoning ceiling) against finding them with the world's tools",
    "world - none": "what the research tools add over memorisation: the agent with the world's "
    "tools against no research tools at all (the memorisation floor; on a synthetic world any "
    "figure it states is invented)",
}


def _gap_blocks(stats: Stats) -> list:
    if not stats.research_gaps:
        return []
    kinds = list(dict.fromkeys(g.gap for g in stats.research_gaps))
    rows = [_gap_row(g) for g in stats.research_gaps]
    return [
        Heading("World vs golden: what retrieval costs", 3),
        Bullets([f"**{kind}**: {GAP_MEANINGS.get(kind, kind)}." for kind in kinds]),
        Table(
            ["Agent", "Gap", "Metric", "Task type", "Difference [95% CI]", "p", ""],
            rows,
            "Runs of the same harness and model in two research modes. Difference: paired "
            "cluster bootstrap (templates resampled within task type, the same resamples as "
            "every other figure), first mode minus second. p: the pair's mixed-model Wald test "
            "(Overall: the clustered t test), after the chosen correction.",
        ),
    ]


def _gap_row(gap: ResearchGap) -> list[str]:
    d = gap.difference
    agent = gap.harness or "?"
    if gap.model:
        agent += f":{gap.model}"
    metric = "Overall" if gap.metric == "overall" else _metric_label(gap.metric)
    return [
        agent,
        f"{gap.gap} ({gap.minuend} − {gap.subtrahend})",
        metric,
        task_label(gap.scope),
        fmt_signed_ci(d.estimate, d.ci_low, d.ci_high),
        fmt_p(gap.p_value),
        gap.significance,
    ]


def power_section(stats: Stats) -> list:
    pairs = _pairs(stats)
    rows = []
    for metric in stats.metrics:
        row = [metric]
        for first, second in pairs:
            c = _contrast(stats, second, metric, EQUAL_WEIGHT, first)
            row.append(fmt(c.mdd, 3) if c else "–")
        rows.append(row)
    return [
        Heading("How sure is sure enough", 3),
        Table(
            ["Metric", *[f"{b} vs {a}" for a, b in pairs]],
            rows,
            f"Minimum detectable difference (equal-weight, {stats.settings.power:.0%} power, "
            "two-sided 5% test) with these questions: differences smaller than this can exist "
            "and still show as not significant.",
        ),
    ]


def viewer_section(stats: Stats, viewer: str) -> list:
    """Links from each task type, scenario and contrast to its questions in ``ledgerbench view``."""
    from urllib.parse import urlencode

    page = viewer if viewer.endswith(".html") else viewer.rstrip("/") + "/index.html"

    def href(**filters: str) -> str:
        return f"{page}#/?{urlencode({'judge': stats.settings.judge, **filters})}"

    tasks = [(f"{task_label(t)}: every question", href(type=t)) for t in stats.task_types]
    scenarios = sorted({cell.scenario for cell in stats.scenarios})
    by_scenario = [(f"Obligations / {s}", href(type="obligations", scenario=s)) for s in scenarios]
    contrasts, seen = [], set()
    for contrast in (c for m in stats.models for c in m.contrasts):
        if (contrast.provider, contrast.scope) in seen:
            continue
        seen.add((contrast.provider, contrast.scope))
        filters = {} if contrast.scope == EQUAL_WEIGHT else {"type": contrast.scope}
        label = f"{contrast.provider} vs {stats.settings.reference} ({task_label(contrast.scope)})"
        contrasts.append(
            (f"{label}: questions where the runs differ", href(**filters, score="differ"))
        )
    blocks: list = [Heading("Questions behind the numbers"), Links(tasks)]
    if by_scenario:
        blocks += [Heading("By scenario", 3), Links(by_scenario)]
    if contrasts:
        blocks += [Heading("By contrast", 3), Links(contrasts)]
    return blocks


def operations_section(stats: Stats, images: list[str]) -> list:
    header = [
        "Provider",
        "Task type",
        "Runs",
        "Answered",
        "Timeout",
        "Max turns",
        "Cut",
        "Error",
        "Latency p50 / p90 / max (s)",
        "Tool calls mean / p90",
        "Tokens / q",
        "Cost / q",
        "Correct",
        "Tokens / correct",
        "Cost / correct",
    ]
    rows = []
    for o in stats.operations:
        lat = o.latency_s
        rows.append(
            [
                o.provider,
                task_label(o.task_type),
                str(o.trajectories),
                _pct(o.answered_rate),
                _pct(o.timeout_rate),
                _pct(o.max_turns_rate),
                _pct(o.answer_cut_rate),
                _pct(o.error_rate),
                f"{fmt(lat.p50, 1)} / {fmt(lat.p90, 1)} / {fmt(lat.max, 1)}" if lat.n else "–",
                f"{fmt(o.tool_calls.mean, 1)} / {fmt(o.tool_calls.p90, 0)}"
                if o.tool_calls.n
                else "–",
                fmt(o.tokens_per_question, 0),
                _usd(o.cost_per_question),
                str(o.correct) if o.correct is not None else "n/a",
                fmt(o.tokens_per_correct, 0) if o.correct is not None else "n/a",
                _usd(o.cost_per_correct) if o.correct is not None else "n/a",
            ]
        )
    note = (
        f"Correct = obligations accuracy ≥ {stats.settings.pass_threshold:g}; cost per correct "
        "answer exists only for obligations (the only task type with an accuracy dimension). "
        "Cut = answers the provider cut (output-token cap, content filter, unknown finish "
        "reason), judged as they stand and counted in Max turns too. Tokens / q leaves out "
        "records whose server reported no usage (unknown)."
    )
    blocks: list = [Heading("Operations"), Table(header, rows, note)]
    blocks += infra_failure_blocks(stats)
    for name in ("latency.png", "tool_calls.png", "cost.png"):
        if name in images:
            blocks.append(Image(name, IMAGE_TITLES[name]))
    if (note := unknown_cost_note(stats)) is not None:
        blocks.append(Paragraph(note))
    return blocks


UNKNOWN_COST_CAUSES = (
    "its records carry no cost: a model server that reported no token usage, a model missing "
    "from the price table (give --harness-opt price_per_mtok=INPUT,CACHED_INPUT,OUTPUT), or a "
    "published file without costs. A harness that calls no model records a known $0"
)


def unknown_cost_note(stats: Stats) -> str | None:
    """Why the accuracy-against-cost plot is missing, or which providers it leaves out: those
    whose cost is unknown (never drawn as $0); None when every scored provider is drawn."""
    points, unknown = cost_points(stats)
    if not unknown:
        return None
    names = ", ".join(unknown)
    lead = (
        "No accuracy-against-cost plot: the cost is unknown for"
        if not points
        else "Left out of the accuracy-against-cost plot, cost unknown:"
    )
    return f"{lead} {names}; {UNKNOWN_COST_CAUSES}."


def infra_failure_blocks(stats: Stats) -> list:
    """Infrastructure failures per provider and termination reason, beside the scores."""
    if not stats.infra_failures:
        return [Paragraph("Infrastructure failures: none (every run reached the agent).")]
    rows = [
        [
            c.provider,
            task_label(c.task_type),
            c.reason,
            f"{c.count} of {c.trajectories} ({c.count / c.trajectories:.0%})",
            str(c.excluded),
        ]
        for c in stats.infra_failures
    ]
    convention = stats.settings.infra_failures.value
    return [
        Heading("Infrastructure failures", 3),
        Table(
            ["Provider", "Task type", "Termination reason", "Failed runs", "Excluded from scores"],
            rows,
            f"--infra-failures {convention}: "
            + (
                "failed runs are left out of every score's denominator (the counts above)."
                if convention == "exclude"
                else "failed runs score 0 (the paper's convention), so none is excluded."
            ),
        ),
    ]


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _usd(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}" if value < 0.1 else f"${value:.2f}"


def _pass_k_table(stats: Stats) -> Table:
    """pass^k per provider and task type, with the flip rate beside it."""
    ks = sorted({p.k for p in stats.pass_k})
    by = {(p.provider, p.task_type, p.k): p for p in stats.pass_k}
    flips = {(f.provider, f.task_type): f for f in stats.flips}
    rows = []
    for task_type in dict.fromkeys(p.task_type for p in stats.pass_k):
        for provider in [p.name for p in stats.providers]:
            if not any((provider, task_type, k) in by for k in ks):
                continue
            flip = flips.get((provider, task_type))
            cells = [
                fmt(by[(provider, task_type, k)].value) if (provider, task_type, k) in by else "–"
                for k in ks
            ]
            flipped = f"{flip.rate:.0%} ({flip.flipped}/{flip.questions})" if flip else "–"
            rows.append([task_label(task_type), provider, *cells, flipped])
    return Table(
        ["Task type", "Provider", *[f"pass^{k}" for k in ks], "Flip rate"],
        rows,
        "Chance that k trials of the same question all pass (obligations: accuracy; research: "
        f"keyed research accuracy; pass = at least {stats.pass_k[0].threshold:g}). Flip rate: "
        "share of questions whose verdict changes between trials.",
    )


def trials_section(stats: Stats) -> list:
    if not stats.trials and not stats.pass_k:
        return []
    blocks: list = [Heading("Repeated trials")]
    if stats.pass_k:
        blocks.append(_pass_k_table(stats))
    if stats.trials:
        rows = [
            [
                t.provider,
                t.metric,
                task_label(t.task_type),
                str(t.questions),
                str(t.trials),
                fmt(t.mean_variance, 4),
                fmt(t.max_variance, 4),
            ]
            for t in stats.trials
        ]
        blocks.append(
            Table(
                [
                    "Provider",
                    "Metric",
                    "Task type",
                    "Questions",
                    "Trials",
                    "Mean variance",
                    "Max variance",
                ],
                rows,
                "Per-question variance of the score across trials (how stable answers are).",
            )
        )
    return blocks


def missing_section(stats: Stats) -> list:
    detail, totals = [], {}
    for m in stats.missing:
        missing = m.not_applicable + m.needs_llm + m.judge_error + m.infra_error + m.no_score_record
        if missing or m.rescored_as_failure:
            detail.append(
                [
                    m.provider,
                    m.metric,
                    task_label(m.task_type),
                    str(m.scored),
                    str(m.judge_error),
                    str(m.needs_llm),
                    str(m.not_applicable),
                    str(m.infra_error),
                    str(m.no_score_record),
                    str(m.rescored_as_failure),
                ]
            )
        key = (m.provider, m.task_type)
        total = totals.setdefault(key, [0, 0, 0, 0, 0, 0, 0])
        if m.metric == "answer_mean":
            total[0], total[4], total[5], total[6] = (
                m.scored,
                m.infra_error,
                m.no_score_record,
                m.rescored_as_failure,
            )
        else:
            total[1] += m.judge_error
            total[2] += m.needs_llm
            total[3] += m.not_applicable
    blocks: list = [Heading("Missing scores")]
    if not detail:
        blocks.append(Paragraph("Every answer was scored on every metric that applies to it."))
        return blocks
    rows = [[p, task_label(t), *map(str, v)] for (p, t), v in totals.items()]
    blocks.append(
        Table(
            [
                "Provider",
                "Task type",
                "Answers scored",
                "Judge errors",
                "Needs LLM",
                "Not applicable",
                "Run failed",
                "No score record",
                "Over budget → 0",
            ],
            rows,
            "Judge errors, needs-LLM and not-applicable count dimension scores (summed over "
            "metrics); the other columns count answers. Missing scores are left out of every "
            "statistic, never counted as 0.",
        )
    )
    blocks.append(
        Details(
            "Missing scores per metric",
            [
                Table(
                    [
                        "Provider",
                        "Metric",
                        "Task type",
                        "Scored",
                        "Judge error",
                        "Needs LLM",
                        "Not applicable",
                        "Run failed",
                        "No score record",
                        "Over budget → 0",
                    ],
                    detail,
                )
            ],
        )
    )
    return blocks


def guards_section(stats: Stats) -> list:
    blocks: list = [Heading("Guards and caveats")]
    stopped = [g for g in stats.guards if g.severity == Severity.not_tested]
    warned = [g for g in stats.guards if g.severity != Severity.not_tested]
    if stopped:
        blocks.append(Paragraph("**Not tested** (a check stopped the comparison):"))
        blocks.append(Bullets([_guard_text(g) for g in stopped]))
    else:
        blocks.append(Paragraph("No check stopped a comparison."))
    if warned:
        blocks.append(Paragraph("**Read with care**:"))
        blocks.append(Bullets([_guard_text(g) for g in warned]))
    if stats.caveats:
        blocks.append(Paragraph("**Caveats**:"))
        blocks.append(Bullets(stats.caveats))
    return blocks


def _guard_text(guard) -> str:
    where = " / ".join(x for x in (guard.metric, guard.provider, guard.task_type) if x)
    return f"[{guard.kind.value}] {where}: {guard.message}" if where else guard.message


def method_section(stats: Stats) -> list:
    s = stats.settings
    providers = [
        f"{p.name}: {p.source} {p.path}"
        + (f" (harness {p.harness}, model {p.model or '–'})" if p.harness else "")
        + f", research {p.research or 'unknown'}"
        + (f", tools {p.tools}" if p.tools else "")
        + f", {p.trajectories} answers on {p.questions} questions"
        + (f", {p.judged}" if p.judged else "")
        for p in stats.providers
    ]
    budget = ", ".join(f"{k}={v:g}s" for k, v in s.latency_budget.items()) or "none"
    model = (
        "Per metric and pair of providers, on that pair's data only: a linear mixed model "
        "score ~ provider with a random intercept per question in each task type (maximum "
        "likelihood), i.e. score ~ provider * task_type with question and residual variances "
        "per task type; the equal-weight contrast is the mean of the task-type contrasts."
        if s.model.value == "pairwise"
        else "Per metric, one linear mixed model score ~ provider * task_type with a random "
        "intercept per question over all providers, maximum likelihood (the paper's model); "
        "pairs without the reference are differences of two contrasts of the same fit."
    )
    return [
        Heading("Method"),
        Bullets(
            [
                model,
                "Overall (the paper's): the mean of a provider's dimension scores, each an "
                "equal-weight mean over the task types it applies to; its interval and its "
                "differences come from the same bootstrap resamples. Answer_mean: the judge's "
                "per-answer mean of the scored dimensions, averaged over answers and task types "
                "like a dimension.",
                f"Infrastructure failures: {s.infra_failures.value} "
                "(exclude = left out of every score; zero = scored 0, the paper's convention).",
                f"Clustering (--cluster {s.cluster}): {clustering_text(stats)}. Items of one "
                "template (or research kind) are correlated, so the cluster is the independent "
                "unit: means get t intervals with cluster-robust standard errors (clusters - 1 "
                "degrees of freedom; Satterthwaite across task types), mixed-model contrasts "
                "cluster-robust sandwich errors, and the bootstrap resamples whole clusters.",
                f"Bootstrap: B = {s.bootstrap}, seed {s.seed}, clusters resampled within task "
                "type, the same resample for every provider and metric (paired); percentile "
                "intervals.",
                f"Judge: {s.judge}. Correction across metrics: {s.correction.value}. Minimum "
                f"observations per provider: {s.min_observations}. Latency budget: {budget}.",
                *providers,
            ]
        ),
    ]


# ----------------------------------------------------------------------------------------------
# Rendering
# ----------------------------------------------------------------------------------------------


def to_markdown(report: Report) -> str:
    return "\n".join([f"# {report.title}", "", *_md_blocks(report.blocks)])


def _md_blocks(blocks: list) -> list[str]:
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            out += ["#" * block.level + " " + block.text, ""]
        elif isinstance(block, Paragraph):
            out += [block.text, ""]
        elif isinstance(block, Bullets):
            out += [f"- {item}" for item in block.items] + [""]
        elif isinstance(block, Table):
            out.append("| " + " | ".join(_md_cell(h) for h in block.header) + " |")
            out.append("|" + "---|" * len(block.header))
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block.rows]
            out += ["", f"_{block.note}_", ""] if block.note else [""]
        elif isinstance(block, Image):
            out += [f"![{block.title}]({block.name})", ""]
        elif isinstance(block, Links):
            out += [f"- [{label}](<{address}>)" for label, address in block.items] + [""]
        elif isinstance(block, Details):
            out += [f"#### {block.summary}", "", *_md_blocks(block.blocks)]
    return out


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;
max-width:1150px;color:#1c2430;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;border-bottom:2px solid #1f5f8b;padding-bottom:.3rem}
h2{font-size:1.25rem;margin-top:2rem;color:#1f5f8b}h3{font-size:1.05rem;margin-top:1.4rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.82rem;display:block;overflow-x:auto}
th,td{border:1px solid #d5dbe3;padding:.28rem .5rem;text-align:left;vertical-align:top}
td:first-child{white-space:nowrap}
th{background:#eef3f8}tr:nth-child(even) td{background:#f8fafc}
.note{font-size:.8rem;color:#556;margin-top:-.2rem}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #e3e7ee}
figcaption{font-size:.8rem;color:#556}
li{margin:.25rem 0}
details{margin:.6rem 0}summary{cursor:pointer;color:#1f5f8b;font-weight:600}
"""


SELF_CHECK = (
    "window.addEventListener('load',function(){var i=Array.prototype.slice.call(document.images);"
    "var ok=i.filter(function(x){return x.complete&&x.naturalWidth>0}).length;"
    "document.body.setAttribute('data-images-ok',ok+'/'+i.length);});"
)
"""Inline, offline: marks <body data-images-ok="loaded/total"> so a browser test can see the plots
decoded."""


def to_html(report: Report, images: dict[str, bytes]) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(report.title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{html.escape(report.title)}</h1>",
    ]
    parts += _html_blocks(report.blocks, images)
    parts.append(f"<script>{SELF_CHECK}</script></body></html>")
    return "\n".join(parts)


def _html_blocks(blocks: list, images: dict[str, bytes]) -> list[str]:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            parts.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            parts.append(f"<p>{_inline(block.text)}</p>")
        elif isinstance(block, Bullets):
            parts.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in block.items) + "</ul>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{html.escape(h)}</th>" for h in block.header)
            body = "".join(
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                for row in block.rows
            )
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            if block.note:
                parts.append(f'<p class="note">{html.escape(block.note)}</p>')
        elif isinstance(block, Image) and block.name in images:
            data = base64.b64encode(images[block.name]).decode("ascii")
            parts.append(
                f'<figure><img alt="{html.escape(block.title)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(block.title)}</figcaption></figure>"
            )
        elif isinstance(block, Links):
            items = "".join(
                f'<li><a href="{html.escape(address)}">{html.escape(label)}</a></li>'
                for label, address in block.items
            )
            parts.append(f"<ul>{items}</ul>")
        elif isinstance(block, Details):
            parts.append(f"<details><summary>{html.escape(block.summary)}</summary>")
            parts += _html_blocks(block.blocks, images)
            parts.append("</details>")
    return parts


def _inline(text: str) -> str:
    """Escape, then render **bold** (the only inline markup the report uses)."""
    escaped = html.escape(text)
    pieces = escaped.split("**")
    return "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(pieces))
