"""The arguments that make each ERP tool's result largest: shared by the result-budget test and
``bench/bench_mcp.py`` (which runs them at 1x, 10x and 100x)."""

from __future__ import annotations

import sqlite3

from synthetic_erp._catalog import ENTITY_SETS


def largest_arguments(sql: sqlite3.Connection) -> dict[str, list[dict]]:
    """For every tool, the arguments that make its result largest (``sql``: the ERP database)."""

    def one(query: str) -> tuple:
        return sql.execute(query).fetchone()

    busy_customer = one(
        "select legal_entity, customer_account from customer_transaction "
        "where open_amount_cur != 0 group by 1, 2 order by count(*) desc limit 1"
    )
    busy_vendor = one(
        "select legal_entity, vendor_account from vendor_transaction "
        "group by 1, 2 order by count(*) desc limit 1"
    )
    order = one(
        "select legal_entity, sales_id from sales_order_line group by 1, 2 "
        "order by count(*) desc limit 1"
    )
    po = one(
        "select legal_entity, po_number from purchase_order_line group by 1, 2 "
        "order by count(*) desc limit 1"
    )
    invoice = one(
        "select i.legal_entity, i.invoice_id from vendor_invoice i join purchase_order_line l "
        "on l.legal_entity = i.legal_entity and l.po_number = i.po_number "
        "group by 1, 2 order by count(*) desc limit 1"
    )
    journal = one(
        "select legal_entity, journal_id from payment_journal_line group by 1, 2 "
        "order by count(*) desc limit 1"
    )
    agent = one(
        "select legal_entity, collections_agent_id from customer "
        "where collections_agent_id is not null group by 1, 2 order by count(*) desc limit 1"
    )
    pool = one(
        "select legal_entity, collections_pool_id from customer "
        "where collections_pool_id is not null group by 1, 2 order by count(*) desc limit 1"
    )
    edges = [10, 20, 30, 45, 60, 90, 120, 180, 365, 730]
    page = {"page_size": 500}
    kinds = [
        "payment_terms", "methods_of_payment", "customer_groups", "vendor_groups",
        "collections_pools", "collections_agents", "cash_discounts", "currencies",
        "exchange_rates", "legal_entities",
    ]  # fmt: skip
    return {
        "erp_info": [{}],
        "search_parties": [{"query": "co", "limit": 50, "min_score": 0}],
        "get_customer": [{"legal_entity": busy_customer[0], "account": busy_customer[1]}],
        "get_vendor": [{"legal_entity": busy_vendor[0], "account": busy_vendor[1]}],
        "list_reference_data": [{"kind": kind, "limit": 500} for kind in kinds],
        "get_aging": [
            {"limit": 1000, "bucket_edges": edges},
            {"party_type": "vendor", "limit": 1000, "bucket_edges": edges},
            {
                "legal_entity": busy_customer[0],
                "account": busy_customer[1],
                "include_transactions": True,
                "limit": 1000,
                "bucket_edges": edges,
            },
        ],
        "list_customer_transactions": [page],
        "list_vendor_transactions": [page],
        "list_settlements": [page, {**page, "party_type": "vendor"}],
        "list_disputes": [page],
        "list_cash_discounts": [page],
        "rank_parties": [
            {"top_n": 100, "measure": measure, "party_type": side}
            for measure in ("invoiced", "paid", "open")
            for side in ("customer", "vendor")
        ],
        "list_sales_orders": [page],
        "get_sales_order": [{"legal_entity": order[0], "sales_id": order[1]}],
        "list_purchase_orders": [page],
        "get_purchase_order": [{"legal_entity": po[0], "po_number": po[1]}],
        "list_vendor_invoices": [page],
        "get_vendor_invoice": [{"legal_entity": invoice[0], "invoice_id": invoice[1]}],
        "list_payment_journals": [page],
        "get_payment_journal": [{"legal_entity": journal[0], "journal_id": journal[1]}],
        "get_vendor_spend": [
            {"top_n": 100},
            {"legal_entity": busy_vendor[0], "account": busy_vendor[1]},
        ],
        "list_collection_letters": [page],
        "list_collection_activities": [page],
        "list_collection_cases": [page],
        "get_collections_worklist": [
            {"legal_entity": agent[0], "agent_id": agent[1], "limit": 500, "min_overdue": 0},
            {"legal_entity": pool[0], "pool_id": pool[1], "limit": 500, "min_overdue": 0},
        ],
        "list_entity_sets": [{}],
        "describe_entity_set": [{"entity_set": es.name} for es in ENTITY_SETS],
        "query_entity_set": [{"entity_set": es.name, "top": 500} for es in ENTITY_SETS]
        + [
            {
                "entity_set": "customer-transactions",
                "group_by": ["legal_entity", "customer_account", "currency"],
                "aggregates": [
                    {"op": "sum", "field": "amount_acct"},
                    {"op": "count"},
                    {"op": "min", "field": "txn_date"},
                    {"op": "max", "field": "txn_date"},
                ],
                "top": 500,
            }
        ],
    }
