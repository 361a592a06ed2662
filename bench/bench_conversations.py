"""Conversations: a 100-conversation scripted run, the runner's overhead per conversation turn,
the baselines, and how often the reviewer of the simulated user catches a corrupted user.

1. ``--n`` operations scenarios (default 100, four kinds in turn) are generated from the ERP;
   the scripted agent talks to the scripted user on all of them (runner serving the ERP itself,
   concurrency 5); the wall time of the run (target: under 60 s) and the rules judge's accuracy
   per kind (target: at least 0.99) are printed, with the reviewer's tags (target: 0).
2. ``guess`` and ``nothing`` run the same scenarios (target: under 0.05 on every kind).
3. An instant conversational harness (it asks for every slot at once, then replies with a figure,
   no tool calls) measures the runner's overhead per agent turn: the conversation's time over its
   agent turns (the user's time is inside it, so this bounds the overhead from above). Target:
   under 20 ms.
4. Each scenario is replayed with a corrupted user (one that volunteers ``unknown_info``, one that
   invents a fact) and the rules reviewer's catch rate is printed (target: at least 95%).

    .venv/bin/python bench/bench_conversations.py [--n 100] [--erp-db sqlite:///erp.db]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harnesses._conversation import ScriptedUser, review_user  # noqa: E402
from harnesses._protocol import AgentOutcome, HarnessOptions  # noqa: E402
from harnesses._registry import harness  # noqa: E402
from ledgerbench_core.trajectory import ConversationTurn, TrajectoryRecord  # noqa: E402

ASK_ALL = (
    "Which period (which month), which legal entity, which invoice number and which customer "
    "name is this about?"
)


class InstantConversation:
    """Asks for every slot in its first turn, then answers "42" at once: no tools, no model."""

    name = "instant-conversation"
    model = None
    conversational = True
    shares_runner_loop = False

    def __init__(self, options: HarnessOptions) -> None:
        self.options = options

    async def run(self, task, env, draft) -> AgentOutcome:
        reply = ASK_ALL if not task.history else "The figure is 42."
        draft.set_answer(reply)
        return AgentOutcome(answer=reply)


def _run(dataset: Path, erp_db: str, out: Path, name: str) -> tuple[list[TrajectoryRecord], float]:
    from harnesses._runner import TRAJECTORIES_FILE, RunConfig, run

    config = RunConfig(dataset=dataset, harness=name, erp_db=erp_db, out=out, progress=False)
    start = time.perf_counter()
    run(config)
    seconds = time.perf_counter() - start
    lines = (out / TRAJECTORIES_FILE).read_text().splitlines()
    return [TrajectoryRecord.model_validate_json(line) for line in lines], seconds


def _accuracy(dataset, records) -> dict[str, float]:
    from judge._conversation import conversation_metrics

    questions = {item.id: item for item in dataset.items}
    by_kind: dict[str, list[float]] = defaultdict(list)
    for record in records:
        question = questions[record.question_id]
        by_kind[question.conversation.kind].append(conversation_metrics(question, record).accuracy)
    return {kind: sum(v) / len(v) for kind, v in sorted(by_kind.items())}


def _catch_rate(dataset, corruption: str) -> float:
    caught = 0
    for item in dataset.items:
        scenario = item.conversation
        user = ScriptedUser(scenario, corruption=corruption)
        reply = user.reply(ASK_ALL)
        turns = [
            ConversationTurn(role="user", content=user.opening(), started_s=0, duration_s=0),
            ConversationTurn(role="agent", content=ASK_ALL, started_s=0, duration_s=0),
            ConversationTurn(
                role="user", content=reply.text, started_s=0, duration_s=0, signal=reply.signal
            ),
        ]
        caught += any(tag.severity != "minor" for tag in review_user(scenario, turns))
    return caught / len(dataset.items)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="conversations (default 100)")
    parser.add_argument("--erp-db", help="ERP database URL (default: the project's default ERP)")
    args = parser.parse_args()
    from harnesses._erp_process import default_erp_db_url, ensure_default_erp
    from ledgerbench_core.dataset import write_dataset
    from synthetic_erp._operations import generate_operations

    if args.erp_db:
        erp_db = args.erp_db
    else:
        ensure_default_erp()
        erp_db = default_erp_db_url()
    harness("instant-conversation")(InstantConversation)
    with tempfile.TemporaryDirectory(prefix="bench-conversations-") as folder:
        work = Path(folder)
        started = time.perf_counter()
        dataset = generate_operations(erp_db, n=args.n, seed=42)
        path = write_dataset(dataset, work / "operations.yaml")
        print(f"generated {args.n} scenarios in {time.perf_counter() - started:.1f} s")
        records, seconds = _run(path, erp_db, work / "scripted", "scripted")
        tags = sum(len(r.conversation.review) for r in records)
        turns = sum(sum(t.role == "agent" for t in r.conversation.turns) for r in records)
        print(
            f"scripted agent + scripted user: {len(records)} conversations, {turns} agent turns "
            f"in {seconds:.1f} s (target < 60 s); reviewer tags: {tags} (target 0)"
        )
        for kind, value in _accuracy(dataset, records).items():
            print(f"  accuracy {kind:<15} {value:.3f} (target >= 0.99)")
        for name in ("guess", "nothing"):
            baseline, _ = _run(path, erp_db, work / name, name)
            shown = ", ".join(f"{k} {v:.3f}" for k, v in _accuracy(dataset, baseline).items())
            print(f"{name}: {shown} (target < 0.05)")
        instant, seconds = _run(path, erp_db, work / "instant", "instant-conversation")
        per_turn = [
            1000 * r.latency_s / sum(t.role == "agent" for t in r.conversation.turns)
            for r in instant
        ]
        user_ms = [1000 * r.conversation.user_time_s for r in instant]
        print(
            f"runner overhead per conversation turn (instant harness, {len(instant)} "
            f"conversations): median {statistics.median(per_turn):.2f} ms, p90 "
            f"{statistics.quantiles(per_turn, n=10)[-1]:.2f} ms (target < 20 ms); user time per "
            f"conversation median {statistics.median(user_ms):.3f} ms"
        )
        for corruption in ("volunteer", "invent"):
            rate = _catch_rate(dataset, corruption)
            print(f"reviewer catches a user that {corruption}s: {100 * rate:.1f}% (target >= 95%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
