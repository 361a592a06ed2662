"""Run directories written with the real record models, for viewer and export tests."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from harnesses._protocol import TrajectoryDraft
from ledgerbench_core.dataset import (
    Assertion,
    Dataset,
    DatasetHeader,
    Dimension,
    Question,
    TaskType,
    write_dataset,
)
from ledgerbench_core.scores import AssertionScore, DimensionScore, DimensionStatus, ScoreRecord
from ledgerbench_core.trajectory import (
    RunManifest,
    Termination,
    TerminationReason,
    TrajectoryRecord,
    Usage,
)

START = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
TAGS = {Dimension.accuracy: [Assertion(id="accuracy.balance", text="The figures are right.")]}
# Payloads that, if any ran, would change the title or leave a marker on the page.
SCRIPT_PAYLOAD = "<script>document.title='XSS';window.__xss=1</script>"
ONERROR_PAYLOAD = "<img src=x onerror=\"document.title='XSS';document.body.dataset.xss=1\">"
BREAKOUT_PAYLOAD = "</script><script>window.__xss=2</script>"
LINK_PAYLOAD = "[click me](javascript:window.__xss=3)"

QUESTIONS = [
    Question(
        id="obl-aged-001",
        query="What is the aged balance of customer SYNCUS-0001 in USMF as of 2025-12-31?",
        tags=TAGS,
        task_type=TaskType.obligations,
        segment="AR",
        scenario="Aged Balance",
        ground_truth="SYNCUS-0001 owes **USD 12,500.00**, of which USD 4,000.00 is over 90 days.",
    ),
    Question(
        id="obl-overdue-002",
        query="Which invoices of vendor SYNVEN-0002 are overdue?",
        tags=TAGS,
        task_type=TaskType.obligations,
        segment="AP",
        scenario="Overdue Invoices",
        ground_truth="Two invoices: INV-7 and INV-9.",
    ),
    Question(
        id="brief-003",
        query="Write a one-page brief on Contoso's receivables.",
        tags={Dimension.structure: [Assertion(id="structure.sections", text="Has sections.")]},
        task_type=TaskType.business_brief,
        segment="brief",
        scenario="receivables",
    ),
]


def _record(question: Question, harness: str, answer: str, tool_output: str, **kw) -> dict:
    draft = TrajectoryDraft()
    draft.add_message("user", question.query)
    thinking = draft.add_message(
        "assistant", "I will look up the aging first.", reasoning="Aging, then sum."
    )
    draft.add_model_event(
        0.0,
        output=thinking,
        duration_s=1.5,
        usage=Usage(input_tokens=900, output_tokens=40),
        request_id="req_abc123",
        model="m-1",
    )
    draft.add_tool_call(
        "get_aging",
        {"party_id": "SYNCUS-0001"},
        tool_output,
        server="erp",
        started_s=1.6,
        duration_s=0.2,
    )
    draft.add_message("assistant", answer)
    draft.add_model_event(
        1.9, duration_s=2.0, usage=Usage(input_tokens=1400, output_tokens=120), model="m-1"
    )
    reason = kw.pop("reason", TerminationReason.completed)
    record = TrajectoryRecord(
        question_id=question.id,
        task_type=question.task_type,
        harness=harness,
        model="m-1",
        answer=answer,
        status=Termination.of(reason).status,
        termination=Termination.of(reason, kw.pop("detail", None)),
        latency_s=4.2,
        timeout_s=60,
        tool_calls=draft.tool_calls,
        usage=Usage(input_tokens=2300, output_tokens=160),
        turns=2,
        started_at=START,
        finished_at=START + dt.timedelta(seconds=4.2),
        input=question.query,
        messages=draft.messages,
        events=draft.events,
        working_time_s=4.0,
        **kw,
    )
    return json.loads(record.model_dump_json(by_alias=True))


def _score(record: dict, overall: float, reason: str, dimension: str = "accuracy") -> str:
    """A rules score of one dimension (a brief's is structure: accuracy of research items is
    LedgerBench's extension, outside the Overall)."""
    assertion = AssertionScore(
        assertion_id=f"{dimension}.balance", score=overall, reason=reason, decided_by="amount_rule"
    )
    score = ScoreRecord(
        question_id=record["question_id"],
        task_type=record["task_type"],
        judge="rules",
        status="scored",
        dimensions={
            dimension: DimensionScore(
                status=DimensionStatus.scored, score=overall, assertions=[assertion]
            )
        },
        overall=overall,
        answer_sha256="0" * 64,
        judged_at=START,
    )
    return score.model_dump_json()


def _write_run(
    root: Path, name: str, dataset: Path, records: list[dict], scores: list[str]
) -> Path:
    run = root / name
    (run / "scores").mkdir(parents=True)
    (run / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "scores" / "rules.jsonl").write_text("".join(s + "\n" for s in scores))
    manifest = RunManifest(
        run_id=name,
        command=["test"],
        config={},
        config_fingerprint="f",
        harness=records[0]["harness"],
        model="m-1",
        timeouts={"obligations": 60.0},
        dataset_path=str(dataset),
        dataset_hash="h",
        question_count=len(QUESTIONS),
        system_prompt_hash="abc",
        system_prompt="You are a careful finance analyst.",
        started_at=START,
    )
    (run / "manifest.json").write_text(manifest.model_dump_json())
    return run


LONG_TOKEN = "see-" + "0123456789abcdef" * 24
"""An unbroken 388-character string (a hash, a URL): the viewer must wrap it, not overflow."""


def write_sample_runs(root: Path) -> list[Path]:
    """Two runs over three questions: hostile payloads in run A's first answer, tool output and
    judge reason; an infrastructure failure; a version-1 line in run B; rules-judge scores."""
    dataset = root / "dataset.yaml"
    write_dataset(Dataset(header=DatasetHeader(name="viewer-test"), items=QUESTIONS), dataset)
    hostile = (
        f"The balance is USD 12,500.00.\n\n{SCRIPT_PAYLOAD}\n\n{ONERROR_PAYLOAD}\n\n"
        f"{BREAKOUT_PAYLOAD}\n\n{LINK_PAYLOAD}\n\n"
        "| invoice | amount |\n|---|---|\n| INV-1 | 4,000.00 |"
    )
    aging = json.dumps(
        {"rows": [{"bucket": "90+", "amount": 4000}], "note": ONERROR_PAYLOAD + SCRIPT_PAYLOAD}
    )
    a_records = [
        _record(QUESTIONS[0], "openai", hostile, aging),
        _record(
            QUESTIONS[1], "openai", f"INV-7 and INV-9 are overdue. {LONG_TOKEN}", '{"rows": []}'
        ),
        _record(
            QUESTIONS[2],
            "openai",
            "",
            "{}",
            reason=TerminationReason.provider_unavailable,
            detail="HTTP 503 from the provider x4",
        ),
    ]
    b_records = [
        _record(QUESTIONS[0], "scripted", "SYNCUS-0001 owes USD 12,500.00.", '{"rows": []}'),
        _record(
            QUESTIONS[1],
            "scripted",
            "No overdue invoices.",
            "{}",
            reason=TerminationReason.time_limit,
        ),
    ]
    # Run B's third record is a version-1 line: no termination, no transcript.
    v1 = {
        k: v
        for k, v in _record(QUESTIONS[2], "scripted", "Brief text.", "{}").items()
        if k
        not in {
            "termination",
            "input",
            "messages",
            "events",
            "working_time_s",
            "system_prompt_hash",
            "previous_attempts",
        }
    }
    v1["version"] = 1
    b_records.append(v1)
    run_a = _write_run(
        root,
        "run-a",
        dataset,
        a_records,
        [
            _score(a_records[0], 1.0, f"Balance matches. {SCRIPT_PAYLOAD}"),
            _score(a_records[1], 0.5, "One of two invoices named."),
        ],
    )
    run_b = _write_run(
        root,
        "run-b",
        dataset,
        b_records,
        [
            _score(b_records[0], 0.25, "Balance stated, aging missing."),
            _score(b_records[1], 0.0, "Wrong: says none are overdue."),
            _score(b_records[2], 0.75, "Brief is fine.", "structure"),
        ],
    )
    return [run_a, run_b]
