"""The rubric rules of the benchmark, as build_tags applies them."""

from __future__ import annotations

import pytest

from ledgerbench_core.dataset import Dimension, TaskType, build_tags
from ledgerbench_core.dataset import _rubric as rubric

pytestmark = pytest.mark.timeout(30)


def _ids(tags) -> dict[str, list[str]]:
    return {dimension.value: [a.id for a in assertions] for dimension, assertions in tags.items()}


def test_accuracy_only_for_obligations_and_recency_never_for_them() -> None:
    obligation = build_tags(
        TaskType.obligations, scenario="Aged Balance", records=1, ground_truth="Balance USD 10.00"
    )
    research = build_tags(TaskType.entity_performance, scenario="peers", period="FY2024")
    brief = build_tags(TaskType.business_brief, scenario="Business Brief")
    assert Dimension.accuracy in obligation and Dimension.recency not in obligation
    assert Dimension.accuracy not in research and Dimension.recency in research
    assert Dimension.accuracy not in brief and Dimension.recency in brief
    assert "Balance USD 10.00" in obligation[Dimension.accuracy][0].text
    assert "FY2024" in " ".join(a.text for a in research[Dimension.recency])


def test_citations_differ_by_task_type() -> None:
    obligation = build_tags(
        TaskType.obligations, scenario="Vendors", ground_truth="x", segment="AP"
    )
    research = build_tags(TaskType.entity_performance, scenario="peers")
    assert _ids(obligation)["citations"] == ["citations.erp_link"]
    assert "vendor" in obligation[Dimension.citations][0].text
    assert _ids(research)["citations"] == ["citations.named_source"]


def test_table_required_only_for_two_or_more_records() -> None:
    def structure(records: int) -> list[str]:
        tags = build_tags(
            TaskType.obligations, scenario="Sales Orders", records=records, ground_truth="x"
        )
        return _ids(tags)["structure"]

    assert "structure.table_for_many" not in structure(0)
    assert "structure.table_for_many" not in structure(1)
    assert "structure.table_for_many" in structure(2)


def test_erp_tool_failure_fails_relevance_where_the_erp_is_needed() -> None:
    obligation = build_tags(TaskType.obligations, scenario="Dispute", ground_truth="none")
    assert "relevance.erp_reached" in _ids(obligation)["relevance"]
    grounded = build_tags(TaskType.business_brief, scenario="Highlights", erp_grounded=True)
    assert "relevance.erp_reached_ar_ap" in _ids(grounded)["relevance"]
    research = build_tags(TaskType.entity_performance, scenario="peers")
    assert not any("erp" in i for i in _ids(research)["relevance"])


def test_none_answers_get_the_absence_assertion() -> None:
    none = build_tags(TaskType.obligations, scenario="Dispute", records=0, ground_truth="none")
    some = build_tags(TaskType.obligations, scenario="Dispute", records=1, ground_truth="one")
    assert "depth.absence_stated" in _ids(none)["depth"]
    assert "depth.absence_stated" not in _ids(some)["depth"]


def test_every_published_scenario_has_specific_depth() -> None:
    from synthetic_erp._questions import SCENARIO_WEIGHTS

    assert set(rubric.SCENARIO_DEPTH) == set(SCENARIO_WEIGHTS)
    for scenario in SCENARIO_WEIGHTS:
        tags = build_tags(TaskType.obligations, scenario=scenario, ground_truth="x")
        assert len(tags[Dimension.depth]) >= 2


def test_brief_sections_follow_the_request_kind() -> None:
    full = _ids(build_tags(TaskType.business_brief, scenario="Business Brief"))["depth"]
    snapshot = _ids(build_tags(TaskType.business_brief, scenario="Executive Snapshot"))["depth"]
    assert len(full) == 9 and "depth.section_ar_ap" in full
    assert set(snapshot) < set(full) and "depth.section_ar_ap" in snapshot


def test_assertion_ids_are_unique_within_each_dimension() -> None:
    for tags in (
        build_tags(TaskType.obligations, scenario="Aged Balance", records=3, ground_truth="x"),
        build_tags(TaskType.entity_performance, scenario="p", comparison=True, global_context=True),
        build_tags(TaskType.business_brief, scenario="Company Overview", erp_grounded=True),
    ):
        for assertions in tags.values():
            ids = [a.id for a in assertions]
            assert len(ids) == len(set(ids))
            assert all(i.split(".")[0] in {d.value for d in Dimension} for i in ids)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="ground_truth"):
        build_tags(TaskType.obligations, scenario="Aged Balance")
    with pytest.raises(ValueError, match="unknown obligation scenario"):
        build_tags(TaskType.obligations, scenario="Astrology", ground_truth="x")
    with pytest.raises(ValueError, match="unknown brief kind"):
        build_tags(TaskType.business_brief, scenario="Poem")


def test_rubric_version_tracks_the_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    assert rubric.rubric_version() == rubric.RUBRIC_VERSION
    monkeypatch.setitem(rubric.COMMON, "clarity.acronyms", "Different wording.")
    assert rubric.rubric_version() != rubric.RUBRIC_VERSION


def test_misspelled_and_missing_parties_get_a_reference_check() -> None:
    resolved = build_tags(
        TaskType.obligations,
        scenario="Credit Limit",
        ground_truth="x",
        given_name="Graves & Goordon",
        resolved_name="Graves & Gordon (SYNCUS-0611)",
    )
    text = next(
        a.text for a in resolved[Dimension.relevance] if a.id.endswith("resolves_reference")
    )
    assert "'Graves & Goordon'" in text and "SYNCUS-0611" in text
    missing = build_tags(
        TaskType.obligations,
        scenario="Vendors",
        segment="AP",
        ground_truth="none",
        given_name="Kestrelmoor Partners",
    )
    ids = [a.id for a in missing[Dimension.relevance]]
    assert "relevance.no_substitute" in ids and "relevance.resolves_reference" not in ids
    assert "vendor called 'Kestrelmoor Partners'" in missing[Dimension.relevance][-1].text
    plain = build_tags(TaskType.obligations, scenario="Vendors", ground_truth="x")
    assert len(plain[Dimension.relevance]) == len(missing[Dimension.relevance]) - 1
