"""Discounts: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    Context,
    _disputes,
)


async def open_deductions_customer(ctx: Context) -> str:
    return await _disputes(ctx, "deduction")
