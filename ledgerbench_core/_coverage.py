"""How much of a run a judge scored, and with which grading: shown beside every figure.

A run is *fully judged* by a judge when every answer of the run (the last record per question and
trial) has a current score record and none is ``unscored``. Otherwise every figure from it carries
``14/100 scored`` (answers scored / answers in the run). Scores of one grading version only make a
figure: when a file holds several (a hand-merged file), the version of the latest record is kept
and the others are counted as left out; the figure names its version, and says when the code
now grades with another.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ledgerbench_core._grading import current_grading_version
from ledgerbench_core.scores import ScoreRecord, ScoreStatus


@dataclass(frozen=True)
class Coverage:
    """One judge's coverage of one run."""

    answers: int
    """Answers in the run (None of trajectories known: the records' count)."""
    scored: int
    unscored: int
    """Answers with a record whose checks lacked a database (neither right nor wrong)."""
    infra_error: int
    unjudged: int
    """Answers with no current score record of the kept grading version."""
    grading_version: str | None
    """The grading version of every record a figure uses (None: recorded before version 2)."""
    current_grading_version: str | None
    """What the code grades with now, when it can tell (rules); None otherwise."""
    other_grading: int = 0
    """Records of another grading version in the same file, left out of every figure."""

    @property
    def partial(self) -> bool:
        return bool(self.unjudged or self.unscored)

    @property
    def outdated(self) -> bool:
        current = self.current_grading_version
        return current is not None and self.grading_version != current

    def scored_text(self) -> str:
        """``14/100 scored`` for a partly judged run (``, 3 unscored`` when answers lacked a
        database for a check), "" for a fully judged one."""
        if not self.partial:
            return ""
        unscored = f", {self.unscored} unscored" if self.unscored else ""
        return f"{self.scored}/{self.answers} scored{unscored}"

    def grading_text(self) -> str:
        """``grading rules-g1``, with the current version when the code now grades otherwise."""
        version = self.grading_version or "unknown (scored before grading versions)"
        text = f"grading {version}"
        if self.outdated:
            text += f", current {self.current_grading_version}: re-score with --overwrite"
        return text

    def label(self) -> str:
        """What goes beside a figure: ``14/100 scored, grading rules-g1``."""
        return ", ".join(p for p in (self.scored_text(), self.grading_text()) if p)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "partial": self.partial, "label": self.label()}


def one_grading(records: list[ScoreRecord]) -> tuple[list[ScoreRecord], str | None, int]:
    """The records of one grading version (the latest record's) and how many were left out."""
    if not records:
        return [], None, 0
    latest = max(records, key=lambda r: r.judged_at).grading_version
    kept = [r for r in records if r.grading_version == latest]
    return kept, latest, len(records) - len(kept)


def coverage(
    judge_name: str, records: list[ScoreRecord], answers: Iterable[tuple[str, int]] | None
) -> Coverage:
    """Coverage of ``answers`` (question id, trial) by the current ``records`` of one judge (of
    one grading version: see :func:`one_grading`)."""
    kept, version, other = one_grading(records)
    keys = {(r.question_id, r.trial): r for r in kept}
    wanted = set(answers) if answers is not None else set(keys)
    status = Counter(keys[k].status for k in wanted if k in keys)
    return Coverage(
        answers=len(wanted),
        scored=status[ScoreStatus.scored],
        unscored=status[ScoreStatus.unscored],
        infra_error=status[ScoreStatus.infra_error],
        unjudged=sum(k not in keys for k in wanted),
        grading_version=version,
        current_grading_version=current_grading_version(judge_name, version),
        other_grading=other,
    )


__all__ = ["Coverage", "coverage", "one_grading"]
