"""SQLModel tables of the synthetic AR/AP ERP.

Conventions (documented in synthetic_erp/README.md):
- Every business table carries ``legal_entity`` (the company code, e.g. ``USMF``) and a natural key
  that is unique within that legal entity. Record URLs are built from these natural keys.
- Money columns are ``Numeric(18, 2)``; exchange rates ``Numeric(18, 6)``.
- Ledger sign: ``amount_cur`` is positive for documents that raise the party's balance (a customer
  invoice, a vendor invoice) and negative for documents that lower it (payments, credit notes, debit
  notes). A party's balance is the sum of ``open_amount_cur`` over its posted transactions.
- ``amount_acct`` = ``amount_cur`` x ``exchange_rate`` (the rate of ``currency`` into the legal
  entity's accounting currency on ``txn_date``), rounded to cents.
- ``derived_fields`` lists, comma-separated, the columns an importer had to derive because its
  source files lacked them (empty for generated data).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import Index, Numeric, UniqueConstraint, text
from sqlmodel import Field, SQLModel


def money(**kwargs) -> Decimal:
    """A money column: Numeric(18, 2)."""
    return Field(sa_type=Numeric(18, 2, asdecimal=True), **kwargs)


def rate(**kwargs) -> Decimal:
    """An exchange-rate column: Numeric(18, 6)."""
    return Field(sa_type=Numeric(18, 6, asdecimal=True), **kwargs)


def ledger_indexes(prefix: str, account: str) -> tuple[Index, ...]:
    """The indexes every ledger (AR and AP) has besides its unique voucher.

    ``open_items`` and ``by_type`` cover the aggregate queries of the MCP server, so those read
    the index alone, in the order they group by: the open items today (``closed_date IS NULL``
    first) per party, with what aging needs; and the lines per type and party with the date and
    the amounts (invoiced or paid in a period per party, vendor spend, sums per type)."""
    return (
        Index(f"ix_{prefix}_party", "legal_entity", account, "txn_date"),
        Index(f"ix_{prefix}_due", "legal_entity", "due_date"),
        Index(f"ix_{prefix}_discount", "legal_entity", "cash_discount_date"),
        Index(
            f"ix_{prefix}_open_items",
            "closed_date",
            "legal_entity",
            account,
            "currency",
            "due_date",
            "txn_date",
            "posted",
            "open_amount_cur",
            "open_amount_acct",
        ),
        Index(
            f"ix_{prefix}_by_type",
            "legal_entity",
            "txn_type",
            account,
            "txn_date",
            "posted",
            "currency",
            "amount_cur",
            "amount_acct",
        ),
    )


def settlement_indexes(prefix: str) -> tuple[Index, ...]:
    """Settlements of one voucher on either side within a legal entity, with the amounts that
    reconstruct a past open amount (settled after a date), read from the index alone; and the
    settlements newest first (``list_settlements``' order), in all and per legal entity, so a
    page of them is read off an index instead of sorting every settlement."""
    by_voucher = tuple(
        Index(
            f"ix_{prefix}_{side}",
            "legal_entity",
            f"{side}_voucher",
            "settled_date",
            "amount_cur",
            "cash_discount_taken",
        )
        for side in ("debit", "credit")
    )
    newest = text("settled_date DESC")
    return (
        *by_voucher,
        Index(f"ix_{prefix}_newest", newest, "settlement_id", "legal_entity"),
        Index(f"ix_{prefix}_le_newest", "legal_entity", newest, "settlement_id"),
    )


# --------------------------------------------------------------------------------------------------
# Metadata and reference data
# --------------------------------------------------------------------------------------------------


class ErpMeta(SQLModel, table=True):
    """Key/value facts about the snapshot: as_of (the frozen today), seed, scale, generator and
    Faker versions, source (generated | fno-import), snapshot_hash."""

    __tablename__ = "erp_meta"
    key: str = Field(primary_key=True)
    value: str


class LegalEntity(SQLModel, table=True):
    __tablename__ = "legal_entity"
    code: str = Field(primary_key=True, description="Company code, e.g. USMF")
    name: str
    accounting_currency: str
    country: str
    fiscal_year_start_month: int = Field(description="1 = fiscal year runs January..December")


class Currency(SQLModel, table=True):
    __tablename__ = "currency"
    code: str = Field(primary_key=True)
    name: str


class ExchangeRate(SQLModel, table=True):
    """Rate to convert one unit of ``from_currency`` into ``to_currency`` on ``rate_date``."""

    __tablename__ = "exchange_rate"
    __table_args__ = (UniqueConstraint("from_currency", "to_currency", "rate_date"),)
    id: int | None = Field(default=None, primary_key=True)
    from_currency: str
    to_currency: str
    rate_date: dt.date
    rate: Decimal = rate()


class CashDiscount(SQLModel, table=True):
    """A cash-discount code, e.g. 2%/10: ``percent`` off when paid within ``days`` of the
    invoice."""

    __tablename__ = "cash_discount"
    __table_args__ = (UniqueConstraint("legal_entity", "code"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str = Field(index=True)
    code: str
    description: str
    percent: Decimal = money()
    days: int


class PaymentTerms(SQLModel, table=True):
    __tablename__ = "payment_terms"
    __table_args__ = (UniqueConstraint("legal_entity", "terms_id"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str = Field(index=True)
    terms_id: str = Field(description="e.g. Net30, COD, 2%10Net30")
    description: str
    net_days: int
    cash_discount_code: str | None = None


class MethodOfPayment(SQLModel, table=True):
    """A method of payment (CHECK, ACH, WIRE, ...) and the ledger account its payments post to."""

    __tablename__ = "method_of_payment"
    __table_args__ = (UniqueConstraint("legal_entity", "party_type", "code"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str = Field(index=True)
    party_type: str = Field(description="customer | vendor")
    code: str
    description: str
    payment_account: str = Field(description="Ledger or bank account the payments post to")


class CustomerGroup(SQLModel, table=True):
    __tablename__ = "customer_group"
    __table_args__ = (UniqueConstraint("legal_entity", "group_id"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str = Field(index=True)
    group_id: str
    name: str


class VendorGroup(SQLModel, table=True):
    __tablename__ = "vendor_group"
    __table_args__ = (UniqueConstraint("legal_entity", "group_id"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str = Field(index=True)
    group_id: str
    name: str


class CollectionsPool(SQLModel, table=True):
    __tablename__ = "collections_pool"
    __table_args__ = (UniqueConstraint("legal_entity", "pool_id"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str = Field(index=True)
    pool_id: str
    name: str
    description: str


class CollectionsAgent(SQLModel, table=True):
    __tablename__ = "collections_agent"
    __table_args__ = (UniqueConstraint("legal_entity", "agent_id"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str = Field(index=True)
    agent_id: str
    name: str
    email: str
    pool_id: str | None = None


# --------------------------------------------------------------------------------------------------
# Parties
# --------------------------------------------------------------------------------------------------


class Customer(SQLModel, table=True):
    __tablename__ = "customer"
    __table_args__ = (
        UniqueConstraint("legal_entity", "account"),
        Index("ix_customer_name", "name"),
        Index("ix_customer_agent", "legal_entity", "collections_agent_id"),
        Index("ix_customer_pool", "legal_entity", "collections_pool_id"),
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str = Field(index=True)
    account: str = Field(index=True, description="e.g. SYNCUS-0001")
    name: str
    group_id: str
    currency: str
    payment_terms: str
    method_of_payment: str | None = None
    credit_limit: Decimal = money()
    credit_rating: str = Field(description="Excellent | Good | Fair | Poor")
    credit_hold: bool = False
    contact_name: str
    contact_phone: str
    contact_email: str
    address_street: str
    address_city: str
    address_state: str
    address_zip: str
    address_country: str
    sales_tax_group: str
    created_date: dt.date
    collections_pool_id: str | None = None
    collections_agent_id: str | None = None
    derived_fields: str = ""


class Vendor(SQLModel, table=True):
    __tablename__ = "vendor"
    __table_args__ = (
        UniqueConstraint("legal_entity", "account"),
        Index("ix_vendor_name", "name"),
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str = Field(index=True)
    account: str = Field(index=True, description="e.g. SYNVEN-0001")
    name: str
    group_id: str
    currency: str
    payment_terms: str
    method_of_payment: str
    payment_hold: bool = False
    hold_reason: str | None = None
    contact_name: str
    contact_phone: str
    contact_email: str
    address_street: str
    address_city: str
    address_state: str
    address_zip: str
    address_country: str
    sales_tax_group: str
    created_date: dt.date
    derived_fields: str = ""


# --------------------------------------------------------------------------------------------------
# Accounts receivable
# --------------------------------------------------------------------------------------------------


class CustomerTransaction(SQLModel, table=True):
    """AR ledger line (like Dynamics' CustTrans)."""

    __tablename__ = "customer_transaction"
    __table_args__ = (
        UniqueConstraint("legal_entity", "voucher"),
        Index("ix_custtrans_sales", "legal_entity", "sales_id"),
        *ledger_indexes("custtrans", "customer_account"),
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    voucher: str = Field(description="Unique ledger voucher, e.g. ARV-000001")
    customer_account: str
    txn_type: str = Field(
        description="sales_invoice | free_text_invoice | payment | credit_note | adjustment"
    )
    document_number: str = Field(index=True, description="Invoice, payment or credit-note number")
    txn_date: dt.date
    due_date: dt.date | None = None
    currency: str
    amount_cur: Decimal = money()
    exchange_rate: Decimal = rate()
    amount_acct: Decimal = money()
    open_amount_cur: Decimal = money()
    open_amount_acct: Decimal = money()
    cash_discount_date: dt.date | None = None
    cash_discount_amount: Decimal | None = money(default=None)
    sales_id: str | None = None
    posted: bool = True
    closed_date: dt.date | None = Field(
        default=None, description="Date the transaction became fully settled"
    )
    description: str = ""
    derived_fields: str = ""


class CustomerSettlement(SQLModel, table=True):
    """A payment or credit note (credit side) applied to an invoice (debit side)."""

    __tablename__ = "customer_settlement"
    __table_args__ = (
        UniqueConstraint("legal_entity", "settlement_id"),
        *settlement_indexes("custsettle"),
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    settlement_id: str
    customer_account: str = Field(index=True)
    debit_voucher: str = Field(index=True, description="The invoice (or adjustment) settled")
    credit_voucher: str = Field(index=True, description="The payment or credit note applied")
    settled_date: dt.date
    amount_cur: Decimal = money(description="Amount settled, positive")
    cash_discount_taken: Decimal = money(default=Decimal("0.00"))


class CustomerDispute(SQLModel, table=True):
    """A disputed invoice or a deduction taken by the customer on a payment."""

    __tablename__ = "customer_dispute"
    __table_args__ = (UniqueConstraint("legal_entity", "dispute_id"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    dispute_id: str
    customer_account: str = Field(index=True)
    voucher: str = Field(description="The disputed invoice's voucher")
    kind: str = Field(description="dispute | deduction")
    reason: str
    amount: Decimal = money()
    opened_date: dt.date
    status: str = Field(description="open | resolved")
    resolved_date: dt.date | None = None


class SalesOrder(SQLModel, table=True):
    __tablename__ = "sales_order"
    __table_args__ = (
        UniqueConstraint("legal_entity", "sales_id"),
        Index("ix_salesorder_party", "legal_entity", "customer_account"),
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    sales_id: str
    customer_account: str
    order_type: str = Field(description="sales | return")
    status: str = Field(description="open | delivered | invoiced | canceled")
    release_status: str = Field(description="open | partially_released | released")
    do_not_process: bool = False
    sales_taker: str
    order_date: dt.date
    requested_ship_date: dt.date
    currency: str
    total_amount: Decimal = money()


class SalesOrderLine(SQLModel, table=True):
    __tablename__ = "sales_order_line"
    __table_args__ = (UniqueConstraint("legal_entity", "sales_id", "line_number"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    sales_id: str = Field(index=True)
    line_number: int
    item_id: str
    description: str
    quantity: Decimal = money()
    unit_price: Decimal = money()
    line_amount: Decimal = money()
    status: str = Field(description="open | delivered | invoiced | canceled")


# --------------------------------------------------------------------------------------------------
# Collections
# --------------------------------------------------------------------------------------------------


class CollectionLetter(SQLModel, table=True):
    __tablename__ = "collection_letter"
    __table_args__ = (UniqueConstraint("legal_entity", "letter_id"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    letter_id: str
    customer_account: str = Field(index=True)
    sequence: str = Field(description="Collection letter sequence, e.g. STANDARD")
    level: int = Field(description="1 = first reminder .. 4 = final notice")
    sent_date: dt.date
    amount: Decimal = money(description="Overdue amount the letter claims, accounting currency")


class CollectionCase(SQLModel, table=True):
    __tablename__ = "collection_case"
    __table_args__ = (
        UniqueConstraint("legal_entity", "case_id"),
        Index("ix_collcase_opened", "opened_date"),  # the latest cases first, without sorting all
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    case_id: str
    customer_account: str = Field(index=True)
    status: str = Field(description="open | closed")
    opened_date: dt.date
    closed_date: dt.date | None = None
    owner_agent_id: str
    description: str


class CollectionActivity(SQLModel, table=True):
    """A collections activity or task (call, email, letter follow-up, appointment)."""

    __tablename__ = "collection_activity"
    __table_args__ = (
        UniqueConstraint("legal_entity", "activity_id"),
        # An agent's activities in the order listed, with the status counted: pages, counts and
        # the worklist's due and past-due counts read this index alone.
        Index(
            "ix_collact_owner_due",
            "legal_entity",
            "owner_agent_id",
            "due_date",
            "activity_id",
            "status",
        ),
        Index("ix_collact_case", "legal_entity", "case_id"),
        Index("ix_collact_party", "legal_entity", "customer_account", "status", "due_date"),
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    activity_id: str
    customer_account: str = Field(index=True)
    category: str = Field(description="activity | task")
    activity_type: str = Field(description="call | email | letter | appointment | action")
    purpose: str
    status: str = Field(description="open | in_progress | completed | canceled")
    due_date: dt.date = Field(index=True)
    created_date: dt.date
    owner_agent_id: str
    case_id: str | None = None


# --------------------------------------------------------------------------------------------------
# Accounts payable
# --------------------------------------------------------------------------------------------------


class VendorTransaction(SQLModel, table=True):
    """AP ledger line (like Dynamics' VendTrans). Posted documents only."""

    __tablename__ = "vendor_transaction"
    __table_args__ = (
        UniqueConstraint("legal_entity", "voucher"),
        *ledger_indexes("vendtrans", "vendor_account"),
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    voucher: str
    vendor_account: str
    txn_type: str = Field(description="invoice | payment | credit_note | debit_note | adjustment")
    document_number: str = Field(index=True)
    txn_date: dt.date
    due_date: dt.date | None = None
    currency: str
    amount_cur: Decimal = money()
    exchange_rate: Decimal = rate()
    amount_acct: Decimal = money()
    open_amount_cur: Decimal = money()
    open_amount_acct: Decimal = money()
    cash_discount_date: dt.date | None = None
    cash_discount_amount: Decimal | None = money(default=None)
    po_number: str | None = None
    posted: bool = True
    closed_date: dt.date | None = None
    description: str = ""
    derived_fields: str = ""


class VendorSettlement(SQLModel, table=True):
    __tablename__ = "vendor_settlement"
    __table_args__ = (
        UniqueConstraint("legal_entity", "settlement_id"),
        *settlement_indexes("vendsettle"),
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    settlement_id: str
    vendor_account: str = Field(index=True)
    debit_voucher: str = Field(index=True, description="The vendor invoice settled")
    credit_voucher: str = Field(index=True, description="The payment or debit/credit note applied")
    settled_date: dt.date
    amount_cur: Decimal = money()
    cash_discount_taken: Decimal = money(default=Decimal("0.00"))


class VendorInvoice(SQLModel, table=True):
    """A vendor invoice through its life cycle: unposted in the invoice register, pending approval,
    approved, posted (then it also has a ``vendor_transaction``)."""

    __tablename__ = "vendor_invoice"
    __table_args__ = (
        UniqueConstraint("legal_entity", "invoice_id"),
        Index("ix_vendinv_party", "legal_entity", "vendor_account"),
        Index("ix_vendinv_po", "legal_entity", "po_number"),
        Index("ix_vendinv_number", "legal_entity", "vendor_invoice_number"),
        # The register's default order (newest first) within a status, with the invoice id that
        # breaks ties: a page's ids come from the index alone.
        Index("ix_vendinv_register", "legal_entity", "status", "invoice_date", "invoice_id"),
        # Counts and sums per status and currency read from the index alone, group by group.
        Index("ix_vendinv_status_sums", "legal_entity", "status", "currency", "amount"),
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    invoice_id: str = Field(description="Internal id, e.g. VI-000001")
    vendor_invoice_number: str = Field(description="The vendor's own invoice number")
    vendor_account: str
    invoice_date: dt.date
    due_date: dt.date
    currency: str
    amount: Decimal = money()
    status: str = Field(description="unposted | pending_approval | approved | posted")
    approver: str | None = None
    po_number: str | None = None
    match_status: str = Field(description="matched | failed | not_required")
    match_failure_reason: str | None = None
    voucher: str | None = Field(default=None, description="Ledger voucher once posted")
    description: str = ""


class PurchaseOrder(SQLModel, table=True):
    __tablename__ = "purchase_order"
    __table_args__ = (
        UniqueConstraint("legal_entity", "po_number"),
        Index("ix_po_party", "legal_entity", "vendor_account"),
    )
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    po_number: str
    vendor_account: str
    order_date: dt.date
    status: str = Field(description="open | received | invoiced | canceled")
    currency: str
    total_amount: Decimal = money()
    buyer: str


class PurchaseOrderLine(SQLModel, table=True):
    __tablename__ = "purchase_order_line"
    __table_args__ = (UniqueConstraint("legal_entity", "po_number", "line_number"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    po_number: str = Field(index=True)
    line_number: int
    item_id: str
    description: str
    quantity_ordered: Decimal = money()
    quantity_received: Decimal = money()
    quantity_invoiced: Decimal = money()
    unit_price: Decimal = money()
    line_amount: Decimal = money()


class ProductReceipt(SQLModel, table=True):
    __tablename__ = "product_receipt"
    __table_args__ = (UniqueConstraint("legal_entity", "receipt_id"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    receipt_id: str
    po_number: str = Field(index=True)
    line_number: int
    receipt_date: dt.date
    quantity: Decimal = money()


class PaymentJournal(SQLModel, table=True):
    """A vendor payment journal; ``source = proposal`` when a payment proposal created its lines."""

    __tablename__ = "payment_journal"
    __table_args__ = (UniqueConstraint("legal_entity", "journal_id"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    journal_id: str
    description: str
    created_date: dt.date
    status: str = Field(description="open | posted")
    source: str = Field(description="manual | proposal")
    method_of_payment: str
    currency: str
    total_amount: Decimal = money()
    line_count: int


class PaymentJournalLine(SQLModel, table=True):
    __tablename__ = "payment_journal_line"
    __table_args__ = (UniqueConstraint("legal_entity", "journal_id", "line_number"),)
    id: int | None = Field(default=None, primary_key=True)
    legal_entity: str
    journal_id: str = Field(index=True)
    line_number: int
    vendor_account: str = Field(index=True)
    invoice_voucher: str | None = Field(default=None, description="Vendor invoice being paid")
    payment_date: dt.date
    currency: str
    amount: Decimal = money()


ALL_TABLES: tuple[type[SQLModel], ...] = (
    ErpMeta,
    LegalEntity,
    Currency,
    ExchangeRate,
    CashDiscount,
    PaymentTerms,
    MethodOfPayment,
    CustomerGroup,
    VendorGroup,
    CollectionsPool,
    CollectionsAgent,
    Customer,
    Vendor,
    CustomerTransaction,
    CustomerSettlement,
    CustomerDispute,
    SalesOrder,
    SalesOrderLine,
    CollectionLetter,
    CollectionCase,
    CollectionActivity,
    VendorTransaction,
    VendorSettlement,
    VendorInvoice,
    PurchaseOrder,
    PurchaseOrderLine,
    ProductReceipt,
    PaymentJournal,
    PaymentJournalLine,
)
