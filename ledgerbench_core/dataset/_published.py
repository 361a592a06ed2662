"""Conversion of the published FORCE-Bench list format into our :class:`Question` items.

The published file is a YAML list of mappings with ``query``, ``plugin``, ``segment``,
``scenario``, ``timeout`` and ``tags`` (a list of ``{tag, metric, assertions}``; the same tag may
repeat). Items have no ids, so ids are derived from the plugin and the position within it
(``fb-erp_qa-001``), which is stable as long as the published file is.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from ledgerbench_core.dataset._records import Dimension, TaskType

PLUGIN_TASK_TYPES: dict[str, TaskType] = {
    "erp_qa": TaskType.obligations,
    "finance_qa": TaskType.entity_performance,
    "business_brief": TaskType.business_brief,
}

BRIEF_KINDS = (
    "Business Brief",
    "Company Overview",
    "Corporate Profile",
    "Executive Snapshot",
    "Highlights",
)

# Typos in the published scenario names, mapped to the names the paper uses.
_SCENARIO_FIXES = {"Cash Disocunts": "Cash Discounts"}

_GROUND_TRUTH = re.compile(r"Ground truth:\s*(.*)\Z", re.DOTALL)
_AS_OF = re.compile(r"as of ([A-Z][a-z]+ \d{1,2}(?:st|nd|rd|th)?,? \d{4})")
_LEGAL_ENTITY = re.compile(r"\b(USMF|USPI|DEMF|GBSI)\b")
_ALL_ENTITIES = re.compile(r"(all|across) legal entities", re.IGNORECASE)


def is_published_format(raw: Any) -> bool:
    """Whether ``raw`` (parsed YAML) looks like the published list format."""
    return isinstance(raw, list) and all(
        isinstance(entry, dict) and "plugin" in entry for entry in raw
    )


def convert_published(raw: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Published entries -> item mappings ready for ``Question`` validation, plus problems found."""
    items: list[dict[str, Any]] = []
    problems: list[str] = []
    counters: dict[str, int] = {}
    for index, entry in enumerate(raw):
        plugin = entry.get("plugin")
        counters[plugin] = counters.get(plugin, 0) + 1
        item_id = f"fb-{plugin}-{counters[plugin]:03d}"
        if plugin not in PLUGIN_TASK_TYPES:
            known = ", ".join(PLUGIN_TASK_TYPES)
            problems.append(f"{item_id} (entry {index}): unknown plugin {plugin!r}; known: {known}")
            continue
        items.append(_convert_entry(entry, item_id, index))
    return items, problems


def _convert_entry(entry: dict[str, Any], item_id: str, index: int) -> dict[str, Any]:
    plugin = entry["plugin"]
    task_type = PLUGIN_TASK_TYPES[plugin]
    query = str(entry.get("query", ""))
    tags = _merge_tags(entry.get("tags") or [])
    metadata: dict[str, Any] = {"source": "force-bench", "plugin": plugin, "position": index}
    if entry.get("timeout") is not None:
        # Recorded, not applied: the run's per-task-type budget decides (paper: 60 s / 300 s).
        metadata["published_timeout"] = entry["timeout"]
    scenario = entry.get("scenario")
    if scenario in _SCENARIO_FIXES:
        metadata["published_scenario"] = scenario
        scenario = _SCENARIO_FIXES[scenario]
    segment = entry.get("segment")
    if task_type is TaskType.business_brief:
        segment = segment or _brief_kind(query)
    item: dict[str, Any] = {
        "id": item_id,
        "query": query,
        "task_type": task_type.value,
        "segment": segment,
        "scenario": scenario or segment,
        "tags": tags,
        "metadata": metadata,
    }
    if task_type is TaskType.obligations:
        item["as_of"] = _as_of(query)
        item["legal_entity"] = _legal_entity(query)
        item["ground_truth"] = _ground_truth(tags)
    return item


def _merge_tags(raw_tags: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Repeated tags merged into one list per dimension, duplicate assertion texts dropped."""
    merged: dict[str, list[dict[str, Any]]] = {}
    seen: dict[str, set[str]] = {}
    for tag in raw_tags:
        dimension = str(tag.get("tag", ""))
        for assertion in tag.get("assertions") or []:
            text = str(assertion.get("text", "")).strip()
            normalized = " ".join(text.split())
            if normalized in seen.setdefault(dimension, set()):
                continue
            seen[dimension].add(normalized)
            assertions = merged.setdefault(dimension, [])
            if dimension == Dimension.accuracy and _GROUND_TRUTH.search(text):
                assertion_id = "accuracy.ground_truth"
            else:
                assertion_id = f"{dimension}.published_{len(assertions) + 1}"
            assertions.append(
                {"id": assertion_id, "text": text, "level": assertion.get("level", "critical")}
            )
    return merged


def _ground_truth(tags: dict[str, list[dict[str, Any]]]) -> str | None:
    texts = []
    for assertion in tags.get(Dimension.accuracy.value, []):
        match = _GROUND_TRUTH.search(assertion["text"])
        if match:
            texts.append(match.group(1).strip().lstrip("\ufeff"))
    return "\n".join(texts) or None


def _as_of(query: str) -> str | None:
    match = _AS_OF.search(query)
    if not match:
        return None
    text = re.sub(r"(\d)(st|nd|rd|th)", r"\1", match.group(1)).replace(",", "")
    try:
        return dt.datetime.strptime(text, "%B %d %Y").date().isoformat()
    except ValueError:
        return None


def _legal_entity(query: str) -> str | None:
    if _ALL_ENTITIES.search(query):
        return None
    match = _LEGAL_ENTITY.search(query)
    return match.group(1) if match else None


def _brief_kind(query: str) -> str:
    for kind in BRIEF_KINDS:
        if query.lower().startswith(kind.lower()):
            return kind
    return "Business Brief"
