"""Dispute: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    recognised_by,
)
from harnesses.scripted._shared import (
    open_disputes,
)

__all__ = ["open_disputes_customer"]

open_disputes_customer = recognised_by(r"disput")(open_disputes("dispute"))
