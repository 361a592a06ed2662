"""The scenarios and metadata of a run's items, read from the dataset the run names."""

from __future__ import annotations

from pathlib import Path

from ledgerbench_core.dataset._loader import find_run_dataset, load_dataset, raw_items


def dataset_scenarios(
    dataset_path: str, run_dir: Path
) -> tuple[dict[str, str], list[str], dict[str, dict[str, str]]]:
    """question_id -> scenario and -> scalar item metadata from the run's dataset; a caveat
    instead when it cannot be read."""
    path = find_run_dataset(dataset_path, run_dir)
    if path is None:
        return (
            {},
            [f"{run_dir}: dataset {dataset_path} not found; obligation scenarios unknown."],
            {},
        )
    try:
        dataset = load_dataset(path)
    except Exception as exc:  # a dataset that fails validation can still name its scenarios
        items = list(raw_items(path))
        scenarios = {
            str(item["id"]): str(item["scenario"]) for item in items if item.get("scenario")
        }
        metadata = {str(item["id"]): item_scalars(item.get("metadata")) for item in items}
        if scenarios:
            return scenarios, [], metadata
        return (
            {},
            [f"{run_dir}: dataset {path} could not be read ({exc}); scenarios unknown."],
            metadata,
        )
    scenarios = {item.id: item.scenario for item in dataset.items}
    return scenarios, [], {item.id: item_scalars(item.metadata) for item in dataset.items}


def item_scalars(metadata: object) -> dict[str, str]:
    if not isinstance(metadata, dict):
        return {}
    return {str(k): str(v) for k, v in metadata.items() if isinstance(v, str | int | float | bool)}


__all__ = ["dataset_scenarios", "item_scalars"]
