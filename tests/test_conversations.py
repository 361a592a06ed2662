"""Conversations (operations items): scenarios keyed by the oracle, the scripted user and its
reviewer, the runner's conversation loop, the baselines and the rules judge's scoring."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from harnesses._conversation import (
    CORRUPTIONS,
    ScriptedUser,
    review_user,
)
from harnesses._protocol import AgentOutcome, HarnessOptions
from harnesses._runner import TRAJECTORIES_FILE, RunConfig, RunConfigError, run
from judge import RulesJudge
from judge._base import JudgeItem
from judge._conversation import conversation_metrics, pass_hat_k
from ledgerbench_core.dataset import Dataset, load_dataset, write_dataset
from ledgerbench_core.trajectory import ConversationTurn, TerminationReason, TrajectoryRecord
from synthetic_erp._operations import KINDS, generate_operations

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def operations(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, Path]:
    dataset = generate_operations(erp_db_url, n=12, seed=5)
    path = write_dataset(dataset, tmp_path_factory.mktemp("ops") / "operations.yaml")
    return dataset, path


def _run(path: Path, erp_db_url: str, out: Path, harness: str, **extra) -> list[TrajectoryRecord]:
    config = RunConfig(
        dataset=path, harness=harness, erp_db=erp_db_url, out=out, progress=False, **extra
    )
    run(config)
    lines = (out / TRAJECTORIES_FILE).read_text().splitlines()
    return [TrajectoryRecord.model_validate_json(line) for line in lines]


def _accuracy_by_kind(dataset: Dataset, records: list[TrajectoryRecord]) -> dict[str, float]:
    judge = RulesJudge()
    questions = {item.id: item for item in dataset.items}
    scores: dict[str, list[float]] = defaultdict(list)
    for record in records:
        question = questions[record.question_id]
        metrics = conversation_metrics(question, record)
        outcome = judge.score(JudgeItem(question=question, trajectory=record))
        dimension = outcome.dimensions[next(iter(outcome.dimensions))]
        assert dimension.score == metrics.accuracy
        scores[question.conversation.kind].append(metrics.accuracy)
    return {kind: sum(values) / len(values) for kind, values in scores.items()}


def test_generation_is_keyed_deterministic_and_every_kind_asks(operations, erp_db_url) -> None:
    dataset, path = operations
    assert [item.conversation.kind for item in dataset.items] == list(KINDS) * 3
    again = generate_operations(erp_db_url, n=12, seed=5)
    assert again.model_dump() == dataset.model_dump()
    assert load_dataset(path).items == dataset.items
    for item in dataset.items:
        scenario = item.conversation
        assert item.query == scenario.opening_message
        assert item.expected and scenario.required_clarifications
        known = {slot.name: slot for slot in scenario.known_info}
        for name in scenario.required_clarifications:
            # What the user must be asked for is not in the opening message.
            assert known[name].value not in scenario.opening_message
            assert known[name].value in known[name].answer


def test_scripted_agent_with_scripted_user_scores_one_on_every_kind(
    operations, erp_db_url, tmp_path
) -> None:
    dataset, path = operations
    records = _run(path, erp_db_url, tmp_path / "scripted", "scripted")
    assert {r.termination.reason for r in records} == {TerminationReason.user_done}
    for record in records:
        log = record.conversation
        assert log is not None and log.review == []
        assert log.turns[0].role == "user" and log.turns[0].content == record.input
        assert [t.role for t in log.turns[:3]] == ["user", "agent", "user"]
        assert log.turns[-1].signal == "done"
        assert sum(t.tool_calls for t in log.turns) == len(record.tool_calls)
        assert log.agent_time_s <= record.latency_s
        assert record.working_time_s <= record.latency_s - log.user_time_s + 1e-3
    by_kind = _accuracy_by_kind(dataset, records)
    assert set(by_kind) == set(KINDS)
    assert all(value >= 0.99 for value in by_kind.values()), by_kind


@pytest.mark.parametrize("harness", ["guess", "nothing"])
def test_baselines_score_near_zero(operations, erp_db_url, tmp_path, harness: str) -> None:
    dataset, path = operations
    records = _run(path, erp_db_url, tmp_path / harness, harness)
    assert all(not r.termination.infrastructure for r in records)
    by_kind = _accuracy_by_kind(dataset, records)
    assert all(value < 0.05 for value in by_kind.values()), by_kind


def test_guess_is_wrong_by_construction_even_without_the_dealbreaker(
    operations, erp_db_url, tmp_path
) -> None:
    dataset, path = operations
    records = _run(path, erp_db_url, tmp_path / "guess", "guess")
    questions = {item.id: item for item in dataset.items}
    for record in records:
        metrics = conversation_metrics(questions[record.question_id], record)
        assert metrics.clarified is False
        assert metrics.facts_found < metrics.facts_total, record.question_id


def test_honest_user_is_never_tagged_and_corrupted_users_are_caught(operations) -> None:
    dataset, _ = operations
    agent_asks = {
        "underspecified": "For which period (which month), and which legal entity?",
        "dispute": "Which invoice is it (the invoice number)?",
        "collections": "Which customer is it (customer name)?",
        "vendor_payment": "Which invoice is it (your invoice number)?",
    }
    caught: dict[str, int] = defaultdict(int)
    for item in dataset.items:
        scenario = item.conversation
        for corruption in (None, *CORRUPTIONS):
            user = ScriptedUser(scenario, corruption=corruption)
            turns = [
                ConversationTurn(role="user", content=user.opening(), started_s=0, duration_s=0)
            ]
            # Revealing is only wrong when nothing was asked.
            ask = "Hello, how can I help?" if corruption == "reveal" else agent_asks[scenario.kind]
            reply = user.reply(ask)
            turns += [
                ConversationTurn(role="agent", content=ask, started_s=0, duration_s=0),
                ConversationTurn(
                    role="user", content=reply.text, started_s=0, duration_s=0, signal=reply.signal
                ),
            ]
            tags = review_user(scenario, turns)
            if corruption is None:
                assert tags == [], (item.id, tags)
            else:
                caught[corruption] += any(t.severity != "minor" for t in tags)
    assert all(count == len(dataset.items) for count in caught.values()), dict(caught)


def test_user_reveals_only_what_is_asked_and_never_the_unknown(operations) -> None:
    dataset, _ = operations
    for item in dataset.items:
        scenario = item.conversation
        user = ScriptedUser(scenario)
        vague = user.reply("How can I help you today?")
        assert vague.signal is None
        for slot in scenario.known_info:
            assert slot.value not in vague.text
        for unknown in scenario.unknown_info:
            asked = user.reply(f"Could you tell me {unknown.vocabulary[0]}?")
            assert unknown.value not in asked.text
        assert user.reply("Could you tell me your favourite colour?").signal == "out_of_scope"


class AlwaysAsks:
    """A conversational plug-in that never answers: it asks for the legal entity every turn."""

    name = "always-asks"
    model = None
    conversational = True

    def __init__(self, options: HarnessOptions) -> None:
        self.options = options

    async def run(self, task, env, draft) -> AgentOutcome:
        draft.set_answer("Which legal entity is this about?")
        return AgentOutcome(answer="Which legal entity is this about?")


class OneShotOnly:
    """A plug-in that does not say it can hold a conversation."""

    name = "one-shot-only"
    model = None

    def __init__(self, options: HarnessOptions) -> None:
        self.options = options

    async def run(self, task, env, draft) -> AgentOutcome:
        return AgentOutcome(answer="42")


def test_a_conversation_that_never_ends_stops_at_its_turn_budget(
    operations, erp_db_url, tmp_path
) -> None:
    dataset, path = operations
    harness = "tests.test_conversations:AlwaysAsks"
    records = _run(path, erp_db_url, tmp_path / "asks", harness, limit=2)
    for record in records:
        assert record.termination.reason is TerminationReason.max_turns
        agent_turns = [t for t in record.conversation.turns if t.role == "agent"]
        assert len(agent_turns) == dataset.items[0].conversation.max_turns


def test_empty_user_message_is_a_user_error_never_scored(operations, erp_db_url, tmp_path) -> None:
    _, path = operations
    records = _run(path, erp_db_url, tmp_path / "empty", "scripted", user="scripted:empty", limit=1)
    (record,) = records
    assert record.termination.reason is TerminationReason.user_error
    assert record.termination.infrastructure
    assert record.conversation.critical_simulator_error


def test_a_harness_without_conversations_is_refused_in_one_line(
    operations, erp_db_url, tmp_path
) -> None:
    _, path = operations
    out = tmp_path / "refused"
    with pytest.raises(RunConfigError, match="one-shot-only harness does not hold conversations"):
        _run(path, erp_db_url, out, "tests.test_conversations:OneShotOnly")
    assert not out.exists()
    command = [
        sys.executable,
        "-m",
        "harnesses.run",
        "--dataset",
        str(path),
        "--erp-db",
        erp_db_url,
        "--harness",
        "tests.test_conversations:OneShotOnly",
        "--out",
        str(out),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "OneShotOnly" in result.stderr or "one-shot-only" in result.stderr


def test_pass_hat_k() -> None:
    trials = [("a", True), ("a", True), ("a", False), ("b", True), ("b", True), ("b", True)]
    assert pass_hat_k(trials, 1) == pytest.approx((2 / 3 + 1) / 2)
    assert pass_hat_k(trials, 2) == pytest.approx((1 / 3 + 1) / 2)
    assert pass_hat_k(trials, 4) is None


def test_questions_cli_refuses_bad_input_in_one_line(tmp_path) -> None:
    out = tmp_path / "ops.yaml"
    command = [sys.executable, "-m", "synthetic_erp", "questions", "--task-type", "operations"]
    missing = subprocess.run(
        [*command, "--db", f"sqlite:///{tmp_path / 'none.db'}", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert not out.exists()
    from synthetic_erp import generate_erp

    tiny = f"sqlite:///{tmp_path / 'tiny.db'}"
    generate_erp(tiny, customers=3, vendors=3, seed=1)
    unsupported = subprocess.run(
        [*command, "--db", tiny, "--n", "8", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unsupported.returncode == 2, unsupported.stderr
    (line,) = unsupported.stderr.strip().splitlines()
    assert "the ERP has no" in line or "supports no" in line
    assert not out.exists()


def _vendor_item(dataset: Dataset):
    return next(item for item in dataset.items if item.conversation.kind == "vendor_payment")


def _chat_text(content) -> str:
    if isinstance(content, str):
        return content
    return " ".join(block.get("text", "") for block in content if isinstance(block, dict))


@pytest.mark.parametrize(
    ("harness", "api"),
    [("custom", "chat"), ("custom", "anthropic"), ("openai", "responses")],
)
def test_model_harnesses_converse_against_the_fake_servers(
    operations, erp_db_url, tmp_path, monkeypatch, harness: str, api: str
) -> None:
    """The model asks for the invoice, the scripted user answers, the model then answers from
    the invoice it was told: every agent turn replays the conversation so far on the wire."""
    from tests.fakes.anthropic_server import AnthropicFakeServer, Reply, ScriptedModel
    from tests.fakes.openai_server import ModelRequest, Turn, serve_openai

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    dataset, path = operations
    item = _vendor_item(dataset)
    invoice = next(s.value for s in item.conversation.known_info if s.name == "invoice_number")
    seen: list[list[str]] = []

    def reply_to(texts: list[str]) -> str:
        seen.append(texts)
        if not any(invoice in text for text in texts):
            return "Which invoice is it? Please give me your invoice number."
        return f"Invoice {invoice}: the figure is 42."

    def openai_model(request: ModelRequest) -> Turn:
        body = request.body
        messages = body.get("messages") or body.get("input") or []
        chat = [m for m in messages if m.get("role") in ("user", "assistant")]
        return Turn(text=reply_to([_chat_text(m.get("content", "")) for m in chat]))

    def anthropic_model(body: dict, turn: int) -> Reply:
        return Reply(text=reply_to([_chat_text(m["content"]) for m in body["messages"]]))

    out = tmp_path / "run"
    config = dict(dataset=path, harness=harness, erp_db=erp_db_url, out=out, progress=False)
    if api == "anthropic":
        with AnthropicFakeServer(ScriptedModel(anthropic_model, all_requests_main=True)) as fake:
            opts = {"api": "anthropic"}
            run(RunConfig(**config, ids=[item.id], base_url=fake.base_url, harness_opts=opts))
    else:
        with serve_openai(openai_model) as fake:
            run(RunConfig(**config, ids=[item.id], base_url=fake.base_url))
    (line,) = (out / TRAJECTORIES_FILE).read_text().splitlines()
    record = TrajectoryRecord.model_validate_json(line)
    assert record.termination.reason is TerminationReason.user_done, record.termination
    roles = [(t.role, t.content[:40]) for t in record.conversation.turns]
    assert [role for role, _ in roles] == ["user", "agent", "user", "agent", "user"], roles
    # The second agent turn's request carried the whole conversation so far.
    last = seen[-1]
    assert item.query in last[0] and "Which invoice is it?" in last[1] and invoice in last[2]
    assert [m.role for m in record.messages if m.role != "tool"][:4] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_claude_cli_resumes_its_session_each_turn(
    operations, erp_db_url, tmp_path, monkeypatch
) -> None:
    """The real ``claude`` binary against the fake Messages server: the second agent turn
    resumes the first turn's session, so the model sees the whole conversation."""
    from tests.fakes.anthropic_server import AnthropicFakeServer, Reply, ScriptedModel

    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-conversation")
    dataset, path = operations
    item = _vendor_item(dataset)
    invoice = next(s.value for s in item.conversation.known_info if s.name == "invoice_number")
    seen: list[list[str]] = []

    def model(body: dict, turn: int) -> Reply:
        texts = [_chat_text(m["content"]) for m in body["messages"]]
        seen.append(texts)
        if not any(invoice in text for text in texts):
            return Reply(text="Which invoice is it? Please give me your invoice number.")
        return Reply(text=f"Invoice {invoice}: the figure is 42.")

    out = tmp_path / "run"
    with AnthropicFakeServer(ScriptedModel(model), api_key="sk-ant-test-conversation") as fake:
        run(
            RunConfig(
                dataset=path,
                ids=[item.id],
                harness="claude",
                model="claude-sonnet-4-6",
                base_url=fake.base_url,
                erp_db=erp_db_url,
                out=out,
                timeout=60,
                progress=False,
            )
        )
    (line,) = (out / TRAJECTORIES_FILE).read_text().splitlines()
    record = TrajectoryRecord.model_validate_json(line)
    assert record.termination.reason is TerminationReason.user_done, record.termination
    assert [t.role for t in record.conversation.turns] == ["user", "agent", "user", "agent", "user"]
    assert record.extra["claude_conversation"]["resumed"] is True
    last = "\n".join(seen[-1])
    assert item.query in last and "Which invoice is it?" in last and invoice in last
    assert not list((out / "work").glob("claude-*"))  # the conversation's HOME is gone


def test_the_shipped_conversation_set_matches_a_fresh_generation(erp_db_url) -> None:
    from harnesses._erp_process import project_root

    shipped = load_dataset(project_root() / "datasets" / "operations" / "operations.yaml")
    fresh = generate_operations(erp_db_url, n=len(shipped.items), seed=42)
    assert shipped.header.erp_snapshot_hash == fresh.header.erp_snapshot_hash
    assert shipped.items == fresh.items


def test_an_llm_user_plays_the_scenario_on_the_chat_wire(
    operations, erp_db_url, tmp_path, monkeypatch
) -> None:
    """A user model behind Chat Completions (the fake server): it gets tau2's rules and the
    scenario, answers what the scripted agent asks, and stops; the model and prompt are pinned."""
    from harnesses._llm_user import USER_RULES, prompt_hash
    from tests.fakes.openai_server import ModelRequest, Turn, serve_openai

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    dataset, path = operations
    item = _vendor_item(dataset)
    slot = next(s for s in item.conversation.known_info if s.name == "invoice_number")
    entity = next(s for s in item.conversation.known_info if s.name == "legal_entity")
    systems: list[str] = []

    def user_model(request: ModelRequest) -> Turn:
        messages = request.body["messages"]
        systems.append(messages[0]["content"])
        last = messages[-1]["content"]
        if last == "Hi":  # the pre-flight
            return Turn(text="OK")
        if "invoice number" in last:
            return Turn(text=f"{slot.answer} {entity.answer}")
        return Turn(text=f"Thanks, that answers it. {'###STOP###'}")

    out = tmp_path / "llm-user"
    with serve_openai(user_model) as fake:
        records = _run(
            path,
            erp_db_url,
            out,
            "scripted",
            ids=[item.id],
            user="chat:gpt-5.2",
            user_base_url=fake.base_url,
        )
    (record,) = records
    assert record.termination.reason is TerminationReason.user_done, record.termination
    assert record.conversation.user == "chat:gpt-5.2"
    assert record.conversation.user_version == f"chat:gpt-5.2@prompt-{prompt_hash()}"
    assert record.conversation.review == []
    assert any(USER_RULES in s and item.conversation.persona in s for s in systems)
    metrics = conversation_metrics(item, record)
    assert metrics.accuracy == 1.0, metrics.reasons


def test_an_unreachable_user_model_is_refused_before_anything_is_written(
    operations, erp_db_url, tmp_path, monkeypatch
) -> None:
    import socket

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    _, path = operations
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / "refused"
    with pytest.raises(RunConfigError, match=r"the user model at .* cannot be used"):
        _run(
            path,
            erp_db_url,
            out,
            "scripted",
            user="chat:gpt-5.2",
            user_base_url=f"http://127.0.0.1:{port}/v1",
        )
    assert not out.exists()


class SaysNothing:
    """A conversational plug-in that ends its turn without a message."""

    name = "says-nothing"
    model = None
    conversational = True

    def __init__(self, options: HarnessOptions) -> None:
        self.options = options

    async def run(self, task, env, draft) -> AgentOutcome:
        return AgentOutcome(answer="")


def test_transfer_and_giving_up_end_the_conversation(operations, erp_db_url, tmp_path) -> None:
    dataset, path = operations
    user = ScriptedUser(dataset.items[0].conversation)
    assert user.reply("I am transferring you to a colleague in accounts.").signal == "transfer"
    harness = "tests.test_conversations:SaysNothing"
    (record,) = _run(path, erp_db_url, tmp_path / "silent", harness, limit=1)
    assert record.termination.reason is TerminationReason.agent_gave_up
    assert not record.termination.infrastructure
    assert [t.role for t in record.conversation.turns] == ["user", "agent"]


# -- the model reviewer of the user, and re-running what it excluded ---------------------------


def _review_reply(text: str) -> str:
    """A reviewer model in the fake server: it tags every user turn that states a value the
    scenario lists under "What the user does not know" (read from the prompt it was sent)."""
    import json
    import re

    unknown = text.split("What the user does not know (never to be stated):\n", 1)[1]
    values = re.findall(r"^- [^:]+: (.+)$", unknown.split("\nWhat the agent must ask", 1)[0], re.M)
    conversation = text.split("\nConversation\n", 1)[1]
    tags = [
        {"turn": int(turn), "severity": "critical_helped", "rule": "leaked_answer", "detail": said}
        for turn, said in re.findall(r"^\[turn (\d+), user\][^\n]*? (.*)$", conversation, re.M)
        if int(turn) > 0 and any(value in said for value in values)
    ]
    return json.dumps({"tags": tags})


def test_the_model_reviewer_reads_the_scenario_and_catches_a_leaking_user(
    operations, monkeypatch
) -> None:
    import asyncio

    from harnesses._user_review import ModelReviewer, ReviewError
    from tests.fakes.openai_server import ModelRequest, Turn, serve_openai

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    dataset, _ = operations
    replies: list[str] = []

    def reviewer_model(request: ModelRequest) -> Turn:
        text = request.body["messages"][-1]["content"]
        replies.append(text)
        return Turn(text=_review_reply(text))

    caught, honest_tags = 0, 0
    with serve_openai(reviewer_model) as fake:
        reviewer = ModelReviewer("chat:reviewer-1", fake.base_url)
        for item in dataset.items:
            scenario = item.conversation
            if not scenario.unknown_info:
                continue
            for corruption in (None, "volunteer"):
                user = ScriptedUser(scenario, corruption=corruption)
                ask = "Which invoice, customer or period is it, and which legal entity?"
                reply = user.reply(ask)
                turns = [
                    ConversationTurn(
                        role="user", content=user.opening(), started_s=0, duration_s=0
                    ),
                    ConversationTurn(role="agent", content=ask, started_s=0, duration_s=0),
                    ConversationTurn(role="user", content=reply.text, started_s=0, duration_s=0),
                ]
                tags = asyncio.run(reviewer.review(scenario, turns))
                if corruption is None:
                    honest_tags += len(tags)
                else:
                    caught += any(t.turn == 2 and t.severity == "critical_helped" for t in tags)
                    assert all(t.by == "chat:reviewer-1" for t in tags)
    with_unknown = sum(bool(item.conversation.unknown_info) for item in dataset.items)
    assert with_unknown and caught == with_unknown and honest_tags == 0
    assert "###STOP###" in fake.requests[0].body["messages"][0]["content"]  # the rules
    assert reviewer.version.startswith("chat:reviewer-1@prompt-")

    # A reply that is not the asked JSON, or tags the agent's turn, is asked again; a reviewer that
    # never gives a usable reply is a ReviewError, never an empty review.
    scenario = dataset.items[0].conversation
    turns = [
        ConversationTurn(role="user", content=scenario.opening_message, started_s=0, duration_s=0),
        ConversationTurn(role="agent", content="Which period?", started_s=0, duration_s=0),
        ConversationTurn(role="user", content="I mean May.", started_s=0, duration_s=0),
    ]
    agent_turn = '{"tags": [{"turn": 1, "severity": "minor", "rule": "other", "detail": "x"}]}'
    script = [Turn(text="Looks fine to me."), Turn(text=agent_turn), Turn(text='{"tags": []}')]
    with serve_openai(script) as fake:
        assert asyncio.run(ModelReviewer("chat:r", fake.base_url).review(scenario, turns)) == []
        assert len(fake.requests) == 3
        assert "cannot be used" in fake.requests[1].body["messages"][-1]["content"]
    with serve_openai([Turn(text="no")] * 3) as fake, pytest.raises(ReviewError, match="after 3"):
        asyncio.run(ModelReviewer("chat:r", fake.base_url).review(scenario, turns))


def test_conversations_the_reviewer_excludes_are_rerun_and_recorded(
    operations, erp_db_url, tmp_path, monkeypatch
) -> None:
    """A reviewer model flags the first conversation it reviews; the judge leaves it out; a
    resume with --retry-simulator-errors runs it again (the earlier attempt kept, the re-run in
    the manifest) and the judge scores it."""
    import json

    from harnesses._run_store import MANIFEST_FILE
    from judge import JudgeRunConfig, read_scores, run_judge
    from tests.fakes.openai_server import ModelRequest, Turn, serve_openai

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    dataset, path = operations
    ids = [dataset.items[0].id, dataset.items[1].id]
    reviews: list[str] = []

    def reviewer_model(request: ModelRequest) -> Turn:
        text = request.body["messages"][-1]["content"]
        if text == "Hi":  # the pre-flight
            return Turn(text="OK")
        reviews.append(text)
        if len(reviews) == 1:  # the first conversation: its user "contradicted" the scenario
            tag = {"turn": 2, "severity": "critical_hindered", "rule": "contradicted_facts"}
            return Turn(text=json.dumps({"tags": [{**tag, "detail": "said another entity"}]}))
        return Turn(text='{"tags": []}')

    out = tmp_path / "reviewed"
    options = {"ids": ids, "reviewer": "chat:reviewer-1", "concurrency": 1}
    with serve_openai(reviewer_model) as fake:
        first = _run(path, erp_db_url, out, "scripted", reviewer_base_url=fake.base_url, **options)
        flagged = [r for r in first if r.conversation.excluded_by_review]
        assert len(flagged) == 1 and len(reviews) == 2
        (tag,) = flagged[0].conversation.review
        assert (tag.rule, tag.by) == ("contradicted_facts", "chat:reviewer-1")
        assert flagged[0].conversation.reviewer.startswith("rules-1+chat:reviewer-1@prompt-")

        config = JudgeRunConfig(run_dir=out, judge="rules", progress=False)
        scores, _ = read_scores(run_judge(config).scores_path)
        excluded = {s.question_id: s for s in scores if s.extra.get("simulator_error")}
        assert set(excluded) == {flagged[0].question_id}
        assert "contradicted_facts" in excluded[flagged[0].question_id].extra["infra_error"]

        again = _run(
            path,
            erp_db_url,
            out,
            "scripted",
            reviewer_base_url=fake.base_url,
            retry_simulator_errors=True,
            **options,
        )
    assert len(reviews) == 3  # only the excluded conversation ran again
    # The file holds the excluded attempt and, after it, the re-run that replaces it.
    *_, rerun = [r for r in again if r.question_id == flagged[0].question_id]
    assert not rerun.conversation.excluded_by_review
    (attempt,) = rerun.previous_attempts
    assert "contradicted_facts (turn 2, chat:reviewer-1)" in attempt.simulator_error
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["simulator_reruns"] == [f"{flagged[0].question_id}#0"]
    assert manifest["config"]["reviewer"] == "chat:reviewer-1"
    assert manifest["fingerprint_parts"]["reviewer"]["spec"] == "chat:reviewer-1"
    scores, _ = read_scores(run_judge(config).scores_path)
    assert not any(s.extra.get("simulator_error") for s in scores)

    # The report counts the re-run: no conversation left out, one run again, rate 1 of 3 played.
    from analysis._conversations import ALL_KINDS, conversation_cells, conversation_section

    cells = conversation_cells([("reviewed", out)], "reviewed", "rules")
    (whole,) = [c for c in cells if c.kind == ALL_KINDS]
    assert (whole.conversations, whole.simulator_errors, whole.simulator_reruns) == (2, 0, 1)
    assert whole.simulator_error_rate == pytest.approx(1 / 3)
    table = conversation_section(cells, "reviewed")[-1]
    assert any("0 (33.3%), 1 re-run" in cell for row in table.rows for cell in row)


def test_a_failing_reviewer_leaves_it_unscored_and_an_unreachable_one_is_refused(
    operations, erp_db_url, tmp_path, monkeypatch
) -> None:
    import socket

    from judge import JudgeRunConfig, read_scores, run_judge
    from tests.fakes.openai_server import ModelRequest, Turn, serve_openai

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    dataset, path = operations

    def garbled(request: ModelRequest) -> Turn:
        return Turn(text="OK" if request.body["messages"][-1]["content"] == "Hi" else "fine")

    out = tmp_path / "garbled"
    with serve_openai(garbled) as fake:
        (record,) = _run(
            path,
            erp_db_url,
            out,
            "scripted",
            ids=[dataset.items[0].id],
            reviewer="chat:reviewer-1",
            reviewer_base_url=fake.base_url,
        )
    assert "no usable review after 3 requests" in record.conversation.review_error
    (score,), _ = read_scores(run_judge(JudgeRunConfig(run_dir=out, judge="rules")).scores_path)
    assert score.extra["simulator_error"] and "not reviewed" in score.extra["infra_error"]

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    refused = tmp_path / "refused"
    with pytest.raises(RunConfigError, match=r"^--reviewer chat:r: the reviewer model at .*"):
        _run(
            path,
            erp_db_url,
            refused,
            "scripted",
            reviewer="chat:r",
            reviewer_base_url=f"http://127.0.0.1:{port}/v1",
        )
    assert not refused.exists()
    with pytest.raises(RunConfigError, match=r"^--reviewer human: use rules"):
        _run(path, erp_db_url, refused, "scripted", reviewer="human")
    assert not refused.exists()


def test_the_last_promise_to_pay_is_keyed_and_the_scripted_agent_finds_it(
    erp_db_url, tmp_path
) -> None:
    """Collections calls key the customer's last promise to pay (its date and activity) when it
    made one (docs/conventions.md); the scripted agent reads it through the MCP tool and agrees
    with the oracle, and for a customer without one nothing is keyed."""
    dataset = generate_operations(erp_db_url, n=32, seed=11)
    collections = [item for item in dataset.items if item.conversation.kind == "collections"]
    keyed = {
        item.id: {f.field: f.value for f in item.expected if "promise" in f.field}
        for item in collections
    }
    with_promise = [qid for qid, facts in keyed.items() if facts]
    without = [qid for qid, facts in keyed.items() if not facts]
    assert with_promise and without, keyed
    for qid in with_promise:
        assert set(keyed[qid]) == {"last_promise_to_pay", "last_promise_to_pay_activity"}
    path = write_dataset(dataset, tmp_path / "ops.yaml")
    ids = [with_promise[0], without[0]]
    records = _run(path, erp_db_url, tmp_path / "promise", "scripted", ids=ids)
    questions = {item.id: item for item in dataset.items}
    for record in records:
        metrics = conversation_metrics(questions[record.question_id], record)
        assert metrics.accuracy == 1.0, metrics.reasons
        said = "\n".join(t.content for t in record.conversation.turns if t.role == "agent")
        if record.question_id in without:
            assert "No promise to pay is on record" in said
        else:
            assert keyed[record.question_id]["last_promise_to_pay_activity"] in said


def test_a_foreign_currency_dispute_keys_its_currency_difference(erp_db_url, tmp_path) -> None:
    """A dispute over a foreign-currency invoice keys the realized exchange difference of its
    payments in accounting currency (docs/conventions.md); the scripted agent computes it from
    the payments' rates and agrees with the oracle; a home-currency invoice keys none."""
    import sqlite3

    from synthetic_erp._operations import currency_difference

    dataset = generate_operations(erp_db_url, n=32, seed=11)
    disputes = [item for item in dataset.items if item.conversation.kind == "dispute"]
    keyed = {
        item.id: next((f for f in item.expected if f.field == "currency_difference"), None)
        for item in disputes
    }
    foreign = [qid for qid, fact in keyed.items() if fact is not None]
    home = [qid for qid, fact in keyed.items() if fact is None]
    assert foreign and home, keyed
    # The key recomputed by hand from the ledger: settled amount x (payment rate - invoice rate).
    item = next(i for i in disputes if i.id == foreign[0])
    database = sqlite3.connect(erp_db_url.removeprefix("sqlite:///"))
    invoice_rate, le = database.execute(
        "select exchange_rate, legal_entity from customer_transaction where voucher = ?",
        (item.metadata["voucher"],),
    ).fetchone()
    rows = database.execute(
        "select s.amount_cur, p.exchange_rate from customer_settlement s join "
        "customer_transaction p on p.legal_entity = s.legal_entity and p.voucher = "
        "s.credit_voucher where s.legal_entity = ? and s.debit_voucher = ? and "
        "p.txn_type = 'payment'",
        (le, item.metadata["voucher"]),
    ).fetchall()
    by_hand = sum(amount * (rate - invoice_rate) for amount, rate in rows)
    fact = keyed[foreign[0]]
    assert abs(fact.value - abs(by_hand)) < 0.011
    assert (
        fact.side == ("credit" if by_hand > 0 else "debit")
        and fact.currency != item.expected[0].currency
    )
    assert currency_difference(Decimal("1.5"), []) == 0

    path = write_dataset(dataset, tmp_path / "ops.yaml")
    records = _run(path, erp_db_url, tmp_path / "fx", "scripted", ids=[foreign[0], home[0]])
    questions = {item.id: item for item in dataset.items}
    for record in records:
        metrics = conversation_metrics(questions[record.question_id], record)
        assert metrics.accuracy == 1.0, metrics.reasons
        said = "\n".join(t.content for t in record.conversation.turns if t.role == "agent")
        assert ("currency difference" in said) == (record.question_id in foreign)


def test_an_open_position_asks_ar_ap_or_net_and_the_scripted_agent_answers_it(
    erp_db_url, tmp_path
) -> None:
    """An under-specified request for a legal entity's open position keys the side the user
    names (payables or the net of receivables and payables, from the oracle's open items): the
    agent must ask which; the scripted agent, asking, reads both agings and agrees; the guess
    (receivables) is wrong."""
    dataset = generate_operations(erp_db_url, n=48, seed=3)
    positions = [item for item in dataset.items if item.metadata.get("template") == "open_position"]
    sides = {item.metadata["params"]["side"] for item in positions}
    assert sides == {"payables", "net position"}, sides
    for item in positions:
        assert item.conversation.required_clarifications == ["side"]
        (fact,) = item.expected
        assert fact.field in ("payables_total", "net_position") and fact.currency
    path = write_dataset(dataset, tmp_path / "ops.yaml")
    ids = [next(i.id for i in positions if i.metadata["params"]["side"] == side) for side in sides]
    questions = {item.id: item for item in dataset.items}
    for harness, accuracy in (("scripted", 1.0), ("guess", 0.0)):
        records = _run(path, erp_db_url, tmp_path / harness, harness, ids=ids)
        assert {r.question_id for r in records} == set(ids)
        for record in records:
            metrics = conversation_metrics(questions[record.question_id], record)
            assert metrics.accuracy == accuracy, (harness, metrics.reasons)
            if harness == "guess":
                assert metrics.facts_found == 0, metrics.reasons
