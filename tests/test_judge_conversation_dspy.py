"""The DSPy judge on whole conversations (operations items), with DummyLM: the eight dimensions
over the transcript (user and agent turns, tool calls) and the scenario's facts; a conversation
the judge cannot grade is unscored, and a plain resume grades it again."""

from __future__ import annotations

import copy

import pytest

from harnesses._conversation import ScriptedUser
from harnesses._erp_process import project_root
from judge import (
    CombinedJudge,
    DimensionStatus,
    JudgeRunConfig,
    RulesJudge,
    ScoreStatus,
    read_scores,
    run_judge,
    score_trajectory,
)
from judge._base import GRADING_FAILED, JudgeItem
from judge._dspy_judge import DspyJudge
from ledgerbench_core.dataset import Dimension, Question, load_dataset
from ledgerbench_core.trajectory import ConversationLog, ConversationTurn, Termination, ToolCall
from ledgerbench_core.trajectory import TerminationReason as Reason
from tests.fakes.judge_data import trajectory, write_run

pytestmark = pytest.mark.timeout(60)

dspy = pytest.importorskip("dspy")
from dspy.utils import DummyLM  # noqa: E402

TOOL_OUTPUT = "INVOICE-ROW open_amount_cur=RESIDUAL-MARK"


@pytest.fixture(autouse=True)
def clear_dspy_settings():
    yield
    import importlib

    dspy_settings = importlib.import_module("dspy.dsp.utils.settings")
    dspy_settings.main_thread_config.clear()
    dspy_settings.main_thread_config.update(copy.deepcopy(dspy_settings.DEFAULT_CONFIG))
    dspy_settings.thread_local_overrides.set(type(dspy_settings.DEFAULT_CONFIG)())


def _dispute() -> Question:
    shipped = load_dataset(project_root() / "datasets" / "operations" / "operations.yaml")
    return next(item for item in shipped.items if item.conversation.kind == "dispute")


def _conversation_record(item: Question, answer: str | None = None):
    """The dispute played by the scripted user: the agent asks for the invoice, reads it with one
    tool call, answers with the reference answer; the user ends with the done signal."""
    scenario = item.conversation
    user = ScriptedUser(scenario)
    ask = "Which invoice is it (the invoice number)?"
    answer = answer or item.ground_truth
    slot_reply = user.reply(ask)
    done = user.reply(answer)
    assert done.signal == "done"
    turns = [
        ConversationTurn(role="user", content=user.opening(), started_s=0, duration_s=0),
        ConversationTurn(role="agent", content=ask, started_s=0, duration_s=0.1),
        ConversationTurn(role="user", content=slot_reply.text, started_s=0.1, duration_s=0),
        ConversationTurn(role="agent", content=answer, started_s=0.1, duration_s=0.2, tool_calls=1),
        ConversationTurn(
            role="user", content=done.text, started_s=0.3, duration_s=0, signal=done.signal
        ),
    ]
    log = ConversationLog(kind=scenario.kind, user="scripted", user_version="x", turns=turns)
    call = ToolCall(name="get_invoice", arguments={"invoice": "X"}, output=TOOL_OUTPUT)
    return trajectory(
        item.id,
        answer=f"{ask}\n\n{answer}",
        task_type=item.task_type,
        tool_calls=[call],
        conversation=log,
        termination=Termination(reason=Reason.user_done, infrastructure=False),
    )


def _verdicts(item: Question, dimension: Dimension, score: float | None = 1) -> dict:
    return {
        "verdicts": [
            {"assertion_id": a.id, "score": score, "reason": "ok"} for a in item.tags[dimension]
        ]
    }


def _judge(lm, **options) -> DspyJudge:
    judge = DspyJudge(lm=lm, **options)
    judge.prepare()
    return judge


def test_the_eight_dimensions_are_judged_on_the_transcript_and_the_facts() -> None:
    item = _dispute()
    assert set(item.tags) == set(Dimension)  # every dimension has a conversation assertion
    record_in = _conversation_record(item)
    scores = {d: 0.25 * (i % 5) for i, d in enumerate(item.tags)}
    lm = DummyLM([_verdicts(item, d, scores[d]) for d in item.tags])
    judge = _judge(lm)
    record = score_trajectory(judge, item, record_in)
    assert record.status is ScoreStatus.scored
    assert {d: s.score for d, s in record.dimensions.items()} == scores
    assert record.extra["calls"] == 8

    again = _judge(DummyLM([_verdicts(item, d) for d in item.tags]))
    prompts = [
        again.judge_dimension(JudgeItem(item, record_in), d)[1].messages[0] for d in item.tags
    ]
    scenario = item.conversation
    for dimension, messages in zip(item.tags, prompts, strict=True):
        system, user = messages[0]["content"], messages[-1]["content"]
        assert f"Rubric: {dimension.value.upper()}" in system
        assert "This item is a conversation" in system
        # The transcript: user turns marked, agent turns, the tool call under the agent's turn.
        assert f"[user, turn 0] {scenario.opening_message}" in user
        assert "[agent, turn 1] Which invoice is it" in user
        assert "[user, turn 4] (ended the conversation: done)" in user
        assert (
            user.index("[agent, turn 3]")
            < user.index("[tool call 1] get_invoice")
            < user.index("[user, turn 4]")
        )
        assert TOOL_OUTPUT in user and "[end] user_done" in user
        # The scenario's facts: what the user says, must ask, must not disclose; the end facts.
        assert scenario.known_info[0].answer in user
        assert "must ask for these before it answers: invoice_number" in user
        assert all(secret.value in user for secret in scenario.must_not_disclose)
        assert item.ground_truth in user and "residual [amount" in user
        assert item.tags[dimension][0].id in user


def test_a_conversation_the_judge_cannot_grade_is_unscored_and_judged_again(tmp_path) -> None:
    item = _dispute()
    record_in = _conversation_record(item)
    bad = {"verdicts": "I think it is fine"}
    replies = [_verdicts(item, d) for d in item.tags]
    replies[3:4] = [bad, bad]  # depth fails twice (retries=1)
    record = score_trajectory(_judge(DummyLM(replies), retries=1), item, record_in)
    assert record.status is ScoreStatus.unscored
    assert record.dimensions == {} and record.overall is None
    assert "could not grade the conversation (depth" in record.unscored_reason
    assert record.extra[GRADING_FAILED] == ["depth"] and record.extra["calls"] == 9

    # In a run: the unscored record is written, and a plain resume grades it again.
    run_dir = write_run(tmp_path / "run", [item], [record_in])
    config = JudgeRunConfig(
        run_dir=run_dir, judge="dummy", concurrency=1, progress=False, cache=False
    )
    first = run_judge(config, judge=DspyJudge(lm=DummyLM(replies), name="dummy", retries=1))
    (written,), _ = read_scores(first.scores_path)
    assert written.status is ScoreStatus.unscored
    good = [_verdicts(item, d) for d in item.tags]
    again = run_judge(config, judge=DspyJudge(lm=DummyLM(good), name="dummy", retries=1))
    assert again.judged == 1
    (rescored,), _ = read_scores(again.scores_path)
    assert rescored.status is ScoreStatus.scored and rescored.overall == 1.0


def test_single_call_mode_grades_the_whole_conversation_in_one_call() -> None:
    item = _dispute()
    reply = {"verdicts": {d.value: _verdicts(item, d, 0.5)["verdicts"] for d in item.tags}}
    record = score_trajectory(
        _judge(DummyLM([reply]), mode="single-call"), item, _conversation_record(item)
    )
    assert record.status is ScoreStatus.scored and record.extra["calls"] == 1
    assert {s.score for s in record.dimensions.values()} == {0.5}
    judge = _judge(DummyLM([reply]), mode="single-call")
    _, result = judge.judge_all(JudgeItem(item, _conversation_record(item)))
    system, user = result.messages[0][0]["content"], result.messages[0][-1]["content"]
    assert "This item is a conversation" in system and "Rubric: STRUCTURE" in system
    assert "[tool call 1] get_invoice" in user

    missing = {"verdicts": {"accuracy": reply["verdicts"]["accuracy"]}}
    never = _judge(DummyLM([missing] * 3), mode="single-call", retries=2)
    record = score_trajectory(never, item, _conversation_record(item))
    assert record.status is ScoreStatus.unscored
    assert set(record.extra[GRADING_FAILED]) == {d.value for d in item.tags} - {"accuracy"}


def test_with_rules_the_rules_decide_accuracy_and_a_failed_grading_stays_unscored() -> None:
    item = _dispute()
    guess = _conversation_record(item, answer="It is fully paid: 0.00 is open.")
    replies = [_verdicts(item, d, 1) for d in item.tags]
    combined = CombinedJudge(_judge(DummyLM(replies)), RulesJudge())
    record = score_trajectory(combined, item, guess)
    assert record.status is ScoreStatus.scored
    accuracy = record.dimensions[Dimension.accuracy]
    assert accuracy.score == 0.0  # the rules' certain verdict: no key fact was stated
    assert record.extra["llm_overridden"]["accuracy"] == {"accuracy.conversation": 1.0}
    assert record.dimensions[Dimension.clarity].score == 1.0

    bad = {"verdicts": "no"}
    failing = CombinedJudge(_judge(DummyLM([bad] * 30), retries=0), RulesJudge())
    record = score_trajectory(failing, item, guess)
    assert record.status is ScoreStatus.unscored
    assert all(d.status is not DimensionStatus.scored for d in record.dimensions.values())


def test_the_rules_judge_leaves_the_seven_model_dimensions_to_a_model() -> None:
    item = _dispute()
    outcome = RulesJudge().score(JudgeItem(item, _conversation_record(item)))
    assert outcome.dimensions[Dimension.accuracy].score == 1.0
    others = {d: s.status for d, s in outcome.dimensions.items() if d is not Dimension.accuracy}
    assert set(others) == set(Dimension) - {Dimension.accuracy}
    assert set(others.values()) == {DimensionStatus.needs_llm}


def test_the_transcript_keeps_every_call_within_the_evidence_budget() -> None:
    from judge._conversation import MIN_OUTPUT_CHARS, transcript_text

    item = _dispute()
    record = _conversation_record(item)
    log = record.conversation
    turns = [*log.turns[:3], log.turns[3].model_copy(update={"tool_calls": 40}), log.turns[4]]
    calls = [ToolCall(name=f"tool_{i}", output=f"OUT{i}-" + "x" * 5_000) for i in range(40)]
    record = record.model_copy(
        update={"tool_calls": calls, "conversation": log.model_copy(update={"turns": turns})}
    )
    text = transcript_text(record, max_chars=20_000)
    assert all(f"[tool call {i + 1}] tool_{i}" in text and f"OUT{i}-" in text for i in range(40))
    assert "(cut: 5005 characters in all)" in text
    assert len(text) < 20_000 + 40 * 200  # the outputs share the budget; headers come on top
    small = transcript_text(record, max_chars=1_000)  # 25 characters a call: the floor holds
    for i in range(40):
        kept = f"OUT{i}-" + "x" * (MIN_OUTPUT_CHARS - len(f"OUT{i}-"))
        assert f"output: {kept} ... (cut" in small


def test_a_program_tuned_before_conversations_were_judged_still_loads(tmp_path) -> None:
    import json

    from judge._dspy_judge import RubricJudgeProgram

    program = RubricJudgeProgram.build()
    program.judge_clarity.demos = [
        dspy.Example(question="DEMO-QUESTION", verdicts=[]).with_inputs("question")
    ]
    path = tmp_path / "tuned.json"
    program.save(str(path))
    state = json.loads(path.read_text())
    old = {key: value for key, value in state.items() if not key.startswith("conversation")}
    assert len(old) < len(state)
    path.write_text(json.dumps(old))

    item = _dispute()
    lm = DummyLM([_verdicts(item, d) for d in item.tags])
    judge = _judge(lm, program_path=str(path))
    assert judge._program.judge_clarity.demos  # the tuned predictor kept its demos
    record = score_trajectory(judge, item, _conversation_record(item))
    assert record.status is ScoreStatus.scored and record.overall == 1.0
