"""Viewer build time and size: 1,000 questions x 3 runs with scores, as `ledgerbench view` builds.

    .venv/bin/python bench/bench_viewer.py [--questions 1000] [--runs 3] [--repeat 3]

The runs are synthetic but shaped like real ones: per record 6 tool calls with 0.3-3 KB outputs
(ERP JSON), an answer of ~1 KB in markdown with a table, the conversation (messages) and one event
per model and tool call, and a rules-judge score record with assertion reasons. The answers cite
records the tool outputs hold, so the build includes copying them into the page (offline links).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
    Status,
    Termination,
    TerminationReason,
    TrajectoryRecord,
    Usage,
)

TOOLS = [
    "search_parties",
    "get_customer",
    "get_aging",
    "list_open_invoices",
    "get_vendor",
    "erp_info",
]
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
LINK_BASE = "https://erp.ledgerbench.test/erp/USMF/customer-transactions"
"""Record links of a real entity set: the viewer copies each cited record into the page (here
from the tool outputs: these synthetic runs name no ERP database)."""
TAGS = {Dimension.accuracy: [Assertion(id="accuracy.balance", text="The balance is right.")]}


def _tool_output(rng: random.Random, question: int) -> str:
    rows = [
        {
            "invoice": f"INV-{question:04d}-{n:03d}",
            "amount": round(rng.uniform(100, 90_000), 2),
            "currency": "USD",
            "due_date": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "url": f"{LINK_BASE}/INV-{question:04d}-{n:03d}",
        }
        for n in range(rng.randint(2, 20))
    ]
    return json.dumps({"rows": rows, "count": len(rows)})


def _answer(rng: random.Random, question: int) -> str:
    lines = [
        f"**Customer SYNCUS-{question:04d}** has an overdue balance of "
        f"USD {rng.uniform(1e3, 1e6):,.2f}.",
        "",
    ]
    lines += ["| invoice | amount | due |", "|---|---|---|"]
    for n in range(rng.randint(3, 10)):
        lines.append(
            f"| [INV-{question:04d}-{n:03d}]({LINK_BASE}/INV-{question:04d}-{n:03d}) "
            f"| {rng.uniform(100, 9e4):,.2f} | 2025-0{rng.randint(1, 9)}-1{n % 9} |"
        )
    lines += ["", "- Oldest item is over 90 days.", "- Figures as of 2025-12-31."]
    return "\n".join(lines)


def _record(rng: random.Random, question: Question, number: int, harness: str) -> TrajectoryRecord:
    draft = TrajectoryDraft(started_monotonic=0.0)
    draft.add_message("user", question.query)
    for turn in range(3):
        draft.add_message(
            "assistant", f"Looking up step {turn + 1}.", reasoning="Need the aging first."
        )
        draft.add_model_event(
            turn * 2.0,
            duration_s=1.2,
            usage=Usage(input_tokens=2000, output_tokens=150),
            request_id=f"req_{number}_{turn}",
            model="model-x",
        )
        for _ in range(2):
            draft.add_tool_call(
                rng.choice(TOOLS),
                {"party_id": f"SYNCUS-{number:04d}", "legal_entity": "USMF"},
                _tool_output(rng, number),
                server="erp",
                started_s=turn * 2.0 + 1.3,
                duration_s=0.05,
            )
    answer = _answer(rng, number)
    draft.add_message("assistant", answer)
    status = rng.choices([Status.ok, Status.timeout, Status.error], weights=[90, 7, 3])[0]
    reason = {
        Status.ok: TerminationReason.completed,
        Status.timeout: TerminationReason.time_limit,
        Status.error: TerminationReason.provider_unavailable,
    }[status]
    latency = rng.uniform(5, 60)
    return TrajectoryRecord(
        question_id=question.id,
        task_type=question.task_type,
        harness=harness,
        model="model-x",
        answer=answer,
        status=status,
        termination=Termination.of(reason),
        latency_s=latency,
        timeout_s=60,
        tool_calls=draft.tool_calls,
        usage=Usage(input_tokens=6000, output_tokens=450),
        turns=3,
        started_at=START,
        finished_at=START + dt.timedelta(seconds=latency),
        input=question.query,
        messages=draft.messages,
        events=draft.events,
        working_time_s=latency - 1,
    )


def _score(rng: random.Random, record: TrajectoryRecord) -> ScoreRecord:
    dimensions = {}
    for dimension in ["accuracy", "citations", "structure", "depth"]:
        assertions = [
            AssertionScore(
                assertion_id=f"{dimension}.check_{n}",
                score=rng.choice([0, 0.5, 1.0]),
                reason=f"The answer states the {dimension} figure {rng.random():.3f}.",
                decided_by="rule",
            )
            for n in range(3)
        ]
        mean = sum(a.score for a in assertions) / len(assertions)
        dimensions[dimension] = DimensionScore(
            status=DimensionStatus.scored, score=mean, assertions=assertions
        )
    overall = sum(d.score for d in dimensions.values()) / len(dimensions)
    return ScoreRecord(
        question_id=record.question_id,
        task_type=record.task_type,
        judge="rules",
        status="scored",
        dimensions=dimensions,
        overall=overall,
        answer_sha256="0" * 64,
        judged_at=START,
    )


def make_runs(root: Path, questions: int, runs: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    items = [
        Question(
            id=f"q-{n:04d}",
            query=f"What is the overdue balance of customer SYNCUS-{n:04d} in USMF?",
            task_type=TaskType.obligations,
            segment="AR",
            tags=TAGS,
            scenario=["Aged Balance", "Overdue", "Credit"][n % 3],
            ground_truth=f"USD {n * 1000:,.2f} overdue across {n % 7 + 1} invoices.",
        )
        for n in range(questions)
    ]
    dataset_path = root / "dataset.yaml"
    write_dataset(Dataset(header=DatasetHeader(name="bench"), items=items), dataset_path)
    paths = []
    for r in range(runs):
        run_dir = root / f"run-{r}"
        (run_dir / "scores").mkdir(parents=True)
        records = [_record(rng, item, n, f"harness-{r}") for n, item in enumerate(items)]
        with (run_dir / "trajectories.jsonl").open("w") as handle:
            handle.writelines(record.model_dump_json(by_alias=True) + "\n" for record in records)
        with (run_dir / "scores" / "rules.jsonl").open("w") as handle:
            handle.writelines(_score(rng, record).model_dump_json() + "\n" for record in records)
        manifest = RunManifest(
            run_id=f"run-{r}",
            command=["bench"],
            config={},
            config_fingerprint="x",
            harness=f"harness-{r}",
            model="model-x",
            timeouts={"obligations": 60},
            dataset_path=str(dataset_path),
            dataset_hash="x",
            question_count=questions,
            system_prompt_hash="x",
            system_prompt="You are a finance agent.",
            started_at=START,
        )
        (run_dir / "manifest.json").write_text(manifest.model_dump_json())
        paths.append(run_dir)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from ledgerbench.viewer import build_viewer

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs = make_runs(root, args.questions, args.runs)
        inputs = sum((run / "trajectories.jsonl").stat().st_size for run in runs) / 1e6
        times, cpu = [], []
        for _ in range(args.repeat):
            started, cpu_started = time.perf_counter(), time.process_time()
            page, warnings = build_viewer(runs, root / "viewer")
            assert not warnings, warnings
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
        size = sum(p.stat().st_size for p in (root / "viewer").iterdir()) / 1e6
    print(
        f"viewer for {args.questions} questions x {args.runs} runs "
        f"({inputs:.1f} MB of trajectories.jsonl):"
    )
    print(
        f"  build time: median {statistics.median(times):.2f} s wall over {args.repeat} builds "
        f"(min {min(times):.2f} s); CPU {statistics.median(cpu):.2f} s (all threads)"
    )
    load = os.getloadavg()[0]
    print(f"  machine load average while measuring: {load:.1f} on {os.cpu_count()} cores")
    print(f"  output size: {size:.1f} MB ({page.name})")


if __name__ == "__main__":
    main()
