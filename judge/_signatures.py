"""DSPy signatures of the rubric judge: one per dimension (rubric = docstring) and one for all.

Imported only inside functions (``judge._dspy_judge``) so that ``import judge`` does not load DSPy.
"""

from __future__ import annotations

import dspy
from pydantic import BaseModel, ConfigDict

from ledgerbench_core.dataset import Dimension

SCORE_GUIDE = (
    "Exactly one verdict per assertion, same ids, same order. "
    "score: 1 = fully met, 0.75 = mostly met, "
    "0.5 = partly met, 0.25 = barely met, 0 = not met; null only when the assertion does not "
    "apply to this question (never for uncertainty, and never when always_applies is true). "
    "Weigh a critical assertion's failure fully; level tells how much the statement matters. "
    "reason: one short sentence citing the answer."
)


class AssertionToJudge(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    text: str
    level: str = "critical"
    """critical, important or minor: how much the statement matters to the user."""
    always_applies: bool = False
    """True when null (not applicable) is not an option for this assertion."""


class AssertionVerdict(BaseModel):
    assertion_id: str
    score: float | None
    reason: str


class DimensionJudgement(dspy.Signature):
    """Judge an agent's answer to a corporate-finance question against the assertions of one
    dimension."""

    question: str = dspy.InputField(desc="The user's question, exactly as put to the agent.")
    task_type: str = dspy.InputField(
        desc="obligations (AR/AP lookup in the company ERP), entity_performance (research on a "
        "company from public sources) or business_brief (multi-source brief)."
    )
    answer: str = dspy.InputField(
        desc="The agent's final answer (for a timed-out run: its partial answer)."
    )
    assertions: list[AssertionToJudge] = dspy.InputField(desc="The checkable statements to score.")
    verdicts: list[AssertionVerdict] = dspy.OutputField(desc=SCORE_GUIDE)


class JudgeAccuracy(DimensionJudgement):
    """Rubric: ACCURACY. Compare the facts in the answer with the ground truth computed from the
    ERP: balances, amounts, statuses, dates, counts, ids and names must match (amounts within
    rounding; any number format is fine). A fact stated differently but equivalently counts as
    correct. Wrong, missing or invented core facts fail the assertion; extra correct context is
    fine. When the ground truth says nothing exists, the answer must say so rather than invent
    records."""

    ground_truth: str = dspy.InputField(
        desc="Reference answer and the machine-checkable expected facts."
    )


class JudgeCitations(DimensionJudgement):
    """Rubric: CITATIONS. For obligations the answer must link at least one ERP record it relies on
    (a link of the form .../erp/<legal entity>/<entity set>/<key>, or the same record as the MCP
    resource erp://<legal entity>/<entity set>/<key>); no link is needed only when nothing was
    found. For research and briefs, claims must name a data provider or give a traceable
    URL. Judge whether the citations present support the claims they sit next to."""


class JudgeClarity(DimensionJudgement):
    """Rubric: CLARITY. Uncommon acronyms and jargon are defined on first use (standard finance
    terms such as GAAP, EBITDA, DSO, AR, AP, FY, YoY and ERP ids need no definition); the same
    concept keeps the same name throughout; no unquantified qualifiers ("strong", "significant")
    standing in for a number."""


class JudgeDepth(DimensionJudgement):
    """Rubric: DEPTH. Obligations: the answer covers every relevant aspect of the request (e.g.
    aging buckets, terms, due dates, history) rather than a bare number. Performance research: every
    claim is tied to a number, a date or a named source, with comparative context (peers, prior
    periods). Briefs: the requested sections are covered with substance."""


class JudgeGroundedness(DimensionJudgement):
    """Rubric: GROUNDEDNESS. Check the answer's factual claims against the evidence the agent
    actually saw during its run (tool outputs and captured sources, given below). A claim is
    grounded when the evidence states it or clearly implies it; figures that appear in no evidence
    are ungrounded. If the evidence was cut, do not penalise claims that could plausibly come from
    the cut part; say so."""

    evidence: str = dspy.InputField(
        desc="Tool outputs and captured sources from the run, de-duplicated; "
        "a closing note says what was cut."
    )


class JudgeRecency(DimensionJudgement):
    """Rubric: RECENCY. Time-sensitive data is anchored to explicit dates or periods ("as of Q3
    2025", "FY2024"), not "currently" or "recently"; the latest available data is used when the
    question asks about the present, and historical data when it asks for a trend."""


class JudgeRelevance(DimensionJudgement):
    """Rubric: RELEVANCE. The answer addresses the question asked, without digressions; it is
    specific and sufficient; when data is genuinely unavailable it says so plainly. If the agent
    could not reach the ERP because of a tool or connection failure, an obligations answer fails
    relevance however well it explains the failure."""


class JudgeStructure(DimensionJudgement):
    """Rubric: STRUCTURE. The key answer comes first (after any brief disclaimer about unavailable
    data), then the detail; headings, lists and tables are used as the content calls for;
    obligations answers reporting two or more records present them in a table. A short opener such
    as "Sure!" is acceptable."""


DIMENSION_SIGNATURES: dict[Dimension, type[DimensionJudgement]] = {
    Dimension.accuracy: JudgeAccuracy,
    Dimension.citations: JudgeCitations,
    Dimension.clarity: JudgeClarity,
    Dimension.depth: JudgeDepth,
    Dimension.groundedness: JudgeGroundedness,
    Dimension.recency: JudgeRecency,
    Dimension.relevance: JudgeRelevance,
    Dimension.structure: JudgeStructure,
}


class JudgeAllDimensions(dspy.Signature):
    """Judge an agent's answer to a corporate-finance question on every dimension in one pass. The
    rubric of each dimension follows; apply each rubric only to that dimension's assertions."""

    question: str = dspy.InputField(desc="The user's question, exactly as put to the agent.")
    task_type: str = dspy.InputField(
        desc="obligations, entity_performance or business_brief (see the rubrics)."
    )
    answer: str = dspy.InputField(
        desc="The agent's final answer (for a timed-out run: its partial answer)."
    )
    ground_truth: str = dspy.InputField(desc="Reference answer for the accuracy dimension.")
    evidence: str = dspy.InputField(
        desc="Tool outputs and sources the agent saw, for groundedness."
    )
    assertions: dict[str, list[AssertionToJudge]] = dspy.InputField(
        desc="Dimension name -> the assertions to score for it."
    )
    verdicts: dict[str, list[AssertionVerdict]] = dspy.OutputField(
        desc="Dimension name -> verdicts, one key per dimension given. " + SCORE_GUIDE
    )


CONVERSATION_GUIDE = (
    "This item is a conversation, not a single answer: a user (played by a simulator) contacted "
    "the finance team and the agent answered over several turns, calling tools as it went. "
    "Judge the agent's side of the whole conversation: all its messages taken together, the "
    "tool calls under each message as the evidence it had, and the scenario as what the user "
    "knew and came for. The user's messages are context, never the agent's work. An agent that "
    "answered before asking for what the scenario says it must ask, or told the user something "
    "it must not, fails the assertions that concern it."
)

SCENARIO_DESC = (
    "Who the user is, what they say when asked, what the agent must ask before it answers, the "
    "follow-up questions and what the agent must not disclose."
)
TRANSCRIPT_DESC = (
    "The whole conversation in order: [user] and [agent] turns, each agent turn followed by the "
    "tool calls it made (arguments and output), and how it ended."
)
END_FACTS_DESC = "The expected end facts, computed from the ERP for the values the user gives."


class ConversationJudgement(dspy.Signature):
    """Judge an agent's side of a conversation with a user about a corporate-finance request
    against the assertions of one dimension."""

    scenario: str = dspy.InputField(desc=SCENARIO_DESC)
    transcript: str = dspy.InputField(desc=TRANSCRIPT_DESC)
    ground_truth: str = dspy.InputField(desc=END_FACTS_DESC)
    assertions: list[AssertionToJudge] = dspy.InputField(desc="The checkable statements to score.")
    verdicts: list[AssertionVerdict] = dspy.OutputField(desc=SCORE_GUIDE)


class ConversationAllDimensions(dspy.Signature):
    """Judge an agent's side of a conversation with a user about a corporate-finance request on
    every dimension in one pass; apply each rubric only to that dimension's assertions."""

    scenario: str = dspy.InputField(desc=SCENARIO_DESC)
    transcript: str = dspy.InputField(desc=TRANSCRIPT_DESC)
    ground_truth: str = dspy.InputField(desc=END_FACTS_DESC)
    assertions: dict[str, list[AssertionToJudge]] = dspy.InputField(
        desc="Dimension name -> the assertions to score for it."
    )
    verdicts: dict[str, list[AssertionVerdict]] = dspy.OutputField(
        desc="Dimension name -> verdicts, one key per dimension given. " + SCORE_GUIDE
    )


def conversation_signatures() -> dict[Dimension, type[ConversationJudgement]]:
    """One signature per dimension for conversations: the conversation guide, then the
    dimension's rubric (the same text as for single answers)."""
    return {
        dimension: ConversationJudgement.with_instructions(
            f"{ConversationJudgement.instructions}\n\n{CONVERSATION_GUIDE}\n\n"
            f"{signature.instructions}"
        )
        for dimension, signature in DIMENSION_SIGNATURES.items()
    }


def conversation_all_signature() -> type[ConversationAllDimensions]:
    """The single-call signature for conversations, with the guide and every rubric."""
    rubrics = "\n\n".join(sig.instructions for sig in DIMENSION_SIGNATURES.values())
    return ConversationAllDimensions.with_instructions(
        f"{ConversationAllDimensions.instructions}\n\n{CONVERSATION_GUIDE}\n\n{rubrics}"
    )


def all_dimensions_signature() -> type[JudgeAllDimensions]:
    """The single-call signature, its instructions extended with every dimension's rubric."""
    rubrics = "\n\n".join(sig.instructions for sig in DIMENSION_SIGNATURES.values())
    return JudgeAllDimensions.with_instructions(JudgeAllDimensions.instructions + "\n\n" + rubrics)


def signature_text(signature: type[dspy.Signature]) -> dict[str, object]:
    """Everything of a signature that reaches the prompt, for hashing."""
    return {
        "instructions": signature.instructions,
        "fields": {
            name: [field.json_schema_extra.get("desc", ""), str(field.annotation)]
            for name, field in signature.fields.items()
        },
    }
