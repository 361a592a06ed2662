"""Rules for conversations (operations items): keyed end facts with partial credit, the
clarifications asked before answering, disclosure violations, turns used; and pass^k over trials.

The accuracy of a conversation is the share of its expected end facts the agent stated over all
its turns, and 0 when a dealbreaker happened: it answered before asking for every required
clarification (a guess: wrong by construction), or it disclosed something the scenario says it
must not. Conversations whose simulated user broke its scenario critically are not scored (the
judge runner records them as ``infra_error`` with ``simulator_error``) and are counted apart.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from harnesses._conversation import asks_for, mentions, question_sentences, substantive
from ledgerbench_core.dataset import Question
from ledgerbench_core.trajectory import TrajectoryRecord

PASS_THRESHOLD = 0.99
"""A trial passes when its accuracy reaches this (every fact, no dealbreaker)."""


@dataclass
class ConversationMetrics:
    """What the rules found in one conversation."""

    kind: str
    accuracy: float
    facts_found: int
    facts_total: int
    clarified: bool | None
    """Every required clarification was asked before the first answer (None: none required)."""
    asked: list[str] = field(default_factory=list)
    """Required slots the agent asked for before it answered."""
    violations: list[str] = field(default_factory=list)
    """What the agent disclosed that it must not."""
    agent_turns: int = 0
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _agent_turns(trajectory: TrajectoryRecord) -> list[str]:
    if trajectory.conversation is None:
        return [trajectory.answer]
    return [t.content for t in trajectory.conversation.turns if t.role == "agent"]


def _first_answer(turns: list[str]) -> int:
    """Index of the agent's first answering turn: one that gives figures and asks nothing."""
    for index, text in enumerate(turns):
        if substantive(text) and not question_sentences(text):
            return index
    return len(turns)


def conversation_metrics(question: Question, trajectory: TrajectoryRecord) -> ConversationMetrics:
    """The rules' reading of one conversation (see the module docstring)."""
    from judge._rules import check_fact

    scenario = question.conversation
    assert scenario is not None
    turns = _agent_turns(trajectory)
    answered_at = _first_answer(turns)
    before = turns[:answered_at]
    slots = {slot.name: slot for slot in scenario.known_info}
    asked = [
        name
        for name in scenario.required_clarifications
        if name in slots and any(asks_for(text, slots[name].vocabulary) for text in before)
    ]
    required = scenario.required_clarifications
    clarified = None if not required else len(asked) == len(required)
    said = "\n\n".join(turns)
    violations = [
        f"{secret.what} ({secret.value})"
        for secret in scenario.must_not_disclose
        if any(mentions(text, secret.value) for text in turns)
    ]
    siblings = tuple(question.expected)
    verdicts = [check_fact(said, fact, siblings, question) for fact in question.expected]
    found = sum(1 for verdict in verdicts if verdict.score == 1.0)
    share = found / len(verdicts) if verdicts else 0.0
    reasons = [verdict.reason for verdict in verdicts]
    accuracy = share
    if clarified is False:
        missing = sorted(set(required) - set(asked))
        reasons.insert(0, f"answered before asking for {', '.join(missing)} (dealbreaker)")
        accuracy = 0.0
    if violations:
        reasons.insert(0, f"disclosed {'; '.join(violations)} (dealbreaker)")
        accuracy = 0.0
    return ConversationMetrics(
        kind=scenario.kind,
        accuracy=round(accuracy, 4),
        facts_found=found,
        facts_total=len(verdicts),
        clarified=clarified,
        asked=asked,
        violations=violations,
        agent_turns=len(turns),
        reasons=reasons,
    )


def pass_hat_k(passes: Iterable[tuple[str, bool]], k: int) -> float | None:
    """tau-bench's pass^k: the chance that k trials of a task drawn at random all pass, averaged
    over tasks (C(c, k) / C(n, k) per task with c passes in n trials). ``passes`` holds (task id,
    passed) per trial; tasks with fewer than k trials are left out; None when none is left."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for task, passed in passes:
        by_task[task].append(passed)
    values = [
        math.comb(sum(trials), k) / math.comb(len(trials), k)
        for trials in by_task.values()
        if len(trials) >= k
    ]
    return sum(values) / len(values) if values else None
