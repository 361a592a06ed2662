"""Discounts: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    recognised_by,
)
from harnesses.scripted._shared import (
    open_disputes,
)

__all__ = ["open_deductions_customer"]

open_deductions_customer = recognised_by(r"deductions?")(open_disputes("deduction"))
