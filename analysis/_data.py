"""Shared constants and the in-memory form of one provider's data."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis._schema import ProviderInfo

DIMENSIONS = (
    "accuracy",
    "citations",
    "clarity",
    "depth",
    "groundedness",
    "recency",
    "relevance",
    "structure",
)
METRICS = ("overall", *DIMENSIONS)
"""Metric names in loaded score rows (``overall`` there is the judge's per-answer mean)."""
OVERALL = "overall"
ANSWER_MEAN = "answer_mean"
"""The judge's per-answer mean; :func:`analysis._stats.combine` renames the loaders' ``overall``."""
REPORT_METRICS = (OVERALL, *DIMENSIONS, ANSWER_MEAN)
"""Metrics in the report: the paper's Overall (derived), the dimensions, the per-answer mean."""
TASK_TYPES = ("obligations", "entity_performance", "business_brief", "operations")
RESEARCH_TASK_TYPES = ("entity_performance", "business_brief")
RESEARCH_ACCURACY = "research_accuracy"
"""Accuracy of research items keyed on a world (LedgerBench's extension,
:data:`ledgerbench_core._overall.EXTENSION_CELLS`): kept apart from ``accuracy``, so the paper's
rows and Overall never mix it in."""
RETRIEVAL_METRICS = ("shown_recall", "fetched_recall", "citation_precision", "citation_recall")
"""Per-answer retrieval and citation figures of world-keyed research items (the rules judge's
``extra["research"]``): share of gold documents among the search results shown, among the
documents fetched, share of cited world documents that are gold, share of gold documents cited."""
RESEARCH_METRICS = (RESEARCH_ACCURACY, *RETRIEVAL_METRICS)
"""The extension's metrics: reported in their own section, tested in their own family."""
RESEARCH_MODES = ("world", "web", "none", "golden")
"""``--research`` settings a run records in ``manifest.config["research"]``."""
METRIC_LABELS = {
    RESEARCH_ACCURACY: "Research accuracy",
    "shown_recall": "Recall (shown)",
    "fetched_recall": "Recall (fetched)",
    "citation_precision": "Citation precision",
    "citation_recall": "Citation recall",
}
INCLUDED = ("scored", "rescored", "infra_as_zero")
"""Dimension statuses that enter the statistics (``rescored``: over the latency budget, scored 0;
``infra_as_zero``: an infrastructure failure scored 0 with ``--infra-failures zero``)."""
TASK_LABELS = {
    "obligations": "Financial obligations",
    "entity_performance": "Entity performance",
    "business_brief": "Business briefs",
    "equal_weight": "Equal-weight",
    "all": "All",
}
"""Display names of task types and scopes."""
SCORE_COLUMNS = ["question_id", "trial", "task_type", "metric", "status", "score"]
TRAJECTORY_COLUMNS = [
    "question_id",
    "trial",
    "task_type",
    "status",
    "latency_s",
    "timeout_s",
    "tool_calls",
    "tokens",
    "cost_usd",
]


class InputError(ValueError):
    """Unusable input; the message names the problem and the fix (shown as a one-line CLI error)."""


@dataclass
class ProviderData:
    info: ProviderInfo
    scores: pd.DataFrame
    trajectories: pd.DataFrame
    scenarios: dict[str, str] = field(default_factory=dict)
    """question_id -> scenario (from the dataset or the published file)."""
    caveats: list[str] = field(default_factory=list)
    item_metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    """question_id -> the dataset item's scalar ``metadata`` fields (``template``, ``kind``, ...):
    what ``--cluster`` groups items by."""


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None


def finite_or_none(value: float | None) -> float | None:
    """A plain float, or None for None, NaN and infinities (JSON has no NaN)."""
    return float(value) if value is not None and math.isfinite(value) else None
