"""Importer for published FORCE-Bench evaluation files (``eval_results_<name>.json``).

No sample of the published files is available, so the importer follows the paper's description
(per-question, per-metric scores) and accepts the plausible shapes listed in docs/statistics.md:

* top level: a list of items; or an object holding the list under ``results``, ``items``,
  ``evaluations``, ``questions`` or ``data``; or an object mapping question id -> item. Top-level
  ``model`` / ``provider`` / ``agent`` name the provider (else the file name does).
* item id: ``question_id``, ``id``, ``qid``, ``item_id`` or ``index`` (else its position, ``q<N>``).
* task type: ``plugin``, ``task_type``, ``type`` or ``category``; upstream names ``erp_qa``,
  ``finance_qa``, ``business_brief`` map to ours.
* metric scores: under ``scores``, ``metrics``, ``tag_scores`` or ``tags``, or as top-level keys
  named after the dimensions. A score is a number, an object with ``score`` / ``value`` / ``mean``,
  a list of assertion scores (numbers or objects with ``score``; their mean), or, for ``tags`` as a
  list, ``{"tag": name, "score": x}`` / ``{"tag": name, "assertions": [...]}``. ``null`` means not
  applicable; a string, NaN or ``{"error": ...}`` means the judge failed (unscored, never 0). A file
  whose scores exceed 1 is on a 0-100 scale and is divided by 100.
* overall: ``overall`` / ``overall_score`` / ``score``, else the mean of the scored dimensions.
* operations: ``latency_s`` / ``latency`` / ``duration_s`` / ``elapsed_s``, ``tool_calls`` (a count
  or a list), ``status`` / ``error`` / ``timed_out``, ``cost_usd``, ``tokens``, ``timeout_s``,
  ``scenario``; read from the item or, with priority, from the answers file next to it
  (``answers_<name>.json`` or ``.jsonl``, ``<name>_answers.json``), matched by the same id rules.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from analysis._data import (
    DIMENSIONS,
    METRICS,
    SCORE_COLUMNS,
    TASK_TYPES,
    TRAJECTORY_COLUMNS,
    InputError,
    ProviderData,
    read_json,
)
from analysis._schema import ProviderInfo

LIST_KEYS = ("results", "items", "evaluations", "questions", "data")
ID_KEYS = ("question_id", "id", "qid", "item_id", "index")
TASK_KEYS = ("plugin", "task_type", "type", "category")
SCORE_KEYS = ("scores", "metrics", "tag_scores", "tags")
OVERALL_KEYS = ("overall", "overall_score", "score")
LATENCY_KEYS = ("latency_s", "latency", "duration_s", "elapsed_s", "elapsed", "time_s")
TASK_ALIASES = {
    "erp_qa": "obligations",
    "finance_qa": "entity_performance",
    "business_brief": "business_brief",
    **{t: t for t in TASK_TYPES},
}
ERROR = "judge_error"


def load_published(path: Path) -> ProviderData:
    raw = read_json(path)
    items = _items(raw, path)
    answers, answers_path = _answers(path)
    name = _provider_name(raw, path)
    parsed = [_parse_item(item, position, path) for position, item in enumerate(items)]
    repeated = sorted(q for q, n in Counter(q for q, _, _, _ in parsed).items() if n > 1)
    if repeated:
        raise InputError(
            f"{path}: question id {repeated[0]} appears more than once; ids must be unique"
        )
    scale = 100.0 if _max_score(parsed) > 1.0 else 1.0
    score_rows, traj_rows, scenarios = [], [], {}
    for qid, task_type, metric_values, ops in parsed:
        ops = {**ops, **_answer_ops(answers.get(qid, {}))}
        if ops.get("scenario"):
            scenarios[qid] = str(ops["scenario"])
        traj_rows.append(_trajectory_row(qid, task_type, ops))
        score_rows.extend(_metric_rows(qid, task_type, metric_values, scale))
    traj = pd.DataFrame(traj_rows, columns=TRAJECTORY_COLUMNS)
    caveats = [f"{name}: imported from the published file {path.name}."]
    if scale != 1.0:
        caveats.append(f"{name}: scores were on a 0-100 scale and were divided by 100.")
    if answers_path is None and traj["latency_s"].isna().all():
        caveats.append(
            f"{name}: no answers file next to {path.name}; latency and tool calls unknown."
        )
    info = ProviderInfo(
        name=name,
        source="published",
        path=str(path),
        harness=str(raw.get("harness")) if isinstance(raw, dict) and raw.get("harness") else None,
        model=str(raw.get("model")) if isinstance(raw, dict) and raw.get("model") else None,
        judge=str(raw.get("judge")) if isinstance(raw, dict) and raw.get("judge") else None,
        trajectories=len(traj),
        questions=traj["question_id"].nunique(),
        trials=1,
    )
    return ProviderData(
        info, pd.DataFrame(score_rows, columns=SCORE_COLUMNS), traj, scenarios, caveats
    )


def _items(raw: Any, path: Path) -> list[dict[str, Any]]:
    items: Any = raw
    if isinstance(raw, dict):
        key = next((k for k in LIST_KEYS if isinstance(raw.get(k), list)), None)
        if key is not None:
            items = raw[key]
        else:
            items = [{"question_id": k, **v} for k, v in raw.items() if isinstance(v, dict)]
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise InputError(
            f"{path}: no evaluation items found; expected a list of per-question objects "
            f"(or one under {'/'.join(LIST_KEYS)}), see docs/statistics.md"
        )
    return items


def _provider_name(raw: Any, path: Path) -> str:
    if isinstance(raw, dict):
        for key in ("provider", "agent", "model"):
            if isinstance(raw.get(key), str) and raw[key]:
                return raw[key]
    stem = path.stem
    return stem[len("eval_results_") :] if stem.startswith("eval_results_") else stem


def _answers(path: Path) -> tuple[dict[str, dict[str, Any]], Path | None]:
    stem = path.stem.removeprefix("eval_results_")
    for name in (f"answers_{stem}.json", f"answers_{stem}.jsonl", f"{stem}_answers.json"):
        candidate = path.with_name(name)
        if candidate.exists():
            return _read_answers(candidate), candidate
    return {}, None


def _read_answers(path: Path) -> dict[str, dict[str, Any]]:
    if path.suffix == ".jsonl":
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
            items = [json.loads(line) for line in lines if line.strip()]
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON lines ({exc})") from None
    else:
        items = _items(read_json(path), path)
    return {_item_id(item, position): item for position, item in enumerate(items)}


def _item_id(item: dict[str, Any], position: int) -> str:
    for key in ID_KEYS:
        if item.get(key) is not None:
            return str(item[key])
    return f"q{position}"


def _parse_item(
    item: dict[str, Any], position: int, path: Path
) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    qid = _item_id(item, position)
    raw_task = next((item[k] for k in TASK_KEYS if item.get(k) is not None), None)
    task_type = TASK_ALIASES.get(str(raw_task).strip().lower()) if raw_task is not None else None
    if task_type is None:
        raise InputError(
            f"{path}: item {qid} has task type {raw_task!r}; expected one of "
            f"{', '.join(sorted(TASK_ALIASES))} under {'/'.join(TASK_KEYS)}"
        )
    return qid, task_type, _metric_values(item), _answer_ops(item)


def _metric_values(item: dict[str, Any]) -> dict[str, Any]:
    """metric -> float | None (not applicable) | ERROR, for the metrics the item mentions."""
    values: dict[str, Any] = {}
    for key in SCORE_KEYS:
        block = item.get(key)
        if isinstance(block, dict):
            values.update({str(k).lower(): _value(v) for k, v in block.items()})
        elif isinstance(block, list):
            for entry in block:
                if isinstance(entry, dict):
                    name = entry.get("tag") or entry.get("name") or entry.get("metric")
                    if name:
                        values[str(name).lower()] = _value(entry)
    for dimension in DIMENSIONS:
        if dimension not in values and dimension in item:
            values[dimension] = _value(item[dimension])
    overall = next((item[k] for k in OVERALL_KEYS if k in item), None)
    if "overall" not in values and overall is not None:
        values["overall"] = _value(overall)
    return {k: v for k, v in values.items() if k in METRICS}


def _value(raw: Any) -> Any:
    if raw is None:
        return None
    if isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, int | float):
        return ERROR if math.isnan(raw) else float(raw)
    if isinstance(raw, dict):
        if raw.get("error"):
            return ERROR
        for key in ("score", "value", "mean"):
            if key in raw:
                return _value(raw[key])
        if isinstance(raw.get("assertions"), list):
            return _value(raw["assertions"])
        return None
    if isinstance(raw, list):
        parts = [_value(v) for v in raw]
        if ERROR in parts:
            return ERROR
        numbers = [p for p in parts if isinstance(p, float)]
        return sum(numbers) / len(numbers) if numbers else None
    return ERROR


def _max_score(parsed: list[tuple[str, str, dict[str, Any], dict[str, Any]]]) -> float:
    numbers = [v for _, _, values, _ in parsed for v in values.values() if isinstance(v, float)]
    return max(numbers, default=0.0)


def _metric_rows(
    qid: str, task_type: str, values: dict[str, Any], scale: float
) -> list[dict[str, Any]]:
    if "overall" not in values:
        scored = [v for k, v in values.items() if isinstance(v, float)]
        values = {**values, "overall": sum(scored) / len(scored) if scored else None}
    rows = []
    for metric, value in values.items():
        base = {"question_id": qid, "trial": 0, "task_type": task_type, "metric": metric}
        if isinstance(value, float):
            rows.append({**base, "status": "scored", "score": value / scale})
        else:
            status = ERROR if value == ERROR else "not_applicable"
            rows.append({**base, "status": status, "score": math.nan})
    return rows


def _answer_ops(item: dict[str, Any]) -> dict[str, Any]:
    ops: dict[str, Any] = {}
    latency = next((item[k] for k in LATENCY_KEYS if isinstance(item.get(k), int | float)), None)
    if latency is not None:
        ops["latency_s"] = float(latency)
    calls = item.get("tool_calls")
    if isinstance(calls, list):
        ops["tool_calls"] = len(calls)
    elif isinstance(calls, int | float):
        ops["tool_calls"] = int(calls)
    status = _status(item)
    if status is not None:
        ops["status"] = status
    for key in ("cost_usd", "tokens", "timeout_s"):
        if isinstance(item.get(key), int | float):
            ops[key] = float(item[key])
    if item.get("scenario"):
        ops["scenario"] = item["scenario"]
    return ops


def _status(item: dict[str, Any]) -> str | None:
    if item.get("timed_out") is True:
        return "timeout"
    status = item.get("status")
    if isinstance(status, str) and status.lower() in {"ok", "timeout", "max_turns", "error"}:
        return status.lower()
    if status in {"success", "completed"}:
        return "ok"
    if item.get("error"):
        return "error"
    return None


def _trajectory_row(qid: str, task_type: str, ops: dict[str, Any]) -> dict[str, Any]:
    return {
        "question_id": qid,
        "trial": 0,
        "task_type": task_type,
        "status": ops.get("status", "ok"),
        "latency_s": ops.get("latency_s", math.nan),
        "timeout_s": ops.get("timeout_s", math.nan),
        "tool_calls": ops.get("tool_calls", math.nan),
        "tokens": ops.get("tokens", math.nan),
        "cost_usd": ops.get("cost_usd", math.nan),
    }
