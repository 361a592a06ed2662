"""The authored research and brief sets: counts, periods, tags, ERP grounding, committed files."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from ledgerbench.dataset._cli import main as dataset_cli
from ledgerbench.dataset._research import (
    BRIEF_REQUESTS,
    SEGMENT_COUNTS,
    business_brief_items,
    core_name,
    entity_performance_items,
    erp_party_paths,
)
from ledgerbench_core.dataset import Dimension, dataset_to_yaml, load_dataset
from ledgerbench_core.dataset._rubric import BRIEF_KIND_SECTIONS

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[1]
PERIOD = re.compile(r"FY20\d\d|fiscal 20\d\d|(September|June) 20\d\d quarter|half of 20\d\d|20\d\d")


def test_research_set_has_the_published_segment_split() -> None:
    items = entity_performance_items()
    assert len(items) >= 120
    assert Counter(item.segment for item in items) == SEGMENT_COUNTS
    assert len({item.id for item in items}) == len(items)
    assert len({item.query for item in items}) == len(items)


def test_every_research_question_names_a_period_and_a_reason() -> None:
    for item in entity_performance_items():
        assert PERIOD.search(item.query), item.query
        assert item.metadata["reason"] in item.query
        assert item.query.rstrip().endswith((".", "?"))


def test_research_tags_have_no_accuracy_and_fit_the_question() -> None:
    for item in entity_performance_items():
        assert Dimension.accuracy not in item.tags
        assert {Dimension.recency, Dimension.citations, Dimension.depth} <= set(item.tags)
        depth = [a.id for a in item.tags[Dimension.depth]]
        assert "depth.requested_metrics" in depth
        recency = " ".join(a.text for a in item.tags[Dimension.recency])
        assert item.metadata["period"] in recency
        peers = item.segment.startswith("Peers")
        assert ("depth.comparative" in depth) or not peers


def test_briefs_cover_the_five_kinds_with_section_depth() -> None:
    items = business_brief_items()
    assert len(items) >= 25
    kinds = Counter(item.segment for item in items)
    assert set(kinds) == set(BRIEF_KIND_SECTIONS)
    for item in items:
        sections = [a.id for a in item.tags[Dimension.depth] if a.id.startswith("depth.section_")]
        assert sections == list(BRIEF_KIND_SECTIONS[item.segment])
        assert Dimension.accuracy not in item.tags


def test_brief_is_grounded_when_its_company_is_in_the_erp() -> None:
    company = BRIEF_REQUESTS[0][1]
    paths = {core_name(company): ["/erp/USMF/vendors/SYNVEN-0042"]}
    items = business_brief_items(paths)
    grounded = [item for item in items if item.record_refs]
    assert [item.metadata["company"] for item in grounded] == [company]
    ids = [a.id for assertions in grounded[0].tags.values() for a in assertions]
    assert "citations.erp_link_ar_ap" in ids and "relevance.erp_reached_ar_ap" in ids
    assert core_name("Caterpillar Inc.") == core_name("caterpillar") == "caterpillar"


def test_erp_party_paths_reads_customers_and_vendors(erp_db_url: str) -> None:
    paths = erp_party_paths(erp_db_url)
    every = [p for group in paths.values() for p in group]
    assert len(every) == 2000
    assert any("/customers/" in p for p in every) and any("/vendors/" in p for p in every)


def test_build_research_cli_writes_loadable_files(tmp_path: Path, capsys) -> None:
    assert dataset_cli(["build-research", "--out", str(tmp_path)]) == 0
    assert "entity_performance_web.yaml" in capsys.readouterr().out
    merged = load_dataset(tmp_path)
    assert Counter(item.task_type.value for item in merged.items) == {
        "entity_performance": 126,
        "business_brief": len(BRIEF_REQUESTS),
    }
    assert dataset_cli(["build-research", "--out", str(tmp_path), "--db", "sqlite:///nope.db"]) == 2


def test_committed_research_files_match_the_builder() -> None:
    committed = load_dataset(REPO / "datasets" / "web" / "entity_performance_web.yaml")
    assert [i.query for i in committed.items] == [i.query for i in entity_performance_items()]
    briefs = load_dataset(REPO / "datasets" / "web" / "business_briefs_web.yaml")
    assert [i.query for i in briefs.items] == [i.query for i in business_brief_items()]
    assert dataset_to_yaml(committed).count("accuracy") == 0


def test_committed_briefs_are_grounded_in_the_default_erp(erp_db_url: str) -> None:
    committed = load_dataset(REPO / "datasets" / "web" / "business_briefs_web.yaml")
    fresh = business_brief_items(erp_party_paths(erp_db_url))
    assert [i.record_refs for i in committed.items] == [i.record_refs for i in fresh]
    grounded = [i for i in committed.items if i.record_refs]
    assert len(grounded) >= 3
    assert {i.segment for i in grounded} >= {"Business Brief", "Company Overview"}
    obligations = load_dataset(REPO / "datasets" / "obligations.yaml")
    assert committed.header.erp_snapshot_hash == obligations.header.erp_snapshot_hash


def test_the_datasets_directory_loads_as_one_dataset() -> None:
    merged = load_dataset(REPO / "datasets")
    counts = Counter(item.task_type.value for item in merged.items)
    assert counts["obligations"] >= 100 and counts["entity_performance"] >= 120
    assert counts["business_brief"] >= 25
    assert merged.header.erp_snapshot_hash
