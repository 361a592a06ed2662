"""Tiny ERPs (fewer parties than legal entities) still generate and keep their invariants."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from synthetic_erp import _schema as s
from synthetic_erp import erp_stats, generate_erp
from synthetic_erp._db import open_engine


@pytest.mark.parametrize(("customers", "vendors"), [(1, 1), (3, 2), (5, 4)])
def test_tiny_scales_generate(tmp_path, customers: int, vendors: int) -> None:
    url = f"sqlite:///{tmp_path / 'tiny.db'}"
    generate_erp(url, customers=customers, vendors=vendors, seed=3)
    stats = erp_stats(url)
    assert stats["customers"] == customers
    assert stats["vendors"] == vendors
    engine = open_engine(url, read_only=True)
    with engine.connect() as conn:
        over_settled = conn.scalar(
            select(func.count()).where(
                func.abs(s.CustomerTransaction.open_amount_cur)
                > func.abs(s.CustomerTransaction.amount_cur)
            )
        )
    engine.dispose()
    assert over_settled == 0
