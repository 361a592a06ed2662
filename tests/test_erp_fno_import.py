"""Importing the published FORCE-Bench FnO files."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp import erp_stats
from synthetic_erp._db import open_engine
from synthetic_erp._fno import import_fno
from tests.test_erp_invariants import ledger_violations

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def fno_url(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('fno') / 'fno.db'}"
    import_fno(reference_dir / "fno", url)
    return url


def test_counts_match_the_published_files(fno_url: str) -> None:
    stats = erp_stats(fno_url)
    assert (stats["customers"], stats["vendors"]) == (1000, 1000)
    assert (stats["ar_transactions"], stats["ap_transactions"]) == (3459, 3428)
    assert stats["source"] == "fno-import" and stats["legal_entities"] == 1


def test_values_come_from_the_files_and_derived_ones_are_marked(
    fno_url: str, reference_dir: Path
) -> None:
    with (reference_dir / "fno" / "customers.csv").open(newline="") as handle:
        first = next(csv.DictReader(handle))
    engine = open_engine(fno_url, read_only=True)
    try:
        with engine.connect() as conn:
            customer = conn.execute(
                select(s.Customer.__table__).where(s.Customer.account == first["CustomerAccount"])
            ).one()
            txns = list(conn.execute(select(s.CustomerTransaction.__table__)))
            terms = {t.terms_id: t.net_days for t in conn.execute(select(s.PaymentTerms.__table__))}
        assert customer.name == first["OrganizationName"]
        assert customer.credit_limit == Decimal(first["CreditMax"])
        assert "created_date" in customer.derived_fields.split(",")
        by_account = {}
        for t in txns:
            by_account.setdefault(t.customer_account, []).append(t)
            derived = set(t.derived_fields.split(","))
            assert {"voucher", "document_number", "due_date", "open_amount_cur"} <= derived
            assert "amount_cur" not in derived and "txn_date" not in derived
            assert t.open_amount_cur == t.amount_cur
        line = by_account[first["CustomerAccount"]][0]
        assert (line.due_date - line.txn_date).days == terms[first["PaymentTermsId"]]
        assert ledger_violations(engine, "ar") == [] and ledger_violations(engine, "ap") == []
    finally:
        engine.dispose()


def test_import_refuses_an_existing_target(fno_url: str, reference_dir: Path) -> None:
    from synthetic_erp._db import ErpDatabaseError

    with pytest.raises(ErpDatabaseError, match="already exists"):
        import_fno(reference_dir / "fno", fno_url)


def test_reference_files_are_not_copied_into_the_repo() -> None:
    repo = Path(__file__).resolve().parents[1]
    names = {"ar_journal.xlsx", "ap_journal.xlsx"}
    found = [p for p in repo.rglob("*.xlsx") if p.name in names and ".venv" not in p.parts]
    assert found == []
