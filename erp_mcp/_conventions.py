"""The argument conventions shared by the ERP tools, stated once in words instead of in every
tool's schema (no heavy imports: the harnesses' instructions import this).

A model reads the tool definitions on every turn: ``legal_entity`` is described the same way in 21
tools and the paging arguments in 13, about 480 tokens of the finance toolset saying one thing over
and over. The listed schemas leave those descriptions out (``_middleware.lean_input_schema``) and
this text says it once: in the ERP server's instructions and in the system instructions every
general-purpose harness sends (``harnesses._instructions``). A parameter whose description says
something of its own (``legal_entity`` of ``get_customer``: "when the account is in several")
keeps it in its schema.
"""

from __future__ import annotations

STATED_ONCE = {
    "legal_entity": "Company code; omit for all.",
    "page": "1-based.",
    "page_size": "At most 500.",
    "cursor": "next_cursor of the last result.",
}
"""Parameter descriptions the listed schemas leave out, because :data:`ARGUMENT_CONVENTIONS`
states them (only where a parameter's description is exactly this)."""

ARGUMENT_CONVENTIONS = (
    "ERP tool arguments: leave out the optional ones you do not need (null means the same); dates "
    "are YYYY-MM-DD. legal_entity is a company code (erp_info lists them); left out, every legal "
    "entity. List tools return pages: page (1-based) and page_size (at most 500), or cursor (the "
    "next_cursor of the last result, with the same other arguments)."
)
"""The conventions, as a model reads them (one paragraph)."""
