"""Shapes of answer key that many scenarios share, filled in by data each scenario declares.

A scenario module keeps its own wording (as :class:`ListKey` / :class:`Ranking` tables next to
its phrasings) and its own query; the helpers here only do what every such key does the same way:
the none key, the count, the listing, the references.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from ledgerbench_core.dataset._records import ExpectedFact, LedgerSide
from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    LIST_LIMIT,
    Answer,
    OracleContext,
    Party,
    _amount,
    _count,
    _le_filter,
    _names,
    _none,
    _party_table,
    _sum,
    _top,
    _txn_line,
    _where,
    listed,
    long_date,
    money,
    party_conditions,
)

# --------------------------------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------------------------------


def party_records(
    ctx: OracleContext, table: Any, p: Party, *conditions: Any, order_by: Sequence[Any]
) -> list[Any]:
    """The rows of ``table`` that belong to party ``p`` (its legal entity and account column)."""
    query = select(table).where(*party_conditions(table, p), *conditions)
    return ctx.rows(query.order_by(*order_by))


def entity_records(
    ctx: OracleContext, table: Any, le: str | None, *conditions: Any, order_by: Sequence[Any]
) -> list[Any]:
    """The rows of ``table`` matching ``conditions`` in legal entity ``le`` (None: in all)."""
    query = select(table).where(*conditions, *_le_filter(table, le))
    return ctx.rows(query.order_by(*order_by))


# --------------------------------------------------------------------------------------------------
# Facts and references
# --------------------------------------------------------------------------------------------------


def id_list(name: str, rows: Iterable[Any], attribute: str) -> ExpectedFact:
    """An unordered list fact of the rows' ``attribute`` values: every record that qualifies."""
    return _top(name, [getattr(row, attribute) for row in rows], ordered=False, complete=True)


def record_refs(set_name: str, rows: Sequence[Any], attribute: str) -> list[str]:
    """Record paths of the first LIST_LIMIT rows (each in its own legal entity)."""
    shown = rows[:LIST_LIMIT]
    return [record_path(set_name, row.legal_entity, getattr(row, attribute)) for row in shown]


def txn_refs(kind: str, rows: Sequence[Any]) -> list[str]:
    """Record paths of the first LIST_LIMIT ledger transactions (``kind``: customer | vendor)."""
    return record_refs(f"{kind}-transactions", rows, "voucher")


def by_currency_totals(rows: Sequence[Any], column: str) -> dict[str, Decimal]:
    """Sum of ``column`` per row currency, in currency order."""
    totals: dict[str, Decimal] = {}
    for row in rows:
        totals[row.currency] = totals.get(row.currency, Decimal("0.00")) + getattr(row, column)
    return dict(sorted(totals.items()))


# --------------------------------------------------------------------------------------------------
# Keys that list records
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Total:
    """A key's total over the records it lists: an amount fact and the ``{total}`` word."""

    field: str
    column: str = "amount_cur"
    sign: int = 1
    """-1 turns credits (stored negative) into a positive total."""
    side: LedgerSide | None = None
    """The ledger side of a positive total (see :class:`~ledgerbench.dataset.ExpectedFact`)."""

    def of(self, rows: Sequence[Any]) -> Decimal:
        return self.sign * _sum(getattr(row, self.column) for row in rows)


@dataclass(frozen=True)
class ListKey:
    """The wording of a key that lists what it found; declared in the scenario module.

    ``none`` and ``found`` are ``str.format`` texts over the words the key is given (``{who}`` is
    "<party> in <legal entity>" when a party is given); ``found`` also gets ``{n}``, the count,
    and with a ``total``, ``{total}`` (an amount in the ``currency`` the key is given).
    """

    noun: str
    """Field of the count fact (and of the no_records fact unless ``none_noun`` says otherwise)."""
    none: str
    found: str
    total: Total | None = None
    ids: tuple[str, str] | None = None
    """(fact field, row attribute): an unordered list fact of the listed records' ids."""
    counted: bool = True
    """Whether the key for nothing found also states a zero count."""
    none_noun: str = ""

    def answer(
        self,
        rows: Sequence[Any],
        lines: Sequence[str],
        refs: Sequence[str],
        *,
        party: Party | None = None,
        currency: str = "",
        facts: Sequence[ExpectedFact] = (),
        **words: Any,
    ) -> Answer:
        """The key over ``rows`` worded by ``lines``; with ``party``, its record leads the refs."""
        if party is not None:
            words["who"] = f"{party.label} in {party.legal_entity}"
        lead = [party.path] if party is not None else []
        if not rows:
            facts_none = [_none(self.none_noun or self.noun)]
            if self.counted:
                facts_none.append(_count(self.noun, 0))
            return Answer(text=self.none.format(**words), facts=facts_none, refs=lead)
        found = [_count(self.noun, len(rows))]
        if self.total:
            total = self.total.of(rows)
            found.append(_amount(self.total.field, total, currency, self.total.side))
            words["total"] = money(total, currency)
        if self.ids:
            found.append(id_list(self.ids[0], rows, self.ids[1]))
        text = self.found.format(n=len(rows), **words)
        return listed(rows, lines, text, [*found, *facts], [*lead, *refs])


def ledger_answer(
    key: ListKey,
    p: Party,
    rows: Sequence[Any],
    line: Callable[[Any, str], str] = _txn_line,
    **words: Any,
) -> Answer:
    """``key`` over some of the party's ledger transactions, one ``line`` each (given the row and
    the party currency); the refs are the party and those transactions."""
    lines = [line(row, p.currency) for row in rows]
    refs = txn_refs(p.kind, rows)
    return key.answer(rows, lines, refs, party=p, currency=p.currency, **words)


def party_line(row: Any) -> str:
    """A party as a listing names it: "Name (account)"."""
    return f"{row.name} ({row.account})"


def party_list(
    ctx: OracleContext,
    key: ListKey,
    kind: str,
    le: str | None,
    *conditions: Any,
    line: Callable[[Any], str] = party_line,
    order_by: Sequence[Any] = (),
    **words: Any,
) -> Answer:
    """``key`` over the parties of ``kind`` (customer | vendor) matching ``conditions`` in ``le``
    (None: in all), by account unless ``order_by`` says otherwise; refs are their records.

    Besides ``words``, the key's texts can use ``{le}``, ``{where}`` (in <le> | across all legal
    entities) and ``{today}``."""
    table = _party_table(kind)
    order = order_by or (table.legal_entity, table.account)
    rows = entity_records(ctx, table, le, *conditions, order_by=order)
    refs = record_refs(f"{kind}s", rows, "account")
    lines = [line(row) for row in rows]
    today = long_date(ctx.today)
    return key.answer(rows, lines, refs, le=le, where=_where(le), today=today, **words)


# --------------------------------------------------------------------------------------------------
# Keys that rank parties by an amount
# --------------------------------------------------------------------------------------------------


def top_totals(totals: dict[str, Decimal], n: int) -> list[tuple[Decimal, str]]:
    """The ``n`` largest (amount, account) pairs, largest first, ties by account."""
    return sorted(((v, a) for a, v in totals.items()), key=lambda x: (-x[0], x[1]))[:n]


@dataclass(frozen=True)
class Ranking:
    """How a key that ranks parties by an amount words them; declared in the scenario module."""

    kind: str
    """customer | vendor"""
    fact_prefix: str
    """The three largest amounts are facts named ``<fact_prefix>_<account>``."""
    line: str = "{name} ({account}) {amount}"

    side: LedgerSide | None = None
    """The ledger side of the ranked amounts."""

    def answer(
        self,
        ctx: OracleContext,
        le: str,
        ranked: list[tuple[Decimal, str]],
        lead: str,
        *,
        complete: bool = False,
    ) -> Answer:
        """The key listing ``ranked`` (amounts in accounting currency) after ``lead``;
        ``complete``: ``ranked`` holds every party that qualifies."""
        names = _names(ctx, self.kind, le, [a for _, a in ranked])
        currency = ctx.currency(le)
        lines = [
            self.line.format(name=names[a], account=a, amount=money(v, currency)) for v, a in ranked
        ]
        return Answer(
            text=f"{lead}: " + "; ".join(lines) + ".",
            facts=[_top(f"{self.kind}s", [a for _, a in ranked], complete=complete)]
            + [_amount(f"{self.fact_prefix}_{a}", v, currency, self.side) for v, a in ranked[:3]],
            refs=[record_path(f"{self.kind}s", le, a) for _, a in ranked],
            records=len(ranked),
        )


# --------------------------------------------------------------------------------------------------
# Shared by Discounts and Dispute
# --------------------------------------------------------------------------------------------------


def _document_numbers(ctx: OracleContext, le: str, vouchers: list[str]) -> dict[str, str]:
    t = s.CustomerTransaction
    rows = ctx.session.execute(
        select(t.voucher, t.document_number).where(t.legal_entity == le, t.voucher.in_(vouchers))
    )
    return {key: value for key, value in rows}


def dispute_answer(ctx: OracleContext, p: Party, kind: str) -> Answer:
    """The open disputes (``kind`` dispute) or deductions (``kind`` deduction) of a customer."""
    d = s.CustomerDispute
    rows = party_records(
        ctx,
        d,
        p,
        d.kind == kind,
        d.status == "open",
        d.opened_date <= ctx.today,
        order_by=(d.opened_date, d.dispute_id),
    )
    plural = "disputes" if kind == "dispute" else "deductions"
    key = ListKey(
        plural,
        none=f"{{who}} has no open {plural} as of {{today}}.",
        found="{who} has {n} open {noun} totalling {total}",
        total=Total(f"{plural}_total", "amount"),
        ids=(plural, "dispute_id"),
    )
    currency = ctx.currency(p.legal_entity)
    vouchers = _document_numbers(ctx, p.legal_entity, [r.voucher for r in rows])
    lines = [
        f"{r.dispute_id} on {vouchers.get(r.voucher, r.voucher)}: {r.reason}, "
        f"{money(r.amount, currency)}, opened {long_date(r.opened_date)}"
        for r in rows
    ]
    return key.answer(
        rows,
        lines,
        record_refs("customer-disputes", rows, "dispute_id"),
        party=p,
        currency=currency,
        today=long_date(ctx.today),
        noun=plural if len(rows) != 1 else kind,
    )
