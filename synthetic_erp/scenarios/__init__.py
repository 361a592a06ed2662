"""Obligation question kinds, one module per published scenario.

Each scenario module declares its question kinds with ``@template(...)``: the phrasings, how the
parameters are chosen and the answer key (a function over the ERP tables, whose name is the
template's), side by side. Keys of a common shape declare their wording as data (``ListKey``,
``Total``, ``Ranking`` in ``_keys.py``). Importing this package registers them all in
:data:`TEMPLATES`.

The keys query the ERP tables directly (plain SQLAlchemy over the SQLModel tables), independently
of the MCP tools, so a tool bug shows up as an agent error instead of hiding in the key. The
conventions they follow are written down once in docs/conventions.md.
"""

from synthetic_erp.scenarios import (  # noqa: F401  (importing registers the templates)
    aged_balance,
    ap_invoices,
    ap_payments,
    ap_purchase_orders,
    cash_collections,
    cash_discounts,
    collections,
    collections_tasks,
    credit_limit,
    credit_notes,
    credit_rating,
    customer_setup,
    discounts,
    dispute,
    invoicing_history,
    other_ap_documents,
    outstanding_balance,
    payment_history,
    sales_orders,
    vendor_balance,
    vendors,
)
from synthetic_erp.scenarios._base import (
    TEMPLATES,
    Answer,
    OracleContext,
    Template,
    answer_question,
    long_date,
    scenarios,
)

__all__ = [
    "TEMPLATES",
    "Answer",
    "OracleContext",
    "Template",
    "answer_question",
    "long_date",
    "scenarios",
]
