"""ERP records as linked items: ``https://<any host>/erp/LE/set/key``, bare ``/erp/...`` paths and
``erp://LE/set/key`` all name the record ``/erp/LE/set/key``.

Copies come from the run's ERP database (the page the server would serve, read straight from the
file), when it still holds the snapshot the run used; otherwise from the tool outputs, as the
agent was shown the record.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from pathlib import Path
from typing import Any

from judge.linked._store import LinkedItem, RunSources

_LINK_RE = re.compile(
    r"(?:https?://|erp://)[^\s<>\"'`|\\\])}]+|(?<![\w/.:])/erp/[^\s<>\"'`|\\\]),;}]+",
    re.IGNORECASE,
)
_URL_FIELD_RE = re.compile(r'"url"\s*:\s*"([^"\\]+)"')
"""A record's ``url`` in a JSON tool output: what the agent read (much cheaper than _LINK_RE)."""
_TRAILING = ".,;:!?*_"
MAX_ROWS = 50
"""Rows per table (open transactions, lines, ...) in a copy."""


@functools.lru_cache(maxsize=65536)
def record_key(link: str) -> str | None:
    """``/erp/LE/set/key`` of a record link in any of its forms, or None (memoised: a run names
    the same records again and again)."""
    from synthetic_erp import parse_record_url, record_path

    ref = parse_record_url(link)
    return record_path(ref.entity_set, ref.legal_entity, ref.key) if ref else None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if type(value) is str:
        return value
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, _NESTED):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


_NESTED = (dict, list)


def _looks_like_json(text: str) -> bool:
    """A JSON object or list (a markdown answer may start with "[" too: "[name](link)")."""
    head = text[:2]
    return head[:1] == "{" or head in ("[{", '["', "[]", "[\n")


class ErpRecordLinks:
    """The :class:`~judge.linked.LinkAdapter` of ERP records."""

    kind = "erp-record"

    def __init__(self) -> None:
        self._pages: dict[tuple[str, str | None], dict[str, dict]] = {}
        """(database, snapshot) -> pages read so far: runs on one ERP share their copies."""

    def find(self, text: str) -> dict[str, str]:
        found: dict[str, str] = {}
        if "erp" not in text:
            return found
        if _looks_like_json(text):  # a tool output: its records' url fields
            for match in _URL_FIELD_RE.finditer(text):
                key = record_key(match.group(1))
                if key is not None:
                    found.setdefault(match.group(1), key)
            return found
        for match in _LINK_RE.finditer(text):
            link = match.group(0).rstrip(_TRAILING)
            key = record_key(link)
            if key is not None:
                found.setdefault(link, key)
        return found

    def copy(
        self, run: RunSources, cited: set[str], read: set[str]
    ) -> tuple[str, dict[str, LinkedItem], list[str]]:
        """Cited records: the full page from the run's ERP; records the tools only showed: as
        shown (what the agent read), from the ERP when no tool output holds them."""
        manifest = run.manifest
        expected = getattr(manifest, "erp_snapshot_hash", None)
        db_url = run.erp_db or _locate(getattr(manifest, "erp_db_url", None), run.run_dir)
        copies: dict[str, LinkedItem] = {}
        warnings: list[str] = []
        source = expected[:12] if expected else run.run_dir.name
        shown = _from_tool_outputs(cited | read, run.tool_outputs)
        copies.update({key: shown[key] for key in read if key in shown})
        wanted = cited | (read - set(copies))
        if db_url and wanted:
            cache = self._pages.setdefault((db_url, expected), {})
            pages, problem = _pages(db_url, wanted - set(cache), expected)
            if problem:
                warnings.append(f"{run.run_dir}: {problem}; record copies come from tool outputs")
            cache.update(pages)
            for key in wanted & set(cache):
                copies[key] = _from_page(key, cache[key], f"ERP snapshot {source} ({db_url})")
        copies.update({key: item for key, item in shown.items() if key not in copies})
        return source, copies, warnings


def _locate(db_url: str | None, run_dir: Path) -> str | None:
    """The run's ERP URL; a relative SQLite path (relative to where the run was started, which
    is not recorded) is looked for under the folders that hold the run."""
    from synthetic_erp._db import sqlite_path

    path = sqlite_path(db_url) if db_url else None
    if path is None or path.is_absolute() or path.exists():
        return db_url
    for folder in run_dir.resolve().parents:
        if (folder / path).is_file():
            return f"sqlite:///{folder / path}"
    return db_url


def _pages(db_url: str, keys: set[str], expected: str | None) -> tuple[dict[str, dict], str | None]:
    from erp_mcp import read_record_pages
    from synthetic_erp import STABLE_RECORD_BASE

    if not keys:
        return {}, None
    if "***" in db_url:
        return {}, f"the ERP URL {db_url} has its password redacted (pass --erp-db)"
    try:
        snapshot, pages = read_record_pages(db_url, sorted(keys), STABLE_RECORD_BASE)
    except Exception as error:  # a missing or foreign database: fall back, never fail the build
        reason = " ".join(str(error).split())[:160]
        return {}, f"cannot read the run's ERP {db_url} ({reason})"
    if expected and snapshot != expected:
        return {}, (
            f"the ERP at {db_url} is snapshot {str(snapshot)[:12]}, not the run's {expected[:12]}"
        )
    return pages, None


def _from_page(key: str, page: dict[str, Any], source: str) -> LinkedItem:
    sections = []
    for label, rows in page.get("children", {}).items():
        columns = list(rows[0]) if rows else []
        shown = [[_text(row.get(c)) for c in columns] for row in rows[:MAX_ROWS]]
        more = f", first {MAX_ROWS} shown" if len(rows) > MAX_ROWS else ""
        title = f"{label} ({len(rows)}{more})"
        sections.append({"title": title, "columns": columns, "rows": shown})
    return LinkedItem(
        kind=ErpRecordLinks.kind,
        key=key,
        link=str(page.get("url") or key),
        title=f"{page.get('title', 'Record')} {page.get('key', '')} ({page.get('legal_entity')})",
        source=source,
        fields=[[name, _text(value)] for name, value in page.get("record", {}).items()],
        sections=sections,
        related=[
            {"label": f"{link['field']}: {link['url']}", "link": link["url"]}
            for link in page.get("related", [])
            if link.get("url")
        ],
    )


def _from_tool_outputs(keys: set[str], outputs: list[str]) -> dict[str, LinkedItem]:
    """Copies of ``keys`` as the first tool output that held each record showed it."""
    copies: dict[str, LinkedItem] = {}
    number = 0

    def take(record: dict[str, Any]) -> dict[str, Any]:  # every object the decoder builds
        url = record.get("url")
        if type(url) is str:
            key = record_key(url)
            if key in keys and key not in copies:
                copies[key] = _from_record(key, record, number)
        return record

    for number, output in enumerate(outputs):  # noqa: B007 (take() reads it)
        if len(copies) == len(keys):
            break
        if '"url"' in output:
            with contextlib.suppress(ValueError):
                json.loads(output, object_hook=take)
    return copies


def _from_record(key: str, record: dict[str, Any], number: int) -> LinkedItem:
    return LinkedItem(
        kind=ErpRecordLinks.kind,
        key=key,
        link=record["url"],
        title=f"Record {key.rsplit('/', 2)[-2]}/{key.rsplit('/', 1)[-1]}",
        source=f"as a tool output showed it to the agent (output {number + 1} of the run)",
        fields=[
            [name, _text(value)] for name, value in record.items() if not isinstance(value, _NESTED)
        ],
    )
