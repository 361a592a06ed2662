"""Corrupting right research answers, the way a careless agent might, to test the rules judge.

Each wrong kind replaces the key's figure in a right answer with a figure a careless reading of the
world's documents gives: the prior fiscal year's, the thousands figure of a data-vendor table read
as millions, the adjusted (non-GAAP) margin for the GAAP one, a decoy company's figure, the
original where the key is restated. Each right kind rewrites a right answer the way a careful one
may differ: "$1.2 billion" for 1,204.3 million at the precision written, a table in place of the
prose, another gold document as the citation. ``measure`` judges every touched answer with the
rules judge (accuracy) and counts how many lost it. Used by ``tests/test_research_corruptions.py``
and ``bench/bench_research_corruptions.py``; a corruption may read the world's ledger (it plays
a careless agent who saw the wrong document), the judge never does.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from harnesses.records import TrajectoryRecord
from judge._base import JudgeItem
from judge._rules import RulesJudge
from ledgerbench.dataset import ExpectedFact, Question

SIGNS = {"USD": "$", "EUR": "€", "GBP": "£"}


@dataclass
class Ledger:
    """The world's facts, for corruptions that need the wrong figure a careless agent read."""

    conn: sqlite3.Connection

    @classmethod
    def open(cls, world: Path) -> Ledger:
        return cls(sqlite3.connect(f"file:{world}?mode=ro", uri=True))

    def value(
        self, company: str, metric: str, period: str, version: str = "DESC", basis: str = "GAAP"
    ) -> Decimal | None:
        row = self.conn.execute(
            "SELECT value FROM fact WHERE company_id = ? AND metric = ? AND period_id = ? AND "
            f"member = '' AND basis = ? ORDER BY version {version} LIMIT 1",
            (company, metric, period, basis),
        ).fetchone()
        return Decimal(row[0]) if row else None

    def versions(self, company: str, metric: str, period: str) -> int:
        (count,) = self.conn.execute(
            "SELECT count(*) FROM fact WHERE company_id = ? AND metric = ? AND period_id = ? AND "
            "member = '' AND basis = 'GAAP'",
            (company, metric, period),
        ).fetchone()
        return count

    def decoy(self, company: str) -> str | None:
        row = self.conn.execute(
            "SELECT company_id FROM company WHERE decoy_of = ? ORDER BY listed DESC LIMIT 1",
            (company,),
        ).fetchone()
        return row[0] if row else None


Corruption = Callable[[Question, str, Ledger], str | None]


def _money(value: Decimal, currency: str) -> str:
    sign = "-" if value < 0 else ""
    return f"{sign}{SIGNS[currency]}{abs(value):,.1f} million"


def _key_amount(question: Question) -> ExpectedFact | None:
    """The item's one research amount (single-figure items), else None."""
    amounts = [f for f in question.expected if f.kind == "amount" and f.scale]
    return amounts[0] if len(amounts) == 1 and not question.metadata["negative"] else None


def _replace(answer: str, old: str, new: str) -> str | None:
    return answer.replace(old, new) if old in answer and old != new else None


def _metric(question: Question) -> str | None:
    """The ledger metric of a single-figure item."""
    kind, params = question.metadata["kind"], question.metadata["params"]
    if kind in ("fy_metric", "latest_fy_metric"):
        return params["metric"]
    return {"private_revenue": "revenue", "latest_quarter_revenue": "revenue"}.get(kind)


def prior_year(question: Question, answer: str, ledger: Ledger) -> str | None:
    fact, metric = _key_amount(question), _metric(question)
    if fact is None or metric is None or not fact.period:
        return None
    year = int(fact.period[2:6])
    prior = ledger.value(question.metadata["company_id"], metric, f"FY{year - 1}")
    if prior is None:
        return None
    return _replace(
        answer, _money(Decimal(str(fact.value)), fact.currency), _money(prior, fact.currency)
    )


def thousands_as_millions(question: Question, answer: str, ledger: Ledger) -> str | None:
    fact = _key_amount(question)
    if fact is None:
        return None
    value = Decimal(str(fact.value))
    wrong = f"{SIGNS[fact.currency]}{int(value * 1000):,} million"
    return _replace(answer, _money(value, fact.currency), wrong)


def non_gaap_margin(question: Question, answer: str, ledger: Ledger) -> str | None:
    if question.metadata["kind"] != "operating_margin" or question.metadata["negative"]:
        return None
    fact = next(f for f in question.expected if f.kind == "percent")
    company, period = question.metadata["company_id"], fact.period
    adjusted = ledger.value(company, "adjusted_operating_income", period, basis="non-GAAP")
    revenue = ledger.value(company, "revenue", period, version="ASC")
    if adjusted is None or not revenue:
        return None
    margin = (adjusted / revenue * 100).quantize(Decimal("0.1"))
    return _replace(answer, f"**{Decimal(str(fact.value)):.1f}%**", f"**{margin}%** (adjusted)")


def decoy_company(question: Question, answer: str, ledger: Ledger) -> str | None:
    """The same figure of the decoy with the near-duplicate name."""
    decoy = ledger.decoy(question.metadata["company_id"])
    if decoy is None or question.metadata["negative"]:
        return None
    fact, metric = _key_amount(question), _metric(question)
    if fact is not None and metric is not None:
        wrong = ledger.value(decoy, metric, fact.period)
        if wrong is None:
            return None
        return _replace(
            answer, _money(Decimal(str(fact.value)), fact.currency), _money(wrong, fact.currency)
        )
    if question.metadata["kind"] == "operating_margin":
        fact = next(f for f in question.expected if f.kind == "percent")
        income = ledger.value(decoy, "operating_income", fact.period)
        revenue = ledger.value(decoy, "revenue", fact.period)
        if income is None or not revenue:
            return None
        margin = (income / revenue * 100).quantize(Decimal("0.1"))
        return _replace(answer, f"**{Decimal(str(fact.value)):.1f}%**", f"**{margin}%**")
    return None


def original_for_restated(question: Question, answer: str, ledger: Ledger) -> str | None:
    """The first published version where the key is a later one (restated, or the annual
    report's final figure over the release's preliminary one)."""
    fact, metric = _key_amount(question), _metric(question)
    if fact is None or metric is None:
        return None
    company = question.metadata["company_id"]
    if ledger.versions(company, metric, fact.period) < 2:
        return None
    original = ledger.value(company, metric, fact.period, version="ASC")
    return _replace(
        answer, _money(Decimal(str(fact.value)), fact.currency), _money(original, fact.currency)
    )


def in_billions(question: Question, answer: str, ledger: Ledger) -> str | None:
    """A legitimate rewrite: "$1.2 billion" for 1,204.3 million (two significant digits)."""
    fact = _key_amount(question)
    if fact is None or abs(fact.value) < 1000:
        return None
    value = Decimal(str(fact.value))
    short = f"{SIGNS[fact.currency]}{value / 1000:.1f} billion"
    return _replace(answer, _money(value, fact.currency), short)


def as_table(question: Question, answer: str, ledger: Ledger) -> str | None:
    """A legitimate rewrite: the figure in a table under its sentence, not in the sentence."""
    fact = _key_amount(question)
    if fact is None:
        return None
    figure = _money(Decimal(str(fact.value)), fact.currency)
    sentence = next((s for s in answer.split("\n") if figure in s), None)
    if sentence is None:
        return None
    links = re.findall(r"\(https?://[^)]+\)", sentence)
    table = (
        f"| Measure | Period | Value | Source |\n|---|---|---:|---|\n"
        f"| {fact.field.replace('_', ' ')} | {fact.period} | {figure} | "
        f"{'[source]' + links[0] if links else ''} |"
    )
    return answer.replace(sentence, sentence.replace(figure, "the figure below") + "\n\n" + table)


def other_gold_citation(question: Question, answer: str, ledger: Ledger) -> str | None:
    """A legitimate rewrite: another gold document (one that also states the figure) cited."""
    fact = _key_amount(question)
    if fact is None or len(fact.sources) < 2:
        return None
    cited = [s for s in fact.sources if s in answer]
    others = [s for s in fact.sources if s not in answer]
    if not cited or not others:
        return None
    return answer.replace(cited[0], others[0])


WRONG: dict[str, Corruption] = {
    "prior-year figure": prior_year,
    "thousands read as millions": thousands_as_millions,
    "non-GAAP margin for the GAAP one": non_gaap_margin,
    "a decoy company's figure": decoy_company,
    "the original where the key is restated": original_for_restated,
}
RIGHT: dict[str, Corruption] = {
    '"$1.2 billion" at the precision written': in_billions,
    "a table in place of the prose": as_table,
    "another gold document cited": other_gold_citation,
}


@dataclass
class Tally:
    touched: int = 0
    lost: int = 0
    examples: list[str] = field(default_factory=list)


def accuracy(judge: RulesJudge, question: Question, record: TrajectoryRecord, answer: str) -> float:
    item = JudgeItem(question=question, trajectory=record.model_copy(update={"answer": answer}))
    outcome = judge.score(item)
    return outcome.dimensions["accuracy"].score  # type: ignore[index]


def measure(
    pairs: list[tuple[Question, TrajectoryRecord]],
    judge: RulesJudge,
    ledger: Ledger,
    kinds: dict[str, Corruption],
) -> dict[str, Tally]:
    """For each kind: the answers it touched and how many of them lost accuracy."""
    tallies = {name: Tally() for name in kinds}
    for question, record in pairs:
        for name, corrupt in kinds.items():
            changed = corrupt(question, record.answer, ledger)
            if changed is None:
                continue
            tally = tallies[name]
            tally.touched += 1
            if accuracy(judge, question, record, changed) < 1.0:
                tally.lost += 1
                if len(tally.examples) < 3:
                    tally.examples.append(question.id)
    return tallies


def table(wrong: dict[str, Tally], right: dict[str, Tally]) -> str:
    lines = ["| answer | kind | touched | lost accuracy |", "|---|---|---:|---:|"]
    for label, tallies in (("wrong", wrong), ("right", right)):
        for name, tally in tallies.items():
            share = f"{tally.lost / tally.touched:.1%}" if tally.touched else "-"
            lines.append(f"| {label} | {name} | {tally.touched} | {tally.lost} ({share}) |")
    return "\n".join(lines)
