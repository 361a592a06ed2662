"""Which grading is current: every listing of a figure says whether its scores were graded by the
code as it is now. The rules judge's version lives here, below the judge, because the coverage
label (:mod:`ledgerbench_core._coverage`) that every stage prints needs it.

``RULES_GRADING_VERSION`` is the rules judge's grading version: bump it whenever a rule changes
what it accepts (an answer that passed may now fail, or the reverse). Scores of another grading
version are never mixed with current ones: ``judge.run`` refuses to resume a scores file of
another version, and every listing of a figure says which version it is.

Version 6 (the rules' own numbering, ``rules-6``): research answers read as claims ("not yet
reported" with no figure for the asked fact and the latest reported period named, no/none answers
that claim no event, competing research figures, citations published after the as-of date);
obligation tables in HTML, ledger marks in every notation.

Version 7: a brief's ERP date (the last payment) is read in the lines of its account; a price
change over a window is grounded by the two closes the agent's ``prices`` calls returned; a
currency sign between two numbers ("fiscal 2024 $2,057.8 million") is the second one's prefix,
not the first one's suffix; a number glued to a letter ("109.24x") is no figure, not its
integer part.

Version 8: a product line's or region's share of revenue is named with "revenue", so a competing
share beside the right one ("31.3% or 30.7% of fiscal 2024 revenue came from ...") is caught; a
ratio fact in months (a private company's cash runway) is found written
``8.6 months``; a multiple or a runway of the key is one of its figures (no rival to an amount
near it, and grounded when computed from documents the agent fetched).

Version 9: a share count ("on the 238.4 million shares outstanding") is no rival to a money
amount near it (per-share figures put the count beside the cash-flow figures).
"""

from __future__ import annotations

RULES_GRADING_VERSION = 9
"""The rules' version: bumped whenever a rule changes what it accepts."""

RULES_GRADING = f"rules-g{RULES_GRADING_VERSION}"
"""The grading version string of the rules judge (``ScoreRecord.grading_version``)."""


def current_grading_version(judge_name: str, recorded: str | None) -> str | None:
    """The grading version this code would score with, when it can tell from the file alone:
    a rules grading (``rules-gN``, alone or after an LLM's ``+``) is current only at
    ``RULES_GRADING``; None when the code cannot say (an LLM's rubric, people)."""
    if recorded is None:
        return RULES_GRADING if judge_name == "rules" else None
    if "rules-g" not in recorded:
        return None
    head, _, _ = recorded.rpartition("rules-g")
    return head + RULES_GRADING


__all__ = ["RULES_GRADING", "RULES_GRADING_VERSION", "current_grading_version"]
