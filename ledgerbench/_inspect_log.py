"""A LedgerBench run as an Inspect AI evaluation log (``inspect_ai.log.EvalLog``).

Inspect AI is optional (``pip install 'ledgerbench[inspect]'``): it is imported only here, and only
when an export is asked for. One run becomes one log: one sample per (question, trial), with the
conversation as chat messages, one ``ModelEvent`` per model call and one ``ToolEvent`` per tool
call, one score per judge (the answer's mean and each scored dimension; reasons in the
explanation; the run's Overall is the judge's ``overall`` metric), and token usage per sample and
in total.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnesses._wire import FILTER_FINISH, LENGTH_FINISH
from ledgerbench_core.trajectory import (
    Message,
    ModelEvent,
    RunManifest,
    ToolEvent,
    TrajectoryRecord,
)

INSTALL_HINT = "pip install 'ledgerbench[inspect]' (or pip install 'inspect-ai>=0.3,<0.4')"


class ExportError(ValueError):
    """Bad input or a missing optional dependency: the message names the problem and the fix."""


@dataclass
class RunContents:
    manifest: RunManifest
    records: list[TrajectoryRecord]
    scores: dict[str, dict[tuple[str, int], Any]]
    """judge -> (question_id, trial) -> ScoreRecord."""
    questions: dict[str, Any]
    """question_id -> dataset Question (empty when the dataset cannot be found)."""


def _inspect() -> Any:
    try:
        import inspect_ai
    except ImportError:
        raise ExportError(
            f"the Inspect export needs inspect-ai; install it with {INSTALL_HINT}"
        ) from None
    return inspect_ai


def read_run(run_dir: Path, dataset: Path | None = None) -> RunContents:
    """Manifest, trajectories (the last record per question and trial), scores and questions."""
    from ledgerbench_core.scores import ScoreRecord

    if not (run_dir / "trajectories.jsonl").is_file() or not (run_dir / "manifest.json").is_file():
        raise ExportError(
            f"{run_dir} is not a run directory (needs manifest.json and trajectories.jsonl); "
            "pass runs/NAME as written by python -m harnesses.run"
        )
    manifest = RunManifest.model_validate_json((run_dir / "manifest.json").read_bytes())
    records = {}
    for line in (run_dir / "trajectories.jsonl").read_bytes().splitlines():
        if line.strip():
            record = TrajectoryRecord.model_validate_json(line)
            records[(record.question_id, record.trial)] = record
    scores = {}
    for path in sorted((run_dir / "scores").glob("*.jsonl")):
        lines = [line for line in path.read_bytes().splitlines() if line.strip()]
        parsed = [ScoreRecord.model_validate_json(line) for line in lines]
        scores[path.stem] = {(s.question_id, s.trial): s for s in parsed}
    return RunContents(
        manifest, list(records.values()), scores, _questions(run_dir, manifest, dataset)
    )


def _questions(run_dir: Path, manifest: RunManifest, dataset: Path | None) -> dict[str, Any]:
    from ledgerbench_core.dataset import find_run_dataset, load_dataset

    path = find_run_dataset(manifest.dataset_path, run_dir, dataset)
    if path is None:
        if dataset:
            raise ExportError(
                f"--dataset {dataset} does not exist; pass the dataset file or folder the run used"
            )
        return {}
    return {item.id: item for item in load_dataset(path).items}


def _at(record: TrajectoryRecord, offset_s: float | None) -> dt.datetime:
    return record.started_at + dt.timedelta(seconds=offset_s or 0.0)


def _call_id(index: int) -> str:
    return f"call_{index}"


def _usage(inspect: Any, usage: Any, cost: float | None = None) -> Any:
    """Inspect's usage; None when the provider reported none (unknown)."""
    if usage is None:
        return None
    return inspect.model.ModelUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
        input_tokens_cache_read=usage.cached_input_tokens or None,
        reasoning_tokens=usage.reasoning_tokens or None,
        total_cost=cost,
    )


def _stop_reason(event: Any, message: Any) -> str:
    """Inspect's stop reason of a model call: a cut reply says how it was cut."""
    if event.finish_reason in LENGTH_FINISH:
        return "max_tokens"
    if event.finish_reason in FILTER_FINISH:
        return "content_filter"
    return "tool_calls" if message.tool_calls else "stop"


def _chat_messages(inspect: Any, record: TrajectoryRecord, system_prompt: str | None) -> list[Any]:
    """The conversation as Inspect chat messages (a version-1 record gets one built from its tool
    calls and answer)."""
    model = inspect.model
    calls = record.tool_calls
    messages: list[Any] = []
    if system_prompt:
        messages.append(model.ChatMessageSystem(content=system_prompt, source="input"))
    turns = record.messages or _turns_from_calls(record)
    for turn in turns:
        if turn.role == "user":
            messages.append(model.ChatMessageUser(content=turn.content, source="input"))
        elif turn.role == "assistant":
            content: Any = turn.content
            if turn.reasoning:
                content = [model.ContentReasoning(reasoning=turn.reasoning)]
                if turn.content:
                    content.append(model.ContentText(text=turn.content))
            tool_calls = [
                inspect.tool.ToolCall(
                    id=_call_id(ref.index),
                    function=calls[ref.index].name,
                    arguments=calls[ref.index].arguments,
                )
                for ref in turn.tool_calls
                if ref.index < len(calls)
            ]
            messages.append(
                model.ChatMessageAssistant(
                    content=content,
                    tool_calls=tool_calls or None,
                    model=record.model,
                    source="generate",
                )
            )
        elif turn.tool_call_index is None or turn.tool_call_index >= len(calls):
            messages.append(model.ChatMessageTool(content=turn.content))  # one message per turn
        else:
            call = calls[turn.tool_call_index]
            messages.append(
                model.ChatMessageTool(
                    content=call.output,
                    tool_call_id=_call_id(turn.tool_call_index),
                    function=call.name,
                    error=_tool_error(inspect, call),
                )
            )
    return messages


def _turns_from_calls(record: TrajectoryRecord) -> list[Message]:
    from ledgerbench_core.trajectory import MessageToolCall

    turns = [Message(role="user", content=record.input or "")]
    for index in range(len(record.tool_calls)):
        turns.append(Message(role="assistant", tool_calls=[MessageToolCall(index=index)]))
        turns.append(Message(role="tool", tool_call_index=index))
    if record.answer:
        turns.append(Message(role="assistant", content=record.answer))
    return turns


def _tool_error(inspect: Any, call: Any) -> Any:
    if call.cancelled:
        return inspect.tool.ToolCallError("cancelled", "cut off by the deadline")
    if call.is_error:
        return inspect.tool.ToolCallError("unknown", call.output[:500])
    return None


def _events(inspect: Any, record: TrajectoryRecord, messages: list[Any]) -> list[Any]:
    """Model and tool events, each with its timestamp; a model event's input is the conversation
    before the assistant turn it produced, its output that turn."""
    events_module, model = inspect.event, inspect.model
    produced = _produced_turns(record, messages)
    out = []
    for event in record.events:
        timestamp = _at(record, event.started_s)
        completed = (
            None
            if event.duration_s is None
            else _at(record, (event.started_s or 0) + event.duration_s)
        )
        if isinstance(event, ModelEvent):
            at = produced.get(id(event))
            if at is not None:
                output_message, history = messages[at], messages[:at]
            else:
                output_message = model.ChatMessageAssistant(content="", model=event.model)
                history = messages[:1]
            out.append(
                events_module.ModelEvent(
                    model=event.model or record.model or record.harness,
                    input=history,
                    tools=[],
                    tool_choice="auto",
                    config=model.GenerateConfig(),
                    output=model.ModelOutput(
                        model=event.model or record.model or "",
                        choices=[
                            model.ChatCompletionChoice(
                                message=output_message,
                                stop_reason=_stop_reason(event, output_message),
                            )
                        ],
                        usage=_usage(inspect, event.usage),
                    ),
                    retries=event.retries or None,
                    error=event.error,
                    timestamp=timestamp,
                    completed=completed,
                    working_start=event.started_s,
                    working_time=event.duration_s,
                    metadata={"request_id": event.request_id} if event.request_id else None,
                )
            )
        elif isinstance(event, ToolEvent) and event.tool_call_index < len(record.tool_calls):
            call = record.tool_calls[event.tool_call_index]
            out.append(
                events_module.ToolEvent(
                    id=_call_id(event.tool_call_index),
                    function=call.name,
                    arguments=call.arguments,
                    result=call.output,
                    truncated=(call.output_size, len(call.output)) if call.truncated else None,
                    error=_tool_error(inspect, call),
                    timestamp=timestamp,
                    completed=completed,
                    working_start=event.started_s or 0.0,
                    working_time=event.duration_s,
                    metadata={"server": call.server, "output_sha256": call.output_sha256},
                )
            )
    return out


def _produced_turns(record: TrajectoryRecord, messages: list[Any]) -> dict[int, int]:
    """id(model event) -> position in ``messages`` of the assistant turn it produced: the recorded
    ``message_index`` where the harness gave one, else the remaining calls that did not fail pair
    with the remaining assistant turns in order."""
    offset = len(messages) - len(record.messages or _turns_from_calls(record))
    model_events = [e for e in record.events if isinstance(e, ModelEvent)]
    linked = {id(e): e.message_index for e in model_events if e.message_index is not None}
    free_turns = [
        n
        for n, m in enumerate(record.messages)
        if m.role == "assistant" and n not in set(linked.values())
    ]
    unlinked = [e for e in model_events if e.message_index is None and not e.error]
    linked.update({id(e): n for e, n in zip(unlinked, free_turns, strict=False)})
    return {key: n + offset for key, n in linked.items() if 0 <= n + offset < len(messages)}


def _scores(inspect: Any, record: TrajectoryRecord, contents: RunContents) -> dict[str, Any]:
    scores = {}
    for judge, by_key in contents.scores.items():
        score = by_key.get((record.question_id, record.trial))
        if score is None or score.overall is None:
            continue
        value = {"answer_mean": score.overall}  # the answer's own mean; Overall is the run's
        reasons = []
        for dimension, result in score.dimensions.items():
            if result.score is not None:
                value[dimension.value] = result.score
            for assertion in result.assertions:
                shown = "n/a" if assertion.score is None else f"{assertion.score:g}"
                reasons.append(f"- **{assertion.assertion_id}** {shown}: {assertion.reason}")
        scores[judge] = inspect.scorer.Score(
            value=value,
            answer=record.answer,
            explanation="\n".join(reasons) or None,
            metadata={"judge": judge, "status": score.status.value, "cached": score.cached},
        )
    return scores


def _limit(inspect: Any, record: TrajectoryRecord) -> Any:
    reason = record.termination.reason.value
    if reason == "time_limit":
        return inspect.log.EvalSampleLimit(type="time", limit=record.timeout_s)
    if reason == "max_turns":
        return inspect.log.EvalSampleLimit(type="message", limit=record.turns)
    if reason == "token_limit":
        usage = record.usage
        tokens = usage.input_tokens + usage.output_tokens if usage is not None else 0
        return inspect.log.EvalSampleLimit(type="token", limit=tokens)
    if reason == "cost_limit":
        return inspect.log.EvalSampleLimit(type="cost", limit=record.cost_usd or 0.0)
    return None


def _sample(inspect: Any, record: TrajectoryRecord, contents: RunContents) -> Any:
    model, log = inspect.model, inspect.log
    question = contents.questions.get(record.question_id)
    messages = _chat_messages(inspect, record, contents.manifest.system_prompt)
    label = record.model or record.harness
    error = None
    if record.termination.infrastructure:
        detail = record.termination.detail or (record.error.message if record.error else "")
        message = f"{record.termination.reason.value}: {detail}".strip(": ")
        error = log.EvalError(message=message, traceback="", traceback_ansi="")
    return log.EvalSample(
        id=record.question_id,
        epoch=record.trial + 1,
        input=record.input or (question.query if question else ""),
        target=(question.ground_truth or "") if question else "",
        messages=messages,
        output=model.ModelOutput(
            model=label,
            choices=[
                model.ChatCompletionChoice(
                    message=model.ChatMessageAssistant(content=record.answer, model=record.model),
                    stop_reason="stop",
                )
            ],
            completion=record.answer,
            usage=_usage(inspect, record.usage, record.cost_usd),
        ),
        scores=_scores(inspect, record, contents) or None,
        metadata={
            "task_type": record.task_type.value,
            "scenario": question.scenario if question else None,
            "harness": record.harness,
            "status": record.status.value,
            "termination": record.termination.reason.value,
            "termination_detail": record.termination.detail,
            "tool_calls": len(record.tool_calls),
            "turns": record.turns,
            "cost_usd": record.cost_usd,
            "system_prompt_hash": record.system_prompt_hash,
        },
        events=_events(inspect, record, messages),
        model_usage={label: _usage(inspect, record.usage, record.cost_usd)}
        if record.usage is not None
        else {},
        started_at=record.started_at,
        completed_at=record.finished_at,
        total_time=record.latency_s,
        working_time=record.working_time_s,
        error=error,
        limit=_limit(inspect, record),
        uuid=f"{contents.manifest.run_id}:{record.question_id}:{record.trial}",
    )


def _overall_stderr(log: Any, answers: list, contents: RunContents) -> dict[str, Any]:
    """The Overall's standard error clustered by template (research: kind), as the report."""
    from ledgerbench_core._clustered import item_clusters, overall_interval

    metadata = {q: dict(item.metadata) for q, item in contents.questions.items()}
    clusters, label = item_clusters({a.question_id: a.task_type for a in answers}, metadata)
    found = overall_interval(answers, clusters)
    if found is None:
        return {}
    low, high, se, df = found
    info = {"clustered": label, "df": df, "ci_95": [low, high]}
    return {"overall_stderr": log.EvalMetric(name="overall_stderr", value=se, metadata=info)}


def build_eval_log(contents: RunContents) -> Any:
    """The run as an ``inspect_ai.log.EvalLog``."""
    inspect = _inspect()
    import inspect_ai.event
    import inspect_ai.log
    import inspect_ai.model
    import inspect_ai.scorer
    import inspect_ai.tool  # noqa: F401

    log, manifest = inspect.log, contents.manifest
    records = sorted(contents.records, key=lambda r: (r.started_at, r.question_id, r.trial))
    samples = [_sample(inspect, record, contents) for record in records]
    label = manifest.model or manifest.harness
    total_usage = inspect.model.ModelUsage()
    for sample in samples:
        for usage in sample.model_usage.values():
            total_usage = total_usage + usage
    from ledgerbench_core._coverage import coverage, one_grading
    from ledgerbench_core._overall import answer_means, equal_weight, run_overall, scored_answers

    results = []
    for judge in sorted(contents.scores):
        values = [s for s in samples if s.scores and judge in s.scores]
        kept, _, _ = one_grading(list(contents.scores[judge].values()))
        answers = scored_answers(kept)
        judged = coverage(judge, kept, [(r.question_id, r.trial) for r in records])
        metrics = {}
        if values:  # the run's Overall (docs/statistics.md), and the mean of the answers' means
            metrics["overall"] = log.EvalMetric(name="overall", value=run_overall(answers))
            metrics.update(_overall_stderr(log, answers, contents))
            metrics["answer_mean"] = log.EvalMetric(
                name="answer_mean", value=equal_weight(answer_means(answers))
            )
        results.append(
            log.EvalScore(
                name=judge,
                scorer=judge,
                scored_samples=len(values),
                unscored_samples=len(samples) - len(values),
                metrics=metrics,
                # beside the figures: "14/100 scored" for a partly judged run, and the grading
                metadata={"judged": judged.label(), **judged.as_dict()},
            )
        )
    finished = manifest.finished_at or max(
        (r.finished_at for r in records), default=manifest.started_at
    )
    return log.EvalLog(
        status="cancelled" if manifest.interrupted else "success",
        eval=log.EvalSpec(
            created=manifest.started_at,
            task="ledgerbench",
            task_id=manifest.config_fingerprint,
            run_id=manifest.run_id,
            task_display_name=f"LedgerBench: {Path(manifest.dataset_path).name}",
            dataset=log.EvalDataset(
                name=Path(manifest.dataset_path).stem,
                location=manifest.dataset_path,
                samples=manifest.question_count,
            ),
            model=f"{manifest.harness}/{label}" if manifest.model else manifest.harness,
            config=log.EvalConfig(
                epochs=max((r.trial for r in records), default=0) + 1,
                time_limit=int(max(manifest.timeouts.values(), default=0)) or None,
            ),
            packages=manifest.package_versions,
            metadata={
                "harness": manifest.harness,
                "harness_options": manifest.harness_options,
                "timeouts": manifest.timeouts,
                "dataset_hash": manifest.dataset_hash,
                "erp_snapshot_hash": manifest.erp_snapshot_hash,
                "system_prompt_hash": manifest.system_prompt_hash,
                "git_revision": manifest.git_revision,
            },
        ),
        plan=log.EvalPlan(name="ledgerbench", steps=[log.EvalPlanStep(solver=manifest.harness)]),
        results=log.EvalResults(
            total_samples=len(samples),
            completed_samples=sum(1 for s in samples if s.error is None),
            scores=results,
        ),
        stats=log.EvalStats(
            started_at=manifest.started_at.isoformat(),
            completed_at=finished.isoformat(),
            model_usage={label: total_usage},
        ),
        samples=samples,
    )


def export_inspect(run_dir: Path, out: Path, dataset: Path | None = None) -> tuple[Path, int]:
    """Write the run as an Inspect log (``.eval``, or JSON when ``out`` ends in ``.json``)."""
    contents = read_run(run_dir, dataset)
    inspect = _inspect()
    eval_log = build_eval_log(contents)
    out.parent.mkdir(parents=True, exist_ok=True)
    inspect.log.write_eval_log(
        eval_log, str(out), format="json" if out.suffix == ".json" else "eval"
    )
    return out, len(eval_log.samples or [])
