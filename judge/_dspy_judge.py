"""The LLM rubric judge in DSPy: per-dimension or single-call, with validation, retries and a cache.

A reply that does not parse, has the wrong number of verdicts, unknown ids or a score off the
{0, 0.25, 0.5, 0.75, 1} grid is retried; after the last retry the dimension is ``judge_error``
(unscored), never null and never 0. Usage and cost come from the history of a private copy of the
LM made for each call, so concurrent calls are counted once each.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from judge._base import (
    ALLOWED_SCORES,
    GRADING_FAILED,
    UNREACHABLE,
    JudgeAbort,
    JudgeItem,
    JudgeOutcome,
    JudgeUnreachable,
    dimension_from_assertions,
    sha256_text,
    stable_hash,
)
from judge._cache import DiskCache
from judge._evidence import DEFAULT_EVIDENCE_CHARS, build_evidence
from ledgerbench_core.dataset import Assertion, Dimension, Question, TaskType
from ledgerbench_core.scores import AssertionScore, DimensionScore, DimensionStatus
from ledgerbench_core.trajectory import Usage

MAX_REASON_CHARS = 500
PREFLIGHT_PROMPT = "LedgerBench pre-flight check: reply with the single word OK."
"""The one call made to the judge model before judging, to learn that it answers."""
PREFLIGHT_TIMEOUT_S = 15.0
"""How long the pre-flight call waits for the judge model (a server that accepts and never
answers is a dead endpoint too)."""


def is_conversation(item: JudgeItem) -> bool:
    """Whether the item is a whole conversation (an operations item with its transcript)."""
    return item.question.conversation is not None and item.trajectory.conversation is not None


class JudgeReplyError(ValueError):
    """The judge's reply cannot be used (wrong count, unknown id, score off the grid)."""


def _ensure_offline_cost_map() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def judge_slug(model: str) -> str:
    """File-safe judge name from a model string: ``openai/gpt-5.2`` -> ``openai-gpt-5.2``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-") or "judge"


@dataclass
class CallResult:
    """One verdict request (possibly several attempts) and what it cost."""

    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    cost_unknown_calls: int = 0
    calls: int = 0
    transport_retries: int = 0
    """Calls repeated after a transport failure (each failed attempt is in ``calls`` too)."""
    unreachable: str | None = None
    """The transport error when the judge model could not be reached even after its retries."""
    messages: list[list[dict[str, Any]]] = field(default_factory=list)
    """Prompts sent, one message list per model call (kept in memory for inspection and tests)."""

    def absorb(self, history: list[dict[str, Any]]) -> None:
        for entry in history:
            self.calls += 1
            self.usage = self.usage.add(usage_from_entry(entry.get("usage") or {}))
            if entry.get("cost") is None:
                self.cost_unknown_calls += 1
            else:
                self.cost_usd += float(entry["cost"])
            self.messages.append(entry.get("messages") or [])


def usage_from_entry(usage: dict[str, Any]) -> Usage:
    """DSPy history usage (OpenAI-style keys) as our Usage."""
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or usage.get("output_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
        cached_input_tokens=int(prompt_details.get("cached_tokens") or 0),
    )


def always_applies(question: Question, assertion: Assertion) -> bool:
    """Assertions a judge may not call "not applicable": the accuracy of an answer with a
    reference answer (an obligation's), and an obligation's ERP-link citation (which passes, not
    drops out, when nothing was found)."""
    if assertion.id.startswith("accuracy.") and (question.ground_truth or question.expected):
        return True
    return question.task_type is TaskType.obligations and assertion.id.startswith(
        "citations.erp_link"
    )


def check_verdicts(
    verdicts: Any, assertions: list[Assertion], always: frozenset[str] = frozenset()
) -> list[AssertionScore]:
    """The reply's verdicts as assertion scores, or JudgeReplyError naming what is wrong.

    ``always`` are the ids of assertions that always apply: null for one of them is an error
    (silently dropping accuracy from the summary is worse than a retry or a ``judge_error``)."""
    if not isinstance(verdicts, list):
        raise JudgeReplyError(f"expected a list of verdicts, got {type(verdicts).__name__}")
    if len(verdicts) != len(assertions):
        raise JudgeReplyError(f"expected {len(assertions)} verdicts, got {len(verdicts)}")
    by_id: dict[str, AssertionScore] = {}
    for verdict in verdicts:
        data = verdict if isinstance(verdict, dict) else verdict.model_dump()
        assertion_id = str(data.get("assertion_id", ""))
        score = data.get("score")
        if score is not None:
            score = _on_grid(score, assertion_id)
        elif assertion_id in always:
            raise JudgeReplyError(
                f"score null (not applicable) for {assertion_id}, which always applies"
            )
        reason = str(data.get("reason") or "")[:MAX_REASON_CHARS]
        by_id[assertion_id] = AssertionScore(
            assertion_id=assertion_id, score=score, reason=reason, decided_by="llm"
        )
    expected_ids = [a.id for a in assertions]
    unknown = sorted(set(by_id) - set(expected_ids))
    if unknown or len(by_id) != len(expected_ids):
        raise JudgeReplyError(
            f"verdict ids {sorted(by_id)} do not match assertion ids {expected_ids}"
        )
    return [by_id[assertion_id] for assertion_id in expected_ids]


def _on_grid(score: Any, assertion_id: str) -> float:
    try:
        value = float(score)
    except (TypeError, ValueError):
        raise JudgeReplyError(f"score {score!r} for {assertion_id} is not a number") from None
    for allowed in ALLOWED_SCORES:
        if abs(value - allowed) < 1e-6:
            return allowed
    raise JudgeReplyError(f"score {value} for {assertion_id} is not one of 0, 0.25, 0.5, 0.75, 1")


def _to_judge(question: Question, assertion: Assertion, model: Any) -> Any:
    return model(
        id=assertion.id,
        text=assertion.text,
        level=assertion.level,
        always_applies=always_applies(question, assertion),
    )


def _always_ids(question: Question, assertions: list[Assertion]) -> frozenset[str]:
    return frozenset(a.id for a in assertions if always_applies(question, a))


def ground_truth_text(question: Question) -> str:
    lines = [question.ground_truth or "(no reference answer given)"]
    if question.expected:
        lines.append("Expected facts:")
        for fact in question.expected:
            tolerance = f" (tolerance {fact.tolerance})" if fact.tolerance else ""
            # A research figure is its period, scale and basis too: 129.2 is no key without them.
            qualifiers = [fact.kind, fact.currency, fact.unit, fact.scale, fact.period, fact.basis]
            what = ", ".join(filter(None, [*qualifiers, fact.side]))
            also = "".join(f" or {e.currency} {e.value}" for e in fact.equivalents)
            whole = " (the whole set)" if fact.complete else ""
            about = f" (about {fact.subject})" if fact.subject else ""
            lines.append(f"- {fact.field} [{what}]: {fact.value}{also}{tolerance}{whole}{about}")
    return "\n".join(lines)


def _redact_credentials(url: str | None) -> str | None:
    """A URL without any ``user:password@`` part (settings are written to the manifest)."""
    if not url:
        return url
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


_FATAL_LM_ERRORS = (
    "LMAuthError",
    "LMBillingError",
    "LMUnsupportedModelError",
    "LMConfigurationError",
)


def _raise_if_fatal(exc: BaseException) -> None:
    """Errors no retry can fix end the run (checked by class name: DSPy is imported lazily)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & set(_FATAL_LM_ERRORS):
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise JudgeAbort(f"the judge model cannot be used: {first_line}") from exc


def _is_connection_error(exc: BaseException) -> bool:
    """No answer at all: refused, reset, unresolvable, or no reply in time (not an HTTP error
    status, which is an answer)."""
    names = " ".join(cls.__name__ for cls in type(exc).__mro__)
    if any(word in names for word in ("Connect", "Timeout", "Connection")):
        return True
    text = str(exc).lower()
    markers = ("failed to connect", "connection refused", "timed out", "connection reset",
               "name or service not known", "no route to host", "connection aborted")  # fmt: skip
    return "LMTransportError" in names and any(m in text for m in markers)


def _is_transport_error(exc: BaseException) -> bool:
    """Connection failures, timeouts, rate limits and server errors: worth another attempt."""
    try:
        from dspy.utils.exceptions import is_retryable_lm_error

        if is_retryable_lm_error(exc):
            return True
    except ImportError:  # another DSPy version: fall back to the names
        pass
    names = " ".join(cls.__name__ for cls in type(exc).__mro__)
    return any(
        word in names
        for word in ("Connection", "Timeout", "RateLimit", "ServiceUnavailable", "InternalServer")
    )


def _error_text(exc: BaseException) -> str:
    message = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {message}"


def load_program(program: Any, path: str) -> None:
    """A tuned program's state (saved with ``module.save(path)``) into ``program``. Predictors the
    file does not hold (a program tuned before conversations were judged) keep their own,
    untuned state."""
    if Path(path).suffix != ".json":
        program.load(path)
        return
    state = json.loads(Path(path).read_text(encoding="utf-8"))
    program.load_state({**program.dump_state(), **state})


class RubricJudgeProgram:
    """Factory for the DSPy module (built lazily so importing this file does not import DSPy)."""

    @staticmethod
    def build():
        import dspy

        from judge._signatures import (
            DIMENSION_SIGNATURES,
            all_dimensions_signature,
            conversation_all_signature,
            conversation_signatures,
        )

        class RubricJudge(dspy.Module):
            """One predictor per dimension plus one for all dimensions at once, for single
            answers and (``conversation_*``) for whole conversations."""

            def __init__(self) -> None:
                super().__init__()
                for dimension, signature in DIMENSION_SIGNATURES.items():
                    setattr(self, f"judge_{dimension.value}", dspy.Predict(signature))
                self.judge_all = dspy.Predict(all_dimensions_signature())
                for dimension, signature in conversation_signatures().items():
                    setattr(self, f"conversation_{dimension.value}", dspy.Predict(signature))
                self.conversation_all = dspy.Predict(conversation_all_signature())

            def forward(
                self, dimension: Dimension | None = None, conversation: bool = False, **inputs: Any
            ):
                prefix = "conversation" if conversation else "judge"
                if dimension is None:
                    return getattr(self, f"{prefix}_all")(**inputs)
                return getattr(self, f"{prefix}_{dimension.value}")(**inputs)

        return RubricJudge()


class DspyJudge:
    """``--judge MODEL``: the LLM rubric judge."""

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        mode: str = "per-dimension",
        temperature: float | None = 0.0,
        max_tokens: int | None = 4000,
        retries: int = 2,
        evidence_chars: int = DEFAULT_EVIDENCE_CHARS,
        lm: Any = None,
        name: str | None = None,
        cache_dir: str | None = None,
        price_per_mtok: tuple[float, float] | None = None,
        request_timeout: float | None = 120.0,
        adapter: str = "chat",
        program_path: str | None = None,
        transport_retries: int = 2,
        retry_backoff_s: float = 1.0,
    ) -> None:
        if mode not in ("per-dimension", "single-call"):
            raise ValueError(f"mode {mode!r}: use per-dimension or single-call")
        self.model = model or getattr(lm, "model", None) or "dspy-context-lm"
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.mode = mode
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.retries = retries
        self.evidence_chars = evidence_chars
        self.price_per_mtok = price_per_mtok
        self.request_timeout = request_timeout
        if adapter not in ("chat", "json"):
            raise ValueError(f"adapter {adapter!r}: use chat or json")
        self.adapter = adapter
        self.program_path = program_path
        self.transport_retries = transport_retries
        self.retry_backoff_s = retry_backoff_s
        self._program_sha256 = (
            sha256_text(Path(program_path).read_text(encoding="utf-8")) if program_path else None
        )
        self._lm = lm
        self._owns_lm = False
        """Whether the judge built its LM from the model string (then it calls the network)."""
        self.name = name or judge_slug(self.model) + ("-single" if mode == "single-call" else "")
        self.cache = DiskCache(cache_dir) if cache_dir else None
        self._program = None
        self._instructions_hash: str | None = None

    # -- setup -----------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Build the program and the LM in the calling thread (workers inherit neither DSPy
        context)."""
        _ensure_offline_cost_map()
        import dspy

        if self._lm is None:
            self._owns_lm = self.model != "dspy-context-lm"
            self._lm = self._make_lm() if self._owns_lm else dspy.settings.lm
            if self._lm is None:
                raise ValueError("no judge model: pass --judge MODEL or set a DSPy LM in context")
        if self.adapter == "json":
            self._adapter = dspy.JSONAdapter()
        else:
            # Our own retry loop handles bad replies; a silent second call in another format
            # would not be visible in the attempt count.
            self._adapter = dspy.ChatAdapter(use_json_adapter_fallback=False)
        if self._program is None:
            self._program = RubricJudgeProgram.build()
            if self.program_path:
                # A tuned program (demos, rewritten instructions) saved with module.save(path).
                load_program(self._program, self.program_path)

    def preflight(self) -> None:
        """One call to the judge model before judging: JudgeUnreachable (one line naming the
        failure and the fix) when it does not answer within PREFLIGHT_TIMEOUT_S, JudgeAbort when
        it refuses the key or the model. Any answer, even an HTTP error status, is an answer.
        Skipped for an LM object given in code (DummyLM in tests, a DSPy context LM)."""
        if self._lm is None or self._program is None:
            self.prepare()
        if not self._owns_lm:
            return
        timeout = min(self.request_timeout or PREFLIGHT_TIMEOUT_S, PREFLIGHT_TIMEOUT_S)
        lm = self._lm.copy(timeout=timeout)
        try:
            lm(PREFLIGHT_PROMPT)
        except Exception as exc:
            _raise_if_fatal(exc)
            if _is_connection_error(exc):
                where = f" at {_redact_credentials(self.base_url)}" if self.base_url else ""
                raise JudgeUnreachable(
                    f"the judge model {self.model}{where} does not answer "
                    f"({_error_text(exc)}); check --base-url and that the server is up"
                ) from None

    def _make_lm(self):
        import dspy

        # Transport retries happen in _predict, where each attempt is counted.
        kwargs: dict[str, Any] = {"cache": False, "num_retries": 0}
        if self.base_url:
            kwargs["api_base"] = self.base_url
            kwargs["api_key"] = os.environ.get(self.api_key_env or "OPENAI_API_KEY") or "unused"
        elif self.api_key_env:
            kwargs["api_key"] = os.environ.get(self.api_key_env, "")
        if self.request_timeout:
            kwargs["timeout"] = self.request_timeout
        try:
            return dspy.LM(
                self.model, temperature=self.temperature, max_tokens=self.max_tokens, **kwargs
            )
        except Exception as exc:
            if "reasoning" not in str(exc).lower():
                raise
            # Reasoning models refuse temperature 0 and small budgets: use what they accept.
            self.temperature, self.max_tokens = None, None
            return dspy.LM(self.model, temperature=None, max_tokens=None, **kwargs)

    def settings(self) -> dict[str, Any]:
        return {
            "judge": "dspy",
            "model": self.model,
            "base_url": _redact_credentials(self.base_url),
            "mode": self.mode,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "retries": self.retries,
            "evidence_chars": self.evidence_chars,
            "adapter": self.adapter,
            "program_sha256": self._program_sha256,
        }

    def instructions_hash(self) -> str:
        if self._instructions_hash is None:
            _ensure_offline_cost_map()
            from judge._signatures import (
                DIMENSION_SIGNATURES,
                all_dimensions_signature,
                conversation_all_signature,
                conversation_signatures,
                signature_text,
            )

            texts = {d.value: signature_text(s) for d, s in DIMENSION_SIGNATURES.items()}
            texts["all"] = signature_text(all_dimensions_signature())
            texts |= {
                f"conversation.{d.value}": signature_text(s)
                for d, s in conversation_signatures().items()
            }
            texts["conversation.all"] = signature_text(conversation_all_signature())
            texts["program"] = self._program_sha256 or ""
            self._instructions_hash = stable_hash(texts)
        return self._instructions_hash

    # -- calls -----------------------------------------------------------------------------------

    def _predict(
        self, dimension: Dimension | None, inputs: dict[str, Any], result: CallResult
    ) -> Any:
        """One verdict request. Transport failures (connection, timeout, 429, 5xx) are retried
        here, not inside the LM client, so that every attempt is counted as a call."""
        import dspy

        conversation = "transcript" in inputs  # a whole conversation, not one answer
        for attempt in range(1 + self.transport_retries):
            lm = self._lm.copy()
            try:
                with dspy.context(lm=lm, adapter=self._adapter):
                    return self._program(dimension=dimension, conversation=conversation, **inputs)
            except Exception as exc:
                if len(lm.history) or not _is_transport_error(exc):
                    raise
                result.calls += 1  # a request that reached no usable reply still counts
                result.transport_retries += attempt < self.transport_retries
                if attempt == self.transport_retries:
                    raise
                time.sleep(min(2.0**attempt, 8.0) * self.retry_backoff_s)
            finally:
                result.absorb(lm.history)
        raise AssertionError("unreachable")

    def _common_inputs(self, item: JudgeItem) -> dict[str, Any]:
        if is_conversation(item):
            from judge._conversation import scenario_text, transcript_text

            return {
                "scenario": scenario_text(item.question),
                "transcript": transcript_text(item.trajectory, max_chars=self.evidence_chars),
                "ground_truth": ground_truth_text(item.question),
            }
        return {
            "question": item.question.query,
            "task_type": item.question.task_type.value,
            "answer": item.trajectory.answer,
        }

    def _dimension_inputs(self, item: JudgeItem, dimension: Dimension) -> dict[str, Any]:
        from judge._signatures import AssertionToJudge

        inputs = self._common_inputs(item)
        inputs["assertions"] = [
            _to_judge(item.question, a, AssertionToJudge) for a in item.question.tags[dimension]
        ]
        if is_conversation(item):  # the transcript holds the tool outputs, the facts are given
            return inputs
        if dimension is Dimension.accuracy:
            inputs["ground_truth"] = ground_truth_text(item.question)
        if dimension is Dimension.groundedness:
            inputs["evidence"] = build_evidence(item.trajectory, self.evidence_chars).text
        return inputs

    def _cache_key(self, item: JudgeItem, dimension: Dimension, inputs: dict[str, Any]) -> str:
        payload = {
            "question_id": item.question.id,
            "answer_sha256": sha256_text(item.trajectory.answer),
            "dimension": dimension.value,
            "inputs": {
                k: (sha256_text(v) if isinstance(v, str) else [m.model_dump() for m in v])
                if not isinstance(v, dict)
                else {d: [m.model_dump() for m in ms] for d, ms in v.items()}
                for k, v in inputs.items()
            },
            "settings": self.settings(),
            "instructions": self.instructions_hash(),
        }
        return stable_hash(payload)

    def judge_dimension(
        self, item: JudgeItem, dimension: Dimension
    ) -> tuple[DimensionScore, CallResult]:
        """Score one dimension: cache, else up to 1 + retries calls, else judge_error."""
        assertions = item.question.tags[dimension]
        inputs = self._dimension_inputs(item, dimension)
        key = self._cache_key(item, dimension, inputs)
        result = CallResult()
        if (hit := self._cache_get(key)) is not None:
            return hit, result
        for _attempt in range(1 + self.retries):
            try:
                prediction = self._predict(dimension, inputs, result)
                scores = check_verdicts(
                    prediction.verdicts, assertions, _always_ids(item.question, assertions)
                )
            except Exception as exc:  # parse errors, bad replies and transport failures alike
                _raise_if_fatal(exc)
                result.error = _error_text(exc)
                if _is_transport_error(exc):  # its own retries are spent: no model to re-ask
                    result.unreachable = result.error
                    break
                continue
            result.error = None
            dimension_score = dimension_from_assertions(
                scores, undecided_status=DimensionStatus.not_applicable
            )
            self._cache_put(key, dimension_score)
            return dimension_score, result
        attempts = 1 + self.retries
        return (
            DimensionScore(
                status=DimensionStatus.judge_error,
                error=f"after {attempts} attempts: {result.error}",
            ),
            result,
        )

    def judge_all(self, item: JudgeItem) -> tuple[dict[Dimension, DimensionScore], CallResult]:
        """Single-call mode: all dimensions in one structured call; failed dimensions retried."""
        from judge._signatures import AssertionToJudge

        dimensions = [d for d, a in item.question.tags.items() if a]
        inputs = self._common_inputs(item)
        if not is_conversation(item):
            inputs["ground_truth"] = ground_truth_text(item.question)
            inputs["evidence"] = build_evidence(item.trajectory, self.evidence_chars).text
        inputs["assertions"] = {
            d.value: [_to_judge(item.question, a, AssertionToJudge) for a in item.question.tags[d]]
            for d in dimensions
        }
        keys = {d: self._cache_key(item, d, inputs) for d in dimensions}
        done: dict[Dimension, DimensionScore] = {}
        for d in dimensions:
            if (hit := self._cache_get(keys[d])) is not None:
                done[d] = hit
        result = CallResult()
        errors: dict[Dimension, str] = {}
        for _attempt in range(1 + self.retries):
            pending = [d for d in dimensions if d not in done]
            if not pending:
                break
            try:
                prediction = self._predict(None, inputs, result)
                replies = prediction.verdicts
                if not isinstance(replies, dict):
                    raise JudgeReplyError("verdicts is not a mapping of dimension -> verdicts")
            except Exception as exc:
                _raise_if_fatal(exc)
                errors = {d: _error_text(exc) for d in pending}
                if _is_transport_error(exc):
                    result.unreachable = _error_text(exc)
                    break
                continue
            for d in pending:
                try:
                    if d.value not in replies:
                        raise JudgeReplyError(f"no verdicts for dimension {d.value}")
                    tagged = item.question.tags[d]
                    scores = check_verdicts(
                        replies[d.value], tagged, _always_ids(item.question, tagged)
                    )
                except JudgeReplyError as exc:
                    errors[d] = _error_text(exc)
                    continue
                errors.pop(d, None)
                done[d] = dimension_from_assertions(
                    scores, undecided_status=DimensionStatus.not_applicable
                )
                self._cache_put(keys[d], done[d])
        attempts = 1 + self.retries
        for d in dimensions:
            if d not in done:
                done[d] = DimensionScore(
                    status=DimensionStatus.judge_error,
                    error=f"after {attempts} attempts: {errors.get(d, 'no reply')}",
                )
        return {d: done[d] for d in dimensions}, result

    def _cache_get(self, key: str) -> DimensionScore | None:
        if self.cache is None:
            return None
        value = self.cache.get(key)
        return DimensionScore.model_validate(value) if value is not None else None

    def _cache_put(self, key: str, score: DimensionScore) -> None:
        if self.cache is not None:
            self.cache.put(key, score.model_dump(mode="json"))

    # -- the judge protocol --------------------------------------------------------------------

    def score(self, item: JudgeItem) -> JudgeOutcome:
        if self._program is None:
            self.prepare()
        total = CallResult()
        cache_hits = 0
        by_dimension: dict[str, dict[str, Any]] = {}
        if self.mode == "single-call":
            dimensions, total = self.judge_all(item)
            if total.calls == 0:
                cache_hits = sum(
                    d.status is not DimensionStatus.judge_error for d in dimensions.values()
                )
        else:
            dimensions = {}
            for dimension, assertions in item.question.tags.items():
                if not assertions:
                    continue
                if total.unreachable:  # asking again for the next dimension would only wait
                    dimensions[dimension] = DimensionScore(
                        status=DimensionStatus.judge_error,
                        error=f"not judged: the judge model did not answer ({total.unreachable})",
                    )
                    continue
                dimensions[dimension], result = self.judge_dimension(item, dimension)
                total.unreachable = total.unreachable or result.unreachable
                cache_hits += (
                    result.calls == 0
                    and dimensions[dimension].status != DimensionStatus.judge_error
                )
                total.usage = total.usage.add(result.usage)
                total.cost_usd += result.cost_usd
                total.cost_unknown_calls += result.cost_unknown_calls
                total.calls += result.calls
                total.transport_retries += result.transport_retries
                total.messages += result.messages
                by_dimension[dimension.value] = {
                    "calls": result.calls,
                    "input_tokens": result.usage.input_tokens,
                    "output_tokens": result.usage.output_tokens,
                    "cost_usd": self._cost(result),
                }
        extra: dict[str, Any] = {}
        if by_dimension:
            extra["calls_by_dimension"] = by_dimension
        failed = [
            d for d, score in dimensions.items() if score.status is DimensionStatus.judge_error
        ]
        unscored = None
        if failed and is_conversation(item):
            # A conversation is graded whole or not at all: an Overall over the dimensions that
            # happened to parse would not be the conversation's.
            first = dimensions[failed[0]].error or "no usable reply"
            names = ", ".join(d.value for d in failed)
            unscored = f"the judge could not grade the conversation ({names}: {first})"[:500]
            extra[GRADING_FAILED] = [d.value for d in failed]
            dimensions = {}
        if total.cost_unknown_calls:
            extra["cost_unknown_calls"] = total.cost_unknown_calls
        if total.transport_retries:
            extra["transport_retries"] = total.transport_retries
        if total.unreachable:
            extra[UNREACHABLE] = total.unreachable
        return JudgeOutcome(
            dimensions=dimensions,
            usage=total.usage,
            cost_usd=self._cost(total),
            calls=total.calls,
            cache_hits=cache_hits,
            extra=extra,
            unscored=unscored,
        )

    def _cost(self, total: CallResult) -> float | None:
        if self.price_per_mtok is not None:
            price_in, price_out = self.price_per_mtok
            usage = total.usage
            return (usage.input_tokens * price_in + usage.output_tokens * price_out) / 1e6
        if total.calls == 0:
            return 0.0
        if total.cost_unknown_calls:
            return None
        return total.cost_usd
