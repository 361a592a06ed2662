"""Score records: ``runs/NAME/scores/<judge>.jsonl`` holds one :class:`ScoreRecord` per trajectory.

Scores are in [0, 1]. An assertion score of ``None`` means "not applicable". A dimension the judge
failed to grade has ``status = judge_error`` and ``score = None``: it is unscored, never zero, and
is left out of every metric.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ledgerbench_core.dataset import Dimension, TaskType
from ledgerbench_core.trajectory import Usage

SCORE_FORMAT_VERSION = 2
"""2: every record names its judge version, grading version and the hashes of the dataset item,
ERP and world it was scored against; ``unscored`` records. Version-1 files are read (their
provenance fields are None: their grading version is unknown)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class AssertionScore(_Strict):
    assertion_id: str
    score: float | None
    """0, 0.25, 0.5, 0.75 or 1; None when the assertion does not apply or no rule decides it."""
    reason: str = ""
    decided_by: str = ""
    """``llm``, ``human``, ``panel`` or the deterministic rule's name (``rule:expected_facts``)."""
    certain: bool | None = None
    """Rules only: whether the rule is sure of its verdict (a figure it cannot find may be written
    in a form it does not read). With ``--with-rules`` only certain verdicts replace the LLM's."""


class DimensionStatus(StrEnum):
    scored = "scored"
    """At least one assertion has a score."""
    not_applicable = "not_applicable"
    """Every assertion was judged not applicable (or the dimension has none)."""
    needs_llm = "needs_llm"
    """Rules judge only: no rule decides any assertion of this dimension."""
    judge_error = "judge_error"
    """The judge failed after retries; unscored."""


class DimensionScore(_Strict):
    status: DimensionStatus
    score: float | None = None
    """Mean of the non-null assertion scores; None unless ``status == scored``."""
    assertions: list[AssertionScore] = Field(default_factory=list)
    error: str | None = None
    """Why the judge failed (``judge_error``)."""


class ScoreStatus(StrEnum):
    scored = "scored"
    infra_error = "infra_error"
    """The trajectory ended in an infrastructure failure (``termination.infrastructure``); not
    judged, reported apart."""
    unscored = "unscored"
    """A check the answer needs could not run (the judge had no ERP or world database): neither
    right nor wrong, left out of every mean and counted wherever the score is shown."""


class ScoreRecord(_Strict):
    version: int = SCORE_FORMAT_VERSION
    question_id: str
    trial: int = 0
    task_type: TaskType
    judge: str
    status: ScoreStatus
    dimensions: dict[Dimension, DimensionScore] = Field(default_factory=dict)
    overall: float | None = None
    """Mean of the scored dimensions; None when none was scored."""
    answer_sha256: str
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    cached: bool = False
    """True when every judge call came from the cache (then usage is zero)."""
    judged_at: dt.datetime
    extra: dict[str, Any] = Field(default_factory=dict)
    judge_version: str | None = None
    """The judge's version: ``rules-N`` for the rules judge, ``MODEL@SETTINGS-HASH`` for others."""
    grading_version: str | None = None
    """What the judge accepts (``rules-gN``, ``judge._grading``); None: scored before version 2."""
    item_sha256: str | None = None
    """SHA-256 of the dataset item (question, key, assertions) the answer was scored against."""
    erp_snapshot_hash: str | None = None
    """Snapshot hash of the ERP database the judge read (None: it read none)."""
    world_snapshot_hash: str | None = None
    """Snapshot hash of the research world the judge read (None: it read none)."""
    unscored_reason: str | None = None
    """Why an ``unscored`` record could not be scored (the database it needed)."""


class JudgeManifest(_Strict):
    version: int = SCORE_FORMAT_VERSION
    judge: str
    """Judge name used for the scores file."""
    model: str | None = None
    mode: str
    settings: dict[str, Any] = Field(default_factory=dict)
    instructions_hash: str
    rubric_versions: list[str] = Field(default_factory=list)
    run_dir: str
    started_at: dt.datetime
    finished_at: dt.datetime | None = None
    dataset_hash: str | None = None
    """Hash of the dataset the scores were computed against."""
    judge_version: str | None = None
    grading_version: str | None = None
    """The grading version of every record in the scores file (a resume of another is refused)."""
    erp_db: str | None = None
    """The ERP database the judge read (password redacted) and its snapshot hash."""
    erp_snapshot_hash: str | None = None
    world_db: str | None = None
    world_snapshot_hash: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    """Counts over the scores file: records by status, dimensions by status, cached records."""
    usage: Usage = Field(default_factory=Usage)
    """Judge tokens over every record in the scores file (each model call counted once)."""
    cost_usd: float | None = None
    """Judge cost over every record; None when some call's cost is unknown."""


__all__ = [
    "SCORE_FORMAT_VERSION",
    "AssertionScore",
    "DimensionScore",
    "DimensionStatus",
    "JudgeManifest",
    "ScoreRecord",
    "ScoreStatus",
]
