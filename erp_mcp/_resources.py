"""Records as MCP resources, argument completions and prompts.

Every record is the resource ``erp://{legal_entity}/{entity_set}/{key}`` (a resource template): the
same JSON as the record page (the record, its lines and children, links to related records), so
links work over stdio where no HTTP server runs. Completions suggest legal entities, entity sets,
account ids and collections agent ids for the template and the prompts.
"""

from __future__ import annotations

import json
import logging

import anyio
import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import ResourceError

from erp_mcp._pages import record_page
from erp_mcp._runtime import RESOURCE_TEMPLATE, RuntimeHolder
from synthetic_erp import _schema as s
from synthetic_erp._catalog import ENTITY_SETS

MAX_COMPLETIONS = 100
_PARTY_SETS = {"customers": "customer", "vendors": "vendor"}


def register_resources(mcp: FastMCP, holder: RuntimeHolder) -> None:
    """The record resource template, the completion handler and the prompts."""

    @mcp.resource(
        RESOURCE_TEMPLATE,
        name="erp-record",
        description="One ERP record with its lines, children and related-record links (the "
        "`url` of a record returned over stdio). entity_set is one of list_entity_sets; key is "
        "the record's key (account, voucher, sales_id, ...), percent-encoded.",
        mime_type="application/json",
    )
    async def erp_record(legal_entity: str, entity_set: str, key: str) -> str:
        runtime = await anyio.to_thread.run_sync(holder.get)
        if legal_entity not in runtime.legal_entities:
            known = ", ".join(runtime.legal_entities)
            raise _not_found(f"unknown legal entity {legal_entity!r}; known: {known}")
        if entity_set not in {es.name for es in ENTITY_SETS}:
            known = ", ".join(es.name for es in ENTITY_SETS)
            raise _not_found(f"unknown entity set {entity_set!r}; known: {known}")
        if len(key) > 100 or "\x00" in key:
            raise _not_found("key: at most 100 characters, no NUL")
        page = await anyio.to_thread.run_sync(record_page, runtime, legal_entity, entity_set, key)
        if page is None:
            raise _not_found(f"no {entity_set} record {key!r} in {legal_entity}")
        return json.dumps(page, default=str)

    @mcp.completion
    async def complete(ref, argument, context) -> mcp_types.Completion:
        supplied = dict(getattr(context, "arguments", None) or {})
        return await anyio.to_thread.run_sync(
            _completion, holder, argument.name, argument.value or "", supplied
        )

    _register_prompts(mcp)


def _not_found(message: str) -> ResourceError:
    """A client error: logged at info level, not as a server failure."""
    return ResourceError(message, log_level=logging.INFO)


def _completion(
    holder: RuntimeHolder, name: str, typed: str, supplied: dict[str, str]
) -> mcp_types.Completion:
    rt = holder.get()
    le = supplied.get("legal_entity")
    le = le if le in rt.legal_entities else None
    prefix = typed.strip().upper()
    if name == "legal_entity":
        values = [code for code in rt.legal_entities if code.startswith(prefix)]
    elif name == "entity_set":
        values = [es.name for es in ENTITY_SETS if es.name.startswith(typed.strip().lower())]
    elif name in {"account", "key"}:
        party_type = _PARTY_SETS.get(supplied.get("entity_set", ""), supplied.get("party_type"))
        if name == "key" and party_type is None:
            if supplied.get("entity_set") == "collections-agents":
                return _agent_ids(rt, le, prefix)
            return mcp_types.Completion(values=[])
        values = sorted(
            {
                e.account
                for e in rt.parties.entries
                if e.account.upper().startswith(prefix)
                and (party_type in (None, "any") or e.party_type == party_type)
                and (le is None or e.legal_entity == le)
            }
        )
    elif name == "agent_id":
        return _agent_ids(rt, le, prefix)
    else:
        values = []
    return _capped(values)


def _agent_ids(rt, le: str | None, prefix: str) -> mcp_types.Completion:
    table = s.CollectionsAgent.__tablename__
    values = sorted(
        {
            key[2]
            for key in rt.reference
            if key[0] == table
            and (le is None or key[1] == le)
            and key[2].upper().startswith(prefix)
        }
    )
    return _capped(values)


def _capped(values: list[str]) -> mcp_types.Completion:
    return mcp_types.Completion(
        values=values[:MAX_COMPLETIONS],
        total=len(values),
        has_more=len(values) > MAX_COMPLETIONS,
    )


def _register_prompts(mcp: FastMCP) -> None:
    @mcp.prompt(
        name="aging_review",
        description="Review receivables or payables aging for one legal entity: buckets, the "
        "largest overdue parties and what to do about them, citing record links.",
    )
    def aging_review(legal_entity: str, party_type: str = "customer") -> str:
        side = "receivables" if party_type != "vendor" else "payables"
        return (
            f"Review the {side} aging of legal entity {legal_entity} as of the ERP's today "
            "(erp_info gives it).\n"
            f"1. get_aging with party_type={party_type}, legal_entity={legal_entity}, "
            "group_by=legal_entity for the bucket totals in the accounting currency.\n"
            f"2. get_aging with group_by=party, sort_by=overdue, limit=10 for the largest overdue "
            "parties.\n"
            "3. For the top three, get their details (get_customer / get_vendor) and open items "
            "(get_aging with account and include_transactions=true).\n"
            "Report the totals per bucket, the three parties with amounts and days overdue, and a "
            "recommended action for each. Cite the record url of every figure."
        )

    @mcp.prompt(
        name="customer_account_review",
        description="Summarise one customer's account: balance, overdue items, credit, disputes "
        "and collections activity.",
    )
    def customer_account_review(account: str, legal_entity: str | None = None) -> str:
        where = f" in legal entity {legal_entity}" if legal_entity else ""
        return (
            f"Summarise customer {account}{where}. Resolve it with search_parties if the id is "
            "not exact. Use get_customer (balance, credit limit, hold), get_aging with "
            "include_transactions=true (overdue items), list_disputes, list_collection_cases and "
            "list_collection_letters. Give the balance, overdue amount by bucket, available "
            "credit, open disputes and the latest collections step, each with its record url."
        )

    @mcp.prompt(
        name="collections_worklist",
        description="Plan a collections agent's day from their worklist.",
    )
    def collections_worklist(agent_id: str, legal_entity: str | None = None) -> str:
        where = f", legal_entity={legal_entity}" if legal_entity else ""
        return (
            f"Plan today's work for collections agent {agent_id}: call get_collections_worklist "
            f"with agent_id={agent_id}{where}. List the activities due today, the ones already "
            "past due, and the assigned customers with the largest overdue balances. Propose the "
            "order in which to contact them and why, citing record urls."
        )
