"""The deterministic judge: checks a program makes with certainty, each deciding named assertions.

Rules and the assertion ids they decide (:data:`RULES_BY_ASSERTION`; ids follow
``ledgerbench_core/dataset/_rubric.py``):

- ``expected_facts`` decides ``accuracy.*`` (``accuracy.ground_truth``) of obligation items that
  carry ``expected`` facts. An assertion ``accuracy.<field>`` is decided by the facts with that
  ``field``; any other ``accuracy.*`` assertion by all of the item's facts. Score = share of facts
  found, rounded down to the quarter grid (all found = 1, none = 0).
- ``erp_link`` decides ``citations.erp_link`` (obligations) and ``citations.erp_link_ar_ap``
  (briefs): at least one ERP record link (for obligations none is needed when the expected answer
  is "no records"); every cited link resolves to a real record in the ERP database; and when the
  item lists ``record_refs``, at least one cited record is among them. The parts are also
  available alone as ``citations.erp_link_present`` / ``_resolves`` / ``_on_topic``.
- ``table_for_many`` decides ``structure.table_for_many`` (present only for 2+ records): 1 with a
  markdown/HTML table, 0 with neither a table nor a list, null for a list (aligned or not: LLM).
- ``answer_first`` decides ``structure.answer_first`` for obligations: an expected fact appears in
  the answer's first three non-heading lines.
- ``erp_reached`` decides ``relevance.erp_reached`` / ``relevance.erp_reached_ar_ap`` only when it
  fails for certain: no ERP tool call of the run succeeded -> 0; otherwise null for the LLM.

Every other assertion is null with the reason "needs an LLM judge".
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judge import _claims as claims
from judge import _extract as x
from judge._base import (
    NEEDS_LLM,
    JudgeItem,
    JudgeOutcome,
    dimension_from_assertions,
    stable_hash,
)
from judge._erp_links import (
    CitedLink,
    ErpResolver,
    find_erp_links,
    normalize_record_path,
    parse_link,
)
from judge._grading import RULES_GRADING, RULES_GRADING_VERSION
from judge._research import (
    WorldResolver,
    keyed_research,
    research_metrics,
    rule_world_citations,
    rule_world_groundedness,
    rule_world_recency,
    world_links,
)
from ledgerbench_core.dataset import Dimension, ExpectedFact, Question, TaskType
from ledgerbench_core.scores import AssertionScore, DimensionStatus
from ledgerbench_core.trajectory import ToolCall, TrajectoryRecord

RULES_VERSION = f"rules-{RULES_GRADING_VERSION}"
"""Bumped when a rule reads answers differently, so scores of older rules are not resumed
(rules-3: digits inside links and dates are no figures; erp:// resource URIs count as citations;
rules-4: currencies, ledger sides, figures per record, whole lists, the legal entity and as-of
date, contradictions in either order, hedges, mislabelled links everywhere, more number forms;
rules-5: research items keyed on a world: accuracy, world citations, groundedness, recency;
rules-6 and later: see :mod:`judge._grading`)."""


@dataclass(frozen=True)
class Verdict:
    score: float | None
    reason: str
    certain: bool = True
    """Whether a program can be sure (a figure not found may be written in a form the rules do
    not read; a wrong figure stated is certain). With ``--with-rules`` only certain verdicts
    replace the LLM's."""


@dataclass
class RuleContext:
    question: Question
    answer: str
    resolver: ErpResolver | None
    assertion_id: str
    trajectory: TrajectoryRecord | None = None
    world: WorldResolver | None = None
    """The research world's documents (``--world-db``), for research citations."""


Rule = Callable[[RuleContext], Verdict]


# ---------------------------------------------------------------------------------------------
# Accuracy
# ---------------------------------------------------------------------------------------------


def check_fact(
    answer: str,
    fact: ExpectedFact,
    siblings: tuple[ExpectedFact, ...] = (),
    question: Question | None = None,
) -> Verdict:
    """Whether one expected fact is stated in the answer: 1 stated right, 0 missing or wrong.

    ``siblings`` are the item's other facts: an amount equal to one of them is not a competing
    statement of this one. ``question`` (when given) names the party the item is about and the
    reference answer's ids.
    """
    if fact.kind == "amount":
        concerned = concerned_ids(question, siblings or (fact,))
        return _check_amount(answer, fact, siblings, concerned, question)
    if fact.kind == "top_n":
        return _check_top_n(answer, fact, question)
    return _FACT_CHECKERS[fact.kind](answer, fact)


def _found(ok: bool, fact: ExpectedFact, detail: str = "") -> Verdict:
    shown = fact.value if not isinstance(fact.value, list) else ", ".join(map(str, fact.value))
    if ok:
        return Verdict(1.0, f"{fact.field}: {shown} found{detail}")
    # Not found may be a form the rules cannot read: only an LLM can be sure.
    return Verdict(0.0, f"{fact.field}: expected {fact.kind} {shown} not found{detail}", False)


def _wrong(fact: ExpectedFact, detail: str) -> Verdict:
    return Verdict(0.0, f"{fact.field}: {detail}", True)


NEAR_MISS = 0.10
"""A stated amount within 10% of the expected one (and equal to no other expected amount) is a
competing statement of it: where the answer states the fact, every such statement must be the
right one, whichever comes first."""


@dataclass(frozen=True)
class _Target:
    value: float
    currency: str | None
    labelled: bool
    """An equivalent in another currency counts only written with its currency."""


def _targets(fact: ExpectedFact) -> list[_Target]:
    main = _Target(float(fact.value), fact.currency, False)
    return [main, *(_Target(e.value, e.currency, True) for e in fact.equivalents)]


def signed_value(mention: x.NumberMention, side: str | None) -> float:
    """The value a figure states once its ledger mark is read: for a fact whose positive values
    are debits, ``2,790.96 CR`` is -2,790.96 (and the other way round for credits)."""
    if mention.mark and side:
        return abs(mention.value) if mention.mark == side else -abs(mention.value)
    return mention.value


def _states(mention: x.NumberMention, target: _Target, fact: ExpectedFact) -> bool:
    """Whether the mention states the target's value (its sign read with the fact's side)."""
    value = signed_value(mention, fact.side)
    allowed = max(fact.tolerance, min(mention.precision, 0.5) if mention.rounded else 0.0) + 1e-9
    if abs(value - target.value) <= allowed:
        return True
    # A negative balance is often written without a sign ("a credit balance of $500").
    unsigned = not mention.explicit_sign and not (mention.mark and fact.side)
    return unsigned and abs(value - abs(target.value)) <= allowed


def _consistent(mention: x.NumberMention, value: float) -> bool:
    """A coarser figure that agrees with ``value`` to the digits it shows ("USD 1.2 million"
    beside USD 1,216,629.49) is no competing statement."""
    return abs(abs(mention.value) - abs(value)) <= mention.precision + 1e-9


def _is_count(answer: str, mention: x.NumberMention) -> bool:
    """A bare whole number followed by what it counts ("176 open invoices") is no amount."""
    if mention.has_currency or mention.grouped:
        return False
    return bool(x.counted_noun(x.prose(answer), mention.end))


@dataclass(frozen=True)
class _Reading:
    kind: str
    """right | wrong_currency | wrong_side | competitor | other"""
    mention: x.NumberMention


def _read(
    answer: str,
    mention: x.NumberMention,
    fact: ExpectedFact,
    others: list[tuple[float, str | None]],
    elsewhere: list[tuple[float, str | None]] = (),
) -> _Reading:
    """What one figure says about the fact: states it, states it in another currency or on the
    other ledger side, competes with it (a near figure), states another record's figure where
    this record's belongs (``elsewhere``: the values of other records' facts), or is about
    something else."""
    kinds = []
    if mention.currency is None and (column := claims.cell_currency(answer, mention.start)):
        mention = dataclasses.replace(mention, currency=column)
    if mention.mark is None and (side := claims.cell_side(answer, mention.start)):
        mention = dataclasses.replace(mention, mark=side)
    for target in _targets(fact):
        if _states(mention, target, fact):
            if not x.same_currency(mention.currency, target.currency):
                kinds.append("wrong_currency")
            elif target.labelled and mention.currency is None:
                kinds.append("other")
            else:
                return _Reading("right", mention)
        elif abs(abs(mention.value) - abs(target.value)) <= fact.tolerance + 1e-9 and (
            mention.minus or (mention.mark and fact.side)
        ):
            kinds.append("wrong_side")

    def equal_to(values: list[tuple[float, str | None]]) -> bool:
        return any(
            abs(abs(mention.value) - abs(v)) <= max(fact.tolerance, 0.005) + 1e-9
            and x.same_currency(mention.currency, c)
            for v, c in values
        )

    if not kinds and equal_to(elsewhere):
        return _Reading("misattributed", mention)
    marked_wrong = "wrong_side" in kinds and mention.mark is not None
    if equal_to(others) and not marked_wrong:  # (a mark read against the item's side is wrong)
        return _Reading("other", mention)  # another expected figure of the item
    if kinds:
        return _Reading(kinds[0], mention)
    expected = float(fact.value)
    near = expected and abs(abs(mention.value) - abs(expected)) <= NEAR_MISS * abs(expected)
    currencies = {t.currency for t in _targets(fact)}
    foreign = mention.currency is not None and not any(
        x.same_currency(mention.currency, c) for c in currencies
    )  # a conversion into another currency, not a competing figure
    if (
        near
        and not foreign
        and not _consistent(mention, expected)
        and not _is_count(answer, mention)
    ):
        return _Reading("competitor", mention)
    return _Reading("other", mention)


def _record_ids(fact: ExpectedFact) -> tuple[list[str], list[str]]:
    """The record ids in a per-record fact's field (``excess_SYNCUS-0507``) and its other
    qualifiers (``balance_USMF_SYNCUS-0387`` -> USMF)."""
    qualifiers = fact.field.split("_")[1:]
    ids = [q for q in qualifiers if x.find_id_tokens(q)]
    # Codes (USMF), not the words of a compound name ("past_due_SYNCUS-0473" is about one record).
    others = [q for q in qualifiers if q not in ids and q.isupper() and len(q) > 1]
    return ids, others


def _record_scope(answer: str, fact: ExpectedFact) -> tuple[list[tuple[int, int]], str]:
    """The spans of the answer whose figures belong to the record a per-record fact is about
    (its table row, list item or clause, see :mod:`judge._claims`); empty for answer-level facts
    or when no unit about the record holds a figure."""
    ids, others = _record_ids(fact)
    if not ids:
        return [], ""
    spans = claims.record_spans(answer, ids[0])
    for key in ids[1:]:
        spans = [s for s in spans if x.find_id(answer[s[0] : s[1]], key)]
    narrowed = [
        s
        for s in spans
        if all(x.find_phrase_position(answer[s[0] : s[1]], q) is not None for q in others)
    ]
    spans = narrowed or spans
    numbers = x.find_numbers(answer)
    spans = [s for s in spans if any(s[0] <= n.start < s[1] for n in numbers)]
    if not spans:
        return [], ""
    return spans, f" (in the line for {', '.join(ids)})"


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def _sibling_amounts(
    fact: ExpectedFact, siblings: tuple[ExpectedFact, ...], *, per_record: bool = False
) -> tuple[list, list]:
    """The item's other amounts: (those a figure may equal without competing, those of other
    records, which in this record's line are misattributed). Only a per-record fact has the
    second kind; for any other fact every sibling is of the first."""
    own = _record_ids(fact)[0]
    others, elsewhere = [], []
    for sibling in siblings:
        if sibling.kind != "amount" or sibling is fact:
            continue
        values = [(float(sibling.value), sibling.currency)]
        values += [(e.value, e.currency) for e in sibling.equivalents]
        ids = _record_ids(sibling)[0]
        if per_record and ids and ids != own:
            elsewhere += values
        else:
            others += values
    return others, elsewhere


def concerned_ids(question: Question | None, facts: tuple[ExpectedFact, ...]) -> set[str]:
    """The records an item's amounts can be about (case-folded ids): its id facts, the ids in
    per-record fields and the party the question names (not the members of a list: "the largest
    order's amount" is about one of them, and the others' figures are theirs)."""
    ids: set[str] = set()
    for fact in facts:
        if fact.kind == "id":
            ids.add(str(fact.value).casefold())
        ids |= {i.casefold() for i in _record_ids(fact)[0]}
    if question is not None:
        ids |= {k.casefold() for k in party_keys(question)}
        ids |= {t.casefold() for t in x.find_id_tokens(question.query)}
    return ids


def _shown(answer: str, mention: x.NumberMention) -> str:
    start = mention.start
    prefix = re.search(rf"(?:{x.CURRENCY_RE})\s{{0,2}}$", answer[max(0, start - 6) : start])
    if prefix:
        start -= len(prefix.group(0))
    return " ".join(answer[start : mention.end].split()).rstrip(").,;")


_WRONG = {
    "wrong_currency": "states {shown}: the right figure in the wrong currency ({currency} is "
    "expected){where}",
    "wrong_side": "states {shown}: the right figure on the wrong ledger side (a {side} of "
    "{value:,.2f} is expected){where}",
    "competitor": "states {shown} where {value:,.2f} is expected{where}",
    "misattributed": "states {shown}, another record's figure, where {value:,.2f} is "
    "expected{where}",
}


def reference_ids(question: Question | None, fact: ExpectedFact) -> set[str]:
    """The records the reference answer attaches the fact's value to (case-folded ids; see
    :func:`judge._claims.attached_record`)."""
    if question is None or not question.ground_truth:
        return set()
    return set(_reference_ids(question.ground_truth, float(fact.value)))


@functools.lru_cache(maxsize=1024)
def _reference_ids(text: str, value: float) -> frozenset[str]:
    found = {
        claims.attached_record(text, m.start)
        for m in x.find_numbers(text)
        if abs(abs(m.value) - abs(value)) < 0.006
    }
    return frozenset(found - {None})


def _check_amount(
    answer: str,
    fact: ExpectedFact,
    siblings: tuple[ExpectedFact, ...] = (),
    concerned: frozenset[str] | set[str] = frozenset(),
    question: Question | None = None,
) -> Verdict:
    expected = float(fact.value)
    scope, where = _record_scope(answer, fact)
    others, elsewhere = _sibling_amounts(fact, siblings, per_record=bool(scope))
    mentions = [m for m in x.find_numbers(answer) if not m.is_percent]
    domain = [m for m in mentions if not scope or _inside(m.start, scope)]
    readings = [_read(answer, m, fact, others, elsewhere) for m in domain if m.affirmative]
    rights = [r.mention for r in readings if r.kind == "right"]
    if not scope:  # answer-level: a figure counts where it can be about what the fact concerns
        named = set(concerned) | reference_ids(question, fact)
        named |= {claims.attached_record(answer, m.start) for m in rights} - {None}
        known = bool(named or rights)  # knowing nothing of its records, any figure may be its
        scope = [
            (m.start, m.end)
            for m in mentions
            if not known or claims.attached_record(answer, m.start) in named | {None}
        ]
    # A table row that states the fact right holds other columns, not other statements of it.
    rows = {u for m in rights if (u := claims.unit_of(answer, m.start)) and u.kind == "row"}
    wrong = [
        r
        for r in readings
        if r.kind in _WRONG
        and _inside(r.mention.start, scope)
        and claims.unit_of(answer, r.mention.start) not in rows
    ]
    if wrong:
        reading = wrong[0]
        detail = _WRONG[reading.kind].format(
            shown=_shown(answer, reading.mention),
            currency=fact.currency,
            side=fact.side,
            value=expected,
            where=where,
        )
        return _wrong(fact, detail)
    if rights:
        return _found(True, fact, where)
    text = answer if not where else "\n".join(answer[a:b] for a, b in scope)
    if expected == 0 and x.find_amount(text, 0.0) is not None:
        return _found(True, fact, where)
    denied = [m for m in domain if not m.affirmative]
    if any(_states(m, t, fact) for m in denied for t in _targets(fact)):
        return _wrong(fact, f"{expected:,.2f} appears only negated or contrasted{where}")
    return _found(False, fact, where)


def _check_percent(answer: str, fact: ExpectedFact) -> Verdict:
    return _found(x.find_percent(answer, float(fact.value), fact.tolerance) is not None, fact)


def _check_count(answer: str, fact: ExpectedFact) -> Verdict:
    expected = int(fact.value)
    if expected == 0 and x.says_no_records(answer):
        return _found(True, fact, " (stated as none)")
    return _found(x.find_count(answer, expected, fact.tolerance), fact)


def _check_id(answer: str, fact: ExpectedFact) -> Verdict:
    return _found(x.find_id(answer, str(fact.value)), fact)


def _check_name(answer: str, fact: ExpectedFact) -> Verdict:
    return _found(x.find_phrase_position(answer, str(fact.value)) is not None, fact)


def _check_date(answer: str, fact: ExpectedFact) -> Verdict:
    return _found(x.find_date(answer, str(fact.value)), fact)


def _check_no_records(answer: str, fact: ExpectedFact) -> Verdict:
    ok = x.says_no_records(answer)
    return Verdict(
        1.0 if ok else 0.0, "says nothing was found" if ok else "does not say none found"
    )


def _check_boolean(answer: str, fact: ExpectedFact) -> Verdict:
    said = x.says_boolean(answer, bool(fact.value))
    if said is None:
        return Verdict(0.0, f"{fact.field}: no clear yes/no answer (expected {fact.value})")
    return _found(said, fact)


def _position(answer: str, item: Any) -> int | None:
    text = str(item)
    if x.find_id(answer, text):
        return x.find_phrase_position(answer, text)
    return x.find_phrase_position(answer, text)


def _check_top_n(answer: str, fact: ExpectedFact, question: Question | None = None) -> Verdict:
    items = list(fact.value or [])
    positions = [_position(answer, item) for item in items]
    missing = [str(item) for item, pos in zip(items, positions, strict=True) if pos is None]
    if missing:
        return Verdict(
            0.0, f"{fact.field}: missing {len(missing)} of {len(items)}: {', '.join(missing[:5])}"
        )
    if fact.ordered and positions != sorted(positions):
        return Verdict(0.0, f"{fact.field}: all {len(items)} present but out of order")
    if (fact.complete or fact.ordered) and (extra := invented_members(answer, fact, question)):
        whole = "the list is the whole set" if fact.complete else "the list is the top "
        return Verdict(
            0.0,
            f"{fact.field}: names {extra[0]}, which is not one of the {len(items)} "
            f"({whole}{'' if fact.complete else len(items)})",
        )
    return Verdict(
        1.0, f"{fact.field}: all {len(items)} present" + (" in order" if fact.ordered else "")
    )


def invented_members(answer: str, fact: ExpectedFact, question: Question | None) -> list[str]:
    """Ids of the list's kind the answer states affirmatively that are neither members nor
    mentioned by the reference answer (nor the party asked about)."""
    members = {str(v).casefold() for v in fact.value or []}
    prefixes = {m.split("-", 1)[0] for m in members if x.find_id_tokens(m.upper())}
    if not prefixes:
        return []
    known = set(members)
    if question is not None:
        known |= {t.casefold() for t in x.find_id_tokens(question.ground_truth or "")}
        known |= {k.casefold() for k in party_keys(question)}
    extra = []
    for mention in claims.id_mentions(answer):
        token = mention.token.casefold()
        if mention.prefix not in prefixes or token in known or token in map(str.casefold, extra):
            continue
        if x.is_affirmative(answer, mention.start, mention.end):
            extra.append(mention.token)
    return extra


_FACT_CHECKERS: dict[str, Callable[[str, ExpectedFact], Verdict]] = {
    "amount": _check_amount,
    "percent": _check_percent,
    "count": _check_count,
    "id": _check_id,
    "name": _check_name,
    "date": _check_date,
    "text": _check_name,
    "top_n": _check_top_n,
    "no_records": _check_no_records,
    "boolean": _check_boolean,
}


def _quarter_floor(share: float) -> float:
    return int(share * 4 + 1e-9) / 4


def _facts_for(ctx: RuleContext) -> list[ExpectedFact]:
    facts = ctx.question.expected
    suffix = ctx.assertion_id.split(".", 1)[1] if "." in ctx.assertion_id else ""
    specific = [fact for fact in facts if fact.field == suffix]
    return specific or facts


PARTY_SETS = frozenset({"customers", "vendors"})
_NAME_BEFORE = r"((?:[A-Z0-9&][\w'.&-]*,?\s+)*?[A-Z0-9&][\w'.&-]*)\s*\(\s*"


def party_keys(question: Question) -> list[str]:
    """Customers or vendors the question asks about: those of ``record_refs`` the query names,
    by id or by name (spelling slips allowed: queries are phrased as users type)."""
    return list(
        _party_keys(question.query, tuple(question.record_refs), question.ground_truth or "")
    )


@functools.lru_cache(maxsize=4096)
def _party_keys(query: str, record_refs: tuple[str, ...], ground_truth: str) -> tuple[str, ...]:
    """:func:`party_keys` of a question, remembered (every rule asks, and the names are matched
    with spelling slips, which is slow)."""
    question = Question.model_construct(
        query=query, record_refs=list(record_refs), ground_truth=ground_truth
    )
    keys = []
    for ref in question.record_refs:
        parsed = parse_link(ref)
        if parsed is None or parsed.entity_set not in PARTY_SETS or parsed.key in keys:
            continue
        named = x.find_id(question.query, parsed.key) or any(
            _named_in(name, question.query) for name in party_names(question, parsed.key)
        )
        if named:
            keys.append(parsed.key)
    return tuple(keys)


_LEGAL_FORMS = frozenset(
    {
        "inc",
        "llc",
        "ltd",
        "plc",
        "co",
        "corp",
        "gmbh",
        "kg",
        "ag",
        "sa",
        "bv",
        "the",
        "and",
        "of",
        "company",
        "limited",
    }
)


def _named_in(name: str, query: str) -> bool:
    """Whether the query names ``name``: most of its distinctive words, each spelled closely."""
    words = [w for w in x.normalize_words(name).split() if w not in _LEGAL_FORMS and len(w) > 1]
    query_words = x.normalize_words(query).split()
    if not words:
        return False
    close = sum(
        any(difflib.SequenceMatcher(None, w, q).ratio() >= 0.8 for q in query_words) for w in words
    )
    return close == len(words)


def party_names(question: Question, key: str) -> list[str]:
    """The party's exact name as the reference answer writes it (``Rios Hardware (SYNCUS-0713``)."""
    names = []
    for match in re.finditer(_NAME_BEFORE + re.escape(key), question.ground_truth or ""):
        name = match.group(1).strip()
        names.append(name)
        names.append(re.sub(r"^(?:Yes|No|The)\.?\s+", "", name))
    return [n for n in dict.fromkeys(names) if len(n) > 2]


def check_party(question: Question, answer: str) -> Verdict | None:
    """The answer names the party asked about (its id or exact name, outside links) and states
    no other id of the same kind (an id the reference answer does not mention). None when the
    question is about no single party."""
    keys = party_keys(question)
    if not keys:
        return None
    known = {t.casefold() for t in x.find_id_tokens(question.ground_truth or "")}
    known |= {k.casefold() for k in keys}
    for fact in question.expected:
        values = fact.value if isinstance(fact.value, list) else [fact.value]
        known |= {str(v).casefold() for v in values}
    prefixes = {k.split("-", 1)[0].casefold() for k in keys}
    wrong = [
        token
        for token in x.find_id_tokens(answer)
        if token.split("-", 1)[0].casefold() in prefixes and token.casefold() not in known
    ]
    if wrong:
        return Verdict(0.0, f"names {wrong[0]} but the question is about {', '.join(keys)}")
    for key in keys:
        names = party_names(question, key)
        if x.find_id(answer, key) or any(
            x.find_phrase_position(answer, n) is not None for n in names
        ):
            return None
    shown = f"{keys[0]}" + (
        f" ({party_names(question, keys[0])[0]})" if party_names(question, keys[0]) else ""
    )
    return Verdict(0.0, f"does not name {shown}, the party asked about (links do not count)")


_NOT_LEGAL_ENTITIES = frozenset({"GAAP", "IFRS", "EBIT", "FIFO", "LIFO", "ROCE", "CAPEX", "OPEX"})


def known_legal_entities(ctx: RuleContext) -> set[str]:
    """Legal entity codes the judge knows: the ERP's, the question's, its records' and those the
    answer names as a company ("in USPI", "legal entity USPI", "the USPI company") in the form
    of the question's code (four capitals or digits for USMF)."""
    known = set(ctx.resolver.legal_entities()) if ctx.resolver is not None else set()
    code = ctx.question.legal_entity
    if code:
        known.add(code)
        shape = rf"[A-Z][A-Z0-9]{{{len(code) - 1}}}"
        said = re.finditer(
            rf"\b(?:in|within|for|legal\s+entity|company)\s+(?:the\s+)?({shape})\b"
            rf"|\b({shape})\s+company\b",
            x.prose(ctx.answer),
        )
        known |= {m.group(1) or m.group(2) for m in said} - _NOT_LEGAL_ENTITIES
    for ref in (*ctx.question.record_refs, *(link.text for link in find_erp_links(ctx.answer))):
        parsed = parse_link(ref)
        if parsed is not None:
            known.add(parsed.legal_entity)
    return known


def check_scope(ctx: RuleContext) -> Verdict | None:
    """The answer answers for the legal entity and the date the question pins: it names no
    other legal entity without naming the question's, and every "as of" date it states is the
    question's. None when it does."""
    question = ctx.question
    if question.legal_entity:
        named = claims.stated_legal_entities(ctx.answer, known_legal_entities(ctx))
        if named and question.legal_entity not in named:
            return Verdict(
                0.0,
                f"says it answers for {named[0]}, but the question is about "
                f"{question.legal_entity}",
            )
    if question.as_of:
        for stated in claims.stated_as_of(ctx.answer, question.as_of.year):
            if question.as_of not in stated.readings:
                shown = ", ".join(sorted(d.isoformat() for d in stated.readings))
                return Verdict(
                    0.0,
                    f'says it is as of {shown} ("{stated.text}"), but the question is as of '
                    f"{question.as_of.isoformat()}",
                )
    return None


def rule_expected_facts(ctx: RuleContext) -> Verdict:
    facts = _facts_for(ctx)
    if not facts:
        return Verdict(None, NEEDS_LLM)
    if ctx.question.task_type is not TaskType.obligations:
        from judge._research import rule_research_facts

        return rule_research_facts(ctx)
    party = check_party(ctx.question, ctx.answer)
    if party is not None:
        return party
    scope = check_scope(ctx)
    if scope is not None:
        return scope
    hedge = claims.disowning_hedge(ctx.answer)
    if hedge is not None:
        return Verdict(0.0, f'the answer disowns its figures ("{hedge}"): nothing is stated')
    contradiction = claims.table_contradiction(ctx.answer)
    if contradiction is not None:
        return Verdict(0.0, contradiction)
    siblings = tuple(ctx.question.expected)
    verdicts = [check_fact(ctx.answer, fact, siblings, ctx.question) for fact in facts]
    found = sum(1 for v in verdicts if v.score == 1.0)
    reasons = "; ".join(v.reason for v in verdicts)
    return Verdict(
        _quarter_floor(found / len(verdicts)),
        f"{found}/{len(verdicts)} facts: {reasons}",
        certain=all(v.certain for v in verdicts),
    )


# ---------------------------------------------------------------------------------------------
# Citations
# ---------------------------------------------------------------------------------------------


def _expects_nothing(question: Question) -> bool:
    return any(f.kind == "no_records" for f in question.expected)


def _links(ctx: RuleContext) -> list[CitedLink]:
    return find_erp_links(ctx.answer)


def _link_rule_applies(ctx: RuleContext) -> bool:
    return ctx.question.task_type is TaskType.obligations or ctx.assertion_id.endswith("_ar_ap")


def rule_link_present(ctx: RuleContext) -> Verdict:
    if not _link_rule_applies(ctx):
        return Verdict(None, NEEDS_LLM)
    links = [link for link in _links(ctx) if link.ref is not None]
    if links:
        return Verdict(1.0, f"{len(links)} ERP record link(s)")
    if _expects_nothing(ctx.question) and ctx.question.task_type is TaskType.obligations:
        return Verdict(1.0, "nothing was found, so no record link is needed")
    return Verdict(0.0, "no ERP record link in the answer")


def rule_link_resolves(ctx: RuleContext) -> Verdict:
    if not _link_rule_applies(ctx):
        return Verdict(None, NEEDS_LLM)
    links = _links(ctx)
    if not links:
        return Verdict(None, "no ERP links to resolve")
    malformed = [link.text for link in links if link.ref is None]
    if malformed:
        return Verdict(0.0, f"malformed ERP link: {malformed[0]}")
    if ctx.resolver is None:
        return Verdict(None, "ERP database unavailable (pass --erp-db): " + NEEDS_LLM)
    missing = [link.text for link in links if link.ref and not ctx.resolver.exists(link.ref)]
    if missing:
        return Verdict(
            0.0, f"{len(missing)} of {len(links)} links point to no record: {missing[0]}"
        )
    return Verdict(1.0, f"all {len(links)} links resolve to ERP records")


_MARKDOWN_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_GENERIC_LABEL_WORDS = frozenset(
    {"customer", "customers", "vendor", "vendors", "record", "records", "account", "accounts",
     "link", "erp", "page", "here", "see", "view", "open", "details", "detail", "the", "this",
     "in", "of", "for", "source", "entry", "profile", "card", "master", "data", "supplier"}
)  # fmt: skip


def _label_names_other(label: str, name: str) -> bool:
    """Whether a link label that names a party by name names another one than ``name``."""
    words = [
        w
        for w in x.normalize_words(label).split()
        if w not in _GENERIC_LABEL_WORDS and not w.isdigit() and len(w) > 1
    ]
    words = [w for w in words if not re.fullmatch(r"[a-z]{3}", w) or w not in _CURRENCY_WORDS]
    if not words:
        return False
    target = x.normalize_words(name).split()
    matched = [
        w for w in words if any(difflib.SequenceMatcher(None, w, t).ratio() >= 0.8 for t in target)
    ]
    return len(matched) < max(1, (len(words) + 1) // 2)


_CURRENCY_WORDS = frozenset({"usd", "eur", "gbp", "cad"})


def mislabeled_links(answer: str, resolver: ErpResolver | None = None) -> list[tuple[str, str]]:
    """Markdown links whose label names another record than the one they point to: a label id
    of the target's kind that is not its key (``[SYNCUS-0002](.../customers/SYNCUS-0001)``),
    or, with the ERP at hand, a customer or vendor label that is not the target's name
    (``[Acme Corp.](.../customers/SYNCUS-0001)`` when SYNCUS-0001 is Rios Hardware): (label,
    target path)."""
    found = []
    for match in _MARKDOWN_LINK.finditer(answer):
        label, target = match.group(1), match.group(2)
        ref = parse_link(target)
        if ref is None:
            continue
        path = normalize_record_path(target) or target
        prefix = ref.key.split("-", 1)[0].casefold()
        tokens = x.find_id_tokens(label)
        labels = [t for t in tokens if t.split("-", 1)[0].casefold() == prefix]
        if labels:
            if all(t.casefold() != ref.key.casefold() for t in labels):
                found.append((labels[0], path))
            continue
        if tokens or resolver is None:
            continue  # labelled with a document id, or no ERP to look the name up in
        name = resolver.party_name(ref)
        if name and _label_names_other(label, name):
            found.append((label.strip(), path))
    return found


MAX_REQUIRED_CITATIONS = 5
"""An answer reporting many records must cite all of them up to this many."""


def _entity_set(path: str) -> str:
    return path.split("/")[3] if path.count("/") >= 4 else ""


def rule_link_on_topic(ctx: RuleContext) -> Verdict:
    """The citations point at the records the answer reports: at least one of the item's
    records, every one the answer names by id (up to five), and no customer or vendor the answer
    is not about."""
    if not _link_rule_applies(ctx):
        return Verdict(None, NEEDS_LLM)
    mislabeled = mislabeled_links(ctx.answer, ctx.resolver)
    if mislabeled:
        label, path = mislabeled[0]
        return Verdict(0.0, f"the link labelled {label} points to {path}")
    refs = list(
        dict.fromkeys(p for p in (normalize_record_path(r) for r in ctx.question.record_refs) if p)
    )
    if not refs:
        return Verdict(None, "item lists no record_refs to compare with")
    cited = {link.path for link in _links(ctx) if link.path}
    if not cited:
        if _expects_nothing(ctx.question):
            return Verdict(None, "nothing was found and nothing is cited")
        return Verdict(0.0, "no ERP record cited")
    party_sets = {_entity_set(p) for p in refs} & PARTY_SETS
    listed = [int(f.value) for f in ctx.question.expected if f.kind == "count"]
    listed += [len(f.value or []) for f in ctx.question.expected if f.kind == "top_n"]
    if max(listed, default=0) <= len(refs):  # refs list every record the answer is about
        stray = sorted(p for p in cited - set(refs) if _entity_set(p) in party_sets)
        if stray:
            return Verdict(0.0, f"cites {stray[0]} but the answer is about {refs[0]}")
    named = [p for p in refs if x.find_id(ctx.answer, p.rsplit("/", 1)[-1])]
    hits = cited & set(refs)
    if not hits:
        return Verdict(0.0, f"cites {sorted(cited)[0]} but the answer is about {refs[0]}")
    needed = min(MAX_REQUIRED_CITATIONS, len(named))
    cited_named = [p for p in named if p in cited]
    if len(cited_named) >= needed:
        return Verdict(1.0, f"cites {len(hits)} of the {len(refs)} records the answer is about")
    missing = [p for p in named if p not in cited]
    return Verdict(
        0.0,
        f"names {len(named)} of the records it is about but cites {len(cited_named)}; all of "
        f"them up to {MAX_REQUIRED_CITATIONS} must be cited (e.g. {missing[0]})",
    )


CONTRADICTED_DAYS = 45
"""A date within this many days of a date the cited record holds, and equal to none of them, is
the record's date stated wrong (a due date one day off), not another date."""


def contradicted_citation(answer: str, resolver: ErpResolver) -> str | None:
    """A table row that cites one ERP document (not a customer or vendor: their figures are
    aggregates) and states a figure or date the document contradicts: near one of its values
    (within 10%; a date within 45 days) and equal to none. None when every such row agrees with
    its record (figures it does not hold are not read). Prose is not read this way: a sentence
    citing one invoice may also give the question's dates or a total."""
    if "/erp/" not in answer and "erp://" not in answer.lower():
        return None
    numbers = x.find_numbers(answer)  # once for the answer (remembered), not once a row
    for unit in claims.units(answer):
        text = answer[unit.start : unit.end]
        if unit.kind != "row" or ("/erp/" not in text and "erp://" not in text.lower()):
            continue
        refs = {link.ref for link in find_erp_links(text) if link.ref is not None}
        if len(refs) != 1:
            continue
        (ref,) = refs
        if ref.entity_set in PARTY_SETS:
            continue
        values = resolver.record_values(ref)
        if values is None:
            continue
        inside = [m for m in numbers if unit.start <= m.start < unit.end]
        problem = _figure_against(answer, inside, values) or _date_against(text, values)
        if problem:
            return f"{problem}, but {ref.key} ({ref.entity_set}) holds another value"
    return None


def _figure_against(text: str, mentions: list[x.NumberMention], values: Any) -> str | None:
    for mention in mentions:
        if mention.is_percent or not mention.affirmative or _is_count(text, mention):
            continue
        if not (mention.has_currency or (mention.grouped and mention.value % 1)):
            continue
        currency = mention.currency or claims.cell_currency(text, mention.start)
        own = currency is None or x.same_currency(currency, values.currency)
        held = [*(values.own if own else ()), *values.accounting]
        value = abs(mention.value)
        if any(abs(value - abs(v)) <= 0.006 for v in held):
            continue
        if any(v and abs(value - abs(v)) <= NEAR_MISS * abs(v) for v in held):
            return f"states {_shown(text, mention)}"
    return None


def _date_against(text: str, values: Any) -> str | None:
    if not values.dates:
        return None
    for stated in x.find_dates(x.prose(text)):
        if stated in values.dates:
            continue
        if any(abs((stated - held).days) <= CONTRADICTED_DAYS for held in values.dates):
            return f"states the date {stated.isoformat()}"
    return None


def rule_link_supports(ctx: RuleContext) -> Verdict:
    """The records cited beside figures hold them: a table row citing one document does not
    state an amount or date the document contradicts."""
    if not _link_rule_applies(ctx):
        return Verdict(None, NEEDS_LLM)
    if ctx.resolver is None:
        return Verdict(None, "ERP database unavailable (pass --erp-db): " + NEEDS_LLM)
    problem = contradicted_citation(ctx.answer, ctx.resolver)
    if problem:
        return Verdict(0.0, problem)
    return Verdict(1.0, "the cited documents hold the figures and dates stated beside them")


def rule_erp_link(ctx: RuleContext) -> Verdict:
    parts = [rule_link_present(ctx), rule_link_resolves(ctx), rule_link_on_topic(ctx)]
    parts.append(rule_link_supports(ctx))
    if parts[0].score is None:
        return parts[0]
    if parts[0].score == 0.0:  # on-topic would only repeat it; a malformed link is worth naming
        malformed = parts[1].reason if parts[1].reason.startswith("malformed") else ""
        return Verdict(0.0, "; ".join(r for r in (parts[0].reason, malformed) if r))
    if parts[1].score is None and "unavailable" in parts[1].reason:
        return Verdict(None, parts[1].reason)
    failed = [p for p in parts if p.score == 0.0]
    if failed:
        return Verdict(0.0, "; ".join(p.reason for p in failed))
    return Verdict(1.0, "; ".join(p.reason for p in parts if p.score is not None))


# ---------------------------------------------------------------------------------------------
# Structure
# ---------------------------------------------------------------------------------------------


def reported_record_count(question: Question) -> int | None:
    """How many records the expected answer lists; None when the item does not say."""
    counts = []
    for fact in question.expected:
        if fact.kind == "top_n":
            counts.append(len(fact.value or []))
        elif fact.kind == "count" and fact.field.startswith(("records", "rows", "reported")):
            counts.append(int(fact.value))
        elif fact.kind == "no_records":
            counts.append(0)
    if counts:
        return max(counts)
    return len(question.record_refs) if question.record_refs else None


def rule_table_for_many(ctx: RuleContext) -> Verdict:
    """The rubric adds this assertion only when the answer lists 2+ records."""
    count = reported_record_count(ctx.question)
    if count is not None and count < 2:
        return Verdict(None, f"{count} record(s) reported: no table needed")
    shown = f"{count} records" if count else "several records"
    if x.has_markdown_table(ctx.answer):
        return Verdict(1.0, f"{shown} reported in a table")
    if x.list_items(ctx.answer) >= 2:
        return Verdict(
            None, "records given as a list, not a table: whether it is aligned " + NEEDS_LLM
        )
    return Verdict(0.0, f"{shown} reported without a table or list")


def rule_answer_first(ctx: RuleContext) -> Verdict:
    if ctx.question.task_type is not TaskType.obligations or not ctx.question.expected:
        return Verdict(None, NEEDS_LLM)
    opening = x.opening_text(ctx.answer)
    for fact in ctx.question.expected:
        probe = fact
        if fact.kind == "top_n":
            if not fact.value:
                continue
            probe = ExpectedFact(kind="name", field=fact.field, value=fact.value[0])
        if check_fact(opening, probe, tuple(ctx.question.expected), ctx.question).score == 1.0:
            return Verdict(1.0, f"the opening lines state {fact.field}")
    return Verdict(0.0, "none of the expected facts is in the opening lines", certain=False)


# ---------------------------------------------------------------------------------------------
# Relevance: was the ERP reached at all?
# ---------------------------------------------------------------------------------------------


def is_erp_call(call: ToolCall) -> bool:
    return call.server == "erp" or call.name.startswith(("mcp__erp__", "erp_", "erp."))


def rule_erp_reached(ctx: RuleContext) -> Verdict:
    """Fails for certain when no ERP tool call of the run succeeded; otherwise the LLM decides."""
    if ctx.trajectory is None:
        return Verdict(None, NEEDS_LLM)
    calls = ctx.trajectory.tool_calls
    unknown_source = [c for c in calls if c.server is None and not is_erp_call(c)]
    erp_calls = [c for c in calls if is_erp_call(c)]
    if any(not c.is_error for c in erp_calls):
        return Verdict(None, "ERP data was retrieved; whether the answer rests on it " + NEEDS_LLM)
    if unknown_source:
        return Verdict(None, "tool sources unknown: " + NEEDS_LLM)
    if erp_calls:
        return Verdict(0.0, f"all {len(erp_calls)} ERP tool calls failed")
    return Verdict(0.0, "the run made no ERP tool call")


def rule_conversation(ctx: RuleContext) -> Verdict:
    """Operations items: facts over the whole conversation, clarifications, disclosures."""
    from judge._conversation import conversation_metrics

    if ctx.question.conversation is None or ctx.trajectory is None:
        return Verdict(None, NEEDS_LLM)
    metrics = conversation_metrics(ctx.question, ctx.trajectory)
    found = f"{metrics.facts_found}/{metrics.facts_total} facts"
    return Verdict(metrics.accuracy, f"{found}: " + "; ".join(metrics.reasons))


RULES: dict[str, Rule] = {
    "expected_facts": rule_expected_facts,
    "conversation": rule_conversation,
    "erp_link": rule_erp_link,
    "erp_link_present": rule_link_present,
    "erp_link_resolves": rule_link_resolves,
    "erp_link_on_topic": rule_link_on_topic,
    "table_for_many": rule_table_for_many,
    "answer_first": rule_answer_first,
    "erp_reached": rule_erp_reached,
    "world_citations": rule_world_citations,
    "world_groundedness": rule_world_groundedness,
    "world_recency": rule_world_recency,
}

RULES_BY_ASSERTION: dict[str, str] = {
    "accuracy.conversation": "conversation",
    "citations.erp_link": "erp_link",
    "citations.erp_link_present": "erp_link_present",
    "citations.erp_link_resolves": "erp_link_resolves",
    "citations.erp_link_on_topic": "erp_link_on_topic",
    "citations.erp_link_ar_ap": "erp_link",
    "structure.table_for_many": "table_for_many",
    "structure.answer_first": "answer_first",
    "relevance.erp_reached": "erp_reached",
    "relevance.erp_reached_ar_ap": "erp_reached",
    "citations.world_sources": "world_citations",
    "groundedness.supported": "world_groundedness",
    "recency.period_asked": "world_recency",
}
"""Assertion id -> rule deciding it. ``accuracy.*`` ids go to ``expected_facts`` (see
:func:`rule_for`)."""


def rule_for(dimension: Dimension, assertion_id: str) -> str | None:
    """The rule deciding an assertion, or None when only an LLM can judge it."""
    if assertion_id in RULES_BY_ASSERTION:
        return RULES_BY_ASSERTION[assertion_id]
    if dimension is Dimension.accuracy and assertion_id.startswith("accuracy."):
        return "expected_facts"
    return None


LINK_RULES = frozenset({"erp_link", "erp_link_resolves", "erp_link_on_topic"})
"""Rules that look cited records up in the ERP database (existence, party names)."""
WORLD_RULES = frozenset({"world_citations"})
"""Rules that look cited documents up in the research world."""


def databases_needed(
    question: Question, answer: str, among: frozenset[str] = frozenset({"erp", "world"})
) -> set[str]:
    """``erp`` and/or ``world`` (of ``among``): the databases the rules read to score this
    answer. The ERP when a link rule meets a cited record, or the scope check may meet a legal
    entity only the ERP knows; the world when a world rule meets a cited document."""
    rules = {
        rule_for(dimension, a.id)
        for dimension, assertions in question.tags.items()
        for a in assertions
    }
    needed = set()
    if "erp" in among and (
        (rules & LINK_RULES and find_erp_links(answer))
        or ("expected_facts" in rules and _scope_reads_erp(question, answer))
    ):
        needed.add("erp")
    if "world" in among and rules & WORLD_RULES and world_links(answer):
        needed.add("world")
    return needed


def _scope_reads_erp(question: Question, answer: str) -> bool:
    """Whether the answer names, as its scope, a code shaped like a legal entity's that only the
    ERP's list of legal entities could tell (the question's, its records' are known without)."""
    code = question.legal_entity
    if not code:
        return False
    shaped = set(re.findall(rf"\b[A-Z][A-Z0-9]{{{len(code) - 1}}}\b", x.prose(answer)))
    known = known_legal_entities(RuleContext(question, answer, None, "", None, None))
    return bool(set(claims.stated_legal_entities(answer, shaped | known)) - known)


class RulesJudge:
    """``--judge rules``: the offline deterministic judge. An answer whose checks need a database
    the judge was not given (ERP, research world) is ``unscored``, never scored without them."""

    model = None
    mode = "rules"
    version = RULES_VERSION
    grading_version = RULES_GRADING

    def __init__(
        self, *, erp_db_url: str | None = None, world_db: str | None = None, name: str = "rules"
    ) -> None:
        self.name = name
        self.erp_db_url = erp_db_url
        self.resolver = ErpResolver(erp_db_url) if erp_db_url else None
        self.world = WorldResolver(world_db) if world_db else None

    def settings(self) -> dict[str, Any]:
        return {"judge": "rules", "rules_version": RULES_VERSION, "grading": RULES_GRADING}

    def missing_databases(self, question: Question, answer: str) -> list[str]:
        """The databases the checks of this answer read that this judge does not have."""
        lacking = frozenset(
            name for name, db in (("erp", self.resolver), ("world", self.world)) if db is None
        )
        return sorted(databases_needed(question, answer, lacking)) if lacking else []

    def instructions_hash(self) -> str:
        return stable_hash(
            {"version": RULES_VERSION, "map": RULES_BY_ASSERTION, "rules": sorted(RULES)}
        )

    def score_assertion(
        self,
        question: Question,
        answer: str,
        dimension: Dimension,
        assertion_id: str,
        trajectory: TrajectoryRecord | None = None,
    ) -> AssertionScore:
        rule_name = rule_for(dimension, assertion_id)
        if rule_name is None:
            return AssertionScore(assertion_id=assertion_id, score=None, reason=NEEDS_LLM)
        answer = claims.html_as_markdown(answer)
        ctx = RuleContext(question, answer, self.resolver, assertion_id, trajectory, self.world)
        verdict = RULES[rule_name](ctx)
        undecided = verdict.score is None and NEEDS_LLM in verdict.reason
        decided_by = "" if undecided else f"rule:{rule_name}"
        return AssertionScore(
            assertion_id=assertion_id,
            score=verdict.score,
            reason=verdict.reason,
            decided_by=decided_by,
            certain=verdict.certain if decided_by else None,
        )

    def score(self, item: JudgeItem) -> JudgeOutcome:
        question, answer = item.question, item.trajectory.answer
        if missing := self.missing_databases(question, answer):
            names = " and ".join({"erp": "ERP", "world": "research world"}[m] for m in missing)
            return JudgeOutcome(
                dimensions={}, unscored=f"its checks need the {names} database the judge lacks"
            )
        dimensions = {}
        for dimension, assertions in question.tags.items():
            if not assertions:
                continue
            scored = [
                self.score_assertion(question, answer, dimension, a.id, item.trajectory)
                for a in assertions
            ]
            dimensions[dimension] = dimension_from_assertions(
                scored, undecided_status=DimensionStatus.needs_llm
            )
        extra = {}
        if keyed_research(question):
            extra["research"] = research_metrics(question, item.trajectory).as_dict()
        if question.conversation is not None:
            from judge._conversation import conversation_metrics

            extra["conversation"] = conversation_metrics(question, item.trajectory).as_dict()
        return JudgeOutcome(dimensions=dimensions, extra=extra)

    def close(self) -> None:
        if self.resolver is not None:
            self.resolver.close()
        if self.world is not None:
            self.world.close()
