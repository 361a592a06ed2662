"""Research-world documents as linked items: ``https://world.ledgerbench.test/<world>/docs/<doc>``
(any host, as the world server's ``--public-url`` chose) names the document ``<world>/<doc>``.

A trial *cites* the documents its answer links to and *reads* the ones its ``fetch`` calls
returned (``ToolCall.documents``; a search result the agent never opened is not carried). Copies
come from the run's world database (the manifest's ``world_db``, the document as ``fetch`` serves
it), when the file still holds the world and snapshot the run used; otherwise from the fetch
outputs, as the agent read the document.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

from judge.linked._store import LinkedItem, RunSources, TrialTexts

_LINK_RE = re.compile(r"https?://[^\s<>\"'`|\\\])}]+?/docs/d[0-9a-f]{12}\b", re.IGNORECASE)
_KEY_RE = re.compile(r"/(w[0-9a-f]{10})/docs/(d[0-9a-f]{12})$")


def document_key(link: str) -> str | None:
    """``<world>/<doc>`` of a document link, or None (a link that names no world is not one)."""
    match = _KEY_RE.search(link.split("?", 1)[0].split("#", 1)[0].rstrip("/"))
    return f"{match[1]}/{match[2]}" if match else None


def fetched_documents(tool_calls: list[dict[str, Any]]) -> list[str]:
    """The document links a trial's fetch calls read (``ToolCall.documents`` of ``fetch``, as
    JSON), in call order."""
    return [
        link
        for call in tool_calls
        if str(call.get("name", "")).split("__")[-1] == "fetch"
        for link in call.get("documents") or []
    ]


class WorldDocumentLinks:
    """The :class:`~judge.linked.LinkAdapter` of research-world documents."""

    kind = "world-document"
    max_read: int | None = None
    """Every fetched document is carried (a trial fetches a handful)."""

    def __init__(self) -> None:
        self._documents: dict[tuple[str, str | None], dict[str, LinkedItem]] = {}
        """(world file, snapshot) -> copies read so far: runs on one world share them."""

    def find(self, text: str) -> dict[str, str]:
        found: dict[str, str] = {}
        if "/docs/d" not in text:
            return found
        for match in _LINK_RE.finditer(text):
            key = document_key(match.group(0))
            if key is not None:
                found.setdefault(match.group(0), key)
        return found

    def shown(self, trial: TrialTexts) -> dict[str, str]:
        """The documents the trial's fetch calls read (not every search result it was shown)."""
        found: dict[str, str] = {}
        for link in trial.fetched:
            key = document_key(link)
            if key is not None:
                found.setdefault(link, key)
        return found

    def copy(
        self, run: RunSources, cited: set[str], read: set[str]
    ) -> tuple[str, dict[str, LinkedItem], list[str]]:
        manifest = run.manifest
        expected = getattr(manifest, "world_snapshot_hash", None)
        path = run.world_db or _locate(getattr(manifest, "world_db", None), run.run_dir)
        source = expected[:12] if expected else run.run_dir.name
        wanted = cited | read
        copies: dict[str, LinkedItem] = {}
        warnings: list[str] = []
        if path:
            cache = self._documents.setdefault((path, expected), {})
            found, problem = _from_world(path, wanted - set(cache), expected, source)
            if problem:
                warnings.append(f"{run.run_dir}: {problem}; copies come from fetch outputs")
            cache.update(found)
            copies.update({key: cache[key] for key in wanted if key in cache})
        missing = wanted - set(copies)
        if missing:
            copies.update(_from_fetch_outputs(missing, run.tool_outputs))
        return source, copies, warnings


def _locate(world_db: str | None, run_dir: Path) -> str | None:
    """The run's world file; a relative path is looked for under the folders holding the run."""
    if not world_db:
        return None
    path = Path(world_db.removeprefix("sqlite:///"))
    if path.is_absolute() or path.exists():
        return str(path)
    for folder in run_dir.resolve().parents:
        if (folder / path).is_file():
            return str(folder / path)
    return str(path)


def _from_world(
    path: str, keys: set[str], expected: str | None, source: str
) -> tuple[dict[str, LinkedItem], str | None]:
    from synthetic_world import LINK_BASE, read_documents

    if not keys:
        return {}, None
    try:
        doc_ids = sorted(key.split("/")[1] for key in keys)
        meta, documents = read_documents(Path(path), doc_ids, LINK_BASE)
    except Exception as error:  # a missing or foreign file: fall back, never fail the build
        reason = " ".join(str(error).split())[:160]
        return {}, f"cannot read the run's world {path} ({reason})"
    if expected and meta.get("snapshot_hash") != expected:
        return {}, (
            f"the world at {path} is snapshot {str(meta.get('snapshot_hash'))[:12]}, not the "
            f"run's {expected[:12]}"
        )
    world_id = meta.get("world_id")
    copies = {}
    for key in keys:
        world, doc_id = key.split("/")
        if world == world_id and doc_id in documents:
            document = documents[doc_id].model_dump(mode="json")
            copies[key] = _item(key, document, f"world snapshot {source} ({path})")
    return copies, None


def _item(key: str, document: dict[str, Any], source: str) -> LinkedItem:
    companies = ", ".join(c.get("name", "") for c in document.get("companies") or [])
    return LinkedItem(
        kind=WorldDocumentLinks.kind,
        key=key,
        link=str(document.get("url") or key),
        title=str(document.get("title") or f"Document {key}"),
        source=source,
        fields=[
            ["source", str(document.get("source", ""))],
            ["type", str(document.get("source_type", ""))],
            ["published", str(document.get("published_at", ""))],
            ["companies", companies],
        ],
        body=str(document.get("content") or ""),
    )


def _from_fetch_outputs(keys: set[str], outputs: list[str]) -> dict[str, LinkedItem]:
    """Copies of ``keys`` as the first fetch output that returned each document showed it."""
    copies: dict[str, LinkedItem] = {}
    for number, output in enumerate(outputs):
        if len(copies) == len(keys):
            break
        if '"content"' not in output or '"doc_id"' not in output:
            continue
        with contextlib.suppress(ValueError):
            data = json.loads(output)
            if isinstance(data, dict) and set(data) == {"result"}:
                data = data["result"]
            if isinstance(data, dict) and isinstance(data.get("url"), str):
                key = document_key(data["url"])
                if key in keys and key not in copies:
                    where = f"as a fetch output showed it to the agent (output {number + 1})"
                    copies[key] = _item(key, data, where)
    return copies
