"""Judge throughput: the rules judge, the DSPy judge against a local server, and the comparison.

Prints trajectories per second for ``--judge rules``; judge calls per second through the real
``dspy.LM`` client against an instant local OpenAI-compatible server at concurrency 1 and 8 (the
judge's own overhead: prompt building, parsing, validation, cache and file writes); the time of a
fully cached re-run; and the time of ``compare_judges`` for three judges.

    .venv/bin/python bench/bench_judge.py [--trajectories 300]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from judge import JudgeRunConfig, compare_judges, read_scores, run_judge
from ledgerbench_core.dataset import Dimension, ExpectedFact
from tests.fakes.judge_data import question, trajectory, write_run
from tests.fakes.judge_openai_chat import chat_adapter_reply, serve_fake_chat

TAGS = {
    Dimension.accuracy: ["accuracy.ground_truth"],
    Dimension.citations: ["citations.erp_link"],
    Dimension.clarity: ["clarity.acronyms", "clarity.consistent_terms"],
    Dimension.structure: ["structure.answer_first", "structure.table_for_many"],
}


def make_run(root: Path, n: int) -> Path:
    questions, trajectories = [], []
    for i in range(n):
        ids = [f"SYNCUS-{(i * 7 + k) % 1000:04d}" for k in range(5)]
        questions.append(
            question(
                f"q{i}",
                tags=TAGS,
                expected=[
                    ExpectedFact(kind="top_n", field="customers", value=ids),
                    ExpectedFact(kind="amount", field="total", value=1000.0 + i, tolerance=0.01),
                ],
                record_refs=[f"/erp/USMF/customers/{ids[0]}"],
            )
        )
        rows = "\n".join(
            f"| [{cid}](http://erp/erp/USMF/customers/{cid}) | {100 + k}.00 |"
            for k, cid in enumerate(ids)
        )
        answer = f"The total is ${1000 + i:,.2f}.\n\n| customer | balance |\n|---|---|\n{rows}"
        trajectories.append(trajectory(f"q{i}", answer=answer))
    # The default ERP, recorded as a runner would: the rules judge resolves every cited link in
    # it (a run naming no ERP would leave these answers unscored, and time nothing).
    from harnesses._erp_process import ensure_default_erp
    from judge._inputs import erp_snapshot

    erp = ensure_default_erp()
    return write_run(
        root, questions, trajectories, erp_db_url=erp, erp_snapshot_hash=erp_snapshot(erp)
    )


def grading_model(body: dict) -> str:
    user = body["messages"][-1]["content"]
    found = re.search(r"\[\[ ## assertions ## \]\]\n(\[.*?\])\n\n", user, re.S)
    ids = [a["id"] for a in json.loads(found.group(1))]
    return chat_adapter_reply(
        {"verdicts": [{"assertion_id": i, "score": 1.0, "reason": "ok"} for i in ids]}
    )


def timed(config: JudgeRunConfig) -> tuple[float, int, int]:
    start = time.perf_counter()
    result = run_judge(config)
    return time.perf_counter() - start, result.judged, result.calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=300, help="trajectories per run")
    args = parser.parse_args()
    n = args.trajectories
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run_dir = make_run(root / "run", n)

        seconds, judged, _ = timed(JudgeRunConfig(run_dir=run_dir, judge="rules", progress=False))
        print(f"rules judge: {judged} trajectories in {seconds:.2f} s = {judged / seconds:.0f}/s")

        with serve_fake_chat(grading_model) as fake:
            for concurrency in (1, 8):
                config = JudgeRunConfig(
                    run_dir=run_dir,
                    judge="openai/gpt-4o-mini",
                    base_url=fake.base_url,
                    concurrency=concurrency,
                    name=f"llm-c{concurrency}",
                    progress=False,
                )
                seconds, judged, calls = timed(config)
                print(
                    f"dspy judge, concurrency {concurrency}: {calls} calls for {judged} "
                    f"trajectories in {seconds:.2f} s = {calls / seconds:.0f} calls/s "
                    f"({1000 * seconds / calls:.1f} ms per call incl. the local server)"
                )
            before = len(fake.requests)
            cached = config.model_copy(update={"overwrite": True})
            seconds, judged, calls = timed(cached)
            print(
                f"cached re-run: {judged} trajectories in {seconds:.2f} s, "
                f"{len(fake.requests) - before} server requests"
            )

        scores = {}
        for name in ("rules", "llm-c1", "llm-c8"):
            scores[name], _ = read_scores(run_dir / "scores" / f"{name}.jsonl")
        start = time.perf_counter()
        comparison = compare_judges(scores)
        seconds = time.perf_counter() - start
        print(
            f"compare_judges (3 judges x {n} records): {len(comparison.pairs)} cells "
            f"in {seconds:.2f} s"
        )


if __name__ == "__main__":
    main()
