"""Rules for conversations (operations items): keyed end facts with partial credit, the
clarifications asked before answering, disclosure violations, turns used; and pass^k over trials.

The accuracy of a conversation is the share of its expected end facts the agent stated over all
its turns, and 0 when a dealbreaker happened: it answered before asking for every required
clarification (a guess: wrong by construction), or it disclosed something the scenario says it
must not. Conversations whose simulated user broke its scenario critically are not scored (the
judge runner records them as ``infra_error`` with ``simulator_error``) and are counted apart.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from harnesses._conversation import asks_for, mentions, question_sentences, substantive
from ledgerbench_core.dataset import Question
from ledgerbench_core.trajectory import TrajectoryRecord

TOOL_OUTPUT_CHARS = 2_000
"""A tool output in a transcript for a model judge is cut to this many characters."""
MIN_OUTPUT_CHARS = 200
"""However many tool calls share the transcript's budget, each output keeps this much."""
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


def scenario_text(question: Question) -> str:
    """An operations item's scenario as a model judge reads it: who the user is, what they say
    when asked, what they do not know, what the agent must ask before answering, the follow-ups
    and what the agent must not disclose."""
    scenario = question.conversation
    assert scenario is not None
    lines = [f"Kind: {scenario.kind}", f"User: {scenario.persona}"]
    if question.as_of is not None:
        lines.append(f"As of: {question.as_of.isoformat()}")
    lines.append("What the user says when asked:")
    lines += [f"- {slot.name}: {slot.answer}" for slot in scenario.known_info]
    if scenario.unknown_info:
        unknown = ", ".join(info.name.replace("_", " ") for info in scenario.unknown_info)
        lines.append(f"What the user does not know (the agent must find it): {unknown}")
    required = ", ".join(scenario.required_clarifications) or "(nothing)"
    lines.append(f"The agent must ask for these before it answers: {required}")
    if scenario.follow_ups:
        lines.append("The user's follow-up questions:")
        lines += [f"- {follow_up.message}" for follow_up in scenario.follow_ups]
    if scenario.must_not_disclose:
        lines.append("The agent must not tell this user:")
        lines += [f"- {secret.what} ({secret.value})" for secret in scenario.must_not_disclose]
    return "\n".join(lines)


def transcript_text(
    trajectory: TrajectoryRecord,
    output_chars: int = TOOL_OUTPUT_CHARS,
    max_chars: int | None = None,
) -> str:
    """The whole conversation in order, as a model judge reads it: every user turn marked
    ``[user]`` (the simulated user), every agent turn ``[agent]`` followed by the tool calls it
    made (arguments, and the output cut to ``output_chars``, less when the outputs of all calls
    would pass ``max_chars``), and why the conversation ended."""
    log = trajectory.conversation
    assert log is not None
    if max_chars is not None and trajectory.tool_calls:
        share = max_chars // len(trajectory.tool_calls)
        output_chars = max(MIN_OUTPUT_CHARS, min(output_chars, share))
    calls = iter(enumerate(trajectory.tool_calls, start=1))
    blocks: list[str] = []
    for index, turn in enumerate(log.turns):
        if turn.role == "user":
            ended = f" (ended the conversation: {turn.signal})" if turn.signal else ""
            blocks.append(f"[user, turn {index}]{ended} {turn.content or '(empty message)'}")
            continue
        blocks.append(f"[agent, turn {index}] {turn.content or '(no message)'}")
        for _ in range(turn.tool_calls):
            number, call = next(calls, (0, None))
            if call is None:
                break
            blocks.append(_tool_call_text(number, call, output_chars))
    termination = trajectory.termination
    detail = f": {termination.detail}" if termination.detail else ""
    blocks.append(f"[end] {termination.reason.value}{detail}")
    return "\n\n".join(blocks)


def _tool_call_text(number: int, call, output_chars: int) -> str:
    arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
    head = f"  [tool call {number}] {call.name}({arguments})" + (
        " -> ERROR" if call.is_error else ""
    )
    output = call.output
    if len(output) > output_chars:
        output = output[:output_chars] + f" ... (cut: {len(call.output)} characters in all)"
    return f"{head}\n  output: {output}"
