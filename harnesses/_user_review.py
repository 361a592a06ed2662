"""A model reviewer of the simulated user (``--reviewer chat:MODEL`` or ``anthropic:MODEL``),
after tau2-bench's reviewer of the user: another model reads the scenario and the conversation and
tags each user turn that broke the scenario (it leaked what it does not know, revealed a slot
unasked, contradicted or invented a fact, ended before the agent was done, sent nothing) as
``critical_helped``, ``critical_hindered`` or ``minor``.

It runs beside the rules reviewer (``harnesses._conversation.review_user``), on the same wire
clients as the LLM user. A reply that is not the asked JSON, or names a turn that is not a user
turn, a severity or a rule outside the closed sets, is asked again; a reviewer that still gives
nothing usable (or cannot be reached) leaves ``review_error`` in the conversation: the user is not
cleared, so the conversation is not scored, and ``--retry-simulator-errors`` runs it again.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harnesses._llm_user import UserModelError, complete
from ledgerbench_core.dataset import Conversation
from ledgerbench_core.trajectory import ConversationTurn, UserTurnTag

REVIEW_RULES = """You review the SIMULATED USER of a test conversation between a user and a
finance team's agent. The user was told to play the scenario below: state only facts the scenario
gives, say each thing it knows only when the agent asks for it, never state what it does not know,
ask its follow-up questions once the agent has answered, and end (###STOP###) only once the agent
has answered its request and every follow-up. You judge the USER's turns only, never the agent's.

Tag every user turn (after the opening, turn 0) that broke the scenario, with one rule:
- leaked_answer: states a value from "What the user does not know" (critical_helped)
- revealed_unasked: states a known fact the agent did not ask for (critical_helped when the agent
  must ask for it before answering; minor otherwise)
- contradicted_facts: states something that contradicts the scenario (critical_hindered)
- invented_fact: states an id, figure, date or name the scenario does not give (critical_hindered)
- premature_stop: ends before the agent answered the request and every follow-up (critical_hindered)
- empty_message: sends nothing (critical_hindered)
- other: any other break (minor unless it changed what the agent could do)
Severity: critical_helped (made the task easier), critical_hindered (made it harder) or minor.
Repeating what the agent said, or saying "I don't know" to what the user does not know, is fine.

Reply with JSON only, no prose: {"tags": [{"turn": <user turn number>, "severity": "...",
"rule": "...", "detail": "<one line: what the user said>"}]}, or {"tags": []} when every user turn
kept to the scenario."""

ReviewRule = Literal[
    "leaked_answer",
    "revealed_unasked",
    "contradicted_facts",
    "invented_fact",
    "premature_stop",
    "empty_message",
    "other",
]
RETRIES = 2
AGAIN = "reply with the JSON object only."
"""Further requests after a reply that cannot be used."""


class ReviewError(RuntimeError):
    """The reviewer model gave no usable review (unreachable, or unusable replies)."""


class _Tag(BaseModel):
    model_config = ConfigDict(extra="ignore")
    turn: int
    severity: Literal["critical_helped", "critical_hindered", "minor"]
    rule: ReviewRule
    detail: str = ""


class _Review(BaseModel):
    model_config = ConfigDict(extra="ignore")
    tags: list[_Tag]


def review_prompt_hash() -> str:
    return hashlib.sha256(REVIEW_RULES.encode()).hexdigest()[:12]


def scenario_for_review(scenario: Conversation) -> str:
    """The scenario as the reviewer reads it: what the user knows (with values), what it does not
    know (with the values it must never state), what the agent must ask, the follow-ups."""
    known = "\n".join(f"- {slot.name}: {slot.answer}" for slot in scenario.known_info)
    unknown = "\n".join(
        f"- {info.name.replace('_', ' ')}: {info.value}" for info in scenario.unknown_info
    )
    follow = "\n".join(f"- {f.message}" for f in scenario.follow_ups) or "- (none)"
    required = ", ".join(scenario.required_clarifications) or "(nothing)"
    return (
        f"Who the user is: {scenario.persona}\n"
        f"Opening message: {scenario.opening_message}\n"
        f"What the user knows (to say only when asked):\n{known}\n"
        f"What the user does not know (never to be stated):\n{unknown or '- (nothing listed)'}\n"
        f"What the agent must ask before it answers: {required}\n"
        f"The user's follow-up questions:\n{follow}"
    )


def conversation_for_review(turns: list[ConversationTurn]) -> str:
    lines = []
    for index, turn in enumerate(turns):
        ended = f" (ended: {turn.signal})" if turn.signal else ""
        lines.append(f"[turn {index}, {turn.role}]{ended} {turn.content or '(empty message)'}")
    return "\n\n".join(lines)


def parse_review(text: str, turns: list[ConversationTurn], by: str) -> list[UserTurnTag]:
    """The reviewer's tags, or ValueError naming what is wrong with the reply."""
    match = re.search(r"\{.*\}", text, re.S)
    if match is None:
        raise ValueError("no JSON object in the reply")
    try:
        review = _Review.model_validate(json.loads(match.group(0)))
    except (json.JSONDecodeError, ValidationError) as error:
        raise ValueError(" ".join(str(error).split())[:200]) from None
    user_turns = {i for i, turn in enumerate(turns) if turn.role == "user" and i > 0}
    for tag in review.tags:
        if tag.turn not in user_turns:
            raise ValueError(f"turn {tag.turn} is not a user turn after the opening")
    return [
        UserTurnTag(
            turn=tag.turn,
            severity=tag.severity,
            rule=tag.rule,
            detail=(tag.detail or tag.rule)[:300],
            by=by,
        )
        for tag in review.tags
    ]


class ModelReviewer:
    """Reviews a conversation's user turns with a model over Chat Completions or Messages."""

    def __init__(self, spec: str, base_url: str | None = None) -> None:
        self.api, _, self.model = spec.partition(":")
        if self.api not in ("chat", "anthropic") or not self.model:
            raise ValueError(
                f"--reviewer {spec}: use rules, chat:MODEL (Chat Completions) or anthropic:MODEL"
            )
        self.base_url = base_url
        self.name = f"{self.api}:{self.model}"
        self.version = f"{self.name}@prompt-{review_prompt_hash()}"

    async def review(
        self, scenario: Conversation, turns: list[ConversationTurn]
    ) -> list[UserTurnTag]:
        """The tags of every user turn that broke the scenario; :class:`ReviewError` when the
        model gives no usable review after :data:`RETRIES` more requests."""
        request = (
            f"Scenario\n{scenario_for_review(scenario)}\n\nConversation\n"
            f"{conversation_for_review(turns)}"
        )
        messages = [{"role": "user", "content": request}]
        problem = ""
        for _ in range(1 + RETRIES):
            try:
                text = await complete(
                    self.api, self.model, self.base_url, REVIEW_RULES, messages, 1000
                )
            except UserModelError as error:
                raise ReviewError(f"the reviewer model {self.name} failed: {error}") from None
            try:
                return parse_review(text, turns, self.name)
            except ValueError as error:
                problem = str(error)
                messages = [
                    *messages[:1],
                    {"role": "assistant", "content": text or "(empty)"},
                    {"role": "user", "content": f"That reply cannot be used ({problem}); {AGAIN}"},
                ]
        raise ReviewError(
            f"the reviewer model {self.name} gave no usable review after {1 + RETRIES} "
            f"requests ({problem})"
        )
