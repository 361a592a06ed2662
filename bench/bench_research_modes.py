"""One agent in every research mode: the fake OpenAI server (real SDK, real wire) driven by a
simple model-free reader (``tests/fakes/research_model.py``: search the question, read the top
result, answer with its first figure and cite it), on the shipped entity set and the default world,
judged by the rules judge.

Prints per mode (world, golden, none): accuracy, groundedness, citations, retrieval recall of the
gold documents among the results shown and among the documents read, citation precision and
recall. The reader's accuracy is low by design; the spread between modes is the point: golden
minus world is what retrieval costs it, none is the floor.

    .venv/bin/python bench/bench_research_modes.py [--items 30] [--harness openai|custom]
        [--dataset FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harnesses._runner import RunConfig, run  # noqa: E402
from judge import JudgeRunConfig, run_judge  # noqa: E402
from ledgerbench_core.dataset import load_dataset  # noqa: E402
from tests.fakes.openai_server import serve_openai  # noqa: E402
from tests.fakes.research_model import openai_script  # noqa: E402

KEY = "sk-bench-research"
MODES = ("world", "golden", "none")
DIMENSIONS = ("accuracy", "groundedness", "citations")
RETRIEVAL = ("shown_recall", "fetched_recall", "citation_precision", "citation_recall")


def mean(values: list[float]) -> str:
    return f"{statistics.fmean(values):.3f}" if values else "-"


def figures(run_dir: Path) -> dict[str, str]:
    scores = [json.loads(line) for line in (run_dir / "scores" / "rules.jsonl").open()]
    out = {}
    for dimension in DIMENSIONS:
        values = [
            s["dimensions"][dimension]["score"]
            for s in scores
            if s["dimensions"].get(dimension, {}).get("score") is not None
        ]
        out[dimension] = mean(values)
    for metric in RETRIEVAL:
        values = [
            s["extra"]["research"][metric]
            for s in scores
            if (s.get("extra") or {}).get("research", {}).get(metric) is not None
        ]
        out[metric] = mean(values)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=30, help="entity items (the first N)")
    parser.add_argument("--harness", default="openai", choices=("openai", "custom"))
    parser.add_argument(
        "--dataset",
        type=Path,
        default=ROOT / "datasets" / "entity_performance.yaml",
        help="an entity set keyed on the default world (default: the shipped one)",
    )
    args = parser.parse_args()
    dataset = args.dataset
    ids = [item.id for item in load_dataset(dataset).items[: args.items]]
    os.environ["OPENAI_API_KEY"] = KEY
    opts = {"api": "openai"} if args.harness == "custom" else {}
    rows = {}
    with tempfile.TemporaryDirectory() as tmp, serve_openai(openai_script, api_key=KEY) as fake:
        for mode in MODES:
            out = Path(tmp) / mode
            run(
                RunConfig(
                    dataset=dataset,
                    ids=ids,
                    harness=args.harness,
                    model="gpt-5.2",
                    base_url=fake.base_url,
                    harness_opts=opts,
                    research=mode,
                    out=out,
                    progress=False,
                ),
                log=lambda _m: None,
            )
            run_judge(JudgeRunConfig(run_dir=out, judge="rules", progress=False))
            rows[mode] = figures(out)
    columns = (*DIMENSIONS, *RETRIEVAL)
    print(f"{args.harness} on the fake server, {len(ids)} entity items of {dataset.name}")
    print(f"{'mode':<8}" + "".join(f"{c:>20}" for c in columns))
    for mode, row in rows.items():
        print(f"{mode:<8}" + "".join(f"{row[c]:>20}" for c in columns))


if __name__ == "__main__":
    main()
