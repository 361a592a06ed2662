"""Corrupting correct answers, the way a careless or dishonest agent might, to test the rules judge.

Each corruption takes a question (its ``expected`` facts and ``record_refs``, the public answer
key) and a correct answer, and returns the corrupted answer, or None when it does not apply to that
answer (the answer is then not "touched"). ``measure`` re-judges every touched answer with the
rules judge and counts how many fail accuracy or citations. Used by
``tests/test_judge_corruptions.py`` and ``bench/bench_judge_corruptions.py``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from judge import _extract as x
from judge._base import JudgeItem
from judge._erp_links import find_erp_links, parse_link
from judge._rules import RulesJudge
from ledgerbench_core.dataset import Dimension, ExpectedFact, Question, TaskType
from ledgerbench_core.scores import DimensionStatus
from ledgerbench_core.trajectory import TrajectoryRecord

Neighbour = Callable[[str, str, str], str | None]
"""(entity set, legal entity, key) -> another existing key of that set and legal entity."""


@dataclass
class Context:
    neighbour: Neighbour
    legal_entities: tuple[str, ...] = ()
    """Every legal entity of the ERP (for answers that claim another one)."""
    party_name: Callable[[str, str, str], str | None] = lambda _set, _le, _key: None
    """(entity set, legal entity, key) -> the customer's or vendor's name."""


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


# ---------------------------------------------------------------------------------------------
# The wrong answers of issue 25: what the answer claims, not only its figures
# ---------------------------------------------------------------------------------------------

_OTHER_CURRENCY = {"USD": "EUR", "EUR": "USD", "GBP": "EUR", "CAD": "USD"}
_SYMBOL_CODES = {"$": "USD", "€": "EUR", "£": "GBP"}


def wrong_currency(question: Question, answer: str, ctx: Context) -> str | None:
    """Every expected amount written with its currency shown as another one (USD as EUR)."""
    spans, texts = [], []
    for fact in _amount_facts(question):
        if not fact.currency:
            continue
        for _start, _end, match in _amount_spans(answer, fact):
            group = "cur1" if match.group("cur1") else "cur2" if match.group("cur2") else None
            if group is None or match.span(group) in spans:
                continue
            code = _SYMBOL_CODES.get(match.group(group).strip(), match.group(group).upper())
            spans.append(match.span(group))
            texts.append(_OTHER_CURRENCY.get(fact.currency, "USD") if code else code)
    return _replace(answer, spans, texts) if spans else None


def _marked(question: Question, answer: str, marks: dict[str, str]) -> str | None:
    """Every positive expected amount whose side is in ``marks`` followed by that side's mark."""
    spans, texts = [], []
    for fact in _amount_facts(question):
        if fact.side not in marks or float(fact.value) < 0:
            continue
        for _start, _end, match in _amount_spans(answer, fact):
            end = match.end("cur2") if match.group("cur2") else match.end("num")
            if (end, end) in spans:
                continue
            spans.append((end, end))
            texts.append(f" {marks[fact.side]}")
    return _replace(answer, spans, texts) if spans else None


def debit_written_as_credit(question: Question, answer: str, ctx: Context) -> str | None:
    """A debit (a receivable, an AR invoice) marked CR: ``GBP 2,790.96 CR``."""
    return _marked(question, answer, {"debit": "CR"})


def credit_written_as_debit(question: Question, answer: str, ctx: Context) -> str | None:
    """A credit (a payable, a customer payment) marked DR."""
    return _marked(question, answer, {"credit": "DR"})


def _record_amount_facts(question: Question) -> list[tuple[str, ExpectedFact]]:
    """(record id, fact) of the per-record amounts (``past_due_SYNCUS-0473``)."""
    found = []
    for fact in _amount_facts(question):
        ids = [q for q in fact.field.split("_")[1:] if x.find_id_tokens(q)]
        if len(ids) == 1:
            found.append((ids[0], fact))
    return found


def swapped_parties(question: Question, answer: str, ctx: Context) -> str | None:
    """Two parties' figures swapped where the answer names both on one line."""
    facts = _record_amount_facts(question)
    for (key_a, fact_a), (key_b, fact_b) in itertools.pairwise(facts):
        if abs(float(fact_a.value) - float(fact_b.value)) < 0.01:
            continue
        for line_start, line in _lines(answer):
            spans_a = [s for s in _amount_spans(line, fact_a)]
            spans_b = [s for s in _amount_spans(line, fact_b)]
            if not (spans_a and spans_b and key_a in line and key_b in line):
                continue
            (a0, a1, ma), (b0, b1, mb) = spans_a[0], spans_b[0]
            text_a = _format_like(ma.group("num"), float(fact_b.value))
            text_b = _format_like(mb.group("num"), float(fact_a.value))
            swapped = _replace(line, [(a0, a1), (b0, b1)], [text_a, text_b])
            return answer[:line_start] + swapped + answer[line_start + len(line) :]
    return None


def _lines(text: str) -> list[tuple[int, str]]:
    found, offset = [], 0
    for line in text.splitlines(keepends=True):
        found.append((offset, line.rstrip("\n")))
        offset += len(line)
    return found


def invented_list_member(question: Question, answer: str, ctx: Context) -> str | None:
    """An invented id added to a list that is the whole set, the count left unchanged."""
    for fact in question.expected:
        if fact.kind != "top_n" or not fact.complete or not fact.value:
            continue
        first = str(fact.value[0])
        if not x.find_id_tokens(first):
            continue
        prefix, digits = first.split("-", 1)
        invented = f"{prefix}-{'9' * len(digits)}"
        text = x.prose(answer)
        found = re.search(rf"(?<![\w-]){re.escape(first)}(?![\w-])", text)
        if found is None:
            continue
        end = found.end()
        link = re.compile(r"\[[^\]\n]*\]\([^)\s]*\)")
        for match in link.finditer(answer):
            if match.start() <= found.start() < match.end():
                end = match.end()
        closing = re.match(r"[*_]*\)?", answer[end:])
        end += len(closing.group(0)) if closing else 0
        return answer[:end] + f", {invented}" + answer[end:]
    return None


def other_legal_entity(question: Question, answer: str, ctx: Context) -> str | None:
    """The answer says it is about another legal entity (every mention in the prose; links
    unchanged)."""
    le = question.legal_entity
    others = [code for code in ctx.legal_entities if code != le]
    if not le or not others:
        return None
    text = x.prose(answer)
    spans = [m.span() for m in re.finditer(rf"(?<![\w/-]){re.escape(le)}(?![\w/-])", text)]
    return _replace(answer, spans, [others[0]] * len(spans)) if spans else None


def wrong_as_of(question: Question, answer: str, ctx: Context) -> str | None:
    """The answer states another as-of date: "as of March 2, 2026" -> "as of February 2"."""
    if question.as_of is None:
        return None
    day = question.as_of
    earlier = (day.replace(day=1) - dt.timedelta(days=1)).replace(day=min(day.day, 28))
    written = {
        f"{day:%B} {day.day}, {day.year}": f"{earlier:%B} {earlier.day}",
        day.isoformat(): earlier.isoformat(),
    }
    text = x.prose(answer)
    spans, texts = [], []
    for match in re.finditer(r"\bas\s+(?:of|at)\s+", text, re.IGNORECASE):
        for old, new in written.items():
            if text.startswith(old, match.end()):
                spans.append((match.end(), match.end() + len(old)))
                texts.append(new)
    return _replace(answer, spans, texts) if spans else None


def table_cell_wrong(question: Question, answer: str, ctx: Context) -> str | None:
    """A table cell with an expected amount +1% while the prose states the right figure (not
    for a value the reference answer itself gives for two things: a total equal to its only line,
    whose table cell states the line)."""
    from judge import _claims as claims

    for fact in _amount_facts(question):
        if len(_amount_spans(question.ground_truth or "", fact)) > 1:
            continue  # the reference gives this value twice (a total equal to its one line)
        spans = _amount_spans(answer, fact)
        kinds = [
            (claims.unit_of(answer, s).kind if claims.unit_of(answer, s) else "")
            for s, _, _ in spans
        ]
        if "row" not in kinds or all(k == "row" for k in kinds):
            continue
        start, end, match = next(s for s, k in zip(spans, kinds, strict=True) if k == "row")
        return _replace(
            answer, [(start, end)], [_format_like(match.group("num"), float(fact.value) * 1.01)]
        )
    return None


def right_then_wrong_restated(question: Question, answer: str, ctx: Context) -> str | None:
    """The right figure first, then the same fact restated wrong further down."""
    for fact in _amount_facts(question):
        spans = _amount_spans(answer, fact)
        if spans:
            _start, _end, match = spans[0]
            wrong = _format_like(match.group("num"), float(fact.value) * 1.01)
            currency = (match.group("cur1") or match.group("cur2") or "").strip()
            shown = f"{currency} {wrong}".strip()
            return answer + f"\n\nLedger figure for {fact.field.replace('_', ' ')}: {shown}."
    return None


def asked_id_changed(question: Question, answer: str, ctx: Context) -> str | None:
    """The id the question asks about (``customer account SYNCUS-0141``, ``journal
    PJ-0000956``) changed in the prose to another existing record's, links untouched."""
    asked = x.find_id_tokens(question.query)
    refs = [r for r in (parse_link(ref) for ref in question.record_refs) if r is not None]
    for token in asked:
        ref = next((r for r in refs if r.key.casefold() == token.casefold()), None)
        if ref is None:
            continue
        text = x.prose(answer)
        spans = [m.span() for m in re.finditer(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text)]
        other = ctx.neighbour(ref.entity_set, ref.legal_entity, ref.key)
        if spans and other is not None:
            return _replace(answer, spans, [other] * len(spans))
    return None


HEDGE = "I could not verify this in the ERP; it may be wrong."


def hedged(question: Question, answer: str, ctx: Context) -> str | None:
    """The right figures followed by a hedge that disowns them."""
    if any(f.kind == "no_records" for f in question.expected) or not question.expected:
        return None
    return answer.rstrip() + f"\n\n{HEDGE}"


def _mislabel(question: Question, answer: str, ctx: Context, with_refs: bool) -> str | None:
    if bool(question.record_refs) != with_refs:
        return None
    for match in re.finditer(r"\[([^\]\n]+)\]\(([^)\s]+)\)", answer):
        ref = parse_link(match.group(2))
        if ref is None or ref.entity_set not in ("customers", "vendors"):
            continue
        label = match.group(1)
        name = ctx.party_name(ref.entity_set, ref.legal_entity, ref.key)
        if ref.key not in label and not (name and name in label):
            continue
        other = ctx.neighbour(ref.entity_set, ref.legal_entity, ref.key)
        if other is None:
            continue
        target = match.group(2).replace(f"/{ref.key}", f"/{other}")
        return answer[: match.start(2)] + target + answer[match.end(2) :]
    return None


def mislabeled_link_no_refs(question: Question, answer: str, ctx: Context) -> str | None:
    """A link labelled with one customer or vendor that points at another (an existing one), in
    an item without ``record_refs``."""
    return _mislabel(question, answer, ctx, with_refs=False)


def mislabeled_link_with_refs(question: Question, answer: str, ctx: Context) -> str | None:
    """The same in an item with ``record_refs``."""
    return _mislabel(question, answer, ctx, with_refs=True)


# ---------------------------------------------------------------------------------------------
# Right answers in other forms: each must still pass
# ---------------------------------------------------------------------------------------------


def _grouped_with(separator: str) -> Corruption:
    def rewrite(question: Question, answer: str, ctx: Context) -> str | None:
        spans, texts = [], []
        for fact in _amount_facts(question):
            if abs(float(fact.value)) < 1000:
                continue
            for start, end, match in _amount_spans(answer, fact):
                body = match.group("num")
                if "," not in body or (start, end) in spans:
                    continue
                spans.append((start, end))
                texts.append(body.replace(",", separator))
        return _replace(answer, spans, texts) if spans else None

    return rewrite


_WORD_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_WORD_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def in_words(number: int) -> str:
    """``2341`` -> "two thousand three hundred forty-one"."""
    if number < 20:
        return _WORD_UNITS[number]
    if number < 100:
        tens, unit = divmod(number, 10)
        return _WORD_TENS[tens - 2] + (f"-{_WORD_UNITS[unit]}" if unit else "")
    if number < 1000:
        hundreds, rest = divmod(number, 100)
        return f"{_WORD_UNITS[hundreds]} hundred" + (f" and {in_words(rest)}" if rest else "")
    for size, word in ((10**9, "billion"), (10**6, "million"), (10**3, "thousand")):
        if number >= size:
            high, rest = divmod(number, size)
            return f"{in_words(high)} {word}" + (f" {in_words(rest)}" if rest else "")
    raise AssertionError(number)


def counts_in_words(question: Question, answer: str, ctx: Context) -> str | None:
    """Every expected count of 13 or more written in words ("twenty-three open invoices")."""
    for fact in _count_facts(question):
        if int(fact.value) < 13:
            continue
        spans = _count_spans(answer, int(fact.value))
        if spans:
            return _replace(answer, spans, [in_words(int(fact.value))] * len(spans))
    return None


_LEAD_INS = (
    "Per the ERP records I queried: {word}.",
    "Having checked the ERP, the answer is {word}:",
)


def yes_no_after_lead_in(question: Question, answer: str, ctx: Context) -> str | None:
    """The yes/no after a lead-in in the first sentence: "Per the ERP records I queried: no."."""
    facts = [f for f in question.expected if f.kind == "boolean"]
    opening = re.match(r"^\s*\**(yes|no)\**[.,:;!]?\s*", answer, re.IGNORECASE)
    if not facts or opening is None:
        return None
    lead = _LEAD_INS[len(question.id) % 2].format(word=opening.group(1).lower())
    return f"{lead} {answer[opening.end() :]}"


def marked_on_its_side(question: Question, answer: str, ctx: Context) -> str | None:
    """Every amount with a ledger side marked with its own side: debits DR, credits CR."""
    return _marked(question, answer, {"debit": "DR", "credit": "CR"})


def in_the_other_currency(question: Question, answer: str, ctx: Context) -> str | None:
    """An amount the key gives in two currencies (an invoice in its document currency and in
    accounting currency) stated in the other one, with its currency code."""
    for fact in _amount_facts(question):
        if not fact.equivalents:
            continue
        other = fact.equivalents[0]
        spans = _amount_spans(answer, fact)
        if not spans:
            continue
        texts, edits = [], []
        for _start, _end, match in spans:
            first = "cur1" if match.group("cur1") else "num"
            last = "cur2" if match.group("cur2") else "num"
            edits.append((match.start(first), match.end(last)))
            texts.append(f"{other.currency} {other.value:,.2f}")
        return _replace(answer, edits, texts)
    return None


# ---------------------------------------------------------------------------------------------
# The wrong answers of issue 37: the same claims in other shapes than the kinds above
# ---------------------------------------------------------------------------------------------


def _variant(question: Question, options: tuple):
    """One of several shapes, chosen by the item (no one wording to tune the rules to)."""
    return options[sum(map(ord, question.id)) % len(options)]


def _table_rows(answer: str) -> list[tuple[int, str]]:
    return [(start, line) for start, line in _lines(answer) if line.lstrip().startswith("|")]


def _row_record(line: str) -> str | None:
    tokens = x.find_id_tokens(line)
    return tokens[0] if tokens else None


def ids_swapped_in_prose(question: Question, answer: str, ctx: Context) -> str | None:
    """Two records' ids swapped in the prose (links untouched) while the table is right: in a
    prose line that gives each of them a figure."""
    rows = {_row_record(line) for _, line in _table_rows(answer)} - {None}
    for line_start, line in _lines(answer):
        if line.lstrip().startswith("|"):
            continue
        text = x.prose(line)
        tokens = [m for m in x.ID_TOKEN.finditer(text) if m.group(0) in rows]
        amounts = [m for m in x._AMOUNT_RE.finditer(text) if m.group("cur1") or m.group("cur2")]
        for a, b in itertools.combinations(tokens, 2):
            if a.group(0) == b.group(0) or a.group(1) != b.group(1):
                continue
            between = [m for m in amounts if a.end() < m.start() < b.start()]
            after = [m for m in amounts if m.start() > b.end()]
            if not between or not after:
                continue
            swapped = _replace(line, [a.span(), b.span()], [b.group(0), a.group(0)])
            return answer[:line_start] + swapped + answer[line_start + len(line) :]
    return None


_CREDIT_SHAPES = (
    "{num}CR", "{num} Cr", "{num} (CR)", "{num} cr.", "{num} CR.", "CR {num}", "{num}-"
)  # fmt: skip


def debit_in_cr_notation(question: Question, answer: str, ctx: Context) -> str | None:
    """A debit shown as a credit in another notation than `` CR`` after the figure:
    ``2,790.96CR``, ``2,790.96 Cr``, ``2,790.96 (CR)``, ``cr.``, ``CR 2,790.96``, ``2,790.96-``."""
    shape = _variant(question, _CREDIT_SHAPES)
    spans, texts = [], []
    for fact in _amount_facts(question):
        if fact.side != "debit" or float(fact.value) < 0:
            continue
        for _start, _end, match in _amount_spans(answer, fact):
            first = "cur1" if match.group("cur1") else "num"
            last = "cur2" if match.group("cur2") else "num"
            span = (match.start(first), match.end(last))
            if span in spans:
                continue
            shown = answer[span[0] : span[1]]
            spans.append(span)
            texts.append(shape.format(num=shown))
    return _replace(answer, spans, texts) if spans else None


def credit_column_in_table(question: Question, answer: str, ctx: Context) -> str | None:
    """A debit shown as a credit by a Dr/Cr column of its table: ``| ... | 2,790.96 | CR |``."""
    debits = [f for f in _amount_facts(question) if f.side == "debit" and float(f.value) > 0]
    rows = _table_rows(answer)
    if not debits or not rows:
        return None
    touched = False
    lines = answer.split("\n")
    for index, line in enumerate(lines):
        if not line.lstrip().startswith("|"):
            continue
        rule = re.fullmatch(r"\s*\|?(?:\s*:?-{2,}:?\s*\|)+\s*", line)
        header = index + 1 < len(lines) and re.fullmatch(
            r"\s*\|?(?:\s*:?-{2,}:?\s*\|)+\s*", lines[index + 1]
        )
        if rule:
            lines[index] = line.rstrip() + "---|"
        elif header:
            lines[index] = line.rstrip() + " Dr/Cr |"
        else:
            states = any(_amount_spans(line, f) for f in debits)
            lines[index] = line.rstrip() + (" CR |" if states else " DR |")
            touched = touched or states
    return "\n".join(lines) if touched else None


def invented_member_in_table(question: Question, answer: str, ctx: Context) -> str | None:
    """An invented id added as a row of the table of a list that is the whole set or a top N
    ranking (or to the prose list when there is no table), the count unchanged."""
    for fact in question.expected:
        if fact.kind != "top_n" or not (fact.complete or fact.ordered) or not fact.value:
            continue
        first = str(fact.value[0])
        if not x.find_id_tokens(first):
            continue
        prefix, digits = first.split("-", 1)
        invented = f"{prefix}-{'8' * (len(digits) - 1)}7"
        for start, line in _table_rows(answer):
            if first in x.prose(line):
                row = x.prose(line).replace("\x00", "")
                new_row = re.sub(r"\]\(\)", "]", row).replace(first, invented)
                return answer[: start + len(line)] + "\n" + new_row + answer[start + len(line) :]
        return invented_list_member(question, answer, ctx)
    return None


def table_cell_of_record_wrong(question: Question, answer: str, ctx: Context) -> str | None:
    """An amount cell of a record's table row +3% where the prose gives the same record the
    right figure (the claim stated twice disagrees)."""
    rows = _table_rows(answer)
    for _line_start, line in _lines(answer):
        if line.lstrip().startswith("|"):
            continue
        text = x.prose(line)
        for token in x.ID_TOKEN.finditer(text):
            for row_start, row in rows:
                if _row_record(row) != token.group(0):
                    continue
                for match in x._AMOUNT_RE.finditer(x.prose(row)):
                    body = match.group("num")
                    value = float(x._parse_body(body)[0])
                    if value < 10 or ("," not in body and "." not in body):
                        continue
                    if body not in text[token.end() :]:
                        continue
                    wrong = _format_like(body, value * 1.03)
                    start, end = match.span("num")
                    return _replace(answer, [(row_start + start, row_start + end)], [wrong])
    return None


def any_document_cell_wrong(question: Question, answer: str, ctx: Context) -> str | None:
    """Any amount or date cell of a table row that cites a document (an invoice, an order, a
    payment) changed: the amount +2% or the date a day later; whether or not the key or the
    prose has that value (the cited record does)."""
    date_first = _variant(question, (True, False))
    for row_start, row in _table_rows(answer):
        refs = [link.ref for link in find_erp_links(row) if link.ref is not None]
        if len(set(refs)) != 1 or refs[0].entity_set in ("customers", "vendors"):
            continue
        text = x.prose(row)
        dates = [m for p in x._DATE_PATTERNS for m in p.regex.finditer(text)]
        amounts = [
            m
            for m in x._AMOUNT_RE.finditer(x._blank_dates(text))
            if re.search(r"[.,]\d{2}$", m.group("num"))
            and float(x._parse_body(m.group("num"))[0]) >= 10
        ]
        for kind in ("date", "amount") if date_first else ("amount", "date"):
            if kind == "date" and dates:
                found = x.find_dates(dates[0].group(0))
                day = min(found) + dt.timedelta(days=1)
                new = f"{day:%B} {day.day}, {day.year}"
                start, end = dates[0].span()
                return _replace(answer, [(row_start + start, row_start + end)], [new])
            if kind == "amount" and amounts:
                match = amounts[-1]
                body = match.group("num")
                wrong = _format_like(body, float(x._parse_body(body)[0]) * 1.02)
                start, end = match.span("num")
                return _replace(answer, [(row_start + start, row_start + end)], [wrong])
    return None


def swapped_party_rows(question: Question, answer: str, ctx: Context) -> str | None:
    """Two parties' figures swapped in the table while the prose is right."""
    facts = _record_amount_facts(question)
    rows = _table_rows(answer)
    for (key_a, fact_a), (key_b, fact_b) in itertools.pairwise(facts):
        if abs(float(fact_a.value) - float(fact_b.value)) < 0.01:
            continue
        row_a = next(((s, r) for s, r in rows if key_a in r and _amount_spans(r, fact_a)), None)
        row_b = next(((s, r) for s, r in rows if key_b in r and _amount_spans(r, fact_b)), None)
        if row_a is None or row_b is None:
            continue
        (sa, ra), (sb, rb) = row_a, row_b
        (a0, a1, ma), (b0, b1, mb) = _amount_spans(ra, fact_a)[0], _amount_spans(rb, fact_b)[0]
        return _replace(
            answer,
            [(sa + a0, sa + a1), (sb + b0, sb + b1)],
            [_format_like(ma.group("num"), float(fact_b.value)),
             _format_like(mb.group("num"), float(fact_a.value))],
        )  # fmt: skip
    return None


def figure_restated_as_correction(question: Question, answer: str, ctx: Context) -> str | None:
    """A wrong figure presented as the correction of the right one ("correction: the figure is
    USD 12,469.04")."""
    for fact in _amount_facts(question):
        spans = _amount_spans(answer, fact)
        if spans:
            _start, _end, match = spans[0]
            wrong = _format_like(match.group("num"), float(fact.value) * 0.97)
            currency = (match.group("cur1") or match.group("cur2") or "").strip()
            shown = f"{currency} {wrong}".strip()
            return answer + f"\n\nCorrection: the {fact.field.replace('_', ' ')} is {shown}."
    return None


def count_in_words_wrong(question: Question, answer: str, ctx: Context) -> str | None:
    """A count written in words, one too many ("twenty-four" for 23)."""
    for fact in _count_facts(question):
        spans = _count_spans(answer, int(fact.value))
        if spans:
            return _replace(answer, spans, [in_words(int(fact.value) + 1)] * len(spans))
    return None


def member_dropped(question: Question, answer: str, ctx: Context) -> str | None:
    """One member of a short ordered list left out of the prose and the table."""
    for fact in question.expected:
        if fact.kind != "top_n" or not fact.value or len(fact.value) > 5:
            continue
        last = str(fact.value[-1])
        lines = [line for line in answer.split("\n") if last not in x.prose(line)]
        if len(lines) == len(answer.split("\n")):
            continue
        return "\n".join(lines)
    return None


def _html_cells(row: str) -> list[str]:
    cells = row.strip().strip("|").split("|")
    return [re.sub(r"\[([^\]]*)\]\(([^)\s]*)\)", r'<a href="\2">\1</a>', c.strip()) for c in cells]


def as_html_table(question: Question, answer: str, ctx: Context) -> str | None:
    """Every markdown table rendered as an HTML table (links as anchors)."""
    lines = answer.split("\n")
    out, index, touched = [], 0, False
    while index < len(lines):
        line = lines[index]
        is_rule = index + 1 < len(lines) and re.fullmatch(
            r"\s*\|?(?:\s*:?-{2,}:?\s*\|)+\s*", lines[index + 1]
        )
        if line.lstrip().startswith("|") and is_rule:
            head = "".join(f"<th>{c}</th>" for c in _html_cells(line))
            body, index = [], index + 2
            while index < len(lines) and lines[index].lstrip().startswith("|"):
                cells = "".join(f"<td>{c}</td>" for c in _html_cells(lines[index]))
                body.append(f"<tr>{cells}</tr>")
                index += 1
            out.append(
                f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
                + "\n".join(body)
                + "\n</tbody>\n</table>"
            )
            touched = True
            continue
        out.append(line)
        index += 1
    return "\n".join(out) if touched else None


def as_html_page(question: Question, answer: str, ctx: Context) -> str | None:
    """The whole answer in HTML: paragraphs, bold, links as anchors, tables as HTML tables."""
    body = as_html_table(question, answer, ctx) or answer
    body = re.sub(r"\*\*([^*\n]+)\*\*", r"<strong>\1</strong>", body)
    body = re.sub(r"\[([^\]\n]*)\]\(([^)\s]*)\)", r'<a href="\2">\1</a>', body)
    body = body.replace("&", "&amp;").replace("&amp;amp;", "&amp;")
    paragraphs = [p for p in body.split("\n\n") if p.strip()]
    return "".join(p if p.startswith("<table") else f"<p>{p}</p>" for p in paragraphs)


def figures_in_code_and_words(question: Question, answer: str, ctx: Context) -> str | None:
    """Amounts written with the currency code after the figure: ``61,501.75 USD``."""
    spans, texts = [], []
    for fact in _amount_facts(question):
        for _start, _end, match in _amount_spans(answer, fact):
            if not match.group("cur1") or match.group("open"):
                continue
            span = (match.start("cur1"), match.end("num"))
            if span in spans:
                continue
            code = x.currency_code(match.group("cur1"))
            if code in (None, x.DOLLARS):
                continue
            spans.append(span)
            texts.append(f"{match.group('num')} {code}")
    return _replace(answer, spans, texts) if spans else None


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
    "wrong_currency": (
        "the right amounts with the wrong currency code (USD shown as EUR)",
        wrong_currency,
    ),
    "debit_as_credit": (
        "a debit written as a credit: `GBP 2,790.96 CR` (receivables, AR invoices)",
        debit_written_as_credit,
    ),
    "credit_as_debit": (
        "a credit written as a debit: `USD 1,234.56 DR` (payables, customer payments)",
        credit_written_as_debit,
    ),
    "swapped_parties": (
        "two parties' figures swapped, when the answer names both on one line",
        swapped_parties,
    ),
    "invented_member": (
        "an invented id added to a list that is the whole set, the count unchanged",
        invented_list_member,
    ),
    "other_legal_entity": (
        "the answer says it is about another legal entity (links unchanged)",
        other_legal_entity,
    ),
    "wrong_as_of": ('the answer states the wrong as-of date ("as of February 2")', wrong_as_of),
    "table_cell_wrong": (
        "a table cell wrong while the prose states the right figure",
        table_cell_wrong,
    ),
    "right_then_wrong": (
        "the right figure first, the same fact restated wrong further down",
        right_then_wrong_restated,
    ),
    "asked_id_changed": (
        "the account or document id the question asks about changed in the prose (links "
        "untouched), the figures right",
        asked_id_changed,
    ),
    "hedged": (f'right figures followed by "{HEDGE}"', hedged),
    "mislabeled_no_refs": (
        "a link labelled with one customer or vendor that points at another, items without "
        "`record_refs`",
        mislabeled_link_no_refs,
    ),
    "mislabeled_with_refs": (
        "the same, items with `record_refs`",
        mislabeled_link_with_refs,
    ),
    "ids_swapped_in_prose": (
        "two records' ids swapped in the prose while the table is right",
        ids_swapped_in_prose,
    ),
    "debit_cr_notation": (
        "a debit shown as a credit in another notation (`2,790.96CR`, `Cr`, `(CR)`, "
        "`CR 2,790.96`, `2,790.96-`)",
        debit_in_cr_notation,
    ),
    "debit_cr_column": (
        "a debit shown as a credit by a Dr/Cr column of its table",
        credit_column_in_table,
    ),
    "invented_member_row": (
        "an invented id added as a table row (or to the list) of a whole set or a top N",
        invented_member_in_table,
    ),
    "record_cell_wrong": (
        "a record's table cell +3% while the prose gives that record the right figure",
        table_cell_of_record_wrong,
    ),
    "document_cell_wrong": (
        "any amount or date cell of a row citing a document changed (+2%, a day later)",
        any_document_cell_wrong,
    ),
    "swapped_party_rows": (
        "two parties' figures swapped in the table while the prose is right",
        swapped_party_rows,
    ),
    "correction_wrong": (
        'a wrong figure added as a "Correction:" of the right one',
        figure_restated_as_correction,
    ),
    "count_in_words_wrong": (
        'a count written in words, one too many ("twenty-four" for 23)',
        count_in_words_wrong,
    ),
    "member_dropped": ("one member of a short list left out", member_dropped),
}
"""Wrong answers: each must score lower on accuracy or citations than the right one."""

ISSUE_15 = tuple(list(CORRUPTIONS)[:8])
"""The corruption kinds of issue 15 (the rest came with issue 25)."""

RIGHT_FORMS: dict[str, tuple[str, Corruption]] = {
    "thin_space": (
        "thousands separated by a thin space (U+2009): `57 907.13`",
        _grouped_with("\u2009"),
    ),
    "narrow_nbsp": (
        "thousands separated by a narrow no-break space (U+202F)",
        _grouped_with("\u202f"),
    ),
    "nbsp": ("thousands separated by a no-break space (U+00A0)", _grouped_with("\u00a0")),
    "apostrophe": ("thousands separated by apostrophes: `1'234.56`", _grouped_with("'")),
    "counts_in_words": (
        'counts of 13 and up in words ("twenty-three open invoices")',
        counts_in_words,
    ),
    "yes_no_lead_in": (
        '"Per the ERP records I queried: no. ..." (yes/no after a lead-in)',
        yes_no_after_lead_in,
    ),
    "own_side_marked": (
        "every amount marked with its own side (debits DR, credits CR)",
        marked_on_its_side,
    ),
    "other_currency": (
        "the largest invoice stated in its other currency (accounting or document), labelled",
        in_the_other_currency,
    ),
    "html_table": ("every table rendered as an HTML table, links as anchors", as_html_table),
    "html_page": ("the whole answer in HTML (paragraphs, bold, anchors, tables)", as_html_page),
    "code_after": (
        "amounts with the currency code after the figure: `61,501.75 USD`",
        figures_in_code_and_words,
    ),
}
"""Right answers in other forms: each must score the same as the original."""


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
    """Wrong answers: ``caught`` of ``touched``."""
    rights: list[Row] = field(default_factory=list)
    """Right answers in other forms: ``caught`` counts those that failed."""


def erp_context(db_url: str) -> Context:
    """What the corruptions need from the ERP: other existing records, the legal entities,
    party names."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from judge._erp_links import ErpResolver
    from synthetic_erp import _schema
    from synthetic_erp._catalog import RecordRef
    from synthetic_erp._db import open_engine

    engine = open_engine(db_url, read_only=True)
    with Session(engine) as session:
        codes = tuple(sorted(session.execute(select(_schema.LegalEntity.code)).scalars()))
    engine.dispose()
    resolver = ErpResolver(db_url)

    def party_name(set_name: str, legal_entity: str, key: str) -> str | None:
        return resolver.party_name(
            RecordRef(legal_entity=legal_entity, entity_set=set_name, key=key)
        )

    return Context(neighbour=erp_neighbour(db_url), legal_entities=codes, party_name=party_name)


def measure(
    pairs: list[tuple[Question, TrajectoryRecord]],
    judge: RulesJudge,
    context: Context | Neighbour,
    kinds: dict[str, tuple[str, Corruption]] | None = None,
    right_forms: dict[str, tuple[str, Corruption]] | None = None,
) -> Measurement:
    """Corrupt every correct answer with every corruption (``kinds``, default all) and re-judge
    it; rewrite it in every right form (``right_forms``, default none) and re-judge it."""
    ctx = context if isinstance(context, Context) else Context(neighbour=context)
    correct, failures = [], []
    for question, trajectory in pairs:
        if question.task_type is not TaskType.obligations or not trajectory.answer.strip():
            continue
        before = graded(judged(judge, question, trajectory))
        if before[0] == 1.0:
            correct.append((question, trajectory, before))
        else:
            failures.append(question.id)
    rows = [
        _row(name, description, corrupt, correct, judge, ctx, wrong=True)
        for name, (description, corrupt) in (CORRUPTIONS if kinds is None else kinds).items()
    ]
    rights = [
        _row(name, description, rewrite, correct, judge, ctx, wrong=False)
        for name, (description, rewrite) in (right_forms or {}).items()
    ]
    return Measurement(len(correct) + len(failures), len(correct), failures, rows, rights)


def _row(name, description, change, correct, judge, ctx, *, wrong: bool) -> Row:
    """``wrong``: count the changed answers that score lower (caught); otherwise count those
    that score lower (failed) among right answers rewritten."""
    row = Row(name, description)
    for question, trajectory, before in correct:
        changed = change(question, trajectory.answer, ctx)
        if changed is None or changed == trajectory.answer:
            continue
        row.touched += 1
        after = graded(judged(judge, question, trajectory.model_copy(update={"answer": changed})))
        if caught(before, after):
            row.caught += 1
            if not wrong:
                row.missed.append(question.id)
        elif wrong:
            row.missed.append(question.id)
    return row


def table_markdown(measurement: Measurement) -> str:
    lines = [
        f"Correct answers whose accuracy the rules judge 1 (the ones changed): "
        f"{measurement.baseline_passing} of {measurement.baseline_total}. Caught = the wrong "
        "answer scores lower on accuracy or citations than the correct one; failed = the right "
        "answer in another form does.",
        "",
        "| wrong answer | caught / touched |",
        "|---|---|",
    ]
    for row in measurement.rows:
        lines.append(f"| {row.description} | {row.caught} of {row.touched} ({row.share:.0%}) |")
    if measurement.rights:
        lines += ["", "| right answer, another form | failed / touched |", "|---|---|"]
        for row in measurement.rights:
            lines.append(f"| {row.description} | {row.caught} of {row.touched} ({row.share:.1%}) |")
    return "\n".join(lines) + "\n"


def load_run(run_dir: Path, dataset_path: Path) -> list[tuple[Question, TrajectoryRecord]]:
    from judge._runner import read_trajectories
    from ledgerbench_core.dataset import load_dataset

    questions = {q.id: q for q in load_dataset(dataset_path).items}
    trajectories, _ = read_trajectories(run_dir)
    return [(questions[t.question_id], t) for t in trajectories if t.question_id in questions]
