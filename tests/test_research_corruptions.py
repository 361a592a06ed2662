"""Corrupted research answers lose accuracy; legitimate rewrites keep it.

The scripted agent's right answers on the small world are corrupted in every wrong way of
``tests/research_corruptions.py`` (the figures of a careless reading, and the claims of issue 37:
"not yet reported" beside a figure, "yes, no doubt", "another reading", late sources, canned
replies) and rewritten in every right way, then judged by the rules judge: every wrong kind must
be caught in at least 95% of the answers it touched (a canned reply must score 0), every right
kind must keep accuracy and citations in all of them.
"""

from __future__ import annotations

import json

import pytest

from judge._rules import RulesJudge
from ledgerbench_core.dataset import load_dataset
from ledgerbench_core.trajectory import TrajectoryRecord
from tests import research_corruptions as rc
from tests.world_fixtures import question_set, scripted_run, shared_folder, small_world

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def pairs(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str):
    folder = shared_folder(tmp_path_factory, worker_id, "world")
    world = small_world(erp_db_url, folder)
    # the corruptions rewrite one key figure: single-fact items (analyst_share 0) carry one; 168
    # of them hold at least three of every kind a corruption needs (restated keys are the rarest)
    dataset = question_set(world, erp_db_url, folder, "entity_performance", 168, analyst_share=0)
    out = scripted_run(dataset, world, erp_db_url, folder)
    items = {item.id: item for item in load_dataset(dataset).items}
    records = [
        TrajectoryRecord.model_validate_json(line)
        for line in (out / "trajectories.jsonl").read_text().splitlines()
    ]
    return world, [(items[r.question_id], r) for r in records]


def test_wrong_research_figures_lose_accuracy_and_right_rewrites_keep_it(pairs) -> None:
    world, answered = pairs
    judge = RulesJudge(world_db=str(world))
    ledger = rc.Ledger.open(world)
    baseline = [q.id for q, r in answered if rc.accuracy(judge, q, r, r.answer) < 1.0]
    assert not baseline, f"right answers judged wrong before any corruption: {baseline}"
    wrong = rc.measure(answered, judge, ledger, rc.WRONG)
    right = rc.measure(answered, judge, ledger, rc.RIGHT)
    report = rc.table(wrong, right)
    rare_measured = [name for name in rc.RARE if wrong[name].touched]
    assert rare_measured, f"no rare kind touched an answer of this set\n{report}"
    for name, tally in wrong.items():
        if name in rc.RARE and not tally.touched:
            continue  # this draw holds no item of the kind (bench_research_corruptions: 1-2)
        assert tally.touched >= (1 if name in rc.RARE else 3), f"{name}: too few\n{report}"
        assert tally.lost / tally.touched >= 0.95, f"{name}\n{report}"
    for name, tally in right.items():
        assert tally.touched >= 3, f"{name} touched too few answers to measure\n{report}"
        assert tally.lost == 0, f"{name}: {tally.examples}\n{report}"
    print(json.dumps({"table": report}))
