"""How the scripted agent shows records: a :class:`Table` is its columns, header -> cell, where a
cell is made by :func:`text`, :func:`link`, :func:`date`, :func:`amount` or :func:`words`.

Solvers import it as ``col`` (``col.Table({"Invoice": col.link("document_number"), ...})``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harnesses.scripted._base import doc_link, long_date, money, with_table

Item = dict[str, Any]
Cell = Callable[[Item], Any]


def text(key: str, default: Any = "") -> Cell:
    """A field as it is (``default`` when the record lacks it)."""
    return lambda item: item.get(key, default)


def words(key: str) -> Cell:
    """A code shown as words (``pending_approval``: pending approval)."""
    return lambda item: str(item.get(key, "")).replace("_", " ")


def link(key: str) -> Cell:
    """The record's key field, linked to the record."""
    return lambda item: doc_link(item, key)


def date(key: str) -> Cell:
    return lambda item: long_date(item.get(key))


def amount(
    key: str, currency: str | None = None, turn: Callable[[float], float] | None = None
) -> Cell:
    """An amount, in the currency the record's ``currency`` field names; ``turn`` (abs, negate)
    first when the ERP stores it with the other sign."""
    if turn is None:
        return lambda item: money(item.get(key), item.get(currency) if currency else None)
    return lambda item: money(
        turn(float(item.get(key) or 0)), item.get(currency) if currency else None
    )


def negate(value: float) -> float:
    return -value


@dataclass(frozen=True)
class Table:
    """The columns a kind of record is shown with: header -> cell."""

    columns: dict[str, Cell]

    def rows(self, items: list[Item]) -> list[list[Any]]:
        return [[cell(item) for cell in self.columns.values()] for item in items]

    def answer(self, head: str, items: list[Item]) -> str:
        """The answer-first sentence, then these records (see :func:`with_table`)."""
        return with_table(head, list(self.columns), self.rows(items))


def txn_table(document: str) -> Table:
    """Customer or vendor transactions: the document, its date and its (unsigned) amount."""
    return Table(
        {
            document: link("document_number"),
            "Date": date("txn_date"),
            "Amount": amount("amount_cur", "currency", abs),
        }
    )
