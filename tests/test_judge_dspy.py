"""The DSPy rubric judge with DummyLM: prompts, parsing, retries, judge_error, null vs 0,
caching."""

from __future__ import annotations

import copy
import json

import pytest

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
from judge._base import JudgeItem
from judge._dspy_judge import DspyJudge
from judge._evidence import build_evidence
from ledgerbench_core.dataset import Dimension, ExpectedFact, TaskType
from ledgerbench_core.trajectory import Source, Status, ToolCall
from tests.fakes.judge_data import question, trajectory, write_run

pytestmark = pytest.mark.timeout(60)

dspy = pytest.importorskip("dspy")
from dspy.utils import DummyLM  # noqa: E402


@pytest.fixture(autouse=True)
def clear_dspy_settings():
    """Leave DSPy's global and context settings as they were (tests never call dspy.configure)."""
    yield
    import importlib

    dspy_settings = importlib.import_module("dspy.dsp.utils.settings")
    dspy_settings.main_thread_config.clear()
    dspy_settings.main_thread_config.update(copy.deepcopy(dspy_settings.DEFAULT_CONFIG))
    dspy_settings.thread_local_overrides.set(type(dspy_settings.DEFAULT_CONFIG)())


def verdicts(*pairs: tuple[str, float | None]) -> dict:
    return {
        "verdicts": [{"assertion_id": i, "score": s, "reason": f"because {i}"} for i, s in pairs]
    }


def make_judge(lm, **kw) -> DspyJudge:
    judge = DspyJudge(lm=lm, **kw)
    judge.prepare()
    return judge


def system_and_user(messages: list[dict]) -> tuple[str, str]:
    return messages[0]["content"], messages[-1]["content"]


# -- prompts ------------------------------------------------------------------------------------


def test_prompts_carry_the_right_inputs() -> None:
    q = question(
        tags={
            Dimension.accuracy: ["accuracy.ground_truth"],
            Dimension.groundedness: ["groundedness.supported"],
            Dimension.clarity: ["clarity.acronyms"],
        },
        expected=[ExpectedFact(kind="amount", field="balance", value=1234.56, tolerance=0.01)],
    )
    calls = [
        ToolCall(
            name="get_customer", arguments={"account": "SYNCUS-0001"}, output="BALANCE-ROW-1234.56"
        ),
        ToolCall(
            name="get_customer", arguments={"account": "SYNCUS-0001"}, output="BALANCE-ROW-1234.56"
        ),
    ]
    t = trajectory(
        answer="SYNCUS-0001 owes USD 1,234.56.",
        tool_calls=calls,
        sources=[Source(url="https://example.com/filing", text="FILING-TEXT")],
    )
    lm = DummyLM(
        [
            verdicts(("accuracy.ground_truth", 1)),
            verdicts(("groundedness.supported", 1)),
            verdicts(("clarity.acronyms", 1)),
        ]
    )
    judge = make_judge(lm)
    item = JudgeItem(q, t)
    prompts = {}
    for dimension in q.tags:
        score, result = judge.judge_dimension(item, dimension)
        assert score.status is DimensionStatus.scored
        assert result.calls == 1
        prompts[dimension] = system_and_user(result.messages[0])

    for dimension, (system, user) in prompts.items():
        assert f"Rubric: {dimension.value.upper()}" in system
        assert q.query in user and t.answer in user
        assert q.tags[dimension][0].id in user and q.tags[dimension][0].text in user
        assert "obligations" in user
    accuracy_user = prompts[Dimension.accuracy][1]
    assert q.ground_truth in accuracy_user and "balance [amount]: 1234.56" in accuracy_user
    grounded_user = prompts[Dimension.groundedness][1]
    assert grounded_user.count("BALANCE-ROW-1234.56") == 1  # de-duplicated
    assert "same output as [tool call 1]" in grounded_user and "FILING-TEXT" in grounded_user
    clarity_user = prompts[Dimension.clarity][1]
    assert q.ground_truth not in clarity_user and "BALANCE-ROW" not in clarity_user


def test_evidence_is_cut_with_a_note() -> None:
    calls = [ToolCall(name=f"tool{i}", output=f"{i}" * 400) for i in range(10)]
    evidence = build_evidence(trajectory(tool_calls=calls), max_chars=1000)
    assert len(evidence.text) < 1200
    assert evidence.dropped > 0 and evidence.shortened == 1
    assert (
        "evidence cut to 1,000" in evidence.text
        and f"{evidence.dropped} item(s) dropped" in evidence.text
    )


# -- parsing, retries, judge_error --------------------------------------------------------------

CLARITY = {Dimension.clarity: ["clarity.acronyms", "clarity.consistent_terms"]}


def test_bad_reply_is_retried_then_scored() -> None:
    lm = DummyLM(
        [
            verdicts(("clarity.acronyms", 1)),  # wrong count
            verdicts(("clarity.acronyms", 0.6), ("clarity.consistent_terms", 1)),  # off the grid
            verdicts(("clarity.acronyms", 0.75), ("clarity.consistent_terms", 0.25)),
        ]
    )
    judge = make_judge(lm, retries=2)
    score, result = judge.judge_dimension(
        JudgeItem(question(tags=CLARITY), trajectory()), Dimension.clarity
    )
    assert result.calls == 3
    assert score.status is DimensionStatus.scored
    assert score.score == pytest.approx(0.5)
    assert [a.score for a in score.assertions] == [0.75, 0.25]


@pytest.mark.parametrize(
    ("bad_reply", "message"),
    [
        (verdicts(("clarity.acronyms", 1)), "expected 2 verdicts, got 1"),
        (
            verdicts(("clarity.acronyms", 1.5), ("clarity.consistent_terms", 1)),
            "not one of 0, 0.25",
        ),
        (verdicts(("clarity.acronyms", 1), ("clarity.other", 1)), "do not match assertion ids"),
        ({"verdicts": "I think it is fine"}, "AdapterParseError"),
    ],
)
def test_unusable_replies_become_judge_error_not_null_not_zero(
    bad_reply: dict, message: str
) -> None:
    q = question(tags={**CLARITY, Dimension.relevance: ["relevance.on_topic"]})
    lm_answers = [bad_reply, bad_reply, verdicts(("relevance.on_topic", 1))]
    judge = make_judge(DummyLM(lm_answers), retries=1)
    record = score_trajectory(judge, q, trajectory())
    clarity = record.dimensions[Dimension.clarity]
    assert clarity.status is DimensionStatus.judge_error
    assert clarity.score is None and clarity.assertions == []
    assert message in clarity.error and "after 2 attempts" in clarity.error
    assert record.dimensions[Dimension.relevance].score == 1.0
    assert record.overall == 1.0  # the failed dimension is left out, not counted as 0
    assert record.extra["judge_error_dimensions"] == ["clarity"]
    assert record.extra["calls"] == 3


def test_null_means_not_applicable_and_zero_means_failed() -> None:
    q = question(tags=CLARITY)
    all_null = make_judge(
        DummyLM([verdicts(("clarity.acronyms", None), ("clarity.consistent_terms", None))])
    )
    record = score_trajectory(all_null, q, trajectory())
    assert record.dimensions[Dimension.clarity].status is DimensionStatus.not_applicable
    assert record.dimensions[Dimension.clarity].score is None
    assert record.overall is None

    zero_and_null = make_judge(
        DummyLM([verdicts(("clarity.acronyms", 0), ("clarity.consistent_terms", None))])
    )
    record = score_trajectory(zero_and_null, q, trajectory())
    assert record.dimensions[Dimension.clarity].status is DimensionStatus.scored
    assert record.dimensions[Dimension.clarity].score == 0.0
    assert record.overall == 0.0


def test_single_call_mode_retries_missing_dimensions() -> None:
    q = question(
        tags={
            Dimension.clarity: ["clarity.acronyms"],
            Dimension.structure: ["structure.answer_first"],
        }
    )
    first = {
        "verdicts": {"clarity": [{"assertion_id": "clarity.acronyms", "score": 1, "reason": "ok"}]}
    }
    second = {
        "verdicts": {
            "clarity": [{"assertion_id": "clarity.acronyms", "score": 0, "reason": "changed mind"}],
            "structure": [{"assertion_id": "structure.answer_first", "score": 0.5, "reason": "ok"}],
        }
    }
    judge = make_judge(DummyLM([first, second]), mode="single-call")
    record = score_trajectory(judge, q, trajectory())
    assert record.extra["calls"] == 2
    assert record.dimensions[Dimension.clarity].score == 1.0  # kept from the first valid reply
    assert record.dimensions[Dimension.structure].score == 0.5
    assert judge.name.endswith("-single")

    never = make_judge(DummyLM([first, first, first]), mode="single-call", retries=2)
    record = score_trajectory(never, q, trajectory())
    assert record.dimensions[Dimension.structure].status is DimensionStatus.judge_error
    assert "no verdicts for dimension structure" in record.dimensions[Dimension.structure].error


# -- trajectory statuses ------------------------------------------------------------------------


def test_timeout_with_empty_answer_scores_zero_without_calls() -> None:
    judge = make_judge(DummyLM([]))  # any model call would fail: there are no answers
    q = question(tags=CLARITY)
    record = score_trajectory(judge, q, trajectory(answer="  ", status=Status.timeout))
    assert record.status is ScoreStatus.scored
    assert record.overall == 0.0
    assert all(a.score == 0.0 for a in record.dimensions[Dimension.clarity].assertions)
    assert record.extra["trajectory_status"] == "timeout"


def test_timeout_with_partial_answer_is_judged_on_it() -> None:
    lm = DummyLM([verdicts(("clarity.acronyms", 0.5), ("clarity.consistent_terms", 1))])
    judge = make_judge(lm)
    record = score_trajectory(
        judge, question(tags=CLARITY), trajectory(answer="Partial: USD 1,2", status=Status.timeout)
    )
    assert record.overall == 0.75 and record.extra["calls"] == 1


def test_error_trajectories_are_not_judged() -> None:
    judge = make_judge(DummyLM([]))
    record = score_trajectory(
        judge, question(tags=CLARITY), trajectory(status=Status.error, answer="")
    )
    assert record.status is ScoreStatus.infra_error
    assert record.dimensions == {} and record.overall is None
    assert "ERP down" in record.extra["infra_error"]


# -- rules next to the LLM ----------------------------------------------------------------------


def test_with_rules_overrides_decided_assertions_and_keeps_llm_view() -> None:
    q = question(
        tags={
            Dimension.accuracy: ["accuracy.ground_truth"],
            Dimension.clarity: ["clarity.acronyms"],
        },
        expected=[ExpectedFact(kind="amount", field="balance", value=1234.56, tolerance=0.01)],
    )
    lm = DummyLM([verdicts(("accuracy.ground_truth", 0.25)), verdicts(("clarity.acronyms", 0.5))])
    combined = CombinedJudge(make_judge(lm), RulesJudge())
    record = score_trajectory(combined, q, trajectory(answer="It is $1,234.56."))
    accuracy = record.dimensions[Dimension.accuracy].assertions[0]
    assert accuracy.score == 1.0 and accuracy.decided_by == "rule:expected_facts"
    assert record.dimensions[Dimension.clarity].score == 0.5
    assert record.extra["llm_overridden"] == {"accuracy": {"accuracy.ground_truth": 0.25}}
    assert combined.name.endswith("+rules")


# -- the run: resume, cache, manifest -----------------------------------------------------------


def _run_dir(tmp_path):
    questions = [question(f"q{i}", tags=CLARITY) for i in range(3)] + [
        question(
            "q-brief",
            task_type=TaskType.business_brief,
            tags={Dimension.clarity: ["clarity.acronyms"]},
        )
    ]
    trajectories = [trajectory(f"q{i}", answer=f"ANSWER-{i}") for i in range(3)]
    trajectories.append(
        trajectory("q-brief", answer="ANSWER-BRIEF", task_type=TaskType.business_brief)
    )
    trajectories.append(trajectory("q0", trial=1, status=Status.error, answer=""))
    return write_run(tmp_path / "run", questions, trajectories)


def _answers() -> dict[str, dict]:
    """Replies keyed by the answer text in the prompt (order-free, so concurrency cannot mix
    them)."""
    replies = {
        f"ANSWER-{i}": verdicts(("clarity.acronyms", 1), ("clarity.consistent_terms", i / 4))
        for i in range(3)
    }
    replies["ANSWER-BRIEF"] = verdicts(("clarity.acronyms", 0.25))
    return replies


def _untouched_lm() -> DummyLM:
    """A DummyLM with one sentinel reply: still there afterwards means no model call was made."""
    return DummyLM([{"verdicts": "SENTINEL"}])


def _was_called(lm: DummyLM) -> bool:
    return next(lm.answers, None) is None


def test_run_writes_scores_and_resume_and_cache_make_no_calls(tmp_path) -> None:
    run_dir = _run_dir(tmp_path)
    config = JudgeRunConfig(run_dir=run_dir, judge="dummy", concurrency=3, progress=False)
    cache_dir = str(run_dir / "scores" / ".cache" / "dummy")
    first = run_judge(
        config, judge=DspyJudge(lm=DummyLM(_answers()), name="dummy", cache_dir=cache_dir)
    )
    assert first.judged == 5 and first.calls == 4
    records, _ = read_scores(first.scores_path)
    by_key = {(r.question_id, r.trial): r for r in records}
    assert sorted(by_key) == [("q-brief", 0), ("q0", 0), ("q0", 1), ("q1", 0), ("q2", 0)]
    assert by_key[("q2", 0)].overall == pytest.approx((1 + 0.5) / 2)
    assert by_key[("q-brief", 0)].overall == 0.25
    assert by_key[("q0", 1)].status is ScoreStatus.infra_error
    manifest = json.loads(first.manifest_path.read_text())
    assert manifest["counts"]["infra_error"] == 1 and manifest["counts"]["scored"] == 4
    assert manifest["instructions_hash"] and manifest["settings"]["temperature"] == 0.0

    # Resume: everything is already scored, nothing is judged again.
    lm = _untouched_lm()
    again = run_judge(config, judge=DspyJudge(lm=lm, name="dummy", cache_dir=cache_dir))
    assert again.judged == 0 and again.resumed == 5 and not _was_called(lm)

    # Scores deleted (--overwrite): the cache answers every call.
    lm = _untouched_lm()
    overwrite = config.model_copy(update={"overwrite": True})
    cached = run_judge(overwrite, judge=DspyJudge(lm=lm, name="dummy", cache_dir=cache_dir))
    assert cached.judged == 5 and cached.calls == 0 and not _was_called(lm)
    records_again, _ = read_scores(cached.scores_path)
    assert all(r.cached for r in records_again if r.status is ScoreStatus.scored)
    assert {k: r.overall for k, r in by_key.items()} == {
        (r.question_id, r.trial): r.overall for r in records_again
    }

    # A changed assertion text is a different cache key: the model is asked again.
    lm = _untouched_lm()
    changed = DspyJudge(lm=lm, name="dummy", cache_dir=cache_dir, retries=0)
    q = question("q0", tags={Dimension.clarity: ["clarity.acronyms"]})
    q.tags[Dimension.clarity][0].text = "a reworded assertion"
    score_trajectory(changed, q, trajectory("q0", answer="ANSWER-0"))
    assert _was_called(lm)


def test_interrupted_scores_file_resumes_from_good_lines(tmp_path) -> None:
    run_dir = _run_dir(tmp_path)
    config = JudgeRunConfig(
        run_dir=run_dir, judge="dummy", concurrency=2, progress=False, cache=False
    )
    first = run_judge(config, judge=DspyJudge(lm=DummyLM(_answers()), name="dummy"))
    lines = first.scores_path.read_text().splitlines()
    # Simulate a kill: two records lost, the third cut in half.
    first.scores_path.write_text("\n".join(lines[:2]) + "\n" + lines[2][: len(lines[2]) // 2])
    resumed = run_judge(config, judge=DspyJudge(lm=DummyLM(_answers()), name="dummy"))
    assert resumed.resumed == 2 and resumed.judged == 3
    assert any("unreadable" in w for w in resumed.warnings)
    records, bad = read_scores(first.scores_path)
    assert bad == 0 and len(records) == 5
    assert len({(r.question_id, r.trial) for r in records}) == 5


def test_changed_settings_refuse_to_mix_into_old_scores(tmp_path) -> None:
    from judge import JudgeRunError

    run_dir = _run_dir(tmp_path)
    config = JudgeRunConfig(
        run_dir=run_dir, judge="dummy", concurrency=1, progress=False, cache=False
    )
    run_judge(config, judge=DspyJudge(lm=DummyLM(_answers()), name="dummy"))
    with pytest.raises(JudgeRunError, match="--overwrite"):
        run_judge(config, judge=DspyJudge(lm=_untouched_lm(), name="dummy", temperature=0.7))


def test_tuned_program_state_is_loaded_and_hashed(tmp_path) -> None:
    from judge._dspy_judge import RubricJudgeProgram
    from judge._signatures import AssertionToJudge

    program = RubricJudgeProgram.build()
    program.judge_clarity.demos = [
        dspy.Example(
            question="DEMO-QUESTION about acronyms",
            task_type="obligations",
            answer="DEMO-ANSWER uses DSO",
            assertions=[AssertionToJudge(id="clarity.acronyms", text="acronyms defined")],
            verdicts=[{"assertion_id": "clarity.acronyms", "score": 1.0, "reason": "DSO is std"}],
        ).with_inputs("question", "task_type", "answer", "assertions")
    ]
    path = tmp_path / "tuned.json"
    program.save(str(path))

    lm = DummyLM([verdicts(("clarity.acronyms", 1), ("clarity.consistent_terms", 1))])
    tuned = make_judge(lm, program_path=str(path))
    _, result = tuned.judge_dimension(
        JudgeItem(question(tags=CLARITY), trajectory()), Dimension.clarity
    )
    prompt = "\n".join(m["content"] for m in result.messages[0])
    assert "DEMO-QUESTION about acronyms" in prompt
    plain = make_judge(DummyLM([]))
    assert tuned.settings()["program_sha256"] and plain.settings()["program_sha256"] is None
    assert tuned.instructions_hash() != plain.instructions_hash()


# -- issue 15: always-applicable assertions, levels, certain rules, resume of judge errors ------


def test_null_for_an_always_applicable_assertion_is_a_judge_error() -> None:
    q = question(tags={Dimension.accuracy: ["accuracy.ground_truth"]})
    lm = DummyLM([verdicts(("accuracy.ground_truth", None))] * 3)
    record = score_trajectory(make_judge(lm, retries=2), q, trajectory())
    accuracy = record.dimensions[Dimension.accuracy]
    assert accuracy.status is DimensionStatus.judge_error
    assert "always applies" in accuracy.error and "after 3 attempts" in accuracy.error
    assert record.extra["judge_error_dimensions"] == ["accuracy"]
    # a retry that gives a score recovers
    lm = DummyLM(
        [verdicts(("accuracy.ground_truth", None)), verdicts(("accuracy.ground_truth", 1))]
    )
    record = score_trajectory(make_judge(lm), q, trajectory())
    assert record.dimensions[Dimension.accuracy].score == 1.0


def test_assertion_level_and_always_applies_reach_the_prompt() -> None:
    q = question(
        tags={
            Dimension.accuracy: ["accuracy.ground_truth"],
            Dimension.clarity: ["clarity.acronyms"],
        }
    )
    q.tags[Dimension.clarity][0].level = "minor"
    judge = make_judge(
        DummyLM([verdicts(("accuracy.ground_truth", 1)), verdicts(("clarity.acronyms", 1))])
    )
    _, result = judge.judge_dimension(JudgeItem(q, trajectory()), Dimension.accuracy)
    _, user = system_and_user(result.messages[0])
    assert '"level": "critical"' in user and '"always_applies": true' in user
    _, result = judge.judge_dimension(JudgeItem(q, trajectory()), Dimension.clarity)
    _, user = system_and_user(result.messages[0])
    assert '"level": "minor"' in user and '"always_applies": false' in user


def test_with_rules_overrides_only_certain_verdicts_and_keeps_both() -> None:
    q = question(
        tags={Dimension.accuracy: ["accuracy.ground_truth"]},
        expected=[ExpectedFact(kind="amount", field="balance", value=1234.56, tolerance=0.01)],
    )
    # the figure written in words: the rule cannot find it (uncertain 0), the LLM keeps its 1
    lm = DummyLM([verdicts(("accuracy.ground_truth", 1))])
    combined = CombinedJudge(make_judge(lm), RulesJudge())
    record = score_trajectory(
        combined, q, trajectory(answer="twelve hundred thirty-four dollars and 56 cents")
    )
    kept = record.dimensions[Dimension.accuracy].assertions[0]
    assert kept.score == 1.0 and kept.decided_by == "llm"
    rule = record.extra["rules"]["accuracy"]["accuracy.ground_truth"]
    assert rule["score"] == 0.0 and rule["certain"] is False
    assert "llm_overridden" not in record.extra
    # a wrong figure stated is certain: the rule replaces the LLM's verdict
    lm = DummyLM([verdicts(("accuracy.ground_truth", 1))])
    combined = CombinedJudge(make_judge(lm), RulesJudge())
    record = score_trajectory(combined, q, trajectory(answer="The balance is $1,246.90."))
    kept = record.dimensions[Dimension.accuracy].assertions[0]
    assert kept.score == 0.0 and kept.decided_by == "rule:expected_facts" and kept.certain
    assert record.extra["llm_overridden"] == {"accuracy": {"accuracy.ground_truth": 1.0}}
    from judge._summary import rule_disagreements

    (row,) = rule_disagreements([record])
    assert (row["rule"], row["llm"], row["kept"]) == (0.0, 1.0, "rule")


def test_a_plain_resume_judges_judge_errors_again(tmp_path) -> None:
    run_dir = _run_dir(tmp_path)
    config = JudgeRunConfig(run_dir=run_dir, judge="dummy", concurrency=1, progress=False)
    cache_dir = str(run_dir / "scores" / ".cache" / "dummy")
    replies = _answers()
    replies["ANSWER-1"] = {"verdicts": "not a list"}  # q1 fails every attempt
    first = run_judge(
        config, judge=DspyJudge(lm=DummyLM(replies), name="dummy", cache_dir=cache_dir)
    )
    records, _ = read_scores(first.scores_path)
    assert [r.question_id for r in records if r.extra.get("judge_error_dimensions")] == ["q1"]
    second = run_judge(
        config, judge=DspyJudge(lm=DummyLM(_answers()), name="dummy", cache_dir=cache_dir)
    )
    assert second.judged == 1 and second.calls == 1  # only q1, once
    assert any("judged again" in w for w in second.warnings)
    records, _ = read_scores(second.scores_path)
    assert len(records) == 5 and not any(r.extra.get("judge_error_dimensions") for r in records)


def _world_item(path: str, index: int = 0):
    """A shipped research item keyed on the research world (its key is ground truth + facts)."""
    from pathlib import Path

    from ledgerbench_core.dataset import load_dataset

    root = Path(__file__).resolve().parents[1]
    items = [i for i in load_dataset(root / path).items if i.expected and i.gold_documents]
    return items[index]


@pytest.mark.parametrize(
    "path", ["datasets/entity_performance.yaml", "datasets/business_briefs.yaml"]
)
def test_research_item_keyed_on_a_world_sends_its_key_as_the_accuracy_input(path: str) -> None:
    q = _world_item(path)
    assert q.task_type is not TaskType.obligations and q.ground_truth
    (accuracy,) = q.tags[Dimension.accuracy]
    lm = DummyLM([verdicts((accuracy.id, 1))])
    judge = make_judge(lm)
    answer = "Here is what the filings say."
    score, result = judge.judge_dimension(
        JudgeItem(q, trajectory(q.id, answer, task_type=q.task_type)), Dimension.accuracy
    )
    assert score.status is DimensionStatus.scored and score.score == 1.0
    _system, user = system_and_user(result.messages[0])
    assert q.ground_truth in user and "Expected facts:" in user
    lines = [x for x in user.splitlines() if x.startswith("- ") and " [" in x]
    for fact in q.expected:
        # The figure's period, scale, unit and basis: without them "129.2" is no key at all. An
        # analyst item or a brief keys one measure several times (periods, companies): one line
        # of this field carries every qualifier of this fact, its subject and its value.
        wanted = [fact.kind, fact.currency, fact.unit, fact.scale, fact.period, fact.basis]
        qualifiers = [str(w) for w in wanted if w is not None]

        def states_the_fact(line: str, fact=fact, qualifiers=qualifiers) -> bool:
            head = line.split("[", 1)[1].split("]", 1)[0]
            value = fact.value
            return (
                all(w in head for w in qualifiers)
                and (fact.subject is None or fact.subject in line)
                and (value is None or isinstance(value, list | dict) or str(value) in line)
            )

        mine = [x for x in lines if x.startswith(f"- {fact.field} [")]
        assert any(states_the_fact(x) for x in mine), (fact, mine)
    # the key reaches the accuracy judge only
    clarity_lm = DummyLM([verdicts(*[(a.id, 1) for a in q.tags[Dimension.clarity]])])
    _, clarity = make_judge(clarity_lm).judge_dimension(
        JudgeItem(q, trajectory(q.id, answer, task_type=q.task_type)), Dimension.clarity
    )
    assert q.ground_truth not in system_and_user(clarity.messages[0])[1]
