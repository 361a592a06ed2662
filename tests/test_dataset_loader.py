"""Loading, validating, hashing and merging datasets; the published FORCE-Bench file."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from ledgerbench.dataset._cli import main as dataset_cli
from ledgerbench_core.dataset import (
    Dataset,
    DatasetError,
    DatasetHeader,
    Dimension,
    Question,
    TaskType,
    build_tags,
    dataset_hash,
    load_dataset,
    write_dataset,
)

pytestmark = pytest.mark.timeout(60)


def _item(item_id: str, **overrides) -> dict:
    tags = build_tags(
        TaskType.obligations, scenario="Credit Limit", records=1, ground_truth="Limit 5,000."
    )
    item = {
        "id": item_id,
        "query": "What is the credit limit of SYNCUS-0001 in USMF as of March 2, 2026?",
        "task_type": "obligations",
        "segment": "AR",
        "scenario": "Credit Limit",
        "as_of": "2026-03-02",
        "legal_entity": "USMF",
        "tags": {
            dim.value: [a.model_dump() for a in assertions] for dim, assertions in tags.items()
        },
        "ground_truth": "Limit 5,000.",
        "expected": [{"kind": "amount", "field": "credit_limit", "value": 5000.0}],
        "record_refs": ["/erp/USMF/customers/SYNCUS-0001"],
    }
    item.update(overrides)
    return item


def _write(path: Path, items: list[dict], **header) -> Path:
    document = {"header": {"name": path.stem, **header}, "items": items}
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


# ---- published format --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def published(reference_dir: Path) -> Dataset:
    return load_dataset(reference_dir / "force-bench" / "dataset.yaml")


def test_published_file_loads_with_the_paper_counts(published: Dataset) -> None:
    assert len(published.items) == 251
    counts = Counter(item.task_type for item in published.items)
    assert counts == {
        TaskType.obligations: 100,
        TaskType.entity_performance: 126,
        TaskType.business_brief: 25,
    }
    segments = Counter(item.segment for item in published.items if item.task_type == "obligations")
    assert segments == {"AR": 72, "AP": 28}


def test_published_items_get_stable_unique_ids(published: Dataset) -> None:
    ids = [item.id for item in published.items]
    assert len(set(ids)) == 251
    assert ids[0] == "fb-erp_qa-001"
    assert "fb-finance_qa-126" in ids and "fb-business_brief-025" in ids


def test_published_repeated_tags_are_merged_without_duplicates(
    published: Dataset, reference_dir: Path
) -> None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raw = yaml.load((reference_dir / "force-bench" / "dataset.yaml").read_text(), Loader=loader)
    assert [t["tag"] for t in raw[0]["tags"]].count("depth") == 2  # the defect being fixed
    for item in published.items:
        for dimension, assertions in item.tags.items():
            texts = [" ".join(a.text.split()) for a in assertions]
            assert len(texts) == len(set(texts)), (item.id, dimension)
    first = published.items[0]
    assert len(first.tags[Dimension.depth]) == 2


def test_published_ground_truth_and_context_are_extracted(published: Dataset) -> None:
    obligations = [item for item in published.items if item.task_type == "obligations"]
    assert all(item.ground_truth for item in obligations)
    first = obligations[0]
    assert first.ground_truth.startswith("The credit limit for A. Datum Corporation SYNCUS-0001")
    assert str(first.as_of) == "2026-03-02" and first.legal_entity == "USMF"
    others = [item for item in published.items if item.task_type != "obligations"]
    assert all(Dimension.accuracy not in item.tags for item in others)
    scenarios = {item.scenario for item in obligations}
    assert len(scenarios) == 21 and "Cash Discounts" in scenarios
    kinds = {item.segment for item in published.items if item.task_type == "business_brief"}
    assert kinds == {
        "Business Brief",
        "Company Overview",
        "Corporate Profile",
        "Executive Snapshot",
        "Highlights",
    }


# ---- our format --------------------------------------------------------------------------------


def test_round_trip_keeps_contents_and_hash(tmp_path: Path) -> None:
    dataset = load_dataset(_write(tmp_path / "a.yaml", [_item("q-1"), _item("q-2")]))
    copy = load_dataset(write_dataset(dataset, tmp_path / "b.yaml"))
    assert copy == dataset
    assert dataset_hash(copy) == dataset_hash(dataset)
    assert len(dataset_hash(dataset)) == 64


def test_hash_changes_with_any_item_or_header_change(tmp_path: Path) -> None:
    dataset = load_dataset(_write(tmp_path / "a.yaml", [_item("q-1")]))
    base = dataset_hash(dataset)
    changed_item = dataset.model_copy(deep=True)
    changed_item.items[0].expected[0].value = 5000.01
    changed_header = dataset.model_copy(deep=True)
    changed_header.header.generator_seed = 7
    assert dataset_hash(changed_item) != base
    assert dataset_hash(changed_header) != base


def test_validation_reports_every_problem_with_item_ids(tmp_path: Path) -> None:
    items = [
        _item("ok-1"),
        _item("bad-kind", task_type="opinions"),
        _item("dup"),
        _item("dup"),
        _item("bad-ref", record_refs=["https://example.com/not-a-record"]),
        _item("bad-top", expected=[{"kind": "top_n", "field": "customers", "value": "SYNCUS-1"}]),
        {"query": "no id and no task type"},
        _item(
            "research-with-accuracy",
            task_type="entity_performance",
            segment="Peers",
            expected=[],
            ground_truth=None,
        ),
    ]
    with pytest.raises(DatasetError) as caught:
        load_dataset(_write(tmp_path / "bad.yaml", items))
    problems = "\n".join(caught.value.problems)
    assert "item bad-kind: task_type" in problems
    assert "item dup: duplicate id" in problems
    assert "item bad-ref: record_ref 'https://example.com/not-a-record'" in problems
    assert "item bad-top: expected customers: top_n needs a list value" in problems
    assert "item #7 (no id): id: Field required" in problems
    assert (
        "item research-with-accuracy: accuracy tag on a entity_performance item without a key"
        in (problems)
    )
    assert "ok-1" not in problems
    assert "bad-kind" in str(caught.value)


def test_a_research_item_keyed_on_a_world_may_carry_accuracy(tmp_path: Path) -> None:
    keyed = _item(
        "keyed",
        task_type="entity_performance",
        segment="Peers",
        gold_documents=["https://world.ledgerbench.test/w0123456789/docs/d0123456789ab"],
    )
    dataset = load_dataset(_write(tmp_path / "keyed.yaml", [keyed]))
    assert dataset.items[0].expected and dataset.items[0].ground_truth
    unkeyed = _item("unkeyed", task_type="entity_performance", segment="Peers")
    unkeyed["tags"] = {"relevance": [{"id": "relevance.on_topic", "text": "On topic."}]}
    with pytest.raises(DatasetError) as caught:
        load_dataset(_write(tmp_path / "unkeyed.yaml", [unkeyed]))
    assert "ground_truth/expected on a entity_performance item with no accuracy tag" in "\n".join(
        caught.value.problems
    )


def test_obligation_item_with_recency_or_wrong_segment_is_rejected(tmp_path: Path) -> None:
    recency = {"recency": [{"id": "recency.dated", "text": "dated"}]}
    item = _item("obl-1", segment="Peers")
    item["tags"].update(recency)
    with pytest.raises(DatasetError) as caught:
        load_dataset(_write(tmp_path / "bad.yaml", [item]))
    assert any("segment 'Peers' is not AR or AP" in p for p in caught.value.problems)
    assert any("recency tag on an obligations item" in p for p in caught.value.problems)


def test_not_a_dataset_and_missing_files_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset(tmp_path / "nope.yaml")
    (tmp_path / "x.yaml").write_text("just: a mapping\n")
    with pytest.raises(DatasetError, match="not a dataset"):
        load_dataset(tmp_path / "x.yaml")
    (tmp_path / "y.yaml").write_text("header: [unclosed\n")
    with pytest.raises(DatasetError, match="not valid YAML"):
        load_dataset(tmp_path / "y.yaml")


# ---- directories ---------------------------------------------------------------------------------


def test_directory_merges_files_and_keeps_the_one_erp_hash(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", [_item("a-1")], erp_snapshot_hash="abc", generator_seed=42)
    research = Question(
        id="r-1",
        query="Compare Deere and Caterpillar on FY2024 operating margin.",
        task_type=TaskType.entity_performance,
        segment="Peers & Competitive Positioning",
        scenario="peer comparison",
        tags=build_tags(TaskType.entity_performance, scenario="peer comparison", period="FY2024"),
    )
    write_dataset(Dataset(header=DatasetHeader(name="b"), items=[research]), tmp_path / "b.yaml")
    (tmp_path / "notes.md").write_text("ignored")
    merged = load_dataset(tmp_path)
    assert [item.id for item in merged.items] == ["a-1", "r-1"]
    assert merged.header.erp_snapshot_hash == "abc"
    assert merged.header.generator_seed == 42


def test_directory_with_disagreeing_erp_hashes_or_repeated_ids_fails(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", [_item("a-1")], erp_snapshot_hash="abc")
    _write(tmp_path / "b.yaml", [_item("a-1")], erp_snapshot_hash="def")
    with pytest.raises(DatasetError) as caught:
        load_dataset(tmp_path)
    problems = "\n".join(caught.value.problems)
    assert "disagree on erp_snapshot_hash (abc, def)" in problems
    assert "item a-1: id appears in more than one file" in problems


# ---- CLI -----------------------------------------------------------------------------------------


def test_cli_validate_and_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _write(tmp_path / "good.yaml", [_item("q-1"), _item("q-2", segment="AP")])
    assert dataset_cli(["validate", str(good)]) == 0
    assert "valid, 2 items" in capsys.readouterr().out
    assert dataset_cli(["info", str(good)]) == 0
    out = capsys.readouterr().out
    assert "obligations / AP" in out and "obligations / Credit Limit" in out
    assert f"hash: {dataset_hash(load_dataset(good))}" in out
    bad = _write(tmp_path / "bad.yaml", [_item("q-1"), _item("q-1")])
    assert dataset_cli(["validate", str(bad)]) == 2
    captured = capsys.readouterr()
    assert "item q-1: duplicate id" in captured.out
    assert dataset_cli(["info", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err


def test_cli_reads_the_published_file(reference_dir: Path, capsys) -> None:
    path = reference_dir / "force-bench" / "dataset.yaml"
    assert dataset_cli(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "entity_performance    126" in out and "obligations / Aged Balance" in out


@pytest.mark.parametrize("command", ["validate", "info", "build-research"])
def test_every_subcommand_has_help_with_an_example(command: str, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        dataset_cli([command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "Example" in out or "example" in out
