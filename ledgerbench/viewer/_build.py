"""Build the static trajectory viewer: one ``index.html`` that works from ``file://``.

The page holds a small index (questions x runs) as JSON and, per question, the full records of
every run and every judge verdict as gzip-compressed JSON, decompressed by the browser when the
question is opened. Run content only ever reaches the page as JSON data; the page's own script and
style are pinned by hash in a Content-Security-Policy, so nothing else can run.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import gc
import gzip
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ledgerbench_core._assets import markdown_script


class ViewerError(ValueError):
    """Bad input: the message names the problem and the fix."""


@dataclass
class RunData:
    name: str
    path: Path
    manifest: Any
    records: dict[tuple[str, int], Any]
    scores: dict[str, dict[tuple[str, int], Any]]
    warnings: list[str] = field(default_factory=list)


@dataclass
class Record:
    """One trajectory line: the parsed fields the index needs and the JSON the page embeds."""

    data: dict[str, Any]
    raw: bytes

    @property
    def key(self) -> tuple[str, int]:
        return str(self.data["question_id"]), int(self.data.get("trial", 0))


def _read_records(path: Path, warnings: list[str]) -> list[Record]:
    """Trajectory lines, parsed once with ``json``: validating 3,000 records through pydantic costs
    more than the whole rest of the build, and the page needs the JSON text anyway. Version-1
    lines (no ``termination``) go through :class:`TrajectoryRecord`, which derives it."""
    from ledgerbench_core.trajectory import TrajectoryRecord

    records, bad = [], 0
    with path.open("rb") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                data = json.loads(line)
                if "termination" not in data:
                    upgraded = TrajectoryRecord.model_validate(data)
                    line = upgraded.model_dump_json(by_alias=True).encode()
                    data = json.loads(line)
                _ = data["question_id"], data["status"], data["termination"]["reason"]
            except (ValueError, TypeError, KeyError, ValidationError):
                bad += 1
                continue
            records.append(Record(data, line))
    if bad:
        warnings.append(f"{path}: skipped {bad} unreadable line(s)")
    return records


def _read_scores(path: Path, warnings: list[str]) -> list[dict[str, Any]]:
    scores, bad = [], 0
    with path.open("rb") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                _ = data["question_id"]
            except (ValueError, TypeError, KeyError):
                bad += 1
                continue
            scores.append(data)
    if bad:
        warnings.append(f"{path}: skipped {bad} unreadable line(s)")
    return scores


def load_run(path: Path) -> RunData:
    """A run directory: ``manifest.json``, ``trajectories.jsonl`` and ``scores/*.jsonl``."""
    from ledgerbench_core.trajectory import RunManifest

    if not path.is_dir():
        raise ViewerError(
            f"{path} is not a run directory; pass runs/NAME (the folder that holds "
            "trajectories.jsonl)"
        )
    trajectories = path / "trajectories.jsonl"
    if not trajectories.is_file():
        raise ViewerError(
            f"{path} has no trajectories.jsonl; run the agent first "
            "(python -m harnesses.run) or pass another run directory"
        )
    manifest = None
    manifest_path = path / "manifest.json"
    warnings: list[str] = []
    if manifest_path.is_file():
        try:
            manifest = RunManifest.model_validate_json(manifest_path.read_bytes())
        except ValidationError as error:
            warnings.append(f"{manifest_path}: unreadable ({error.errors()[0]['msg']}); ignored")
    # A resumed run may hold a question and trial twice: the last record is the one that counts.
    records = {record.key: record for record in _read_records(trajectories, warnings)}
    scores: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
    for score_file in sorted((path / "scores").glob("*.jsonl")):
        scores[score_file.stem] = {
            (str(s["question_id"]), int(s.get("trial", 0))): s
            for s in _read_scores(score_file, warnings)
        }
    return RunData(path.name, path, manifest, records, scores, warnings)


def _dataset_questions(
    runs: list[RunData], override: Path | None
) -> tuple[dict[str, Any], list[str]]:
    from ledgerbench_core.dataset import find_run_dataset, load_dataset, raw_items

    candidates: list[Path] = []
    if override is not None:
        if not override.exists():
            raise ViewerError(
                f"--dataset {override} does not exist; pass the dataset file or folder the runs "
                "used"
            )
        candidates.append(override)
    for run in runs:
        if run.manifest is None:
            continue
        path = find_run_dataset(run.manifest.dataset_path, run.path)
        if path is not None and path not in candidates:
            candidates.append(path)
    questions: dict[str, Any] = {}
    warnings: list[str] = []
    for path in candidates:
        try:
            items = [item.model_dump(mode="json") for item in load_dataset(path).items]
        except Exception as error:  # a dataset that fails validation can still name its questions
            items = raw_items(path)
            if not items:
                warnings.append(
                    f"dataset {path} could not be read ({error}); questions shown without it"
                )
        for item in items:
            questions.setdefault(str(item["id"]), item)
    if not candidates:
        warnings.append(
            "no dataset found (pass --dataset): reference answers and scenarios unknown"
        )
    return questions, warnings


def _unique_names(paths: list[Path]) -> list[str]:
    names = [p.name for p in paths]
    if len(set(names)) == len(names):
        return names
    return [f"{p.parent.name}/{p.name}" if names.count(p.name) > 1 else p.name for p in paths]


def _question_info(
    question_id: str, item: dict[str, Any] | None, record: Record | None
) -> dict[str, Any]:
    data = record.data if record is not None else {}
    if item is not None:
        fields = ["segment", "scenario", "as_of", "legal_entity", "ground_truth"]
        return {
            "id": question_id,
            "known": True,
            "query": item.get("query") or data.get("input"),
            "task_type": item.get("task_type") or data.get("task_type"),
            **{name: None if item.get(name) is None else str(item[name]) for name in fields},
            "expected": item.get("expected") or [],
        }
    return {
        "id": question_id,
        "known": False,
        "query": data.get("input"),
        "task_type": data.get("task_type"),
        "segment": None,
        "scenario": None,
        "expected": [],
    }


def _cell(record: Record, scores: dict[str, dict[tuple[str, int], Any]]) -> dict[str, Any]:
    data, key = record.data, record.key
    termination = data["termination"]
    return {
        "t": key[1],
        "s": data["status"],
        "r": termination["reason"],
        "i": bool(termination.get("infrastructure")),
        "d": termination.get("detail"),
        "l": data.get("latency_s"),
        "n": len(data.get("tool_calls") or []),
        "sc": {
            judge: by_key[key].get("overall") for judge, by_key in scores.items() if key in by_key
        },
    }


def _record_json(record: Record, output_chars: int | None) -> bytes:
    """The record as the page gets it: the line as written, unless tool outputs are clipped."""
    calls = record.data.get("tool_calls") or []
    if output_chars is None or all(len(c.get("output", "")) <= output_chars for c in calls):
        return record.raw
    data = {**record.data, "tool_calls": [dict(c) for c in calls]}
    for call in data["tool_calls"]:
        if len(call.get("output", "")) > output_chars:
            call["record_chars"] = len(call["output"])
            call["output"] = call["output"][:output_chars]
            call["view_clipped"] = True
    return _dumps(data)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _detail_json(
    info: dict[str, Any],
    runs: list[RunData],
    per_run: list[list[Record]],
    output_chars: int | None,
    links: list[Any],
) -> bytes:
    """One question's page data, assembled from the records' JSON text without re-encoding it."""
    parts = [b'{"question":', _dumps(info), b',"runs":[']
    for n, (run, records, run_links) in enumerate(zip(runs, per_run, links, strict=True)):
        scores = {
            judge: [by_key[r.key] for r in records if r.key in by_key]
            for judge, by_key in run.scores.items()
        }
        carried = {
            str(r.key[1]): vars(run_links.trials[r.key])
            for r in records
            if r.key in run_links.trials
        }
        parts += [b"," if n else b"", b'{"records":[']
        parts.append(b",".join(_record_json(r, output_chars) for r in records))
        parts += [b'],"scores":', _dumps(scores), b',"linked":', _dumps(carried), b"}"]
    parts.append(b"]}")
    return b"".join(parts)


def _carry_linked_items(
    runs: list[RunData], erp_db: str | None, world_db: str | None = None
) -> tuple[list[Any], dict[str, Any], list[str]]:
    """Copies of the ERP records each answer cites or its tools showed, and of the world
    documents it cites or fetched, so every such link opens in the page with the servers gone."""
    from judge.linked import LinkedItemStore, RunSources, TrialTexts, fetched_documents

    store = LinkedItemStore()
    links, warnings = [], []
    for run in runs:
        trials = []
        outputs: list[str] = []
        for record in run.records.values():
            tool_calls = record.data.get("tool_calls") or []
            calls = [str(c.get("output") or "") for c in tool_calls]
            outputs += calls
            answer = str(record.data.get("answer") or "")
            trials.append(TrialTexts(record.key, answer, calls, fetched_documents(tool_calls)))
        sources = RunSources(run.path, run.manifest, outputs, erp_db=erp_db, world_db=world_db)
        run_links, run_warnings = store.add_run(sources, trials)
        links.append(run_links)
        warnings += run_warnings
    return links, store.used(links), warnings


def _pack(raw: bytes) -> str:
    # Level 5: nearly level 9's size at a third of its time; zlib releases the GIL, so threads help.
    return base64.b64encode(gzip.compress(raw, compresslevel=5, mtime=0)).decode("ascii")


def _script_json(value: Any) -> str:
    """JSON safe inside a <script type="application/json"> element: no "<" can close it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _asset(name: str) -> str:
    return resources.files("ledgerbench.viewer").joinpath(name).read_text(encoding="utf-8")


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Without the cyclic collector: a build holds every record of every run (tens of MB of
    dicts, no cycles), and each collection would scan them all again; refcounting frees them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_viewer(
    run_dirs: Iterable[Path],
    out_dir: Path,
    *,
    dataset: Path | None = None,
    title: str | None = None,
    output_chars: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    erp_db: str | None = None,
    world_db: str | None = None,
) -> tuple[Path, list[str]]:
    """Write ``out_dir/index.html`` for the runs; returns its path and warnings."""
    with _cyclic_gc_paused():
        return _build(run_dirs, out_dir, dataset, title, output_chars, progress, erp_db, world_db)


def _build(
    run_dirs: Iterable[Path],
    out_dir: Path,
    dataset: Path | None,
    title: str | None,
    output_chars: int | None,
    progress: Callable[[str, int, int], None] | None,
    erp_db: str | None,
    world_db: str | None,
) -> tuple[Path, list[str]]:
    paths = [Path(p) for p in run_dirs]
    if not paths:
        raise ViewerError("no run given; pass one or more run directories (runs/NAME)")
    if out_dir.exists() and not out_dir.is_dir():
        raise ViewerError(f"--out {out_dir} is a file; pass a directory for the viewer")
    runs = []
    for n, path in enumerate(paths):
        runs.append(load_run(path))
        if progress:
            progress("reading runs", n + 1, len(paths))
    for run, name in zip(runs, _unique_names(paths), strict=True):
        run.name = name
    items, warnings = _dataset_questions(runs, dataset)
    for run in runs:
        warnings.extend(run.warnings)
    if progress:
        progress("copying cited records and documents", 0, 1)
    run_links, carried, link_warnings = _carry_linked_items(runs, erp_db, world_db)
    warnings += link_warnings

    order = {qid: n for n, qid in enumerate(items)}
    grouped: dict[str, list[list[Record]]] = {}
    for r_index, run in enumerate(runs):
        for (qid, _), record in run.records.items():
            grouped.setdefault(qid, [[] for _ in runs])[r_index].append(record)
    question_ids = sorted(grouped, key=lambda q: (order.get(q, len(order)), q))
    index_questions, raw_details = [], []
    for n, qid in enumerate(question_ids):
        per_run = [sorted(records, key=lambda r: r.key[1]) for records in grouped[qid]]
        first = next((r for records in per_run for r in records), None)
        info = _question_info(qid, items.get(qid), first)
        index_questions.append(
            {
                "id": qid,
                "n": n,
                "task_type": info["task_type"],
                "scenario": info["scenario"],
                "query": (info["query"] or "")[:300],
                "cells": [
                    [_cell(r, run.scores) for r in records]
                    for run, records in zip(runs, per_run, strict=True)
                ],
            }
        )
        raw_details.append(_detail_json(info, runs, per_run, output_chars, run_links))
    details = _compress_all(raw_details, progress)
    index = {
        "title": title or f"LedgerBench viewer: {', '.join(run.name for run in runs)}",
        "generated_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "judges": sorted({judge for run in runs for judge in run.scores}),
        "runs": [_run_info(run) for run in runs],
        "questions": index_questions,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "index.html"
    temporary = out_dir / ".index.html.tmp"
    temporary.write_text(_page(index, details, _pack(_dumps(carried))), encoding="utf-8")
    os.replace(temporary, target)
    return target, warnings


def _compress_all(
    raw_details: list[bytes], progress: Callable[[str, int, int], None] | None
) -> list[str]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        details = []
        for n, packed in enumerate(pool.map(_pack, raw_details, chunksize=16)):
            details.append(packed)
            if progress and (n % 50 == 0 or n == len(raw_details) - 1):
                progress("compressing pages", n + 1, len(raw_details))
    return details


def _run_overall(run: RunData) -> dict[str, str]:
    """Judge -> the run's Overall as every tool prints it (:func:`judge.overall`), over the scores
    of one grading version (:func:`_judged` says which, and how much of the run they cover)."""
    from ledgerbench_core._overall import overall_text, run_overall, scored_answers

    return {
        judge: overall_text(run_overall(scored_answers(_judged(run, judge)[0])))
        for judge in sorted(run.scores)
    }


def _judged(run: RunData, judge: str) -> tuple[list[Any], str]:
    """One judge's scores of the run of one grading version, and their label
    (``ledgerbench_core._coverage.Coverage.label``)."""
    from ledgerbench_core._coverage import coverage, one_grading
    from ledgerbench_core.scores import ScoreRecord

    records = []
    for data in run.scores[judge].values():
        with contextlib.suppress(ValueError):
            records.append(ScoreRecord.model_validate(data))
    kept, _, _ = one_grading(records)
    return kept, coverage(judge, kept, list(run.records)).label()


def _run_info(run: RunData) -> dict[str, Any]:
    manifest = run.manifest
    first = next(iter(run.records.values()), None)
    first_data = first.data if first is not None else {}
    return {
        "name": run.name,
        "harness": manifest.harness if manifest else first_data.get("harness", "?"),
        "model": manifest.model if manifest else first_data.get("model"),
        "records": len(run.records),
        "judges": sorted(run.scores),
        "overall": _run_overall(run),
        "judged": {judge: _judged(run, judge)[1] for judge in sorted(run.scores)},
        "system_prompt": manifest.system_prompt if manifest else None,
        "summary": _run_summary(run),
    }


def _run_summary(run: RunData) -> dict[str, Any]:
    """The index's summary row of a run: Overall per judge, errors, timeouts, cost."""
    from ledgerbench._runs import overall_of

    records = [record.data for record in run.records.values()]
    costs = [r["cost_usd"] for r in records if isinstance(r.get("cost_usd"), int | float)]
    judged = {judge: _judged(run, judge) for judge in run.scores}
    return {
        "overall": {judge: overall_of(kept) for judge, (kept, _) in judged.items()},
        "judged": {judge: label for judge, (_, label) in judged.items()},
        "errors": sum(r["status"] == "error" for r in records),
        "timeouts": sum(r["termination"]["reason"] == "time_limit" for r in records),
        "cost_usd": round(sum(costs), 6) if costs else None,
    }


def _page(index: dict[str, Any], details: list[str], items: str) -> str:
    script = markdown_script() + "\n" + _asset("viewer.js")
    style = _asset("viewer.css")
    csp = "; ".join(
        [
            "default-src 'none'",
            f"script-src {_csp_hash(script)}",
            f"style-src {_csp_hash(style)}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    blocks = "\n".join(
        f'<script type="application/json" id="lb-q-{n}">{blob}</script>'
        for n, blob in enumerate(details)
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>LedgerBench viewer</title>\n"
        f"<style>{style}</style>\n</head><body>\n"
        '<main id="app"><noscript>The viewer needs JavaScript.</noscript></main>\n'
        f'<script type="application/json" id="lb-index">{_script_json(index)}</script>\n'
        f'<script type="application/json" id="lb-items">{items}</script>\n'
        f"{blocks}\n<script>{script}</script>\n</body></html>\n"
    )
