"""Corrupting right research answers, the way a careless agent might, to test the rules judge.

Each wrong kind replaces the key's figure in a right answer with a figure a careless reading of the
world's documents gives: the prior fiscal year's, the thousands figure of a data-vendor table read
as millions, the adjusted (non-GAAP) margin for the GAAP one, a decoy company's figure, the
original where the key is restated. Each right kind rewrites a right answer the way a careful one
may differ: "$1.2 billion" for 1,204.3 million at the precision written, a table in place of the
prose, another gold document as the citation. The kinds of issue 37 read claims beside the
figure: "not yet reported" next to an invented figure, a yes that says "no doubt", a competing
figure as "another reading", a source published after the as-of date, a canned "not reported"
reply; and right forms of the figure ("USD 1,204m", "$1,204,300 thousand", "1.204 billion", an
HTML table). ``measure`` judges every touched answer with the rules judge and counts how many
scored lower on accuracy or world citations (``ZERO`` kinds: how many scored 0 on accuracy).
Used by ``tests/test_research_corruptions.py`` and ``bench/bench_research_corruptions.py``; a
corruption may read the world's ledger (it plays
a careless agent who saw the wrong document), the judge never does.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from judge._base import JudgeItem
from judge._rules import RulesJudge
from ledgerbench_core.dataset import ExpectedFact, Question
from ledgerbench_core.trajectory import TrajectoryRecord

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

    def name(self, company: str) -> str:
        (name,) = self.conn.execute(
            "SELECT name FROM company WHERE company_id = ?", (company,)
        ).fetchone()
        return name

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


# -- the claims of issue 37: what an answer says beside (or instead of) the key's figure ----------


def _variant(question: Question, options: tuple[str, ...]) -> str:
    """One of several phrasings, chosen by the item (no one wording to tune the rules to)."""
    return options[sum(map(ord, question.id)) % len(options)]


def _pending(question: Question) -> ExpectedFact | None:
    return next((f for f in question.expected if f.kind == "not_disclosed"), None)


def _invented(question: Question, ledger: Ledger) -> str:
    """A plausible figure for a period that has none: the latest reported one's, 7% higher."""
    latest = next((f for f in question.expected if f.kind == "amount" and f.scale), None)
    base = Decimal(str(latest.value)) if latest is not None else Decimal("812.4")
    currency = latest.currency if latest is not None and latest.currency in SIGNS else "USD"
    return _money((base * Decimal("1.07")).quantize(Decimal("0.1")), currency)


def not_reported_beside_figure(question: Question, answer: str, ledger: Ledger) -> str | None:
    """ "Not yet reported" said, and a figure for the asked period stated anyway."""
    pending = _pending(question)
    if pending is None:
        return None
    figure = _invented(question, ledger)
    year = (pending.period or "FY")[2:6] or "this year"
    words = pending.field.replace("_", " ")
    phrase = _variant(
        question,
        (
            f" Its fiscal {year} {words} came in at {figure}.",
            f" That said, {words} was {figure}.",
            f" (Preliminary {words}: {figure}.)",
            f"\n\n| Period | {words} |\n|---|---|\n| FY{year} | {figure} |",
        ),
    )
    if "Preliminary" in phrase:  # a preliminary figure is a figure: say it plainly
        phrase = f" Fiscal {year} {words}: {figure}."
    first = answer.find(".") + 1 or len(answer)
    return answer[:first] + phrase + answer[first:]


def canned_not_reported(question: Question, answer: str, ledger: Ledger) -> str | None:
    """The canned reply of an agent that looked nothing up, on a "not yet reported" item."""
    pending = _pending(question)
    if pending is None or pending.value != "not yet reported":
        return None
    company = ledger.name(question.metadata["company_id"])
    return _variant(
        question,
        (
            "This figure has not been reported or disclosed yet.",
            f"{company} has not reported or disclosed this yet.",
            "Not reported or disclosed yet as of the date asked.",
        ),
    )


def yes_no_doubt(question: Question, answer: str, ledger: Ledger) -> str | None:
    """ "Yes, no doubt: the regulator fined it $3.1 million" where the key says no fine; the
    opposite verdict on a yes/no item, with "no" still among the first words."""
    if any(f.kind == "no_records" for f in question.expected):
        return (
            _variant(
                question,
                (
                    "Yes, no doubt: the regulator fined it $3.1 million.",
                    "No doubt about it: the regulator fined it $3.1 million last year.",
                    "Yes. There is no question the regulator fined it $3.1 million.",
                ),
            )
            + "\n\n"
            + answer
        )
    boolean = next((f for f in question.expected if f.kind == "boolean"), None)
    if boolean is None:
        return None
    opening = re.match(r"^\s*\**(Yes|No)\**:\s*", answer)
    if opening is None:
        return None
    wrong = "Yes, no doubt:" if opening.group(1) == "No" else "No doubt, no:"
    return f"{wrong} {answer[opening.end() :]}"


def another_reading(question: Question, answer: str, ledger: Ledger) -> str | None:
    """The right figure with a wrong one beside it as "another reading"."""
    fact = _key_amount(question)
    if fact is None or abs(fact.value) < 10:  # a 4% change is not seen at one decimal
        return None
    value = Decimal(str(fact.value))
    right = _money(value, fact.currency)
    wrong = _money((value * Decimal("1.04")).quantize(Decimal("0.1")), fact.currency)
    beside = _variant(
        question,
        (
            f"{right} (another reading: {wrong})",
            f"{right}, or {wrong} by another reading,",
            f"{right}; some documents give {wrong}",
            f"{wrong} or {right}",
        ),
    )
    return _replace(answer, right, beside)


def another_percentage(question: Question, answer: str, ledger: Ledger) -> str | None:
    """The right percentage (a margin, a growth rate) with a wrong one beside it."""
    facts = [f for f in question.expected if f.kind == "percent" and not f.subject]
    if len(facts) != 1:
        return None
    right = f"{Decimal(str(facts[0].value)):.1f}%"
    wrong = f"{Decimal(str(facts[0].value)) + Decimal('0.6'):.1f}%"
    beside = _variant(
        question,
        (f"{right} (another reading: {wrong})", f"{right}, or {wrong} on another count,",
         f"{wrong} or {right}"),
    )  # fmt: skip
    return _replace(answer, right, beside) if answer.count(right) == 1 else None


def _later_document(ledger: Ledger, question: Question, text: str) -> str | None:
    """A document about the item's company, published after its as-of date, that states
    ``text``."""
    if question.as_of is None:
        return None
    rows = ledger.conn.execute(
        "SELECT url, body FROM document WHERE published_at > ? AND instr(companies, ?) > 0 "
        "ORDER BY published_at",
        (question.as_of.isoformat(), question.metadata["company_id"]),
    ).fetchall()
    return next((url for url, body in rows if text in body), None)


def cited_after_as_of(question: Question, answer: str, ledger: Ledger) -> str | None:
    """The cited source replaced by a document published after the as-of date that states the
    same figure (a careless agent reading today's filing for a past date)."""
    fact = _key_amount(question)
    if fact is None:
        return None
    cited = [s for s in fact.sources if s in answer]
    later = _later_document(ledger, question, f"{Decimal(str(fact.value)):,.1f}")
    if not cited or later is None:
        return None
    return answer.replace(cited[0], later)


def flipped_verdict(question: Question, answer: str, ledger: Ledger) -> str | None:
    """A yes/no item answered the other way, the figures untouched."""
    if not any(f.kind == "boolean" for f in question.expected):
        return None
    opening = re.match(r"^\s*\**(Yes|No)\b", answer)
    if opening is None:
        return None
    other = "No" if opening.group(1) == "Yes" else "Yes"
    return answer[: opening.start(1)] + other + answer[opening.end(1) :]


def currency_swapped(question: Question, answer: str, ledger: Ledger) -> str | None:
    """The key's figure written with another currency's sign."""
    fact = _key_amount(question)
    if fact is None:
        return None
    right = _money(Decimal(str(fact.value)), fact.currency)
    other = "€" if fact.currency != "EUR" else "$"
    return _replace(answer, right, right.replace(SIGNS[fact.currency], other, 1))


def event_denied(question: Question, answer: str, ledger: Ledger) -> str | None:
    """An item whose key has an event (a regulatory fine) answered "none"."""
    if question.metadata["kind"] != "regulatory_action" or question.metadata["negative"]:
        return None
    company = ledger.name(question.metadata["company_id"])
    return f"No: I found no regulatory fine against {company} in the filings and news."


def figure_denied(question: Question, answer: str, ledger: Ledger) -> str | None:
    """A reported figure said to be not yet reported."""
    fact = _key_amount(question)
    if fact is None or not fact.period:
        return None
    year = fact.period[2:6]
    return f"The fiscal {year} {fact.field.replace('_', ' ')} has not yet been reported."


def wrong_scale(question: Question, answer: str, ledger: Ledger) -> str | None:
    """The key's digits with the wrong scale word ("thousand" for "million")."""
    fact = _key_amount(question)
    if fact is None:
        return None
    right = _money(Decimal(str(fact.value)), fact.currency)
    return _replace(answer, right, right.replace(" million", " thousand"))


def peers_swapped(question: Question, answer: str, ledger: Ledger) -> str | None:
    """Two companies' figures swapped in a comparison or ranking."""
    facts = [f for f in question.expected if f.subject and f.kind in ("amount", "percent")]
    for a, b in itertools.pairwise(facts):
        if a.kind != b.kind or a.value == b.value:
            continue
        shown = [_shown_value(f) for f in (a, b)]
        if all(answer.count(t) == 1 for t in shown):
            return (
                answer.replace(shown[0], "\x00")
                .replace(shown[1], shown[0])
                .replace("\x00", shown[1])
            )
    return None


def _shown_value(fact: ExpectedFact) -> str:
    if fact.kind == "percent":
        return f"{Decimal(str(fact.value)):.1f}%"
    return _money(Decimal(str(fact.value)), fact.currency)


def stated_for_prior_period(question: Question, answer: str, ledger: Ledger) -> str | None:
    """The right figure labelled with the prior fiscal year."""
    fact = _key_amount(question)
    if fact is None or not fact.period or question.metadata["kind"] != "fy_metric":
        return None
    year = int(fact.period[2:6])
    return _replace(answer, f"fiscal {year}", f"fiscal {year - 1}")


# -- right forms of issue 37 ------------------------------------------------------------------


def _rewrite_key(question: Question, answer: str, form: Callable[[Decimal, str], str | None]):
    fact = _key_amount(question)
    if fact is None:
        return None
    value = Decimal(str(fact.value))
    shown = form(value, fact.currency)
    return None if shown is None else _replace(answer, _money(value, fact.currency), shown)


def code_and_m(question: Question, answer: str, ledger: Ledger) -> str | None:
    """ "USD 1,204.3m": the code and a short scale."""
    return _rewrite_key(question, answer, lambda v, c: f"{'-' if v < 0 else ''}{c} {abs(v):,.1f}m")


def whole_millions(question: Question, answer: str, ledger: Ledger) -> str | None:
    """ "USD 1,204m": rounded to whole millions (the precision it is written at)."""
    return _rewrite_key(
        question,
        answer,
        lambda v, c: f"{'-' if v < 0 else ''}{c} {abs(v):,.0f}m" if abs(v) >= 100 else None,
    )


def in_thousands(question: Question, answer: str, ledger: Ledger) -> str | None:
    """ "$1,204,300 thousand"."""
    return _rewrite_key(
        question,
        answer,
        lambda v, c: f"{'-' if v < 0 else ''}{SIGNS[c]}{abs(v) * 1000:,.0f} thousand",
    )


def three_decimals_billion(question: Question, answer: str, ledger: Ledger) -> str | None:
    """ "1.204 billion" (three decimals, no sign before the figure: the code after it)."""
    return _rewrite_key(
        question,
        answer,
        lambda v, c: (
            f"{'-' if v < 0 else ''}{abs(v) / 1000:.3f} billion {c}" if abs(v) >= 1000 else None
        ),
    )


def in_units(question: Question, answer: str, ledger: Ledger) -> str | None:
    """ "USD 1,204,300,000": every digit."""
    return _rewrite_key(
        question, answer, lambda v, c: f"{'-' if v < 0 else ''}{c} {abs(v) * 1000000:,.0f}"
    )


def html_table(question: Question, answer: str, ledger: Ledger) -> str | None:
    """The figure in an HTML table under its sentence."""
    fact = _key_amount(question)
    if fact is None:
        return None
    figure = _money(Decimal(str(fact.value)), fact.currency)
    sentence = next((s for s in answer.split("\n") if figure in s), None)
    if sentence is None:
        return None
    links = re.findall(r"\((https?://[^)]+)\)", sentence)
    source = f'<a href="{links[0]}">source</a>' if links else ""
    table = (
        "<table><thead><tr><th>Measure</th><th>Period</th><th>Value</th><th>Source</th></tr>"
        f"</thead><tbody><tr><td>{fact.field.replace('_', ' ')}</td><td>{fact.period}</td>"
        f"<td>{figure}</td><td>{source}</td></tr></tbody></table>"
    )
    return answer.replace(sentence, sentence.replace(figure, "the figure below") + "\n\n" + table)


def short_year_label(question: Question, answer: str, ledger: Ledger) -> str | None:
    """ "FY25" for "fiscal 2025"."""
    fact = _key_amount(question)
    if fact is None or not fact.period or not fact.period.startswith("FY"):
        return None
    year = fact.period[2:6]
    return _replace(answer, f"fiscal {year}", f"FY{year[2:]}")


WRONG: dict[str, Corruption] = {
    "prior-year figure": prior_year,
    "thousands read as millions": thousands_as_millions,
    "non-GAAP margin for the GAAP one": non_gaap_margin,
    "a decoy company's figure": decoy_company,
    "the original where the key is restated": original_for_restated,
    '"not yet reported" beside an invented figure for the period': not_reported_beside_figure,
    'canned "not reported or disclosed yet", no lookup (must score 0)': canned_not_reported,
    '"Yes, no doubt: fined $3.1 million" / the opposite verdict after "no"': yes_no_doubt,
    'a wrong figure beside the right one ("another reading")': another_reading,
    "a wrong percentage beside the right one": another_percentage,
    "a source published after the as-of date stating the figure": cited_after_as_of,
    "a yes/no comparison answered the other way": flipped_verdict,
    "the figure with another currency's sign": currency_swapped,
    "a fine on record answered as none": event_denied,
    "a reported figure called not yet reported": figure_denied,
    'the digits with the wrong scale ("thousand")': wrong_scale,
    "two companies' figures swapped in a comparison": peers_swapped,
    "the right figure labelled with the prior fiscal year": stated_for_prior_period,
}
RARE: frozenset[str] = frozenset(
    {"a fine on record answered as none", "non-GAAP margin for the GAAP one"}
)
"""Wrong kinds few items of a small world have (one or two regulatory fines)."""
ZERO: frozenset[str] = frozenset(
    {'canned "not reported or disclosed yet", no lookup (must score 0)'}
)
"""Wrong kinds caught only when accuracy is 0 (not merely lower)."""
RIGHT: dict[str, Corruption] = {
    '"$1.2 billion" at the precision written': in_billions,
    "a table in place of the prose": as_table,
    "another gold document cited": other_gold_citation,
    '"USD 1,204.3m"': code_and_m,
    '"USD 1,204m", whole millions': whole_millions,
    '"$1,204,300 thousand"': in_thousands,
    '"1.204 billion USD"': three_decimals_billion,
    '"USD 1,204,300,000", every digit': in_units,
    "an HTML table in place of the prose": html_table,
    '"FY25" for "fiscal 2025"': short_year_label,
}


@dataclass
class Tally:
    touched: int = 0
    lost: int = 0
    examples: list[str] = field(default_factory=list)


def accuracy(judge: RulesJudge, question: Question, record: TrajectoryRecord, answer: str) -> float:
    return graded(judge, question, record, answer)[0]


def graded(
    judge: RulesJudge, question: Question, record: TrajectoryRecord, answer: str
) -> tuple[float, float | None]:
    """(accuracy, world citations) of an answer."""
    item = JudgeItem(question=question, trajectory=record.model_copy(update={"answer": answer}))
    outcome = judge.score(item)
    citations = outcome.dimensions.get("citations")
    return (
        outcome.dimensions["accuracy"].score,  # type: ignore[index]
        citations.score if citations is not None else None,
    )


def lower(before: tuple, after: tuple) -> bool:
    """Scores lower on accuracy or on citations."""
    return any(b is not None and (a is None or a < b) for b, a in zip(before, after, strict=True))


def measure(
    pairs: list[tuple[Question, TrajectoryRecord]],
    judge: RulesJudge,
    ledger: Ledger,
    kinds: dict[str, Corruption],
) -> dict[str, Tally]:
    """For each kind: the answers it touched and how many of them lost accuracy."""
    tallies = {name: Tally() for name in kinds}
    for question, record in pairs:
        before = graded(judge, question, record, record.answer)
        for name, corrupt in kinds.items():
            changed = corrupt(question, record.answer, ledger)
            if changed is None or changed == record.answer:
                continue
            tally = tallies[name]
            tally.touched += 1
            after = graded(judge, question, record, changed)
            if (after[0] == 0.0) if name in ZERO else lower(before, after):
                tally.lost += 1
                if len(tally.examples) < 3:
                    tally.examples.append(question.id)
    return tallies


def table(wrong: dict[str, Tally], right: dict[str, Tally]) -> str:
    lines = [
        "| answer | kind | touched | caught (wrong) / failed (right) |",
        "|---|---|---:|---:|",
    ]
    for label, tallies in (("wrong", wrong), ("right", right)):
        for name, tally in tallies.items():
            share = f"{tally.lost / tally.touched:.1%}" if tally.touched else "-"
            lines.append(f"| {label} | {name} | {tally.touched} | {tally.lost} ({share}) |")
    return "\n".join(lines)
