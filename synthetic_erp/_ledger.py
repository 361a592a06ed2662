"""In-memory documents of one generation chunk, and the settlement arithmetic they obey.

Money is held in integer cents and rates in integer micro-units while generating, so every invariant
(open amount = amount - settlements, accounting amount = amount x rate) holds exactly; values become
``Decimal`` only when rows are written.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from synthetic_erp._reference import to_accounting


class Doc:
    """A ledger transaction (AR or AP) while it is being generated."""

    __slots__ = (
        "account",
        "cd_cents",
        "cd_date",
        "cents",
        "currency",
        "date",
        "description",
        "doc_number",
        "due",
        "kind",
        "last_settled",
        "le",
        "open",
        "order",
        "po_number",
        "rate",
        "seq",
        "voucher",
    )

    def __init__(
        self,
        seq: int,
        le: str,
        account: str,
        kind: str,
        date: dt.date,
        currency: str,
        cents: int,
        rate: int,
        due: dt.date | None = None,
        description: str = "",
    ) -> None:
        self.seq = seq
        self.le = le
        self.account = account
        self.kind = kind
        self.date = date
        self.currency = currency
        self.cents = cents
        self.open = cents
        self.rate = rate
        self.due = due
        self.description = description
        self.cd_date: dt.date | None = None
        self.cd_cents: int | None = None
        self.order: Order | None = None
        self.po_number: str | None = None
        self.last_settled: dt.date | None = None
        self.voucher = ""
        self.doc_number = ""


class Order:
    """A sales order (or return order) while it is being generated; ``lines`` hold
    (item_id, description, quantity in hundredths, unit price cents, line cents, status)."""

    __slots__ = (
        "account",
        "currency",
        "do_not_process",
        "le",
        "lines",
        "order_date",
        "order_id",
        "order_type",
        "release_status",
        "requested_date",
        "seq",
        "status",
        "taker",
    )

    def __init__(self, seq: int, le: str, account: str, currency: str) -> None:
        self.seq = seq
        self.le = le
        self.account = account
        self.currency = currency
        self.lines: list[tuple[str, str, int, int, int, str]] = []
        self.order_id = ""
        self.order_type = "sales"
        self.status = "open"
        self.release_status = "open"
        self.do_not_process = False
        self.taker = ""
        self.order_date = dt.date.min
        self.requested_date = dt.date.min

    @property
    def total(self) -> int:
        return sum(line[4] for line in self.lines)


class Settlement:
    __slots__ = ("cents", "credit", "date", "debit", "discount")

    def __init__(self, debit: Doc, credit: Doc, date: dt.date, cents: int, discount: int) -> None:
        self.debit = debit
        self.credit = credit
        self.date = date
        self.cents = cents
        self.discount = discount


def settle(
    settlements: list[Settlement],
    debit: Doc,
    credit: Doc,
    date: dt.date,
    cents: int,
    discount: int = 0,
) -> None:
    """Apply ``credit`` to ``debit``: the debit's open amount drops by ``cents`` (discount
    included), the credit's by ``cents - discount``. Neither may go past zero."""
    if cents <= 0:
        return
    assert cents <= debit.open, (cents, debit.open)
    assert cents - discount <= -credit.open, (cents, discount, credit.open)
    debit.open -= cents
    credit.open += cents - discount
    for doc in (debit, credit):
        if doc.last_settled is None or date > doc.last_settled:
            doc.last_settled = date
    settlements.append(Settlement(debit, credit, date, cents, discount))


def dec(cents: int | None) -> Decimal | None:
    """Cents as a 2-decimal ``Decimal``."""
    if cents is None:
        return None
    return Decimal(cents).scaleb(-2)


def dec_rate(micro: int) -> Decimal:
    return Decimal(micro).scaleb(-6)


def ledger_row(doc: Doc, party_column: str, extra: dict) -> dict:
    """The ``customer_transaction`` / ``vendor_transaction`` row of ``doc``."""
    closed = doc.last_settled if doc.open == 0 else None
    row = {
        "legal_entity": doc.le,
        "voucher": doc.voucher,
        party_column: doc.account,
        "txn_type": doc.kind,
        "document_number": doc.doc_number,
        "txn_date": doc.date,
        "due_date": doc.due,
        "currency": doc.currency,
        "amount_cur": dec(doc.cents),
        "exchange_rate": dec_rate(doc.rate),
        "amount_acct": dec(to_accounting(doc.cents, doc.rate)),
        "open_amount_cur": dec(doc.open),
        "open_amount_acct": dec(to_accounting(doc.open, doc.rate)),
        "cash_discount_date": doc.cd_date,
        "cash_discount_amount": dec(doc.cd_cents),
        "posted": True,
        "closed_date": closed,
        "description": doc.description,
        "derived_fields": "",
    }
    row.update(extra)
    return row
