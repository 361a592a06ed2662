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
from judge._erp_links import CitedLink, ErpResolver, find_erp_links, normalize_record_path
from judge.records import AssertionScore, DimensionStatus
from ledgerbench.dataset import Dimension, ExpectedFact, Question, TaskType

RULES_VERSION = "rules-1"


@dataclass(frozen=True)
class Verdict:
    score: float | None
    reason: str


@dataclass
class RuleContext:
    question: Question
    answer: str
    resolver: ErpResolver | None
    assertion_id: str
    trajectory: TrajectoryRecord | None = None


Rule = Callable[[RuleContext], Verdict]


# ---------------------------------------------------------------------------------------------
# Accuracy
# ---------------------------------------------------------------------------------------------


def check_fact(answer: str, fact: ExpectedFact) -> Verdict:
    """Whether one expected fact is in the answer: 1 found, 0 missing or wrong."""
    checker = _FACT_CHECKERS[fact.kind]
    return checker(answer, fact)


def _found(ok: bool, fact: ExpectedFact, detail: str = "") -> Verdict:
    shown = fact.value if not isinstance(fact.value, list) else ", ".join(map(str, fact.value))
    if ok:
        return Verdict(1.0, f"{fact.field}: {shown} found{detail}")
    return Verdict(0.0, f"{fact.field}: expected {fact.kind} {shown} not found{detail}")


def _check_amount(answer: str, fact: ExpectedFact) -> Verdict:
    return _found(x.find_amount(answer, float(fact.value), fact.tolerance) is not None, fact)


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


def rule_expected_facts(ctx: RuleContext) -> Verdict:
    facts = _facts_for(ctx)
    if ctx.question.task_type is not TaskType.obligations or not facts:
        return Verdict(None, NEEDS_LLM)
    verdicts = [check_fact(ctx.answer, fact) for fact in facts]
    found = sum(1 for v in verdicts if v.score == 1.0)
    reasons = "; ".join(v.reason for v in verdicts)
    return Verdict(
        _quarter_floor(found / len(verdicts)), f"{found}/{len(verdicts)} facts: {reasons}"
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


def rule_link_on_topic(ctx: RuleContext) -> Verdict:
    if not _link_rule_applies(ctx):
        return Verdict(None, NEEDS_LLM)
    refs = {p for p in (normalize_record_path(r) for r in ctx.question.record_refs) if p}
    if not refs:
        return Verdict(None, "item lists no record_refs to compare with")
    cited = {link.path for link in _links(ctx) if link.path}
    if not cited:
        if _expects_nothing(ctx.question):
            return Verdict(None, "nothing was found and nothing is cited")
        return Verdict(0.0, "no ERP record cited")
    if cited & refs:
        return Verdict(
            1.0, f"cites {len(cited & refs)} of the {len(refs)} records the answer is about"
        )
    return Verdict(0.0, f"cites {sorted(cited)[0]} but the answer is about {sorted(refs)[0]}")


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
        if check_fact(opening, probe).score == 1.0:
            return Verdict(1.0, f"the opening lines state {fact.field}")
    return Verdict(0.0, "none of the expected facts is in the opening lines")


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

    def __init__(self, *, erp_db_url: str | None = None, name: str = "rules") -> None:
        self.name = name
        self.erp_db_url = erp_db_url
        self.resolver = ErpResolver(erp_db_url) if erp_db_url else None

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
        ctx = RuleContext(question, answer, self.resolver, assertion_id, trajectory)
        verdict = RULES[rule_name](ctx)
        undecided = verdict.score is None and NEEDS_LLM in verdict.reason
        decided_by = "" if undecided else f"rule:{rule_name}"
        return AssertionScore(
            assertion_id=assertion_id,
            score=verdict.score,
            reason=verdict.reason,
            decided_by=decided_by,
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
        return JudgeOutcome(dimensions=dimensions)

    def close(self) -> None:
        if self.resolver is not None:
            self.resolver.close()
