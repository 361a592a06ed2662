"""Aggregating a scores file: by task type, and with task types weighted equally.

A record's dimension score = mean of its non-null assertion scores (computed when judged). Here,
as everywhere (:mod:`ledgerbench_core._overall`): a task type's dimension mean is the mean over
questions (a question's trials averaged first) where that dimension was scored; judge errors and
n/a are counted, never averaged in. Equal weight = the mean of the task-type means, so 100
obligations do not outweigh 25 briefs. **Overall** = the mean of the equal-weight dimension means
(the paper's, docs/statistics.md); ``answer_mean`` = the judge's per-answer mean averaged the same
way.

Accuracy of research items keyed on a world is LedgerBench's extension (the paper had no key for
them): it is reported as ``research_accuracy`` (per task type, equal-weight, and under
``extension``), beside the Overall and never in it nor in the equal-weight ``accuracy``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ledgerbench_core._overall import (
    ANSWER_MEAN,
    EXTENSION_CELLS,
    OVERALL,
    answer_means,
    dimension_means,
    equal_weight,
    extension_accuracy,
    overall,
    overall_text,
    paper_cells,
    run_overall,
    scored_answers,
)
from ledgerbench_core.dataset import Dimension, TaskType
from ledgerbench_core.scores import DimensionStatus, ScoreRecord, ScoreStatus

RESEARCH_ACCURACY = "research_accuracy"
"""Accuracy of keyed research items (the extension:
``ledgerbench_core._overall.EXTENSION_CELLS``)."""
COLUMNS = [*(d.value for d in Dimension), RESEARCH_ACCURACY, OVERALL, ANSWER_MEAN]


def summarize(
    records: list[ScoreRecord], clusters: tuple[dict[str, str], str] | None = None
) -> dict[str, Any]:
    """Summary as plain data (JSON-ready): counts, per task type means, equal-weight means, and
    with ``clusters`` (question_id -> template/kind, label) the Overall's clustered interval."""
    by_type: dict[TaskType, list[ScoreRecord]] = defaultdict(list)
    for record in records:
        by_type[record.task_type].append(record)
    answers = scored_answers(records)
    means = dimension_means(answers)
    by_answer = answer_means(answers)
    task_types: dict[str, Any] = {}
    for task_type in TaskType:
        group = by_type.get(task_type)
        if group:
            task_types[task_type.value] = _summarize_group(group, task_type.value, means, by_answer)
    equal = {
        dimension: {"mean": equal_weight(cells), "task_types": len(cells)}
        for dimension, cells in paper_cells(means).items()
        if cells
    }
    extension = extension_accuracy(means)
    if extension:
        equal[RESEARCH_ACCURACY] = {"mean": equal_weight(extension), "task_types": len(extension)}
    equal[OVERALL] = {"mean": overall(means), "task_types": len(task_types)}
    equal[ANSWER_MEAN] = {"mean": equal_weight(by_answer), "task_types": len(by_answer)}
    return {
        "records": len(records),
        "scored": sum(r.status is ScoreStatus.scored for r in records),
        "unscored": sum(r.status is ScoreStatus.unscored for r in records),
        "infra_errors": sum(r.status is ScoreStatus.infra_error for r in records),
        "judge_errors": sum(t["judge_errors"] for t in task_types.values()),
        "task_types": task_types,
        "equal_weight": equal,
        "overall": overall(means),
        "overall_interval": _overall_interval(answers, clusters),
        "extension": {RESEARCH_ACCURACY: extension},
    }


def _overall_interval(answers: list, clusters: tuple[dict[str, str], str] | None) -> Any:
    from ledgerbench_core._clustered import overall_interval

    found = overall_interval(answers, clusters[0] if clusters else {})
    if found is None:
        return None
    low, high, se, df = found
    label = clusters[1] if clusters else "items as the unit"
    return {"low": low, "high": high, "se": se, "df": df, "clustered": label}


def _summarize_group(
    records: list[ScoreRecord],
    task_type: str,
    means: dict[str, dict[str, float]],
    by_answer: dict[str, float],
) -> dict[str, Any]:
    counts: dict[str, int] = defaultdict(int)
    judge_errors: dict[str, int] = defaultdict(int)
    not_applicable: dict[str, int] = defaultdict(int)
    needs_llm: dict[str, int] = defaultdict(int)
    scored = [r for r in records if r.status is ScoreStatus.scored]
    for record in scored:
        for dimension, score in record.dimensions.items():
            if score.status is DimensionStatus.scored and score.score is not None:
                counts[dimension.value] += 1
            elif score.status is DimensionStatus.judge_error:
                judge_errors[dimension.value] += 1
            elif score.status is DimensionStatus.needs_llm:
                needs_llm[dimension.value] += 1
            else:
                not_applicable[dimension.value] += 1
    cells = {
        _column(dimension, task_type): {"mean": means[dimension][task_type], "n": n}
        for dimension, n in counts.items()
    }
    answers = [r for r in scored if r.overall is not None]
    if cells:
        cells[OVERALL] = {
            "mean": run_overall(scored_answers(scored), task_type),
            "n": len(answers),
        }
    if task_type in by_answer:
        cells[ANSWER_MEAN] = {"mean": by_answer[task_type], "n": len(answers)}
    return {
        "records": len(records),
        "scored": len(scored),
        "unscored": sum(r.status is ScoreStatus.unscored for r in records),
        "infra_errors": sum(r.status is ScoreStatus.infra_error for r in records),
        "judge_errors": sum(judge_errors.values()),
        "scores": cells,
        "judge_error_by_dimension": dict(judge_errors),
        "not_applicable_by_dimension": dict(not_applicable),
        "needs_llm_by_dimension": dict(needs_llm),
    }


def _column(dimension: str, task_type: str) -> str:
    """A research item's accuracy is the extension's column, never the paper's accuracy."""
    return RESEARCH_ACCURACY if (dimension, task_type) in EXTENSION_CELLS else dimension


def extension_text(summary: dict[str, Any]) -> str:
    """The extension's accuracy per task type, labelled as such ("" when there is none)."""
    cells = (summary.get("extension") or {}).get(RESEARCH_ACCURACY) or {}
    if not cells:
        return ""
    parts = ", ".join(f"{task} {_fmt(value)}" for task, value in cells.items())
    return f"LedgerBench extension (not in the Overall): research accuracy {parts}"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def summary_markdown(summary: dict[str, Any], title: str) -> str:
    """The summary as a markdown table: one row per task type plus the equal-weight row, and the
    Overall on a line of its own."""
    present = [c for c in COLUMNS if any(c in t["scores"] for t in summary["task_types"].values())]
    headline = f"Overall {overall_text(summary['equal_weight'][OVERALL]['mean'])}"
    if interval := summary.get("overall_interval"):
        headline += (
            f" [{interval['low']:.3f}, {interval['high']:.3f}] (95%, clustered: "
            f"{interval['clustered']})"
        )
    if label := (summary.get("coverage") or {}).get("label"):
        headline += f" ({label})"
    extension = extension_text(summary)
    lines = [
        f"## {title}",
        "",
        headline + (f" · {extension}" if extension else ""),
        "",
        f"{summary['records']} records: {summary['scored']} scored, "
        f"{summary.get('unscored', 0)} unscored (a check lacked its database), "
        f"{summary['infra_errors']} infrastructure failures (not judged), "
        f"{summary['judge_errors']} dimension judge errors (unscored)."
        + _unjudged_note(summary)
        + _left_out_note(summary),
        "",
    ]
    if not present:  # no column to show: a table would have none either
        lines.append("No dimension was scored, so there is no table of means.")
        return "\n".join(lines)
    lines += [
        "| task type | n | " + " | ".join(present) + " |",
        "|---|---:|" + "---:|" * len(present),
    ]
    for name, group in summary["task_types"].items():
        cells = []
        for column in present:
            cell = group["scores"].get(column)
            cells.append(f"{_fmt(cell['mean'])} ({cell['n']})" if cell else "-")
        lines.append(f"| {name} | {group['scored']} | " + " | ".join(cells) + " |")
    equal = [_fmt(summary["equal_weight"].get(c, {}).get("mean")) for c in present]
    lines.append("| **equal weight** | | " + " | ".join(equal) + " |")
    lines.append("")
    lines.append(
        "Cells: mean over questions (answers with a score). Equal weight: mean of the task-type "
        "means. Overall: the mean of the equal-weight dimension scores (docs/statistics.md); "
        "answer_mean: the judge's per-answer mean, averaged the same way."
    )
    if RESEARCH_ACCURACY in present:
        lines.append(
            "research_accuracy: accuracy of research items keyed on a world, LedgerBench's "
            "extension (FORCE-Bench had no key for them): beside the Overall, never in it or in "
            "accuracy."
        )
    return "\n".join(lines)


def current_scores(
    records: list[ScoreRecord], trajectories: list[Any] | None
) -> tuple[list[ScoreRecord], dict[str, int]]:
    """The scores that belong to the run's readable records now, and how many were left out:
    ``stale`` (the answer, status or termination changed since judging: the analysis refuses
    them) and ``orphaned`` (no readable record: a cut or damaged line, or a record gone). With no
    trajectories to compare (``None``), every score is kept."""
    if trajectories is None:
        return records, {"stale": 0, "orphaned": 0}
    from judge._runner import score_matches

    current = {(t.question_id, t.trial): t for t in trajectories}
    kept, stale, orphaned = [], 0, 0
    for record in records:
        trajectory = current.get((record.question_id, record.trial))
        if trajectory is None:
            orphaned += 1
        elif not score_matches(record, trajectory):
            stale += 1
        else:
            kept.append(record)
    return kept, {"stale": stale, "orphaned": orphaned}


def freshness_warnings(name: str, left_out: dict[str, int], run_dir: Path) -> list[str]:
    """One line per kind of score left out of the summary, with the fix."""
    lines = []
    if left_out.get("stale"):
        lines.append(
            f"warning: {name}: {left_out['stale']} score(s) are stale (the answer, status or "
            f"termination changed since judging; the analysis refuses them) and are left out; "
            f"re-judge: python -m judge.run {run_dir} --judge ..."
        )
    if left_out.get("other_grading"):
        lines.append(
            f"warning: {name}: {left_out['other_grading']} score(s) are of another grading "
            "version than the file's latest and are left out; re-score: python -m judge.run "
            f"{run_dir} --judge ... --overwrite"
        )
    if left_out.get("orphaned"):
        lines.append(
            f"warning: {name}: {left_out['orphaned']} score(s) belong to no readable record "
            "(a cut or damaged trajectory line) and are left out; resume the run to redo them"
        )
    return lines


def run_summary(
    name: str,
    records: list[ScoreRecord],
    trajectories: list[Any] | None,
    clusters: tuple[dict[str, str], str] | None = None,
) -> tuple[dict[str, Any], dict[str, int]]:
    """The summary of one judge's scores of a run: only current scores (:func:`current_scores`)
    of one grading version (:func:`ledgerbench_core._coverage.one_grading`), with their coverage
    of the run's answers (``coverage``: "14/100 scored", the grading version), and what was
    left out."""
    from ledgerbench_core._coverage import coverage, one_grading

    records, left_out = current_scores(records, trajectories)
    records, _, other = one_grading(records)
    answers = None if trajectories is None else [(t.question_id, t.trial) for t in trajectories]
    summary = summarize(records, clusters)
    summary["coverage"] = coverage(name, records, answers).as_dict()
    summary["coverage"]["other_grading"] = other
    left_out["other_grading"] = other
    return summary, left_out


def _unjudged_note(summary: dict[str, Any]) -> str:
    cover = summary.get("coverage") or {}
    if not cover.get("unjudged"):
        return ""
    return f" {cover['unjudged']} of the run's {cover['answers']} answers not judged yet."


def _left_out_note(summary: dict[str, Any]) -> str:
    parts = []
    if summary.get("stale"):
        parts.append(f"{summary['stale']} stale")
    if summary.get("orphaned"):
        parts.append(f"{summary['orphaned']} without a readable record")
    if summary.get("other_grading"):
        parts.append(f"{summary['other_grading']} of another grading version")
    if summary.get("unreadable_trajectory_lines"):
        parts.append(f"{summary['unreadable_trajectory_lines']} unreadable trajectory line(s)")
    return f" Left out: {', '.join(parts)} (see the warnings)." if parts else ""


def scores_files(run_dir: Path, judge_name: str | None = None) -> list[Path]:
    directory = run_dir / "scores"
    if judge_name:
        return [directory / f"{judge_name}.jsonl"]
    return sorted(directory.glob("*.jsonl")) if directory.exists() else []


def rule_disagreements(records: list[ScoreRecord]) -> list[dict[str, Any]]:
    """``--with-rules`` scores: every assertion where the rule and the LLM gave different scores,
    whether the rule's verdict replaced the LLM's (certain) or not."""
    rows = []
    for record in records:
        rules = record.extra.get("rules") or {}
        overridden = record.extra.get("llm_overridden") or {}
        for dimension, verdicts in rules.items():
            try:
                kept = record.dimensions.get(Dimension(dimension))
            except ValueError:
                continue
            final = {a.assertion_id: a for a in (kept.assertions if kept else [])}
            for assertion_id, rule in verdicts.items():
                if assertion_id in overridden.get(dimension, {}):
                    llm = overridden[dimension][assertion_id]
                elif assertion_id in final and final[assertion_id].decided_by == "llm":
                    llm = final[assertion_id].score
                else:
                    continue
                if llm is None or rule["score"] is None or abs(llm - rule["score"]) < 1e-9:
                    continue
                rows.append(
                    {
                        "question_id": record.question_id,
                        "trial": record.trial,
                        "assertion_id": assertion_id,
                        "rule": rule["score"],
                        "llm": llm,
                        "kept": "rule" if rule["certain"] else "llm",
                        "reason": rule["reason"],
                    }
                )
    return rows


def disagreements_markdown(rows: list[dict[str, Any]], limit: int = 50) -> str:
    if not rows:
        return ""
    lines = [
        "",
        f"Rules and LLM disagree on {len(rows)} assertion(s) (kept = the verdict in the scores: "
        "the rule's when it is certain):",
        "",
        "| question | trial | assertion | rule | LLM | kept | rule's reason |",
        "|---|---:|---|---:|---:|---|---|",
    ]
    for row in rows[:limit]:
        reason = row["reason"].replace("|", "/")[:120]
        lines.append(
            f"| {row['question_id']} | {row['trial']} | {row['assertion_id']} | "
            f"{row['rule']:g} | {row['llm']:g} | {row['kept']} | {reason} |"
        )
    if len(rows) > limit:
        lines.append(f"| ... {len(rows) - limit} more (see --json) | | | | | | |")
    return "\n".join(lines)
