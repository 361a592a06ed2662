"""The grading version of the rules judge: what its rules accept.

Bumped whenever a rule changes which answers pass or fail, so a score record says which rules
made it and scores of other rules are never mixed with current ones (rules-6: research answers
read as claims: "not yet reported" with no figure for the asked fact and the latest reported
period named, no/none answers that claim no event, competing research figures, citations
published after the as-of date; obligation tables in HTML, ledger marks in every notation).
"""

from __future__ import annotations

RULES_GRADING_VERSION = "rules-6"
