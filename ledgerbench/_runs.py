"""``ledgerbench runs [DIR]``: one line per run under DIR, like ``inspect log list``.

A run is a folder holding ``manifest.json`` and ``trajectories.jsonl`` (``python -m harnesses.run``
writes them); DIR is searched at any depth, so ``ledgerbench runs`` finds the demo's runs under
``runs/pipeline/runs/``. Each line: harness, model, dataset, records, endings by termination
reason, judges with their Overall (beside it: "14/100 scored" when the judge scored only part of
the run, and the grading version), cost and start time. ``--json`` prints the same as a list.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ledgerbench_core._cli import OneLineParser

EXAMPLES = """\
examples:
  ledgerbench runs                      # every run under runs/ (the demo's: runs/pipeline/runs/)
  ledgerbench runs runs/pipeline        # the runs of one workspace
  ledgerbench runs --json | jq '.[] | {name, overall}'
"""


def overall_of(scores: Iterable[Any]) -> float | None:
    """A run's Overall under one judge, from its score records (``ScoreRecord`` or their JSON).

    The one place where listings (``ledgerbench runs``, the viewer's summary rows) ask the judge
    package for a run's Overall: :func:`judge.run_overall`, defined once (docs/statistics.md).
    """
    from judge import run_overall, scored_answers

    return run_overall(scored_answers(scores))


@dataclass
class RunListing:
    """What ``ledgerbench runs`` shows of one run."""

    name: str
    path: str
    harness: str
    model: str | None
    dataset: str
    records: int
    endings: dict[str, int]
    """Records by termination reason (completed, time_limit, erp_unavailable, ...)."""
    infrastructure_failures: int
    overall: dict[str, float | None] = field(default_factory=dict)
    """Judge name -> the run's Overall under that judge (None: nothing scored)."""
    scored: dict[str, str] = field(default_factory=dict)
    """Judge name -> what goes beside its Overall: "14/100 scored" for a partly judged run, and
    the grading version (``ledgerbench_core._coverage.Coverage.label``)."""
    cost_usd: float | None = None
    started_at: str | None = None
    finished: bool = False
    """The run ended on its own (not interrupted, not still running)."""


def find_runs(root: Path) -> list[Path]:
    """Run folders at or below ``root``, skipping the old versions ``--force-new`` set aside."""
    if (root / "manifest.json").is_file() and (root / "trajectories.jsonl").is_file():
        return [root]
    found = []
    for manifest in root.rglob("manifest.json"):
        folder = manifest.parent
        relative = folder.relative_to(root).parts
        if any(part.startswith("replaced-") for part in relative):
            continue
        if (folder / "trajectories.jsonl").is_file():
            found.append(folder)
    return found


def _last_records(path: Path) -> list[dict[str, Any]]:
    """The last line per (question, trial): a resumed or retried question counts once."""
    records: dict[tuple[str, int], dict[str, Any]] = {}
    with path.open("rb") as handle:
        for line in handle:
            try:
                data = json.loads(line)
                records[(str(data["question_id"]), int(data.get("trial", 0)))] = data
            except (ValueError, TypeError, KeyError):
                continue  # a line cut by a kill: the runner re-runs that question
    return list(records.values())


def _ending(record: dict[str, Any]) -> tuple[str, bool]:
    termination = record.get("termination")
    if isinstance(termination, dict) and termination.get("reason"):
        return str(termination["reason"]), bool(termination.get("infrastructure"))
    from ledgerbench_core.trajectory import (
        TrajectoryRecord,  # version-1 line: derive its termination
    )

    try:
        derived = TrajectoryRecord.model_validate(record).termination
    except ValueError:
        return str(record.get("status", "unknown")), False
    return derived.reason.value, derived.infrastructure


def describe_run(folder: Path, root: Path) -> RunListing:
    from judge import read_scores
    from ledgerbench_core._coverage import coverage, one_grading
    from ledgerbench_core.trajectory import RunManifest

    manifest = None
    with contextlib.suppress(ValueError):  # an unreadable manifest: the records still tell a lot
        manifest = RunManifest.model_validate_json((folder / "manifest.json").read_bytes())
    records = _last_records(folder / "trajectories.jsonl")
    endings: Counter[str] = Counter()
    infrastructure = 0
    for record in records:
        reason, infra = _ending(record)
        endings[reason] += 1
        infrastructure += infra
    costs = [r["cost_usd"] for r in records if isinstance(r.get("cost_usd"), int | float)]
    overall, scored = {}, {}
    answers = [(str(r["question_id"]), int(r.get("trial", 0))) for r in records]
    for path in sorted((folder / "scores").glob("*.jsonl")):
        kept, _, _ = one_grading(read_scores(path)[0])
        overall[path.stem] = overall_of(kept)
        scored[path.stem] = coverage(path.stem, kept, answers).label()
    first = records[0] if records else {}
    name = str(folder.relative_to(root)) if folder != root else folder.name
    return RunListing(
        name=name,
        path=str(folder),
        harness=manifest.harness if manifest else str(first.get("harness", "?")),
        model=manifest.model if manifest else first.get("model"),
        dataset=Path(manifest.dataset_path).name if manifest else "?",
        records=len(records),
        endings=dict(endings.most_common()),
        infrastructure_failures=infrastructure,
        overall=overall,
        scored=scored,
        cost_usd=round(sum(costs), 6) if costs else None,
        started_at=manifest.started_at.isoformat(timespec="seconds") if manifest else None,
        finished=bool(manifest and manifest.finished_at and not manifest.interrupted),
    )


def list_runs(root: Path) -> list[RunListing]:
    """Every run under ``root``, oldest first."""
    runs = [describe_run(folder, root) for folder in find_runs(root)]
    return sorted(runs, key=lambda r: (r.started_at or "", r.name))


def _started(text: str | None) -> str:
    if not text:
        return "-"
    return dt.datetime.fromisoformat(text).strftime("%Y-%m-%d %H:%M")


def _line_cells(run: RunListing) -> list[str]:
    endings = ", ".join(f"{reason} {count}" for reason, count in run.endings.items()) or "-"
    if not run.finished:
        endings += " (unfinished)"
    from judge import overall_text

    overall = ", ".join(
        f"{judge} {overall_text(value)}" + (f" ({note})" if (note := run.scored.get(judge)) else "")
        for judge, value in run.overall.items()
    )
    return [
        run.name,
        run.harness,
        run.model or "-",
        run.dataset,
        str(run.records),
        endings,
        overall or "not judged",
        "-" if run.cost_usd is None else f"${run.cost_usd:.2f}",
        _started(run.started_at),
    ]


HEADERS = ["run", "harness", "model", "dataset", "records", "endings", "Overall", "cost", "started"]


def format_table(runs: list[RunListing]) -> str:
    rows = [HEADERS] + [_line_cells(run) for run in runs]
    widths = [max(len(row[n]) for row in rows) for n in range(len(HEADERS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="ledgerbench runs",
        description="List the runs under DIR (any depth), one line each: harness, model, "
        "dataset, records, endings by termination reason, judges with their Overall, cost and "
        "start time.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "dir", nargs="?", type=Path, default=Path("runs"), help="folder to search (default runs/)"
    )
    parser.add_argument("--json", action="store_true", help="a JSON list instead of the table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root: Path = args.dir
    if not root.is_dir():
        print(
            f"ledgerbench runs: error: {root} is not a folder; pass the folder that holds your "
            "runs, e.g. ledgerbench runs runs/pipeline",
            file=sys.stderr,
        )
        return 2
    runs = list_runs(root)
    if args.json:
        print(json.dumps([asdict(run) for run in runs], indent=2))
        return 0
    if not runs:
        print(
            f"no runs under {root} (a run is a folder with manifest.json and trajectories.jsonl, "
            "written by python -m harnesses.run or ledgerbench)",
            file=sys.stderr,
        )
        return 0
    print(format_table(runs))
    return 0
