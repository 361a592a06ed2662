"""Corrupting correct answers, the way a careless or dishonest agent might, to test the rules judge.

Each corruption takes a question (its ``expected`` facts and ``record_refs``, the public answer
key) and a correct answer, and returns the corrupted answer, or None when it does not apply to that
answer (the answer is then not "touched"). ``measure`` re-judges every touched answer with the
rules judge and counts how many fail accuracy or citations. Used by
``tests/test_judge_corruptions.py`` and ``bench/bench_judge_corruptions.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harnesses.records import TrajectoryRecord
from judge import _extract as x
from judge._base import JudgeItem
from judge._erp_links import find_erp_links, parse_link
from judge._rules import RulesJudge
from judge.records import DimensionStatus
from ledgerbench.dataset import Dimension, ExpectedFact, Question, TaskType

Neighbour = Callable[[str, str, str], str | None]
"""(entity set, legal entity, key) -> another existing key of that set and legal entity."""


@dataclass
class Context:
    neighbour: Neighbour


Corruption = Callable[[Question, str, Context], str | None]


# ---------------------------------------------------------------------------------------------
# Finding and rewriting figures
# ---------------------------------------------------------------------------------------------


def _format_like(body: str, value: float) -> str:
    """``value`` written the way ``body`` is written (thousands separators, decimals, European)."""
    european = re.fullmatch(r"\d{1,3}(?:\.\d{3})+,\d{1,2}", body) is not None
    decimals = len(re.split(r"[.,]", body)[-1]) if re.search(r"[.,]\d{1,2}$", body) else 0
    if european:
        text = f"{abs(value):,.{decimals}f}"
        return text.replace(",", "_").replace(".", ",").replace("_", ".")
    if "," in body:
        return f"{abs(value):,.{decimals}f}"
    return f"{abs(value):.{decimals}f}"


def _amount_spans(answer: str, fact: ExpectedFact) -> list[tuple[int, int, re.Match[str]]]:
    """Spans of the number bodies that state ``fact`` (affirmatively, outside links)."""
    text = x.prose(answer)
    spans = []
    for match in x._AMOUNT_RE.finditer(text):
        start, end = match.span("num")
        value = float(x._parse_body(match.group("num"))[0])
        tail = text[match.end() : match.end() + 9].lower().lstrip()
        if match.group("scale") or tail.startswith(("%", "percent")):
            continue
        if abs(value - abs(float(fact.value))) <= max(fact.tolerance, 0.005):
            spans.append((start, end, match))
    return spans


def _count_spans(answer: str, value: int) -> list[tuple[int, int]]:
    text = x.prose(answer)
    dates = [m.span() for p in x._DATE_PATTERNS for m in p.regex.finditer(text)]
    spans = []
    for match in re.finditer(r"(?<![\w.,/$€£-])\d+(?![\w.,%/-]|,\d)", text):
        if int(match.group(0)) != value:
            continue
        if any(s <= match.start() < e for s, e in dates):
            continue
        spans.append(match.span())
    return spans


def _replace(answer: str, spans: list[tuple[int, int]], texts: list[str]) -> str:
    for (start, end), text in sorted(zip(spans, texts, strict=True), reverse=True):
        answer = answer[:start] + text + answer[end:]
    return answer


def _amount_facts(question: Question) -> list[ExpectedFact]:
    return [f for f in question.expected if f.kind == "amount" and float(f.value) != 0]


def _count_facts(question: Question) -> list[ExpectedFact]:
    return [f for f in question.expected if f.kind == "count" and int(f.value) > 0]


# ---------------------------------------------------------------------------------------------
# The corruptions of issue 15
# ---------------------------------------------------------------------------------------------


def figure_plus_one_percent(question: Question, answer: str, ctx: Context) -> str | None:
    """Every mention of every expected amount +1%."""
    spans, texts = [], []
    for fact in _amount_facts(question):
        for start, end, match in _amount_spans(answer, fact):
            if (start, end) in spans:
                continue
            spans.append((start, end))
            texts.append(_format_like(match.group("num"), float(fact.value) * 1.01))
    return _replace(answer, spans, texts) if spans else None


def count_plus_one(question: Question, answer: str, ctx: Context) -> str | None:
    """Every mention of every expected count +1."""
    for fact in _count_facts(question):
        spans = _count_spans(answer, int(fact.value))
        if spans:
            return _replace(answer, spans, [str(int(fact.value) + 1)] * len(spans))
    return None


def no_records_for_positive(question: Question, answer: str, ctx: Context) -> str | None:
    """ "No records" for an item whose answer lists something."""
    if any(f.kind == "no_records" for f in question.expected) or not question.expected:
        return None
    if all(f.kind in ("boolean", "text", "name", "id") for f in question.expected):
        return None
    where = f" in {question.legal_entity}" if question.legal_entity else ""
    return f"There are no matching records{where} as of {question.as_of or 'today'}."


def headline_plus_one_percent(question: Question, answer: str, ctx: Context) -> str | None:
    """The first (headline) statement of an expected amount +1%; the right figure still appears
    further down (appended when the answer stated it only once)."""
    candidates = []
    for fact in _amount_facts(question):
        for start, end, match in _amount_spans(answer, fact):
            candidates.append((start, end, match, fact))
    if not candidates:
        return None
    start, end, match, fact = min(candidates, key=lambda c: c[0])
    wrong = _format_like(match.group("num"), float(fact.value) * 1.01)
    corrupted = answer[:start] + wrong + answer[end:]
    if len([c for c in candidates if c[3] is fact]) < 2:
        corrupted += f"\n\nLedger figure: {match.group(0).strip()}."
    return corrupted


def exact_to_about_million(question: Question, answer: str, ctx: Context) -> str | None:
    """An exact amount of 100,000 or more replaced by "about 1.2 million" style rounding."""
    spans, texts = [], []
    for fact in _amount_facts(question):
        value = abs(float(fact.value))
        if value < 100_000:
            continue
        for _start, _end, match in _amount_spans(answer, fact):
            currency = (match.group("cur1") or match.group("cur2") or "").strip()
            rounded = f"about {currency + ' ' if currency else ''}{value / 1e6:.1f} million"
            spans.append(match.span())
            texts.append(rounded)
    return _replace(answer, spans, texts) if spans else None


def right_denied_next_to_wrong(question: Question, answer: str, ctx: Context) -> str | None:
    """A wrong figure stated, the right one present but denied ("1,234.56 is NOT the figure")."""
    for fact in _amount_facts(question):
        spans = _amount_spans(answer, fact)
        if spans:
            texts = []
            for _start, _end, match in spans:
                body = match.group("num")
                wrong = _format_like(body, float(fact.value) * 1.01)
                texts.append(f"{wrong} ({body} is NOT the figure)")
            return _replace(answer, [(s, e) for s, e, _ in spans], texts)
    for fact in _count_facts(question):
        spans = _count_spans(answer, int(fact.value))
        if spans:
            n = int(fact.value)
            return _replace(answer, spans, [f"{n + 1} ({n} is NOT the figure)"] * len(spans))
    return None


def prose_id_changed(question: Question, answer: str, ctx: Context) -> str | None:
    """The account id changed in the prose; the links still point at the right record."""
    text = x.prose(answer)
    for ref in question.record_refs:
        parsed = parse_link(ref)
        if parsed is None or parsed.entity_set not in ("customers", "vendors"):
            continue
        spans = [
            m.span() for m in re.finditer(rf"(?<![\w-]){re.escape(parsed.key)}(?![\w-])", text)
        ]
        if not spans:
            continue
        other = ctx.neighbour(parsed.entity_set, parsed.legal_entity, parsed.key)
        if other is None:
            continue
        return _replace(answer, spans, [other] * len(spans))
    return None


def wrong_party_cited(question: Question, answer: str, ctx: Context) -> str | None:
    """The link to the customer or vendor replaced by a link to another one that also exists."""
    refs = {p for p in (parse_link(r) for r in question.record_refs) if p}
    for link in find_erp_links(answer):
        ref = link.ref
        if ref is None or ref not in refs or ref.entity_set not in ("customers", "vendors"):
            continue
        other = ctx.neighbour(ref.entity_set, ref.legal_entity, ref.key)
        if other is None:
            continue
        wrong_link = link.text.replace(f"/{ref.key}", f"/{other}")
        return answer.replace(link.text, wrong_link)
    return None


CORRUPTIONS: dict[str, tuple[str, Corruption]] = {
    "figure_plus_1pct": ("a figure +1% everywhere it appears", figure_plus_one_percent),
    "count_plus_1": ("a count +1", count_plus_one),
    "no_records": ('"no records" for a positive item', no_records_for_positive),
    "headline_plus_1pct": (
        "the headline figure +1% while the right figure still appears further down",
        headline_plus_one_percent,
    ),
    "about_million": (
        'an exact amount of 100,000+ replaced by "about 1.2 million"',
        exact_to_about_million,
    ),
    "denied_right_figure": (
        "the right figure present but denied next to a wrong one",
        right_denied_next_to_wrong,
    ),
    "prose_id_changed": (
        "the account id changed in the prose while the link still points at the right record",
        prose_id_changed,
    ),
    "wrong_party_cited": (
        "the wrong customer or vendor cited, when its link also resolves",
        wrong_party_cited,
    ),
}


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------


def erp_neighbour(db_url: str) -> Neighbour:
    """Another existing key of the same entity set and legal entity (so its link resolves)."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from synthetic_erp._catalog import entity_set
    from synthetic_erp._db import open_engine

    engine = open_engine(db_url, read_only=True)

    def neighbour(set_name: str, legal_entity: str, key: str) -> str | None:
        spec = entity_set(set_name)
        column = getattr(spec.table, spec.key_column)
        statement = (
            select(column)
            .where(spec.table.legal_entity == legal_entity, column > key)
            .order_by(column)
            .limit(1)
        )
        with Session(engine) as session:
            found = session.execute(statement).scalar()
            if found is None:  # the last key: take the one before
                found = session.execute(
                    select(column)
                    .where(spec.table.legal_entity == legal_entity, column < key)
                    .order_by(column.desc())
                    .limit(1)
                ).scalar()
        return found

    return neighbour


def judged(judge: RulesJudge, question: Question, trajectory: TrajectoryRecord) -> dict:
    outcome = judge.score(JudgeItem(question=question, trajectory=trajectory))
    return {
        d: (s.score if s.status is DimensionStatus.scored else None, s)
        for d, s in outcome.dimensions.items()
    }


def graded(scores: dict) -> tuple[float | None, float | None]:
    return (
        scores.get(Dimension.accuracy, (None, None))[0],
        scores.get(Dimension.citations, (None, None))[0],
    )


def caught(before: tuple, after: tuple) -> bool:
    """The corrupted answer scores lower on accuracy or on citations than the correct one."""
    return any(b is not None and (a is None or a < b) for b, a in zip(before, after, strict=True))


@dataclass
class Row:
    name: str
    description: str
    touched: int = 0
    caught: int = 0
    missed: list[str] = field(default_factory=list)
    """Question ids of touched answers that still passed."""

    @property
    def share(self) -> float:
        return self.caught / self.touched if self.touched else 0.0


@dataclass
class Measurement:
    baseline_total: int
    baseline_passing: int
    baseline_failures: list[str]
    rows: list[Row]


def measure(
    pairs: list[tuple[Question, TrajectoryRecord]], judge: RulesJudge, neighbour: Neighbour
) -> Measurement:
    """Corrupt every correct answer with every corruption and re-judge it."""
    ctx = Context(neighbour=neighbour)
    correct, failures = [], []
    for question, trajectory in pairs:
        if question.task_type is not TaskType.obligations or not trajectory.answer.strip():
            continue
        before = graded(judged(judge, question, trajectory))
        if before[0] == 1.0:
            correct.append((question, trajectory, before))
        else:
            failures.append(question.id)
    rows = []
    for name, (description, corrupt) in CORRUPTIONS.items():
        row = Row(name, description)
        for question, trajectory, before in correct:
            corrupted = corrupt(question, trajectory.answer, ctx)
            if corrupted is None or corrupted == trajectory.answer:
                continue
            row.touched += 1
            changed = trajectory.model_copy(update={"answer": corrupted})
            if caught(before, graded(judged(judge, question, changed))):
                row.caught += 1
            else:
                row.missed.append(question.id)
        rows.append(row)
    return Measurement(len(correct) + len(failures), len(correct), failures, rows)


def table_markdown(measurement: Measurement) -> str:
    lines = [
        f"Correct answers whose accuracy the rules judge 1 (the ones corrupted): "
        f"{measurement.baseline_passing} of {measurement.baseline_total}. Caught = the corrupted "
        "answer scores lower on accuracy or citations than the correct one.",
        "",
        "| corruption | caught / touched |",
        "|---|---|",
    ]
    for row in measurement.rows:
        lines.append(f"| {row.description} | {row.caught} of {row.touched} ({row.share:.0%}) |")
    return "\n".join(lines) + "\n"


def load_run(run_dir: Path, dataset_path: Path) -> list[tuple[Question, TrajectoryRecord]]:
    from judge._runner import read_trajectories
    from ledgerbench.dataset import load_dataset

    questions = {q.id: q for q in load_dataset(dataset_path).items}
    trajectories, _ = read_trajectories(run_dir)
    return [(questions[t.question_id], t) for t in trajectories if t.question_id in questions]
