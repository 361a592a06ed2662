"""People as judges: a blinded grading packet out, a grades file in, scores in the scores format.

``export`` samples answers of one or more runs, shuffles them, hides which agent wrote them and
writes ``packet.html`` (a self-contained offline form that saves grades as a JSON file),
``sheet.csv`` (the same sheet for spreadsheets) and ``key.json`` (code -> run, question, trial; kept
beside the packet, never shown to graders). ``import`` reads a grades file (JSON from the form or
the filled CSV), checks every row, unblinds it with the key and writes
``runs/NAME/scores/human-NAME.jsonl`` into each run.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import html
import io
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge._base import dimension_from_assertions, overall_score, sha256_text, stable_hash
from ledgerbench_core.dataset import Dimension, Question
from ledgerbench_core.scores import (
    AssertionScore,
    DimensionStatus,
    JudgeManifest,
    ScoreRecord,
    ScoreStatus,
)

SCALE = (0.0, 0.25, 0.5, 0.75, 1.0)
NOT_APPLICABLE = "n/a"
PACKET_FILES = ("packet.html", "sheet.csv", "key.json")
CSV_COLUMNS = [
    "item",
    "dimension",
    "assertion_id",
    "assertion",
    "grade",
    "question",
    "reference",
    "answer",
]


class HumanError(ValueError):
    """Bad input for judge.human; the message names the problem and the fix."""


@dataclass
class Candidate:
    run_dir: Path
    question: Question
    question_id: str
    trial: int
    answer: str
    hidden_names: list[str]
    tool_outputs: list[str]
    manifest: Any
    """The run's manifest (where its ERP and world are, for the carried copies)."""
    fetched: list[str] = field(default_factory=list)
    """The world documents the trial's fetch calls read."""


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------


def _candidates(run_dir: Path) -> list[Candidate]:
    from judge._runner import (
        JudgeRunConfig,
        JudgeRunError,
        load_run_dataset,
        read_manifest,
        read_trajectories,
    )

    try:
        manifest = read_manifest(run_dir)
        dataset, _ = load_run_dataset(JudgeRunConfig(run_dir=run_dir), manifest)
        trajectories, _ = read_trajectories(run_dir)
    except JudgeRunError as exc:
        raise HumanError(str(exc)) from None
    questions = {q.id: q for q in dataset.items}
    hidden = [n for n in (manifest.harness, manifest.model) if n and len(n) >= 3]
    found = []
    for t in trajectories:
        if t.question_id not in questions or t.infrastructure_failure or not t.answer.strip():
            continue  # infrastructure failures are never judged; an empty answer needs no person
        outputs = [call.output for call in t.tool_calls]
        fetched = [
            link for c in t.tool_calls if c.name.split("__")[-1] == "fetch" for link in c.documents
        ]
        question = questions[t.question_id]
        found.append(
            Candidate(
                run_dir,
                question,
                t.question_id,
                t.trial,
                t.answer,
                hidden,
                outputs,
                manifest,
                fetched,
            )
        )
    return found


def _carried_records(chosen: list[Candidate]) -> tuple[dict[tuple, list[dict]], list[str]]:
    """(run, question, trial) -> copies of the records and world documents the answer cites, then
    of the records its tools showed and the documents it fetched: the packet opens them offline,
    any day later, whatever became of the servers."""
    from judge.linked import LinkedItemStore, RunSources, TrialTexts

    store = LinkedItemStore()
    by_run: dict[Path, list[Candidate]] = defaultdict(list)
    for candidate in chosen:
        by_run[candidate.run_dir].append(candidate)
    carried, warnings = {}, []
    for run_dir, candidates in by_run.items():
        outputs = [output for c in candidates for output in c.tool_outputs]
        trials = [
            TrialTexts((c.question_id, c.trial), c.answer, c.tool_outputs, c.fetched)
            for c in candidates
        ]
        sources = RunSources(run_dir, candidates[0].manifest, outputs)
        links, run_warnings = store.add_run(sources, trials)
        warnings += run_warnings
        for (question_id, trial), entry in links.trials.items():
            ids = entry.cited + entry.read
            carried[(run_dir, question_id, trial)] = [
                {**store.items[i], "cited": i in entry.cited} for i in ids if i in store.items
            ]
    return carried, warnings


def blind(answer: str, names: list[str]) -> str:
    """The answer with the agent's harness and model names replaced by ``[agent]``."""
    for name in sorted(names, key=len, reverse=True):
        answer = re.sub(re.escape(name), "[agent]", answer, flags=re.IGNORECASE)
    return answer


def export_packet(run_dirs: list[Path], *, n: int, seed: int, out: Path) -> dict[str, Any]:
    """Write packet.html, sheet.csv and key.json into ``out``; returns the packet data."""
    if n < 1:
        raise HumanError("--n must be at least 1")
    candidates = [c for run_dir in run_dirs for c in _candidates(run_dir)]
    if not candidates:
        raise HumanError("the runs have no judged answers to grade (all empty or failed)")
    existing = [out / name for name in PACKET_FILES if (out / name).exists()]
    if existing:
        raise HumanError(f"{existing[0]} exists: choose a new --out (grades depend on its key)")
    rng = random.Random(seed)
    rng.shuffle(candidates)
    chosen = candidates[:n]
    carried, _ = _carried_records(chosen)
    items, key = [], {}
    for index, candidate in enumerate(chosen, start=1):
        code = f"A{index:03d}"
        question = candidate.question
        items.append(
            {
                "item": code,
                "question": question.query,
                "task_type": question.task_type.value,
                "reference": question.ground_truth,
                "answer": blind(candidate.answer, candidate.hidden_names),
                "records": [
                    {**record, "source": blind(record["source"], candidate.hidden_names)}
                    for record in carried.get(
                        (candidate.run_dir, candidate.question_id, candidate.trial), []
                    )
                ],
                "assertions": [
                    {"dimension": d.value, "id": a.id, "text": a.text, "level": a.level}
                    for d, assertions in question.tags.items()
                    for a in assertions
                ],
            }
        )
        key[code] = {
            "run_dir": str(candidate.run_dir.resolve()),
            "question_id": candidate.question_id,
            "trial": candidate.trial,
            "answer_sha256": sha256_text(candidate.answer),
        }
    packet_id = stable_hash({"key": key, "seed": seed})[:16]
    packet = {
        "packet_id": packet_id,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "scale": [*SCALE, NOT_APPLICABLE],
        "items": items,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "key.json").write_text(
        json.dumps({"packet_id": packet_id, "seed": seed, "items": key}, indent=2) + "\n",
        encoding="utf-8",
    )
    (out / "sheet.csv").write_text(sheet_csv(packet), encoding="utf-8")
    (out / "packet.html").write_text(packet_html(packet), encoding="utf-8")
    return packet


def sheet_csv(packet: dict[str, Any]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for item in packet["items"]:
        for assertion in item["assertions"]:
            writer.writerow(
                {
                    "item": item["item"],
                    "dimension": assertion["dimension"],
                    "assertion_id": assertion["id"],
                    "assertion": assertion["text"],
                    "grade": "",
                    "question": item["question"],
                    "reference": item["reference"] or "",
                    "answer": item["answer"],
                }
            )
    return buffer.getvalue()


def packet_html(packet: dict[str, Any]) -> str:
    from judge._human_form import form_page

    # JSON that no "<" can end or turn into markup, as the viewer embeds its data.
    data = json.dumps(packet).replace("<", "\\u003c").replace(">", "\\u003e")
    return form_page(html.escape(packet["packet_id"]), data.replace("&", "\\u0026"))


# ---------------------------------------------------------------------------------------------
# Import
# ---------------------------------------------------------------------------------------------


@dataclass
class GradeRow:
    row: int
    item: str
    assertion_id: str
    grade: float | None
    """None = not applicable."""


def _parse_grade(value: Any, row: int) -> tuple[bool, float | None]:
    """(graded, score): blank -> not graded; "n/a" -> not applicable; else a value of the scale."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return False, None
    if isinstance(value, str) and value.strip().lower() in (NOT_APPLICABLE, "na", "not applicable"):
        return True, None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise HumanError(
            f"row {row}: grade {value!r} is not a number; use 0, 0.25, 0.5, 0.75, 1 or n/a"
        ) from None
    for allowed in SCALE:
        if abs(number - allowed) < 1e-9:
            return True, allowed
    raise HumanError(
        f"row {row}: grade {number:g} is off the scale; use 0, 0.25, 0.5, 0.75, 1 or n/a"
    )


def read_grades(path: Path) -> tuple[str | None, list[dict[str, Any]]]:
    """(packet id if the file names one, raw rows numbered from 1) of a JSON or CSV grades file."""
    if not path.is_file():
        raise HumanError(
            f"{path} not found: pass the grades file saved from packet.html or the CSV"
        )
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = {"item", "assertion_id", "grade"} - set(reader.fieldnames or [])
        if missing:
            raise HumanError(
                f"{path}: no column {sorted(missing)[0]!r}; keep the sheet's header row"
            )
        return None, [dict(row, _row=number) for number, row in enumerate(reader, start=2)]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HumanError(
            f"{path} is not JSON ({exc.msg} at line {exc.lineno}): save it again from packet.html"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("grades"), list):
        raise HumanError(f"{path}: expected an object with a 'grades' list (saved by packet.html)")
    rows = [
        dict(g, _row=number) if isinstance(g, dict) else {"_row": number, "_bad": True}
        for number, g in enumerate(data["grades"], start=1)
    ]
    return data.get("packet_id"), rows


def check_rows(
    rows: list[dict[str, Any]], packet: dict[str, Any] | None, key: dict[str, Any]
) -> list[GradeRow]:
    """Every row valid, known and graded once; HumanError listing every bad row otherwise."""
    assertions = _known_assertions(packet, key)
    problems, graded, seen = [], [], {}
    for raw in rows:
        number = raw["_row"]
        try:
            if raw.get("_bad"):
                raise HumanError(f"row {number}: not an object with item, assertion_id and grade")
            item = str(raw.get("item") or "").strip()
            assertion_id = str(raw.get("assertion_id") or "").strip()
            if not item or not assertion_id:
                raise HumanError(f"row {number}: item and assertion_id are required")
            if item not in key["items"]:
                raise HumanError(f"row {number}: item {item} is not in this packet's key")
            if assertions is not None and assertion_id not in assertions.get(item, set()):
                raise HumanError(f"row {number}: {item} has no assertion {assertion_id}")
            done, score = _parse_grade(raw.get("grade"), number)
            if not done:
                continue
            if (item, assertion_id) in seen:
                raise HumanError(
                    f"row {number}: {item} {assertion_id} is graded twice "
                    f"(first in row {seen[(item, assertion_id)]})"
                )
            seen[(item, assertion_id)] = number
            graded.append(GradeRow(number, item, assertion_id, score))
        except HumanError as exc:
            problems.append(str(exc))
    if problems:
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise HumanError("; ".join(problems[:10]) + more + "; nothing was imported")
    if not graded:
        raise HumanError("the grades file has no grades: fill the form and save it again")
    return graded


def _known_assertions(
    packet: dict[str, Any] | None, key: dict[str, Any]
) -> dict[str, set[str]] | None:
    if packet is None:
        return None
    return {item["item"]: {a["id"] for a in item["assertions"]} for item in packet["items"]}


def load_key(grades_path: Path, key_path: Path | None) -> tuple[dict[str, Any], dict | None]:
    """The key (and the packet, for assertion ids) kept beside the packet."""
    candidates = [key_path] if key_path else [grades_path.parent / "key.json"]
    path = candidates[0]
    if path is None or not path.is_file():
        raise HumanError(
            f"no key at {path}: pass --key PACKET_DIR/key.json (written by judge.human export)"
        )
    key = json.loads(path.read_text(encoding="utf-8"))
    packet = None
    page = path.parent / "packet.html"
    if page.is_file():
        match = re.search(
            r'<script type="application/json" id="packet-data">(.*?)</script>',
            page.read_text(encoding="utf-8"),
            re.S,
        )
        if match:
            packet = json.loads(match.group(1).replace("<\\/", "</"))
    return key, packet


def import_grades(
    grades_path: Path, *, judge_name: str, key_path: Path | None = None
) -> dict[Path, int]:
    """Write ``scores/<judge_name>.jsonl`` into every run the grades belong to; returns
    {scores file: records written}."""
    if not re.fullmatch(r"human-[A-Za-z0-9._-]+", judge_name):
        raise HumanError(f"--as {judge_name!r}: use human-NAME, e.g. --as human-alice")
    key, packet = load_key(grades_path, key_path)
    packet_id, rows = read_grades(grades_path)
    if packet_id and packet_id != key.get("packet_id"):
        raise HumanError(
            f"{grades_path} grades packet {packet_id} but the key is for {key.get('packet_id')}: "
            "pass --key of that packet"
        )
    graded = check_rows(rows, packet, key)
    by_item: dict[str, list[GradeRow]] = defaultdict(list)
    for row in graded:
        by_item[row.item].append(row)
    records_by_run: dict[Path, list[ScoreRecord]] = defaultdict(list)
    for code, item_rows in by_item.items():
        entry = key["items"][code]
        run_dir = Path(entry["run_dir"])
        record = _score_record(run_dir, entry, item_rows, judge_name, packet)
        records_by_run[run_dir].append(record)
    written = {}
    for run_dir, records in records_by_run.items():
        written[_write_scores(run_dir, judge_name, records, key["packet_id"])] = len(records)
    return written


def _dimension_of(assertion_id: str, packet: dict | None, code: str) -> Dimension:
    if packet is not None:
        for item in packet["items"]:
            if item["item"] == code:
                for a in item["assertions"]:
                    if a["id"] == assertion_id:
                        return Dimension(a["dimension"])
    return Dimension(assertion_id.split(".", 1)[0])


@functools.lru_cache(maxsize=16)
def _run_questions(run_dir: Path) -> dict[str, Question]:
    from judge._runner import JudgeRunConfig, JudgeRunError, load_run_dataset, read_manifest

    try:
        dataset, _ = load_run_dataset(JudgeRunConfig(run_dir=run_dir), read_manifest(run_dir))
    except JudgeRunError as exc:
        raise HumanError(f"the key names run {run_dir}: {exc}") from None
    return {q.id: q for q in dataset.items}


def _score_record(
    run_dir: Path, entry: dict, rows: list[GradeRow], judge_name: str, packet: dict | None
) -> ScoreRecord:
    question = _run_questions(run_dir)[entry["question_id"]]
    by_dimension: dict[Dimension, list[AssertionScore]] = defaultdict(list)
    for row in rows:
        by_dimension[_dimension_of(row.assertion_id, packet, row.item)].append(
            AssertionScore(
                assertion_id=row.assertion_id,
                score=row.grade,
                decided_by="human",
                reason=f"graded by {judge_name}",
            )
        )
    dimensions = {
        d: dimension_from_assertions(a, undecided_status=DimensionStatus.not_applicable)
        for d, a in by_dimension.items()
    }
    return ScoreRecord(
        question_id=entry["question_id"],
        trial=entry["trial"],
        task_type=question.task_type,
        judge=judge_name,
        status=ScoreStatus.scored,
        dimensions=dimensions,
        overall=overall_score(dimensions),
        answer_sha256=entry["answer_sha256"],
        judged_at=dt.datetime.now(dt.UTC),
        extra={"packet_item": rows[0].item},
        judge_version="human",
        grading_version="human",
    )


def _write_scores(
    run_dir: Path, judge_name: str, records: list[ScoreRecord], packet_id: str
) -> Path:
    """Merge into the run's scores file: a re-import replaces the same answers' records."""
    from judge._runner import read_scores

    scores_dir = run_dir / "scores"
    scores_dir.mkdir(parents=True, exist_ok=True)
    path = scores_dir / f"{judge_name}.jsonl"
    existing, _ = read_scores(path)
    new_keys = {(r.question_id, r.trial) for r in records}
    kept = [r for r in existing if (r.question_id, r.trial) not in new_keys]
    merged = kept + records
    temporary = path.with_suffix(".jsonl.tmp")
    temporary.write_text("".join(r.model_dump_json() + "\n" for r in merged), encoding="utf-8")
    temporary.replace(path)
    manifest = JudgeManifest(
        judge=judge_name,
        model=None,
        mode="human",
        settings={"judge": "human", "packet_id": packet_id},
        instructions_hash=stable_hash({"human": judge_name}),
        run_dir=str(run_dir),
        started_at=dt.datetime.now(dt.UTC),
        finished_at=dt.datetime.now(dt.UTC),
        counts={"records": len(merged), "scored": len(merged)},
        judge_version="human",
        grading_version="human",
    )
    (scores_dir / f"{judge_name}.manifest.json").write_text(
        manifest.model_dump_json(indent=2) + "\n", encoding="utf-8"
    )
    return path
