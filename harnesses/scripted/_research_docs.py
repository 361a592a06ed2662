"""Reading research-world documents as the scripted agent fetched them (markdown)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from harnesses.scripted._base import MONTHS

LONG_DATE = r"[A-Z][a-z]+ \d{1,2}, \d{4}"
_DATE = re.compile(r"([A-Z][a-z]+) (\d{1,2}), (\d{4})")


def parse_long_date(text: str) -> dt.date | None:
    match = _DATE.search(text)
    if match is None or match.group(1).lower() not in MONTHS:
        return None
    month = MONTHS.index(match.group(1).lower()) + 1
    return dt.date(int(match.group(3)), month, int(match.group(2)))


def number(text: str) -> Decimal | None:
    """``1,204.3`` / ``-38.5`` / ``$1.2 billion`` -> a Decimal in the text's own scale (millions
    for "million", thousands of millions for "billion"); None for ``n/a``."""
    cleaned = text.strip().replace(",", "")
    match = re.search(r"(-?)[$€£]?(-?\d+(?:\.\d+)?)\s*(billion|million)?", cleaned)
    if match is None:
        return None
    try:
        value = Decimal(match.group(2))
    except InvalidOperation:
        return None
    if match.group(1) == "-" or match.group(2).startswith("-"):
        value = -abs(value)
    if match.group(3) == "billion":
        value *= 1000
    return value


@dataclass
class Table:
    heading: str
    """The nearest heading above the table (without the #)."""
    header: list[str]
    rows: list[list[str]]

    def column(self, label: str) -> int | None:
        """The index of the column whose header starts with ``label`` (e.g. "Fiscal 2024")."""
        for i, cell in enumerate(self.header):
            if cell == label or cell.startswith(label + " "):
                return i
        return None

    def cell(self, row_label: str, column_label: str) -> str | None:
        col = self.column(column_label)
        if col is None:
            return None
        for row in self.rows:
            if row and row[0] == row_label and col < len(row):
                return row[col]
        return None

    def row_labels(self) -> list[str]:
        return [row[0] for row in self.rows if row]


@dataclass
class Page:
    """A fetched document: its metadata (from the fetch result) and its tables and lines."""

    url: str
    title: str
    source_type: str
    published_at: dt.date
    content: str
    tables: list[Table] = field(default_factory=list)

    @classmethod
    def from_fetch(cls, data: dict) -> Page:
        page = cls(
            url=data["url"],
            title=data["title"],
            source_type=data["source_type"],
            published_at=dt.date.fromisoformat(str(data["published_at"])[:10]),
            content=data["content"],
        )
        page.tables = tables(page.content)
        return page

    def table(self, heading_start: str) -> Table | None:
        return next((t for t in self.tables if t.heading.startswith(heading_start)), None)

    def find(self, pattern: str) -> re.Match[str] | None:
        return re.search(pattern, self.content)


def tables(markdown: str) -> list[Table]:
    """Every markdown table with the nearest heading above it."""
    found: list[Table] = []
    heading = ""
    current: list[list[str]] = []

    def close() -> None:
        if current:
            header, *rows = current
            found.append(Table(heading, header, rows))
            current.clear()

    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("|"):
            cells = [cell.strip() for cell in stripped.strip("|").split("|")]
            if not all(set(cell) <= set("-:") for cell in cells):
                current.append(cells)
            continue
        close()
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
    close()
    return found
