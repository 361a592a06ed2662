"""Importing published FORCE-Bench evaluation files (``eval_results_*.json``) as providers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from analysis import InputError, load_provider
from analysis._synthetic import ProviderSpec, SyntheticConfig, write_runs
from analysis.compare import main

pytestmark = pytest.mark.timeout(120)


def score_of(provider, qid: str, metric: str) -> tuple[str, float]:
    scores = provider.scores
    row = scores[(scores["question_id"] == qid) & (scores["metric"] == metric)]
    assert len(row) == 1, (qid, metric)
    return row["status"].iloc[0], float(row["score"].iloc[0])


def test_results_list_on_a_0_100_scale_with_answers_file(tmp_path: Path):
    results = {
        "model": "finance-agent-v1",
        "results": [
            {
                "question_id": "obl-1",
                "plugin": "erp_qa",
                "scenario": "Credit Limit",
                "scores": {
                    "accuracy": 75,
                    "citations": {"score": 100},
                    "clarity": None,
                    "groundedness": "parse error",
                    "unknown_metric": 50,
                },
            },
            {
                "question_id": "perf-1",
                "plugin": "finance_qa",
                "scores": {"recency": 50, "relevance": [100, 50, None]},
                "overall": 80,
            },
        ],
    }
    (tmp_path / "eval_results_fa.json").write_text(json.dumps(results))
    answers = [
        {"question_id": "obl-1", "latency_s": 42.5, "tool_calls": [{"name": "a"}, {"name": "b"}]},
        {"question_id": "perf-1", "latency": 61.0, "tool_calls": 3, "timed_out": True},
    ]
    (tmp_path / "answers_fa.json").write_text(json.dumps(answers))

    provider = load_provider(tmp_path / "eval_results_fa.json", judge=None)

    assert provider.info.name == "finance-agent-v1" and provider.info.source == "published"
    assert score_of(provider, "obl-1", "accuracy") == ("scored", 0.75)
    assert score_of(provider, "obl-1", "citations") == ("scored", 1.0)
    assert score_of(provider, "obl-1", "clarity")[0] == "not_applicable"
    assert score_of(provider, "obl-1", "groundedness")[0] == "judge_error"
    assert math.isnan(score_of(provider, "obl-1", "groundedness")[1])
    # overall absent: mean of the scored dimensions (0.75 and 1.0).
    assert score_of(provider, "obl-1", "overall") == ("scored", pytest.approx(0.875))
    assert score_of(provider, "perf-1", "relevance") == ("scored", pytest.approx(0.75))
    assert score_of(provider, "perf-1", "overall") == ("scored", pytest.approx(0.8))
    assert "unknown_metric" not in set(provider.scores["metric"])
    traj = provider.trajectories.set_index("question_id")
    assert traj.loc["obl-1", "latency_s"] == 42.5 and traj.loc["obl-1", "tool_calls"] == 2
    assert traj.loc["perf-1", "status"] == "timeout" and traj.loc["perf-1", "tool_calls"] == 3
    assert traj.loc["perf-1", "task_type"] == "entity_performance"
    assert provider.scenarios == {"obl-1": "Credit Limit"}
    assert any("0-100 scale" in c for c in provider.caveats)


def test_plain_list_with_tag_assertions_and_no_answers_file(tmp_path: Path):
    items = [
        {
            "id": "b-1",
            "type": "business_brief",
            "tags": [
                {"tag": "depth", "assertions": [{"score": 1.0}, {"score": 0.5}, {"score": None}]},
                {"tag": "structure", "score": 0.25},
            ],
        }
    ]
    path = tmp_path / "eval_results_briefs.json"
    path.write_text(json.dumps(items))
    provider = load_provider(path, judge=None)
    assert provider.info.name == "briefs"
    assert score_of(provider, "b-1", "depth") == ("scored", 0.75)
    assert score_of(provider, "b-1", "structure") == ("scored", 0.25)
    assert any("no answers file" in c for c in provider.caveats)
    assert math.isnan(provider.trajectories["latency_s"].iloc[0])


def test_mapping_of_ids_with_dimensions_as_keys(tmp_path: Path):
    data = {"q7": {"plugin": "erp_qa", "accuracy": 1, "structure": 0.5, "latency_s": 12}}
    path = tmp_path / "eval_results_m.json"
    path.write_text(json.dumps(data))
    provider = load_provider(path, judge=None)
    assert score_of(provider, "q7", "accuracy") == ("scored", 1.0)
    assert provider.trajectories["latency_s"].iloc[0] == 12


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"something": 1}, "no evaluation items"),
        ([{"question_id": "x", "plugin": "poetry", "scores": {}}], "item x has task type 'poetry'"),
        ("not json at all {", "not valid JSON"),
        (
            [{"id": "x", "plugin": "erp_qa", "accuracy": 1}, {"id": "x", "plugin": "erp_qa"}],
            "question id x appears more than once",
        ),
    ],
)
def test_bad_published_files_name_the_problem(tmp_path: Path, content, message):
    path = tmp_path / "eval_results_bad.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(InputError, match=message):
        load_provider(path, judge=None)


def test_published_file_sits_next_to_a_run_in_the_report(tmp_path: Path, capsys):
    questions = {"obligations": 12, "entity_performance": 8}
    (run,) = write_runs(
        tmp_path / "runs", SyntheticConfig([ProviderSpec("ours")], questions=questions, seed=2)
    )
    ours = load_provider(run, "rules")
    ids = ours.trajectories[["question_id", "task_type"]].to_numpy()
    upstream = {"erp_qa": "obligations", "finance_qa": "entity_performance"}
    to_plugin = {v: k for k, v in upstream.items()}
    items = [
        {
            "question_id": qid,
            "plugin": to_plugin[task],
            "scores": {"citations": 0.9, "clarity": 0.8, "relevance": 0.85 - 0.01 * (i % 5)},
        }
        for i, (qid, task) in enumerate(ids)
    ]
    published = tmp_path / "eval_results_paper.json"
    published.write_text(json.dumps({"results": items}))
    out = tmp_path / "report"
    code = main([str(run), str(published), "--out", str(out), "--bootstrap", "100", "--quiet"])
    assert code == 0, capsys.readouterr().err
    stats = json.loads((out / "stats.json").read_text())
    assert [p["name"] for p in stats["providers"]] == ["ours", "paper"]
    assert stats["providers"][1]["source"] == "published"
    clarity = next(
        c
        for m in stats["models"]
        if m["metric"] == "clarity"
        for c in m["contrasts"]
        if c["scope"] == "equal_weight"
    )
    assert clarity["provider"] == "paper" and clarity["tested"]
    report = (out / "report.md").read_text()
    assert "imported from the published file eval_results_paper.json" in report
