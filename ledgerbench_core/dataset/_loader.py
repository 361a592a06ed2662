"""Loading, checking, hashing and writing datasets.

Three inputs load into one :class:`Dataset`: our YAML format (a mapping with ``header`` and
``items``), the published FORCE-Bench list format, and a directory
whose ``*.yaml`` files are merged.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ledgerbench_core.dataset._published import convert_published, is_published_format
from ledgerbench_core.dataset._records import (
    Dataset,
    DatasetHeader,
    Dimension,
    ExpectedFact,
    Question,
    TaskType,
)
from ledgerbench_core.record_links import parse_record_url

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

OBLIGATION_SEGMENTS = ("AR", "AP")


class DatasetError(ValueError):
    """A dataset that cannot be used; ``problems`` lists every problem, each naming its item id."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        shown = "; ".join(problem.removeprefix(f"{source}: ") for problem in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"{source}: {shown}{more}")


# ----------------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------------


def load_dataset(path: str | Path) -> Dataset:
    """The dataset at ``path``: one YAML file (ours or the published list format) or a directory.

    Raises :class:`DatasetError` listing every problem (with item ids) when anything is wrong.
    """
    dataset, problems = check_dataset_path(path)
    if problems or dataset is None:
        raise DatasetError(str(path), problems or ["no dataset found"])
    return dataset


def check_dataset_path(path: str | Path) -> tuple[Dataset | None, list[str]]:
    """The dataset at ``path`` (None when it cannot be built) and every problem found in it."""
    path = Path(path)
    if path.is_dir():
        return _check_directory(path)
    if not path.exists():
        return None, [f"{path} does not exist; pass a dataset YAML file or a directory of them"]
    return _check_file(path)


def dataset_files(path: str | Path) -> list[Path]:
    """The YAML files a dataset path stands for: the file itself, or a directory's ``*.yaml``."""
    path = Path(path)
    return sorted(path.glob("*.yaml")) if path.is_dir() else [path]


def find_run_dataset(
    recorded: str | Path | None, run_dir: Path, override: Path | None = None
) -> Path | None:
    """The dataset (a file or a directory) a run used, or None when it cannot be found.

    ``override`` (a ``--dataset`` flag) wins when given; otherwise the path the run manifest
    recorded, as written, then relative to the run directory and to the folder holding it (a run
    copied elsewhere with its dataset beside it).
    """
    if override is not None:
        return override if override.exists() else None
    if not recorded:
        return None
    recorded = Path(recorded)
    candidates = [recorded]
    if not recorded.is_absolute():
        candidates += [run_dir / recorded, run_dir.parent / recorded]
    return next((path for path in candidates if path.exists()), None)


def raw_items(path: str | Path) -> list[dict[str, Any]]:
    """Items read straight from the YAML of a dataset file or directory, without validation (for
    showing questions of a dataset that no longer validates); [] when nothing can be read."""
    items: list[dict[str, Any]] = []
    for file in dataset_files(path):
        try:
            raw = yaml.load(file.read_text(encoding="utf-8"), Loader=_Loader)
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            continue
        found = raw.get("items") if isinstance(raw, dict) else None
        if isinstance(found, list):
            items += [item for item in found if isinstance(item, dict) and item.get("id")]
    return items


def _yaml_problem(path: Path, text: str, exc: yaml.YAMLError) -> str:
    """``PATH: line L, column C: not valid YAML (what)``: the file's name, not the parser's
    ``"<unicode string>"``, and a tab named as such (YAML indents with spaces)."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return f"{path}: not valid YAML ({_one_line(exc)})"
    lines = text.splitlines()
    found = lines[mark.line][mark.column : mark.column + 1] if mark.line < len(lines) else ""
    what = " ".join(filter(None, (getattr(exc, "context", None), getattr(exc, "problem", None))))
    tab = "; it is a tab: indent YAML with spaces" if found == "\t" else ""
    return f"{path}: line {mark.line + 1}, column {mark.column + 1}: not valid YAML ({what}){tab}"


def _check_file(path: Path) -> tuple[Dataset | None, list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None, [f"{path}: not UTF-8 text"]
    try:
        raw = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        return None, [_yaml_problem(path, text, exc)]
    if is_published_format(raw):
        item_maps, problems = convert_published(raw)
        header_map: Any = {
            "name": path.stem,
            "description": "Published FORCE-Bench items, converted on load.",
            "created_by": f"force-bench list format: {path.name}",
        }
    elif isinstance(raw, dict) and "items" in raw:
        item_maps, problems = raw.get("items") or [], []
        header_map = raw.get("header")
        extra = sorted(set(raw) - {"header", "items"})
        if extra:
            problems.append(f"{path}: unknown top-level keys {extra}; only header and items")
    else:
        return None, [
            f"{path}: not a dataset; expected a mapping with 'header' and 'items' "
            "or the published FORCE-Bench list (entries with 'plugin')"
        ]
    if not isinstance(item_maps, list):
        return None, [f"{path}: 'items' must be a list"]
    header, header_problems = _parse_header(header_map, path)
    items, item_problems = _parse_items(item_maps)
    problems += header_problems + item_problems
    if header is None:
        return None, problems
    dataset = Dataset(header=header, items=items)
    problems += validate_dataset(dataset)
    return dataset, problems


def _parse_header(raw: Any, path: Path) -> tuple[DatasetHeader | None, list[str]]:
    if not isinstance(raw, dict):
        return None, [f"{path}: 'header' must be a mapping with at least 'name'"]
    try:
        return DatasetHeader.model_validate(raw), []
    except ValidationError as exc:
        return None, [f"header: {problem}" for problem in _error_lines(exc)]


def _parse_items(raw_items: list[Any]) -> tuple[list[Question], list[str]]:
    items: list[Question] = []
    problems: list[str] = []
    for index, raw in enumerate(raw_items):
        label = _item_label(raw, index)
        if not isinstance(raw, dict):
            problems.append(f"{label}: an item must be a mapping, got {type(raw).__name__}")
            continue
        try:
            items.append(Question.model_validate(raw))
        except ValidationError as exc:
            problems += [f"{label}: {problem}" for problem in _error_lines(exc)]
    return items, problems


def _item_label(raw: Any, index: int) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"]:
        return f"item {raw['id']}"
    return f"item #{index + 1} (no id)"


def _error_lines(exc: ValidationError) -> list[str]:
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(item)"
        lines.append(f"{where}: {error['msg']}")
    return lines


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _check_directory(path: Path) -> tuple[Dataset | None, list[str]]:
    files = dataset_files(path)
    if not files:
        return None, [f"{path}: no *.yaml dataset files in this directory"]
    datasets: list[Dataset] = []
    problems: list[str] = []
    for file in files:
        dataset, file_problems = _check_file(file)
        problems += [f"{file.name}: {problem}" for problem in file_problems]
        if dataset is not None:
            datasets.append(dataset)
    if not datasets:
        return None, problems
    merged, merge_problems = merge_datasets(datasets, name=path.name)
    return merged, problems + merge_problems


def merge_datasets(datasets: list[Dataset], *, name: str) -> tuple[Dataset, list[str]]:
    """One dataset holding all items; the ERP snapshot hash must agree where it is set."""
    problems: list[str] = []
    hashes = sorted({d.header.erp_snapshot_hash for d in datasets} - {None})
    if len(hashes) > 1:
        problems.append(
            f"files disagree on erp_snapshot_hash ({', '.join(hashes)}); regenerate the "
            "obligation questions from one ERP"
        )
    seeds = {d.header.generator_seed for d in datasets} - {None}
    rubrics = {d.header.rubric_version for d in datasets} - {None}
    worlds = sorted({d.header.world_snapshot_hash for d in datasets} - {None})
    if len(worlds) > 1:
        problems.append(
            f"files disagree on world_snapshot_hash ({', '.join(w[:16] for w in worlds)}); "
            "regenerate the research questions on one world"
        )
    world = next((d.header for d in datasets if d.header.world_snapshot_hash), None)
    one_world = world is not None and len(worlds) == 1
    header = DatasetHeader(
        name=name,
        description="Merged: " + ", ".join(d.header.name for d in datasets),
        erp_snapshot_hash=hashes[0] if len(hashes) == 1 else None,
        generator_seed=seeds.pop() if len(seeds) == 1 else None,
        rubric_version=rubrics.pop() if len(rubrics) == 1 else None,
        world_snapshot_hash=world.world_snapshot_hash if one_world else None,
        world_id=world.world_id if one_world else None,
        world_seed=world.world_seed if one_world else None,
        created_by="merged directory",
    )
    items = [item for dataset in datasets for item in dataset.items]
    dataset = Dataset(header=header, items=items)
    duplicates = _duplicate_ids(dataset)
    problems += [f"item {item_id}: id appears in more than one file" for item_id in duplicates]
    return dataset, problems


# ----------------------------------------------------------------------------------------------
# Semantic checks
# ----------------------------------------------------------------------------------------------


def validate_dataset(dataset: Dataset) -> list[str]:
    """Problems beyond the schema: duplicate ids, misplaced tags and facts, bad record links."""
    problems = [f"item {item_id}: duplicate id" for item_id in _duplicate_ids(dataset)]
    for item in dataset.items:
        problems += [f"item {item.id}: {problem}" for problem in _item_problems(item)]
    return problems


def _duplicate_ids(dataset: Dataset) -> list[str]:
    counts = Counter(item.id for item in dataset.items)
    return sorted(item_id for item_id, count in counts.items() if count > 1)


def _item_problems(item: Question) -> list[str]:
    problems: list[str] = []
    if not item.query.strip():
        problems.append("query is empty")
    if not item.tags:
        problems.append("no tags: every item needs assertions to judge")
    obligations = item.task_type is TaskType.obligations
    if obligations and item.segment not in OBLIGATION_SEGMENTS:
        problems.append(f"segment {item.segment!r} is not AR or AP (obligations)")
    keyed = bool(item.expected and item.ground_truth)
    if not obligations and Dimension.accuracy in item.tags and not keyed:
        problems.append(
            f"accuracy tag on a {item.task_type.value} item without a key (only obligations and "
            "research items keyed on a world, with ground_truth and expected facts, have one)"
        )
    if obligations and Dimension.recency in item.tags:
        problems.append("recency tag on an obligations item (the ERP answer is pinned by as_of)")
    if (
        not obligations
        and (item.expected or item.ground_truth)
        and (Dimension.accuracy not in item.tags)
    ):
        problems.append(
            f"ground_truth/expected on a {item.task_type.value} item with no accuracy tag: a "
            "keyed research item needs the accuracy.research_key assertion (build_tags adds it)"
        )
    for url in item.gold_documents:
        if not url.startswith(("http://", "https://")):
            problems.append(f"gold document {url!r} is not a link")
    for dimension, assertions in item.tags.items():
        if not assertions:
            problems.append(f"tag {dimension.value} has no assertions")
        ids = Counter(assertion.id for assertion in assertions)
        problems += [
            f"assertion id {assertion_id!r} repeats in {dimension.value}"
            for assertion_id, count in ids.items()
            if count > 1
        ]
    for fact in item.expected:
        if fact.kind == "top_n" and not isinstance(fact.value, list):
            problems.append(f"expected {fact.field}: top_n needs a list value")
        if fact.kind in ("amount", "count", "percent") and not _is_number(fact.value):
            problems.append(
                f"expected {fact.field}: {fact.kind} needs a number, got {fact.value!r}"
            )
        if fact.tolerance < 0:
            problems.append(f"expected {fact.field}: tolerance must be >= 0")
        problems += _fact_extras_problems(fact)
    for ref in item.record_refs:
        if parse_record_url(ref) is None:
            problems.append(
                f"record_ref {ref!r} is not a record path: write /erp/LE/set/key "
                "(or the resource form erp://LE/set/key) with a known entity set"
            )
    if item.timeout is not None and item.timeout <= 0:
        problems.append("timeout must be positive")
    return problems


def _fact_extras_problems(fact: ExpectedFact) -> list[str]:
    """The fields that belong to one kind of fact are set only on that kind."""
    problems = []
    amount_only = {
        "currency": fact.currency is not None,
        "side": fact.side is not None,
        "equivalents": bool(fact.equivalents),
    }
    if fact.kind != "amount":
        problems += [
            f"expected {fact.field}: {name} is for amounts only"
            for name, given in amount_only.items()
            if given
        ]
    if fact.complete and fact.kind != "top_n":
        problems.append(f"expected {fact.field}: complete is for top_n lists only")
    codes = [fact.currency] if fact.currency else []
    codes += [money.currency for money in fact.equivalents]
    problems += [
        f"expected {fact.field}: currency {code!r} is not an ISO code such as USD"
        for code in codes
        if not re.fullmatch(r"[A-Z]{3}", code)
    ]
    return problems


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# ----------------------------------------------------------------------------------------------
# Hashing and writing
# ----------------------------------------------------------------------------------------------


LATER_FACT_FIELDS = ("currency", "side", "equivalents", "complete")
"""ExpectedFact fields added after format version 1 was first written: hashed only when set, so a
dataset that does not use them keeps the hash it had before they existed (and its runs resume)."""


def canonical_json(dataset: Dataset) -> str:
    data = dataset.model_dump(mode="json")
    defaults = {name: ExpectedFact.model_fields[name].get_default(call_default_factory=True)
                for name in LATER_FACT_FIELDS}  # fmt: skip
    for item in data["items"]:
        for fact in item["expected"]:
            for name, default in defaults.items():
                if fact.get(name) == default:
                    del fact[name]
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def dataset_hash(dataset: Dataset) -> str:
    """sha256 (hex) of the canonical JSON of header and items: equal contents, equal hash."""
    return hashlib.sha256(canonical_json(dataset).encode("utf-8")).hexdigest()


def dataset_to_yaml(dataset: Dataset) -> str:
    """Deterministic YAML text of ``dataset`` (defaults left out of items to keep files short)."""
    document = {
        "header": dataset.header.model_dump(mode="json"),
        "items": [item.model_dump(mode="json", exclude_defaults=True) for item in dataset.items],
    }
    return yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=False,
    )


def write_dataset(dataset: Dataset, path: str | Path) -> Path:
    """Write ``dataset`` as YAML to ``path`` (parent directories created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dataset_to_yaml(dataset), encoding="utf-8")
    return path
