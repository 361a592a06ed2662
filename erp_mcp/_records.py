"""Record models: one pydantic model per ERP table, generated from the SQLModel schema.

Tool outputs never expose ORM rows. Each table gets a strict pydantic model with the table's columns
(money as numbers rounded to cents, dates as ISO strings, surrogate ``id`` dropped) plus ``url``,
the citable link to the record. The models are built once, lazily, and cached.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from erp_mcp._field_docs import describe_fields

if TYPE_CHECKING:
    from sqlmodel import SQLModel

# SQLAlchemy, SQLModel and the ERP's schema load with the first record model, not at import:
# the research world's server uses StrictModel and never builds a record.


class StrictModel(BaseModel):
    """Base of every tool input and output model. A field's docstring in the source is its
    description (read by :func:`erp_mcp._field_docs.describe_fields`, not by pydantic's
    ``use_attribute_docstrings``, which re-parses source for every model)."""

    model_config = ConfigDict(extra="forbid")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        describe_fields(cls)


class RecordBase(StrictModel):
    url: str | None = None
    """Citable link to this record (open it for the full record, its lines and related records)."""


class GeneratedRecord(RecordBase):
    """Base of the per-table records made by ``create_model``: their fields are described from the
    schema. Subclasses written in source document their own fields with docstrings, as every
    :class:`StrictModel` does."""


@cache
def _model_names() -> dict[type[SQLModel], str]:
    from synthetic_erp import _schema as s

    return {
        s.LegalEntity: "LegalEntityRecord",
        s.Currency: "CurrencyRecord",
        s.ExchangeRate: "ExchangeRateRecord",
        s.CashDiscount: "CashDiscountRecord",
        s.PaymentTerms: "PaymentTermsRecord",
        s.MethodOfPayment: "MethodOfPaymentRecord",
        s.CustomerGroup: "CustomerGroupRecord",
        s.VendorGroup: "VendorGroupRecord",
        s.CollectionsPool: "CollectionsPoolRecord",
        s.CollectionsAgent: "CollectionsAgentRecord",
        s.Customer: "CustomerRecord",
        s.Vendor: "VendorRecord",
        s.CustomerTransaction: "CustomerTransactionRecord",
        s.CustomerSettlement: "CustomerSettlementRecord",
        s.CustomerDispute: "CustomerDisputeRecord",
        s.SalesOrder: "SalesOrderRecord",
        s.SalesOrderLine: "SalesOrderLineRecord",
        s.CollectionLetter: "CollectionLetterRecord",
        s.CollectionCase: "CollectionCaseRecord",
        s.CollectionActivity: "CollectionActivityRecord",
        s.VendorTransaction: "VendorTransactionRecord",
        s.VendorSettlement: "VendorSettlementRecord",
        s.VendorInvoice: "VendorInvoiceRecord",
        s.PurchaseOrder: "PurchaseOrderRecord",
        s.PurchaseOrderLine: "PurchaseOrderLineRecord",
        s.ProductReceipt: "ProductReceiptRecord",
        s.PaymentJournal: "PaymentJournalRecord",
        s.PaymentJournalLine: "PaymentJournalLineRecord",
    }


HIDDEN_COLUMNS = frozenset({"id"})


def python_type(column: Any) -> type:
    """The JSON-friendly Python type of a column: money and rates become float."""
    from sqlalchemy import Boolean, Date, Integer, Numeric

    sql_type = column.type
    if isinstance(sql_type, Numeric):
        return float
    if isinstance(sql_type, Boolean):
        return bool
    if isinstance(sql_type, Integer):
        return int
    if isinstance(sql_type, Date):
        return dt.date
    return str


@cache
def visible_columns(table: type[SQLModel]) -> tuple[Any, ...]:
    return tuple(c for c in table.__table__.columns if c.name not in HIDDEN_COLUMNS)


@cache
def _visible_names(table: type[SQLModel]) -> tuple[str, ...]:
    return tuple(c.name for c in visible_columns(table))


def column_description(table: type[SQLModel], name: str) -> str | None:
    field = table.model_fields.get(name)
    return field.description if field is not None else None


@cache
def record_model(table: type[SQLModel]) -> type[RecordBase]:
    """The pydantic record model of ``table`` (cached)."""
    fields: dict[str, Any] = {}
    for column in visible_columns(table):
        annotation: Any = python_type(column)
        default: Any = ...
        if column.nullable:
            annotation = annotation | None
            default = None
        fields[column.name] = (
            annotation,
            Field(default, description=column_description(table, column.name)),
        )
    return create_model(
        _model_names().get(table, f"{table.__name__}Record"),
        __base__=GeneratedRecord,
        __doc__=(table.__doc__ or f"A {table.__name__} record.").strip(),
        **fields,
    )


def plain_value(value: Any) -> Any:
    """A database value as plain JSON-friendly Python (Decimal -> float rounded to 6 places)."""
    if isinstance(value, Decimal):
        return float(round(value, 6))
    if isinstance(value, float):
        return round(value, 6)
    return value


def row_values(table: type[SQLModel], row: Any) -> dict[str, Any]:
    """Visible column values of a result row (a ``RowMapping`` or mapping) as plain Python."""
    mapping = row._mapping if hasattr(row, "_mapping") else row
    return {name: plain_value(mapping[name]) for name in _visible_names(table)}


def money(value: Any) -> float:
    """A money amount as a float rounded to cents (None counts as zero)."""
    if value is None:
        return 0.0
    return float(round(Decimal(str(value)), 2)) + 0.0
