"""Run records: the trajectory line written per question and trial, and the run manifest.

``runs/NAME/trajectories.jsonl`` holds one :class:`TrajectoryRecord` per line;
``runs/NAME/manifest.json`` holds one :class:`RunManifest`. Both carry a format ``version``.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ledgerbench.dataset import TaskType

TRAJECTORY_FORMAT_VERSION = 1
MANIFEST_FORMAT_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, populate_by_name=True)


class Status(StrEnum):
    """Why a question's run ended."""

    ok = "ok"
    """The agent produced its final answer within the budget."""
    timeout = "timeout"
    """The wall-clock budget ran out; ``answer`` holds what was produced so far."""
    max_turns = "max_turns"
    """The agent hit its turn or tool-call cap."""
    error = "error"
    """The harness or infrastructure failed; see ``error``. Never judged as an answer."""


class ErrorInfo(_Strict):
    class_: str = Field(alias="class", serialization_alias="class")
    """Exception class or error category, e.g. ``RateLimitError``."""
    message: str
    """What went wrong, with secrets removed."""


class ToolCall(_Strict):
    name: str
    """Tool name as the agent saw it (e.g. ``get_customer`` or ``mcp__erp__get_customer``)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments as the agent sent them."""
    output: str = ""
    """Tool output, truncated to the run's limit."""
    output_sha256: str = ""
    """SHA-256 of the full output, before truncation."""
    output_size: int = 0
    """Length of the full output in characters."""
    truncated: bool = False
    """Whether ``output`` was cut to the limit."""
    is_error: bool = False
    """The tool reported an error (the agent saw an error result)."""
    server: str | None = None
    """``erp``, ``web`` or another tool source, when known."""
    started_s: float | None = None
    """Offset from the question's start, seconds."""
    duration_s: float | None = None
    """Seconds the call took; None when the deadline cut it off."""


class Source(_Strict):
    url: str
    """Address of the page or record."""
    title: str | None = None
    text: str | None = None
    """Captured text, truncated."""


class Usage(_Strict):
    input_tokens: int = 0
    """Prompt tokens, cached ones included."""
    output_tokens: int = 0
    """Completion tokens, reasoning ones included."""
    reasoning_tokens: int = 0
    """Reasoning tokens (part of ``output_tokens``), when the provider reports them."""
    cached_input_tokens: int = 0
    """Prompt tokens served from the provider's cache (part of ``input_tokens``)."""

    def add(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
        )


class TrajectoryRecord(_Strict):
    version: int = TRAJECTORY_FORMAT_VERSION
    """Format version of this record."""
    question_id: str
    """The dataset item's ``id``."""
    trial: int = 0
    """0-based repeat number (``--trials``)."""
    task_type: TaskType
    """obligations, entity_performance or business_brief."""
    harness: str
    """Registry name or plug-in path of the agent."""
    model: str | None = None
    """Model the harness used, as it reports it."""
    answer: str = ""
    """Final answer text; for ``timeout`` the partial answer produced before the deadline."""
    status: Status
    """Why the run of this question ended."""
    error: ErrorInfo | None = None
    """What failed, when ``status`` is ``error``."""
    latency_s: float
    """Wall-clock seconds from start to the recorded end."""
    timeout_s: float
    """The budget this question ran under."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Every tool call in the order issued, including calls cut off by the deadline."""
    sources: list[Source] = Field(default_factory=list)
    """Web pages and citations the agent captured."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens summed over every model call of the question."""
    cost_usd: float | None = None
    """Provider-reported or price-table cost; None when unknown."""
    turns: int = 0
    """Model turns (requests) the agent made."""
    started_at: dt.datetime
    """UTC time the question started."""
    finished_at: dt.datetime
    """UTC time the record was closed."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Harness-specific details (e.g. permission denials, sub-agent messages, response ids)."""


class RunManifest(_Strict):
    version: int = MANIFEST_FORMAT_VERSION
    run_id: str
    command: list[str]
    """argv of the run, with secrets redacted."""
    config: dict[str, Any]
    """The full RunConfig (secrets redacted)."""
    config_fingerprint: str
    """Hash of everything that must match for a resume (dataset, selection, harness, budgets)."""
    harness: str
    model: str | None = None
    harness_options: dict[str, Any] = Field(default_factory=dict)
    timeouts: dict[str, float]
    dataset_path: str
    dataset_hash: str
    question_count: int
    erp_url: str | None = None
    """MCP endpoint the agent used."""
    erp_db_url: str | None = None
    """Database behind the ERP server, when the runner knows it (password redacted)."""
    erp_snapshot_hash: str | None = None
    system_prompt_hash: str
    package_versions: dict[str, str] = Field(default_factory=dict)
    git_revision: str | None = None
    started_at: dt.datetime
    finished_at: dt.datetime | None = None
    interrupted: bool = False
    fingerprint_parts: dict[str, Any] = Field(default_factory=dict)
    """The parts behind ``config_fingerprint`` (dataset hash, selection, harness settings, budgets,
    instructions hash, ERP snapshot), so a refused resume can say what changed."""
    resume_count: int = 0
    """How many times the run was resumed after its first start."""
