"""Records as MCP resources, argument completions and prompts.

Every record is the resource ``erp://{legal_entity}/{entity_set}/{key}`` (a resource template): the
same JSON as the record page (the record, its lines and children, links to related records), so
links work over stdio where no HTTP server runs. Completions suggest legal entities, entity sets,
account ids and collections agent ids for the template and the prompts.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated

import anyio
import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import ResourceError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError
from pydantic import Field

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

    @mcp.resource(
        "erp://info",
        name="erp-info",
        description="The ERP's facts, as the erp_info tool gives them (today, legal entities, "
        "snapshot hash): served whatever the server's --toolset.",
        mime_type="application/json",
    )
    async def erp_facts() -> str:
        from erp_mcp._tools_parties import ErpInfoArgs, erp_info

        runtime = await anyio.to_thread.run_sync(holder.get)
        return erp_info(runtime, ErpInfoArgs()).model_dump_json()

    @mcp.completion
    async def complete(ref, argument, context) -> mcp_types.Completion:
        supplied = dict(getattr(context, "arguments", None) or {})
        return await anyio.to_thread.run_sync(
            _completion, holder, argument.name, argument.value or "", supplied
        )

    _register_prompts(mcp)
    mcp.add_middleware(_NotFoundCodes())
    _refuse_unknown_completion_targets(mcp)


class RecordNotFound(ResourceError):
    """A record, legal entity or entity set that does not exist: the client's error."""

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level=logging.INFO)  # not a server failure


def _not_found(message: str) -> RecordNotFound:
    return RecordNotFound(message)


class _NotFoundCodes(Middleware):
    """A missing record reads as the protocol's not-found error (invalid params naming the URI,
    as the server answers an unknown resource URI), with the message saying what is missing;
    FastMCP would send any other resource error as an internal error."""

    async def on_read_resource(self, context: MiddlewareContext, call_next):
        try:
            return await call_next(context)
        except RecordNotFound as error:
            uri = str(getattr(context.message, "uri", ""))
            raise MCPError(
                code=mcp_types.INVALID_PARAMS,
                message=f"Resource not found: {error}",
                data={"uri": uri},
            ) from None


def _refuse_unknown_completion_targets(mcp: FastMCP) -> None:
    """Completion for a prompt or resource template this server does not have is an error
    naming the ones it has (FastMCP answers an empty list, which reads as "no values")."""
    answer = mcp._on_complete

    async def complete(ctx, params: mcp_types.CompleteRequestParams) -> mcp_types.CompleteResult:
        ref = params.ref
        key = ref.name if isinstance(ref, mcp_types.PromptReference) else ref.uri
        if await mcp._completion_target(ref.type, key) is None:
            if isinstance(ref, mcp_types.PromptReference):
                known = ", ".join(sorted(p.name for p in await mcp.list_prompts()))
                message = f"unknown prompt {key!r}; prompts: {known}"
            else:
                templates = await mcp.list_resource_templates()
                message = f"unknown resource template {key!r}; templates: " + ", ".join(
                    t.uri_template for t in templates
                )
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=message)
        return await answer(ctx, params)

    mcp._mcp_server.add_request_handler(
        "completion/complete", mcp_types.CompleteRequestParams, complete
    )


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
        kind = None if party_type in (None, "any") else party_type
        values, total = rt.parties.accounts_starting(prefix, kind, le, MAX_COMPLETIONS)
        return mcp_types.Completion(values=values, total=total, has_more=total > len(values))
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


LegalEntityArg = Annotated[
    str, Field(description="Legal entity (company code), e.g. USMF; erp_info lists them.")
]
OptionalLegalEntityArg = Annotated[
    str | None,
    Field(description="Legal entity (company code), e.g. USMF; omit when the id is unique."),
]
PartyTypeArg = Annotated[
    str,
    Field(description="customer (receivables, the default) or vendor (payables)."),
]
AccountArg = Annotated[
    str, Field(description="Customer account id, e.g. SYNCUS-0001, or the customer's name.")
]
AgentArg = Annotated[
    str,
    Field(
        description="Collections agent id, e.g. CA001 (list_reference_data kind "
        "collections_agents lists them)."
    ),
]


def _register_prompts(mcp: FastMCP) -> None:
    @mcp.prompt(
        name="aging_review",
        description="Review receivables or payables aging for one legal entity: buckets, the "
        "largest overdue parties and what to do about them, citing record links.",
    )
    def aging_review(legal_entity: LegalEntityArg, party_type: PartyTypeArg = "customer") -> str:
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
    def customer_account_review(
        account: AccountArg, legal_entity: OptionalLegalEntityArg = None
    ) -> str:
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
    def collections_worklist(
        agent_id: AgentArg, legal_entity: OptionalLegalEntityArg = None
    ) -> str:
        where = f", legal_entity={legal_entity}" if legal_entity else ""
        return (
            f"Plan today's work for collections agent {agent_id}: call get_collections_worklist "
            f"with agent_id={agent_id}{where}. List the activities due today, the ones already "
            "past due, and the assigned customers with the largest overdue balances. Propose the "
            "order in which to contact them and why, citing record urls."
        )
