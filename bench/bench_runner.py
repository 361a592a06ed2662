"""Runner overhead with an instant in-process harness.

Prints questions per second at concurrency 1, 8 and 32, and the runner's overhead per question
beyond harness time (target: under 20 ms): wall time per question minus the harness time that
concurrency cannot hide (harness delay / concurrency). Fixed start-up costs (dataset load,
``erp_info``, manifest) are measured with a one-question run and subtracted. ``--scripted N`` also
measures the scripted agent on N generated questions (fact checks) and on the published set.

    .venv/bin/python bench/bench_runner.py [--questions 400] [--scripted 200]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import yaml
from pydantic import SecretStr

from harnesses import AgentOutcome, HarnessOptions, harness
from harnesses._erp_process import start_erp_server
from harnesses._runner import RunConfig, read_trajectories, run


@harness("bench-instant")
class InstantHarness:
    name = "bench-instant"

    def __init__(self, options: HarnessOptions) -> None:
        self.model = None
        self.delay = float(options.extra.get("delay", "0"))

    async def run(self, task, env, draft) -> AgentOutcome:
        if self.delay:
            await asyncio.sleep(self.delay)
        draft.add_tool_call("echo", {"id": task.question_id}, "ok")
        return AgentOutcome(answer=f"answer {task.question_id}")

    async def aclose(self) -> None:
        return None


def write_dataset(path: Path, count: int) -> Path:
    tags = {"relevance": [{"id": "relevance.direct", "text": "answers the question"}]}
    items = [
        {
            "id": f"b-{i:05d}",
            "query": f"Bench question {i}?",
            "task_type": "obligations",
            "segment": "AR",
            "scenario": "Bench",
            "tags": tags,
        }
        for i in range(count)
    ]
    path.write_text(yaml.safe_dump({"header": {"name": "bench"}, "items": items}))
    return path


def timed_run(dataset: Path, out: Path, erp, concurrency: int, delay: float) -> float:
    config = RunConfig(
        dataset=dataset,
        harness="bench-instant",
        harness_opts={"delay": str(delay)},
        erp_url=erp.url,
        erp_token=SecretStr(erp.token),
        out=out,
        concurrency=concurrency,
        progress=False,
    )
    started = time.perf_counter()
    summary = run(config, log=lambda _: None)
    assert summary.ran == summary.expected, summary
    return time.perf_counter() - started


def scripted_accuracy(root: Path, n: int) -> None:
    """Scripted agent on generated questions (fact checks) and on the published phrasings."""
    from judge import check_fact
    from ledgerbench_core.dataset import load_dataset
    from ledgerbench_core.dataset._loader import write_dataset
    from synthetic_erp import generate_erp
    from synthetic_erp._questions import generate_questions

    db_url = f"sqlite:///{root / 'erp42.db'}"
    generate_erp(db_url, seed=42)
    dataset = generate_questions(db_url, n=n, seed=42)
    path = root / "obligations.yaml"
    write_dataset(dataset, path)
    summary = run(
        RunConfig(dataset=path, erp_db=db_url, out=root / "scripted", progress=False),
        log=lambda _: None,
    )
    keys = {q.id: q for q in dataset.items}
    records = read_trajectories(summary.run_dir / "trajectories.jsonl")
    all_ok = facts_ok = facts = 0
    for record in records:
        verdicts = [
            check_fact(record.answer, f).score == 1.0 for f in keys[record.question_id].expected
        ]
        facts += len(verdicts)
        facts_ok += sum(verdicts)
        all_ok += bool(verdicts) and all(verdicts)
    print(
        f"scripted, generated set (n={len(records)}, seed 42): all facts right in "
        f"{all_ok}/{len(records)} questions ({all_ok / len(records):.1%}); "
        f"{facts_ok}/{facts} facts"
    )
    published = Path(__file__).resolve().parents[2] / "shared/reference/force-bench/dataset.yaml"
    if not published.exists():
        print("published set not found; skipped")
        return
    summary = run(
        RunConfig(dataset=published, erp_db=db_url, out=root / "published", progress=False),
        log=lambda _: None,
    )
    kinds: dict[str, int] = {}
    for record in read_trajectories(summary.run_dir / "trajectories.jsonl"):
        if record.task_type != "obligations":
            kind = f"declined ({record.task_type}: needs the web)"
        elif "intent" not in record.extra:
            kind = "not understood (says so)"
        elif record.answer.startswith("I could not find"):
            kind = "party not in this ERP (says so)"
        elif record.answer.startswith("I could not answer"):
            kind = "tool error (says so)"
        elif "/erp/" in record.answer:
            kind = "answered from the ERP, with record links"
        else:
            kind = "answered from the ERP, no record link"
        kinds[kind] = kinds.get(kind, 0) + 1
    total = len(load_dataset(published).items)
    print(f"scripted, published set ({total} items; no answer keys for this ERP):")
    for kind, count in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {count:>4}  {kind}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=400, help="questions per run (e.g. 400)")
    parser.add_argument(
        "--scripted",
        type=int,
        default=0,
        metavar="N",
        help="also measure the scripted agent on N generated questions and the published set",
    )
    args = parser.parse_args()
    from synthetic_erp import generate_erp

    if args.scripted:
        with tempfile.TemporaryDirectory() as tmp:
            scripted_accuracy(Path(tmp), args.scripted)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        db_url = f"sqlite:///{root / 'erp.db'}"
        generate_erp(db_url, customers=20, vendors=20, seed=1)
        server = start_erp_server(db_url)
        try:
            dataset = write_dataset(root / "ds.yaml", args.questions)
            one = write_dataset(root / "one.yaml", 1)
            fixed = min(
                timed_run(one, root / f"fixed-{i}", server.endpoint, 1, 0) for i in range(3)
            )
            print(f"fixed start-up cost per run: {fixed * 1000:.0f} ms")
            print(
                f"{'concurrency':>11} {'harness ms':>10} {'questions/s':>12} {'overhead ms/q':>14}"
            )
            for delay in (0.0, 0.01):
                for concurrency in (1, 8, 32):
                    out = root / f"run-{concurrency}-{delay}"
                    wall = timed_run(dataset, out, server.endpoint, concurrency, delay)
                    per_question = (wall - fixed) / args.questions
                    # Wall time per question beyond what the harness itself needs at this
                    # concurrency (delay / concurrency when the harness runs fully in parallel).
                    overhead = per_question - delay / concurrency
                    print(
                        f"{concurrency:>11} {delay * 1000:>10.0f} "
                        f"{args.questions / (wall - fixed):>12.0f} {overhead * 1000:>14.2f}"
                    )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
