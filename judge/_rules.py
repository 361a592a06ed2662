"""The deterministic judge: checks a program makes with certainty, each deciding named assertions.

Rules and the assertion ids they decide (:data:`RULES_BY_ASSERTION`; ids follow
``ledgerbench/dataset/_rubric.py``):

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

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harnesses.records import ToolCall, TrajectoryRecord
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
from judge._research import (
    WorldResolver,
    keyed_research,
    research_metrics,
    rule_world_citations,
    rule_world_groundedness,
    rule_world_recency,
)
from judge.records import AssertionScore, DimensionStatus
from ledgerbench.dataset import Dimension, ExpectedFact, Question, TaskType

RULES_VERSION = "rules-4"
"""Bumped when a rule reads answers differently, so scores of older rules are not resumed
(rules-3: digits inside links and dates are no figures; erp:// resource URIs count as citations;
rules-4: research items keyed on a world are scored for accuracy)."""


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


def check_fact(answer: str, fact: ExpectedFact, siblings: tuple[ExpectedFact, ...] = ()) -> Verdict:
    """Whether one expected fact is stated in the answer: 1 stated right, 0 missing or wrong.

    ``siblings`` are the item's other facts: an amount equal to one of them is not a competing
    statement of this one.
    """
    if fact.kind == "amount":
        return _check_amount(answer, fact, siblings)
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
competing statement of it: the first such statement must be the right one."""


def _record_scope(answer: str, fact: ExpectedFact) -> tuple[str, str]:
    """The lines about the record the fact is for (``excess_SYNCUS-0507`` -> lines naming
    SYNCUS-0507: its table row or sentence), or the whole answer for answer-level facts."""
    qualifiers = fact.field.split("_")[1:]
    ids = [q for q in qualifiers if x.find_id_tokens(q)]
    if not ids:
        return answer, ""
    lines = [line for line in answer.splitlines() if all(x.find_id(line, i) for i in ids)]
    others = [q for q in qualifiers if q not in ids and len(q) > 1]
    narrowed = [
        line for line in lines if all(x.find_phrase_position(line, q) is not None for q in others)
    ]
    lines = narrowed or lines
    scoped = "\n".join(line for line in lines if x.find_numbers(line))
    if not scoped:
        return answer, ""
    return scoped, f" (in the line for {', '.join(ids)})"


def _check_amount(
    answer: str, fact: ExpectedFact, siblings: tuple[ExpectedFact, ...] = ()
) -> Verdict:
    expected = float(fact.value)
    text, where = _record_scope(answer, fact)
    others = [float(f.value) for f in siblings if f.kind == "amount" and f is not fact]
    stated = [m for m in x.find_numbers(text) if not m.is_percent and m.affirmative]
    for mention in stated:
        if x.amount_matches(mention, expected, fact.tolerance):
            return _found(True, fact, where)
        if any(x.amount_matches(mention, other, fact.tolerance) for other in others):
            continue
        if expected and abs(abs(mention.value) - abs(expected)) <= NEAR_MISS * abs(expected):
            shown = text[mention.start : mention.end].strip()
            return _wrong(fact, f"states {shown} where {expected:,.2f} is expected{where}")
    if expected == 0 and x.find_amount(text, 0.0) is not None:
        return _found(True, fact, where)
    denied = [m for m in x.find_numbers(text) if not m.affirmative]
    if any(x.amount_matches(m, expected, fact.tolerance) for m in denied):
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


def _check_top_n(answer: str, fact: ExpectedFact) -> Verdict:
    items = list(fact.value or [])
    positions = [_position(answer, item) for item in items]
    missing = [str(item) for item, pos in zip(items, positions, strict=True) if pos is None]
    if missing:
        return Verdict(
            0.0, f"{fact.field}: missing {len(missing)} of {len(items)}: {', '.join(missing[:5])}"
        )
    if fact.ordered and positions != sorted(positions):
        return Verdict(0.0, f"{fact.field}: all {len(items)} present but out of order")
    return Verdict(
        1.0, f"{fact.field}: all {len(items)} present" + (" in order" if fact.ordered else "")
    )


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
    return keys


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
    siblings = tuple(ctx.question.expected)
    verdicts = [check_fact(ctx.answer, fact, siblings) for fact in facts]
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


def mislabeled_links(answer: str) -> list[tuple[str, str]]:
    """Markdown links whose label names another record of the kind they point to
    (``[SYNCUS-0002](.../customers/SYNCUS-0001)``): (label id, target path)."""
    found = []
    for match in _MARKDOWN_LINK.finditer(answer):
        ref = parse_link(match.group(2))
        if ref is None:
            continue
        prefix = ref.key.split("-", 1)[0].casefold()
        labels = [
            t for t in x.find_id_tokens(match.group(1)) if t.split("-", 1)[0].casefold() == prefix
        ]
        if labels and all(t.casefold() != ref.key.casefold() for t in labels):
            found.append((labels[0], normalize_record_path(match.group(2)) or match.group(2)))
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
    mislabeled = mislabeled_links(ctx.answer)
    if mislabeled:
        label, path = mislabeled[0]
        return Verdict(0.0, f"the link labelled {label} points to {path}")
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


def rule_erp_link(ctx: RuleContext) -> Verdict:
    parts = [rule_link_present(ctx), rule_link_resolves(ctx), rule_link_on_topic(ctx)]
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
        if check_fact(opening, probe, tuple(ctx.question.expected)).score == 1.0:
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


RULES: dict[str, Rule] = {
    "expected_facts": rule_expected_facts,
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


class RulesJudge:
    """``--judge rules``: the offline deterministic judge."""

    model = None
    mode = "rules"

    def __init__(
        self, *, erp_db_url: str | None = None, world_db: str | None = None, name: str = "rules"
    ) -> None:
        self.name = name
        self.erp_db_url = erp_db_url
        self.resolver = ErpResolver(erp_db_url) if erp_db_url else None
        self.world = WorldResolver(world_db) if world_db else None

    def check_erp(self, expected_snapshot: str | None = None) -> str | None:
        """Check the ERP database before judging; raises ValueError when it cannot be used."""
        if self.resolver is None:
            return None
        return self.resolver.check(expected_snapshot)

    def disable_erp(self) -> None:
        """Judge without link resolution (those checks become null, left to an LLM)."""
        self.resolver = None

    def settings(self) -> dict[str, Any]:
        return {"judge": "rules", "rules_version": RULES_VERSION}

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
        return JudgeOutcome(dimensions=dimensions, extra=extra)

    def close(self) -> None:
        if self.resolver is not None:
            self.resolver.close()
        if self.world is not None:
            self.world.close()
