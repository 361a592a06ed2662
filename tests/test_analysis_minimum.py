"""One rule for too little data: a contrast with fewer paired answers than the minimum is not
tested, for the Overall, every dimension, every task type and the research metrics, in the
pairwise and the pooled model, in stats.json, the headline and the report's summary line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from analysis._schema import EQUAL_WEIGHT, ModelKind
from analysis._synthetic import ProviderSpec, SyntheticConfig, write_runs
from analysis.compare import main

pytestmark = pytest.mark.timeout(120)


def _keep_answers(run: Path, keep: set[str]) -> None:
    """Cut a synthetic run down to the questions in ``keep`` (trajectories and scores)."""
    for name in ("trajectories.jsonl", *(f"scores/{p.name}" for p in (run / "scores").iterdir())):
        path = run / name
        lines = [
            line
            for line in path.read_text().splitlines()
            if json.loads(line)["question_id"] in keep
        ]
        path.write_text("".join(line + "\n" for line in lines))


def _runs(tmp_path: Path, keep_b: int) -> list[Path]:
    config = SyntheticConfig(
        [ProviderSpec("A"), ProviderSpec("B", effect=0.3)],
        questions={"obligations": 12, "entity_performance": 12, "business_brief": 12},
        seed=3,
        research_keys=True,
    )
    runs = write_runs(tmp_path / "runs", config)
    ids = [json.loads(x)["question_id"] for x in (runs[1] / "trajectories.jsonl").open()]
    by_task: dict[str, list[str]] = {}
    for qid in ids:
        by_task.setdefault(qid.split("-")[0], []).append(qid)
    keep = {q for task, qs in by_task.items() for q in qs[: keep_b if task == "bus" else 12]}
    _keep_answers(runs[1], keep)
    return runs


def _stats(tmp_path: Path, runs: list[Path], *extra: str) -> dict:
    out = tmp_path / "out"
    argv = [*map(str, runs), "--out", str(out), "--bootstrap", "50", "--quiet", *extra]
    assert main(argv) == 0
    return json.loads((out / "stats.json").read_text()) | {"_md": (out / "report.md").read_text()}


@pytest.mark.parametrize("model", [m.value for m in ModelKind])
def test_one_answer_run_is_not_tested_anywhere(tmp_path: Path, model: str):
    runs = _runs(tmp_path, keep_b=12)
    _keep_answers(
        runs[1], {json.loads(next(iter((runs[1] / "trajectories.jsonl").open())))["question_id"]}
    )
    stats = _stats(tmp_path, runs, "--model", model)
    contrasts = [c for m in stats["models"] for c in m["contrasts"]]
    assert contrasts
    assert not [c for c in contrasts if c["tested"]]
    assert all(c["p_value"] is None and c["significance"] == "" for c in contrasts)
    assert all(c["not_tested_reason"] for c in contrasts)
    headline_b = stats["headline"][1]
    for metric, cell in headline_b.items():
        if isinstance(cell, dict):
            assert cell["tested"] is not True and cell["significance"] == "", metric
    summary = stats["_md"].split("**B** vs A", 1)[1].splitlines()[0]
    assert "not tested" in summary and "significant" not in summary.replace("not tested", "")


def test_one_task_type_below_the_minimum_stops_it_and_the_equal_weight(tmp_path: Path):
    runs = _runs(tmp_path, keep_b=4)  # 4 paired briefs, minimum 5
    stats = _stats(tmp_path, runs)
    contrasts = [c for m in stats["models"] for c in m["contrasts"]]
    metrics = {c["metric"] for c in contrasts}
    assert {"overall", "clarity", "research_accuracy", "citation_recall"} <= metrics
    for c in contrasts:
        if c["scope"] in ("business_brief", EQUAL_WEIGHT) and "business_brief" in (
            c["task_types"] or [c["scope"]]
        ):
            assert not c["tested"], (c["metric"], c["scope"])
            paired = re.search(r"have (\d+) paired", c["not_tested_reason"])
            assert paired and int(paired.group(1)) <= 4, c["not_tested_reason"]
            assert "at least 5 are needed" in c["not_tested_reason"]
        elif c["scope"] in ("obligations", "entity_performance"):
            assert c["tested"], (c["metric"], c["scope"])
    # Five paired answers are enough: the same contrasts are tested.
    stats = _stats(tmp_path, _runs(tmp_path / "five", keep_b=5))
    overall = next(
        c
        for m in stats["models"]
        for c in m["contrasts"]
        if c["metric"] == "overall" and c["scope"] == EQUAL_WEIGHT
    )
    assert overall["tested"] and overall["p_value"] is not None
