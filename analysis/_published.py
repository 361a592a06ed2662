"""Importer for published FORCE-Bench evaluation files (``eval_results_<name>.json``).

The FORCE-Bench files (``eval_results_answers_<model>_<run>_<eval>.json``) hold ``metadata``
(``judge_deployment``, ``answers_file``, ``inference_metadata.model`` / ``provider``),
``summary`` and ``results``: one item per question with ``question`` (the text, the only
identifier: items are shuffled per run), ``plugin`` (task type), ``tag_scores``,
``assertion_scores``, ``overall_score``, ``inference_time_secs``, ``token_usage``, ``skipped``
and ``reason``. Items are keyed by task type plus a hash of the question text, so two files pair
by question, never by position. Tool-call counts come from the answers file the metadata names
(``answers_<model>_<run>.json``).

Skipped answers: a ``reason`` naming a timeout makes a ``timeout`` (scored 0, as published); any
other reason (``Unknown error``, HTTP 429) an infrastructure failure (status ``error``, unscored;
``--infra-failures zero`` scores it 0 as the paper did). An answer the upstream evaluation zeroed
because it was slower than its budget (every tag score 0 while the judge's assertion scores are
not) gets its judged tag scores back from the assertions; ``--latency-budget`` zeroes it again.

Other shapes are accepted too:

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

import hashlib
import json
import math
import re
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
LATENCY_KEYS = (
    "latency_s",
    "inference_time_secs",
    "latency",
    "duration_s",
    "elapsed_s",
    "elapsed",
    "time_s",
)
TIMEOUT_WORDS = ("timeout", "timed out")
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
    answers, answers_path = _answers(path, raw)
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
        answer = answers.get(qid) or answers.get(_text_key(ops.get("question_text")), {})
        ops = _merge_ops(ops, _answer_ops(answer))
        if ops.get("scenario"):
            scenarios[qid] = str(ops["scenario"])
        traj_rows.append(_trajectory_row(qid, task_type, ops))
        score_rows.extend(_metric_rows(qid, task_type, metric_values, scale, ops.get("status")))
    traj = pd.DataFrame(traj_rows, columns=TRAJECTORY_COLUMNS)
    caveats = [f"{name}: imported from the published file {path.name}."]
    if scale != 1.0:
        caveats.append(f"{name}: scores were on a 0-100 scale and were divided by 100.")
    if answers_path is None and traj["tool_calls"].isna().all():
        caveats.append(f"{name}: no answers file next to {path.name}; tool calls unknown.")
    caveats.extend(_skip_caveats(name, parsed))
    restored = sum(1 for _, _, _, ops in parsed if ops.get("restored"))
    if restored:
        caveats.append(
            f"{name}: the published evaluation had zeroed {restored} answer(s) slower than its "
            "budget (all tag scores 0, assertion scores not); their judged scores were restored "
            "from the assertion scores. Pass --latency-budget (e.g. paper) to count them as 0."
        )
    if traj["tokens"].isna().all() and any("token_usage" in i for i in items):
        caveats.append(f"{name}: token usage is recorded as 0 for every answer: unknown.")
    meta = _metadata(raw)
    inference = meta.get("inference_metadata") or {}
    info = ProviderInfo(
        name=name,
        source="published",
        path=str(path),
        harness=_text(inference.get("provider")) or _text(_top(raw, "harness")),
        model=_text(inference.get("model")) or _text(_top(raw, "model")),
        judge=_text(meta.get("judge_deployment")) or _text(_top(raw, "judge")),
        trajectories=len(traj),
        questions=traj["question_id"].nunique(),
        trials=1,
        research="web",  # FORCE-Bench's agents researched on the live web
    )
    return ProviderData(
        info, pd.DataFrame(score_rows, columns=SCORE_COLUMNS), traj, scenarios, caveats
    )


def _metadata(raw: Any) -> dict[str, Any]:
    meta = raw.get("metadata") if isinstance(raw, dict) else None
    return meta if isinstance(meta, dict) else {}


def _top(raw: Any, key: str) -> Any:
    return raw.get(key) if isinstance(raw, dict) else None


def _text(value: Any) -> str | None:
    return str(value) if value else None


def _merge_ops(item_ops: dict[str, Any], answer_ops: dict[str, Any]) -> dict[str, Any]:
    """The answers file wins on operations, except the status the evaluation file decided."""
    merged = {**item_ops, **answer_ops}
    for key in ("status", "skipped", "reason", "restored"):
        if key in item_ops:
            merged[key] = item_ops[key]
    return merged


def _text_key(question: Any) -> str:
    return "text:" + " ".join(str(question).split()) if question else ""


def question_key(task_type: str, question: str) -> str:
    """Stable id of a published item: task type plus a hash of the whitespace-normalised text."""
    text = " ".join(str(question).split())
    return f"{task_type}:{hashlib.sha1(text.encode()).hexdigest()[:12]}"


def _skip_caveats(name: str, parsed: list) -> list[str]:
    reasons = Counter(
        (ops.get("status"), ops.get("reason") or "no reason")
        for _, _, _, ops in parsed
        if ops.get("skipped")
    )
    if not reasons:
        return []
    timeouts = sum(n for (status, _), n in reasons.items() if status == "timeout")
    failures = sum(n for (status, _), n in reasons.items() if status == "error")
    listed = "; ".join(f"{n} {reason[:60]}" for (_, reason), n in reasons.most_common())
    return [
        f"{name}: {timeouts + failures} answer(s) skipped ({listed}). {timeouts} timeout(s) "
        f"score 0 as published; {failures} infrastructure failure(s) are left out of the scores "
        "(the paper scored them 0: --infra-failures zero)."
    ]


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
    model = (_metadata(raw).get("inference_metadata") or {}).get("model")
    if isinstance(model, str) and model:
        return model
    if isinstance(raw, dict):
        for key in ("provider", "agent", "model"):
            if isinstance(raw.get(key), str) and raw[key]:
                return raw[key]
    stem = path.stem
    return stem[len("eval_results_") :] if stem.startswith("eval_results_") else stem


def _answers(path: Path, raw: Any) -> tuple[dict[str, dict[str, Any]], Path | None]:
    """The answers file: the one the metadata names (looked up next to ``path``), else by name."""
    stem = path.stem.removeprefix("eval_results_")
    names = [f"answers_{stem}.json", f"answers_{stem}.jsonl", f"{stem}_answers.json"]
    if stem.startswith("answers_"):  # eval_results_answers_<model>_<run>_<eval>.json
        names += [f"{stem}.json", f"{stem.rsplit('_', 1)[0]}.json"]
    named = _metadata(raw).get("answers_file")
    if isinstance(named, str) and named:
        names.insert(0, Path(named).name)
    for name in names:
        candidate = path.with_name(name)
        if candidate.exists() and candidate != path:
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
    keyed = {}
    for position, item in enumerate(items):
        task_type = _task_type(item)
        keyed[_item_id(item, position, task_type)] = item
        if isinstance(item.get("question"), str):  # skipped answers may lack their task type
            keyed[_text_key(item["question"])] = item
    return keyed


def _item_id(item: dict[str, Any], position: int, task_type: str | None) -> str:
    for key in ID_KEYS:
        if item.get(key) is not None:
            return str(item[key])
    if isinstance(item.get("question"), str) and task_type:
        return question_key(task_type, item["question"])
    return f"q{position}"


def _task_type(item: dict[str, Any]) -> str | None:
    raw_task = next((item[k] for k in TASK_KEYS if item.get(k) is not None), None)
    return TASK_ALIASES.get(str(raw_task).strip().lower()) if raw_task is not None else None


def _parse_item(
    item: dict[str, Any], position: int, path: Path
) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    task_type = _task_type(item)
    qid = _item_id(item, position, task_type)
    if task_type is None:
        raw_task = next((item[k] for k in TASK_KEYS if item.get(k) is not None), None)
        raise InputError(
            f"{path}: item {qid} has task type {raw_task!r}; expected one of "
            f"{', '.join(sorted(TASK_ALIASES))} under {'/'.join(TASK_KEYS)}"
        )
    ops = _answer_ops(item)
    if isinstance(item.get("question"), str):
        ops["question_text"] = item["question"]
    values = _metric_values(item)
    restored = _restore_zeroed(item, values, ops)
    if restored is not None:
        values, ops["restored"] = restored, True
    return qid, task_type, values, ops


def _restore_zeroed(
    item: dict[str, Any], values: dict[str, Any], ops: dict[str, Any]
) -> dict[str, Any] | None:
    """Judged tag scores of an answer the upstream evaluation zeroed (over its budget), or None.

    Zeroed: not skipped, every tag score 0, yet the judge's assertion scores for a tag are not all
    0. A tag score is the mean of its non-null assertion scores.
    """
    tags = item.get("tag_scores")
    assertions = item.get("assertion_scores")
    if ops.get("skipped") or not isinstance(tags, dict) or not isinstance(assertions, dict):
        return None
    if not tags or any(v != 0 for v in tags.values()):
        return None
    judged = {}
    for tag in tags:
        scores = assertions.get(tag)
        numbers = (
            [v for v in scores.values() if isinstance(v, int | float)]
            if isinstance(scores, dict)
            else []
        )
        judged[str(tag).lower()] = sum(numbers) / len(numbers) if numbers else 0.0
    if not any(judged.values()):
        return None
    restored = {**values, **{k: v for k, v in judged.items() if k in values}}
    dims = [v for k, v in restored.items() if k in DIMENSIONS and isinstance(v, float)]
    restored["overall"] = sum(dims) / len(dims) if dims else None
    return restored


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
    qid: str, task_type: str, values: dict[str, Any], scale: float, status: str | None = None
) -> list[dict[str, Any]]:
    if "overall" not in values:
        scored = [v for k, v in values.items() if isinstance(v, float)]
        values = {**values, "overall": sum(scored) / len(scored) if scored else None}
    rows = []
    for metric, value in values.items():
        base = {"question_id": qid, "trial": 0, "task_type": task_type, "metric": metric}
        if status == "error":  # an infrastructure failure: the published 0 is not a judgement
            rows.append({**base, "status": "infra_error", "score": math.nan})
        elif isinstance(value, float):
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
    calls = item.get("tool_call_count", item.get("tool_calls"))
    if isinstance(calls, list):
        ops["tool_calls"] = len(calls)
    elif isinstance(calls, int | float) and not isinstance(calls, bool):
        ops["tool_calls"] = int(calls)
    status = _status(item)
    if status is not None:
        ops["status"] = status
    if item.get("skipped") is True:
        ops["skipped"] = True
        ops["reason"] = str(item.get("reason") or "")
        match = re.search(r"after (\d+(?:\.\d+)?)\s*s", ops["reason"])
        if match:
            ops["timeout_s"] = float(match.group(1))
    usage = item.get("token_usage")
    if isinstance(usage, dict):
        total = usage.get("total_tokens") or (
            (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
        )
        if isinstance(total, int | float) and total > 0:
            ops["tokens"] = float(total)
    for key in ("cost_usd", "tokens", "timeout_s"):
        if isinstance(item.get(key), int | float):
            ops[key] = float(item[key])
    if item.get("scenario"):
        ops["scenario"] = item["scenario"]
    return ops


def _status(item: dict[str, Any]) -> str | None:
    if item.get("timed_out") is True:
        return "timeout"
    if item.get("skipped") is True:
        reason = str(item.get("reason") or "").lower()
        return "timeout" if any(word in reason for word in TIMEOUT_WORDS) else "error"
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
