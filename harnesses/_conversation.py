"""Conversations with a simulated user (operations items): the scripted user, the rules reviewer
of the user, and the loop the runner drives.

The runner owns the conversation: it sends the user's message to the harness as one agent turn
(``AgentTask.query``, earlier turns in ``AgentTask.history``), passes the agent's reply to the user,
and stops on a closed stop signal, the scenario's turn budget, the time budget (which covers the
agent's turns only; the user's time is recorded apart) or a failure. Every user turn is then
reviewed against the scenario; a conversation whose user broke it critically is recorded with its
tags and left out of every score (the judge marks it unscored and the report counts it).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from harnesses._harness_loop import HarnessLoop
from harnesses._protocol import AgentTask, ChatTurn, TrajectoryDraft
from ledgerbench_core._trial import trial_key
from ledgerbench_core.dataset import Conversation, Question
from ledgerbench_core.trajectory import (
    ConversationLog,
    ConversationTurn,
    ModelEvent,
    TerminationReason,
    TrajectoryRecord,
    UserTurnTag,
)

if TYPE_CHECKING:
    from harnesses._question_runner import QuestionRunner

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
SIGNALS: dict[str, Literal["done", "transfer", "out_of_scope"]] = {
    STOP: "done",
    TRANSFER: "transfer",
    OUT_OF_SCOPE: "out_of_scope",
}
"""The closed stop signals (tau2-bench's): the user ends the conversation only with one."""
SCRIPTED_USER_VERSION = "scripted-user-1"
REVIEWER_VERSION = "rules-1"
STRIKES = 2
"""Turns in a row in which the agent asks only what the scenario cannot answer (or says nothing
the user can use) before the user gives up with ``###OUT-OF-SCOPE###``."""
CORRUPTIONS = ("volunteer", "invent", "reveal", "early_stop", "empty")
"""Ways a corrupted user breaks its scenario (tests and ``bench/bench_conversations.py`` check
the reviewer catches them)."""

Signal = Literal["done", "transfer", "out_of_scope"]
_TRANSFER_WORDS = re.compile(
    r"\b(transfer(?:ring)? you|hand(?:ing)? you over|connect(?:ing)? you (?:to|with) a "
    r"(?:colleague|human|person|specialist))\b",
    re.I,
)
_SENTENCE = re.compile(r"[^.?!\n]*\?")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_FACT_TOKEN = re.compile(
    r"\b(?=[A-Z0-9-]*\d)[A-Z0-9][A-Z0-9-]{2,}\b|(?<=entity )[A-Z]{4}\b|(?<=company )[A-Z]{4}\b"
)
"""Ids and codes a user might state: tokens with a digit (INV-192761, ARP-0000394) and legal
entity codes where a legal entity is named ("legal entity USMF"), not every upper-case word."""


# --------------------------------------------------------------------------------------------------
# Reading messages
# --------------------------------------------------------------------------------------------------


def question_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that end in a question mark, lower case."""
    return [match.group(0).strip().lower() for match in _SENTENCE.finditer(text)]


def asks_for(text: str, vocabulary: list[str]) -> bool:
    """Whether a question in ``text`` uses any of ``vocabulary`` (the words of one slot)."""
    return any(word in sentence for sentence in question_sentences(text) for word in vocabulary)


def numbers_in(text: str) -> set[str]:
    """Numbers written in ``text``, normalised (thousands separators dropped, two decimals for
    amounts), so ``1,477.21`` and ``1477.21`` are the same number."""
    found = set()
    for match in _NUMBER.finditer(text):
        raw = match.group(0).rstrip(".,").replace(",", "")
        found.add(_normal(raw))
    return found


def _normal(raw: str) -> str:
    try:
        return f"{float(raw):.2f}" if "." in raw else raw
    except ValueError:
        return raw


def mentions(text: str, value: str) -> bool:
    """Whether ``text`` states ``value``: as a number when it is one, else as words."""
    cleaned = value.replace(",", "")
    if re.fullmatch(r"-?\d+(?:\.\d+)?", cleaned):
        return _normal(cleaned) in numbers_in(text)
    return value.lower() in text.lower()


def substantive(text: str) -> bool:
    """Whether an agent message gives the user something to go on (figures, ids or dates)."""
    return any(ch.isdigit() for ch in text)


# --------------------------------------------------------------------------------------------------
# The scripted user
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UserReply:
    text: str
    signal: Signal | None = None
    failure: str | None = None
    """Why a user model gave no reply (then ``text`` is empty)."""


class ScriptedUser:
    """A deterministic user with no model: it reveals a slot only when a question of the agent's
    asks for it (in the slot's words), answers "I don't know" for ``unknown_info`` and never
    volunteers it, asks its follow-ups once the agent has answered, and ends only with a closed
    stop signal. ``corruption`` (tests and benchmarks only) makes it break its scenario on its
    first reply, one of :data:`CORRUPTIONS`."""

    name = "scripted"
    version = SCRIPTED_USER_VERSION

    def __init__(self, scenario: Conversation, corruption: str | None = None) -> None:
        if corruption is not None and corruption not in CORRUPTIONS:
            raise ValueError(f"unknown corruption {corruption!r}; use one of {CORRUPTIONS}")
        self.scenario = scenario
        self.corruption = corruption
        self.follow_ups = list(scenario.follow_ups)
        self.strikes = 0
        self.replies = 0

    def opening(self) -> str:
        return self.scenario.opening_message

    async def respond(self, agent_message: str) -> UserReply:
        return self.reply(agent_message)

    def reply(self, agent_message: str) -> UserReply:
        reply = self._honest(agent_message)
        self.replies += 1
        if self.corruption and self.replies == 1:
            return self._corrupt(reply)
        return reply

    def _honest(self, message: str) -> UserReply:
        if _TRANSFER_WORDS.search(message):
            return UserReply(f"Thank you. {TRANSFER}", "transfer")
        asked = [s for s in self.scenario.known_info if asks_for(message, s.vocabulary)]
        if asked:
            self.strikes = 0
            return UserReply(" ".join(slot.answer for slot in asked))
        unknown = [u for u in self.scenario.unknown_info if asks_for(message, u.vocabulary)]
        if substantive(message) and not unknown:
            self.strikes = 0
            if self.follow_ups:
                return UserReply(self.follow_ups.pop(0).message)
            return UserReply(f"Thank you, that is what I needed. {STOP}", "done")
        self.strikes += 1
        if self.strikes >= STRIKES:
            return UserReply(f"I cannot help any further with that. {OUT_OF_SCOPE}", "out_of_scope")
        if unknown:
            names = " or ".join(u.name.replace("_", " ") for u in unknown)
            return UserReply(f"I don't know the {names}; that is what I hoped you could tell me.")
        return UserReply(f"I still need an answer to my question: {self.opening()}")

    def _corrupt(self, reply: UserReply) -> UserReply:
        scenario = self.scenario
        if self.corruption == "empty":
            return UserReply("")
        if self.corruption == "early_stop":
            return UserReply(f"Fine, thanks. {STOP}", "done")
        if self.corruption == "reveal":
            said = " ".join(slot.answer for slot in scenario.known_info)
            return UserReply(f"{reply.text} {said}".strip(), reply.signal)
        if self.corruption == "volunteer" and scenario.unknown_info:
            value = scenario.unknown_info[0].value
            return UserReply(f"{reply.text} By the way, I believe it is {value}.", reply.signal)
        invented = "It may be filed under reference QX-48213 in legal entity ZQMF."
        return UserReply(f"{reply.text} {invented}".strip(), reply.signal)


# --------------------------------------------------------------------------------------------------
# The rules reviewer of the user
# --------------------------------------------------------------------------------------------------


def _strip_signals(text: str) -> str:
    for signal in SIGNALS:
        text = text.replace(signal, " ")
    return text


def _scenario_text(scenario: Conversation) -> str:
    parts = [scenario.persona, scenario.opening_message]
    parts += [slot.answer for slot in scenario.known_info]
    parts += [follow_up.message for follow_up in scenario.follow_ups]
    return "\n".join(parts)


def review_user(scenario: Conversation, turns: list[ConversationTurn]) -> list[UserTurnTag]:
    """Tag every user turn that broke the scenario (tau2-bench's categories, by rules).

    A user turn is checked against the agent message before it: a stated ``unknown_info`` value
    (``volunteered_unknown``), a slot value the agent did not ask for (``revealed_unasked``:
    critical for a required clarification), an id, code or number found neither in the scenario
    nor in the conversation so far (``invented_fact``), an empty message (``empty_message``), the
    done signal before the agent answered or with follow-ups left (``premature_stop``), and an
    opening that is not the scenario's (``opening_changed``, minor)."""
    tags: list[UserTurnTag] = []
    allowed = _scenario_text(scenario)
    answered = False
    follow_ups_sent = 0
    previous_agent = ""
    for index, turn in enumerate(turns):
        if turn.role == "agent":
            previous_agent = turn.content
            allowed += "\n" + turn.content
            answered = answered or substantive(turn.content)
            continue
        if index == 0:
            if turn.content != scenario.opening_message:
                tags.append(_tag(index, "minor", "opening_changed", turn.content))
            continue
        follow_ups_sent += any(f.message == turn.content for f in scenario.follow_ups)
        tags += _review_turn(scenario, index, turn, previous_agent, allowed)
        if turn.signal == "done" and (not answered or follow_ups_sent < len(scenario.follow_ups)):
            why = "before the agent answered" if not answered else "with follow-ups left unasked"
            tags.append(_tag(index, "critical_hindered", "premature_stop", f"stopped {why}"))
    return tags


def _review_turn(
    scenario: Conversation, index: int, turn: ConversationTurn, agent: str, allowed: str
) -> list[UserTurnTag]:
    text = _strip_signals(turn.content)
    if not text.strip() and turn.signal is None:
        return [_tag(index, "critical_hindered", "empty_message", "the user sent nothing")]
    tags = []
    for unknown in scenario.unknown_info:
        if mentions(text, unknown.value):
            detail = f"stated {unknown.name} ({unknown.value}), which the user does not know"
            tags.append(_tag(index, "critical_helped", "volunteered_unknown", detail))
    for slot in scenario.known_info:
        if mentions(text, slot.value) and not asks_for(agent, slot.vocabulary):
            severity = (
                "critical_helped" if slot.name in scenario.required_clarifications else "minor"
            )
            detail = f"revealed {slot.name} ({slot.value}) without being asked"
            tags.append(_tag(index, severity, "revealed_unasked", detail))
    allowed_numbers = numbers_in(allowed)
    allowed_upper = allowed.upper()
    invented = [
        token
        for token in _FACT_TOKEN.findall(text)
        if token.upper() not in allowed_upper and not numbers_in(token) <= allowed_numbers
    ]
    invented += [
        n for n in numbers_in(text) if n not in allowed_numbers and not _inside(n, allowed)
    ]
    if invented:
        shown = ", ".join(sorted(set(invented)))
        tags.append(_tag(index, "critical_hindered", "invented_fact", f"stated {shown}"))
    return tags


def _inside(number: str, allowed: str) -> bool:
    return number in allowed.replace(",", "")


def _tag(index: int, severity: str, rule: str, detail: str) -> UserTurnTag:
    return UserTurnTag(turn=index, severity=severity, rule=rule, detail=detail[:300])


# --------------------------------------------------------------------------------------------------
# The conversation loop
# --------------------------------------------------------------------------------------------------


def is_model_user(spec: str) -> bool:
    """Whether ``--user`` names a model (``chat:MODEL`` or ``anthropic:MODEL``)."""
    return spec.startswith(("chat:", "anthropic:"))


def make_user(spec: str, scenario: Conversation, base_url: str | None = None):
    """The simulated user ``--user`` names for one scenario."""
    if spec == "scripted":
        return ScriptedUser(scenario)
    if spec.startswith("scripted:"):
        return ScriptedUser(scenario, corruption=spec.split(":", 1)[1])
    from harnesses._llm_user import LlmUser

    return LlmUser(spec, scenario, base_url)


async def run_conversation(
    runner: QuestionRunner, question: Question, trial: int
) -> TrajectoryRecord:
    """One operations item: the conversation between the harness and the simulated user."""
    from harnesses._question_runner import _Attempt

    scenario = question.conversation
    assert scenario is not None
    config = runner.config
    budget = config.budget_for(question)
    started_at = dt.datetime.now(dt.UTC)
    draft = TrajectoryDraft(started_monotonic=time.monotonic(), output_limit=config.output_limit)
    user = make_user(config.user, scenario, config.user_base_url)
    env = runner.env.for_trial(trial_key(question.id, trial))
    loop = HarnessLoop(f"{runner.harness_name}-{question.id}") if runner.own_loops else None
    log = ConversationLog(
        kind=scenario.kind, user=user.name, user_version=user.version, reviewer=REVIEWER_VERSION
    )
    log.turns.append(
        ConversationTurn(role="user", content=user.opening(), started_s=0.0, duration_s=0.0)
    )
    history: list[ChatTurn] = []
    message, remaining = user.opening(), budget
    outcome: _Attempt | None = None
    try:
        for _ in range(scenario.max_turns):
            reply, outcome, spent = await _agent_turn(
                runner, question, trial, draft, env, loop, message, history, remaining
            )
            remaining -= spent
            calls = len(draft.tool_calls) - sum(t.tool_calls for t in log.turns)
            log.agent_time_s += spent
            log.turns.append(
                ConversationTurn(
                    role="agent",
                    content=reply,
                    started_s=round(draft.elapsed() - spent, 4),
                    duration_s=round(spent, 4),
                    tool_calls=max(0, calls),
                )
            )
            if outcome.reason is not TerminationReason.completed:
                if outcome.reason is TerminationReason.empty_answer:
                    outcome = _Attempt(
                        TerminationReason.agent_gave_up, "", detail="the agent sent no message"
                    )
                break
            history += [ChatTurn("user", message), ChatTurn("agent", reply)]
            said_at = draft.elapsed()
            answer = await _user_reply(user, reply)
            took = draft.elapsed() - said_at
            draft.excluded_s += took
            log.user_time_s += took
            log.turns.append(
                ConversationTurn(
                    role="user",
                    content=answer.text,
                    started_s=round(said_at, 4),
                    duration_s=round(took, 6),
                    signal=answer.signal,
                )
            )
            outcome = _end_of_user_turn(answer)
            if outcome is not None:
                if answer.text:  # the user's last word belongs to the transcript too
                    draft.add_message("user", answer.text)
                break
            message = answer.text
        else:
            outcome = _Attempt(
                TerminationReason.max_turns,
                "",
                detail=f"no stop signal after {scenario.max_turns} agent turns",
            )
    finally:
        if loop is not None:
            loop.close(timeout=0.0)
    log.review = review_user(scenario, log.turns)
    agent_text = "\n\n".join(t.content for t in log.turns if t.role == "agent" and t.content)
    final = _Attempt(outcome.reason, agent_text, outcome.error, outcome.detail)
    record = runner._record(question, trial, budget, started_at, draft, final)
    if is_model_user(config.reviewer):  # after the record's clock stopped: not the agent's time
        await _model_review(config, scenario, log)
    return record.model_copy(update={"conversation": log, "input": user.opening()})


async def _model_review(config, scenario: Conversation, log: ConversationLog) -> None:
    """The reviewer model's tags beside the rules' (``--reviewer``), or ``review_error``."""
    from harnesses._user_review import ModelReviewer, ReviewError

    reviewer = ModelReviewer(config.reviewer, config.reviewer_base_url)
    log.reviewer = f"{REVIEWER_VERSION}+{reviewer.version}"
    try:
        log.review += await reviewer.review(scenario, log.turns)
    except ReviewError as error:
        log.review_error = str(error)[:500]


async def _user_reply(user, message: str) -> UserReply:
    """The user's reply; a user model that fails gives an empty reply (``user_error``)."""
    from harnesses._llm_user import UserModelError

    try:
        return await user.respond(message)
    except UserModelError as error:
        return UserReply("", None, failure=str(error))


def _end_of_user_turn(answer: UserReply):
    from harnesses._question_runner import _Attempt

    if answer.signal is not None:
        reason = {
            "done": TerminationReason.user_done,
            "transfer": TerminationReason.transfer,
            "out_of_scope": TerminationReason.out_of_scope,
        }[answer.signal]
        return _Attempt(reason, "", detail=f"the user ended with {answer.signal}")
    if not answer.text.strip():
        detail = answer.failure or "the simulated user sent an empty message"
        return _Attempt(TerminationReason.user_error, "", detail=detail)
    return None


async def _agent_turn(
    runner: QuestionRunner,
    question: Question,
    trial: int,
    draft: TrajectoryDraft,
    env,
    loop: HarnessLoop | None,
    message: str,
    history: list[ChatTurn],
    remaining: float,
):
    """One agent turn under what is left of the budget: (reply, attempt, seconds)."""
    from harnesses._question_runner import _Attempt

    start = time.monotonic()
    if remaining <= 0:
        return "", _Attempt(TerminationReason.time_limit, ""), 0.0
    config = runner.config
    task = AgentTask(
        question_id=question.id,
        trial=trial,
        query=message,
        task_type=question.task_type,
        timeout_s=runner.config.budget_for(question),
        deadline=start + remaining,
        stall_timeout_s=config.stall_timeout,
        limits=config.sample_limits(),
        history=tuple(history),
    )
    draft.answer = ""
    draft.add_message("user", message)  # tool calls of this turn attach after it
    written, events = len(draft.messages), len(draft.events)
    outcome = await runner._attempts(task, env, draft, loop)
    _drop_repeated_user_turn(draft, written, events)
    reply = outcome.answer.strip()
    if reply and not any(m.role == "assistant" for m in draft.messages[written - 1 :]):
        draft.add_message("assistant", reply)
    return reply, outcome, time.monotonic() - start


def _drop_repeated_user_turn(draft: TrajectoryDraft, written: int, events: int) -> None:
    """A harness that writes the user's message itself (model harnesses do) repeats the one the
    runner wrote: the runner's goes, and the model events of this turn, which point at messages
    by position, shift with it."""
    if not any(m.role == "user" for m in draft.messages[written:]):
        return
    del draft.messages[written - 1]
    for index in range(events, len(draft.events)):
        event = draft.events[index]
        shifts = isinstance(event, ModelEvent) and (event.message_index or -1) >= written
        if shifts:
            moved = {"message_index": event.message_index - 1}
            draft.events[index] = event.model_copy(update=moved)


def conversation_problem(config, harness, pairs) -> str | None:
    """One line refusing a run whose operations items the harness or the user cannot play."""
    if not any(question.conversation is not None for question, _ in pairs):
        return None
    if not getattr(harness, "conversational", False):
        name = getattr(harness, "name", None) or config.harness
        return (
            f"the {name} harness does not hold conversations (operations items need a harness "
            "with conversational = True: scripted, guess, nothing, custom, openai, claude); "
            "leave them out with --task-type obligations or pick another harness"
        )
    if config.reviewer != "rules" and not is_model_user(config.reviewer):
        return (
            f"--reviewer {config.reviewer}: use rules (the offline reviewer), chat:MODEL (Chat "
            "Completions) or anthropic:MODEL (Messages), with --reviewer-base-url for another "
            "endpoint"
        )
    if (
        config.user == "scripted"
        or config.user.startswith("scripted:")
        or is_model_user(config.user)
    ):
        return None
    return (
        f"--user {config.user}: use scripted (the offline user), chat:MODEL (Chat Completions) or "
        "anthropic:MODEL (Messages), with --user-base-url for another endpoint"
    )


async def user_model_problem(config, pairs) -> str | None:
    """One line when the run's user model or reviewer model cannot be reached (pre-flight,
    before any write)."""
    if not any(question.conversation is not None for question, _ in pairs):
        return None
    from harnesses._llm_user import preflight

    user_problem = (
        await preflight(config.user, config.user_base_url) if is_model_user(config.user) else None
    )
    if user_problem is not None:
        return user_problem
    if is_model_user(config.reviewer):
        return await preflight(
            config.reviewer, config.reviewer_base_url, "--reviewer", "reviewer model"
        )
    return None
