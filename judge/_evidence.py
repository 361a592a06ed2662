"""The evidence an agent saw (tool outputs and captured sources), for the groundedness call.

Items are de-duplicated (the same output read twice is shown once) and the whole is cut to a
character limit; a closing note says what was dropped or shortened so the judge knows the evidence
is partial.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from judge._base import sha256_text
from ledgerbench_core.trajectory import TrajectoryRecord

DEFAULT_EVIDENCE_CHARS = 60_000


@dataclass(frozen=True)
class Evidence:
    text: str
    items: int
    duplicates: int
    dropped: int
    shortened: int
    total_chars: int
    """Characters of the de-duplicated evidence before the cut."""


def _tool_items(trajectory: TrajectoryRecord) -> list[tuple[str, str, str]]:
    items = []
    for index, call in enumerate(trajectory.tool_calls, start=1):
        arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
        header = f"[tool call {index}] {call.name}({arguments})"
        if call.is_error:
            header += " -> ERROR"
        if call.truncated:
            header += f" (output truncated by the harness: {call.output_size} characters in full)"
        key = call.output_sha256 or sha256_text(call.output)
        items.append((key, header, call.output))
    return items


def _source_items(trajectory: TrajectoryRecord) -> list[tuple[str, str, str]]:
    items = []
    for index, source in enumerate(trajectory.sources, start=1):
        header = f"[source {index}] {source.url}" + (f" - {source.title}" if source.title else "")
        body = source.text or "(no captured text)"
        items.append((sha256_text(source.url + "\n" + body), header, body))
    return items


def build_evidence(
    trajectory: TrajectoryRecord, max_chars: int = DEFAULT_EVIDENCE_CHARS
) -> Evidence:
    """Tool outputs then sources, de-duplicated, cut to ``max_chars`` with a note of the cut."""
    seen: dict[str, str] = {}
    blocks: list[str] = []
    duplicates = 0
    for key, header, body in _tool_items(trajectory) + _source_items(trajectory):
        if key in seen and body:
            duplicates += 1
            blocks.append(f"{header}\n(same output as {seen[key]})")
            continue
        seen[key] = header.split("]", 1)[0] + "]"
        blocks.append(f"{header}\n{body}")
    total = sum(len(block) + 2 for block in blocks)
    kept: list[str] = []
    used = dropped = shortened = 0
    for block in blocks:
        room = max_chars - used
        if room <= 0:
            dropped += 1
            continue
        if len(block) > room:
            block = block[:room] + " [...]"
            shortened += 1
        kept.append(block)
        used += len(block) + 2
    notes = []
    if duplicates:
        notes.append(f"{duplicates} repeated output(s) shown once")
    if dropped or shortened:
        notes.append(
            f"evidence cut to {max_chars:,} of {total:,} characters: "
            f"{dropped} item(s) dropped, {shortened} shortened"
        )
    if not blocks:
        notes.append("the agent called no tools and captured no sources")
    text = "\n\n".join(kept)
    if notes:
        text += ("\n\n" if text else "") + "[note: " + "; ".join(notes) + "]"
    return Evidence(
        text=text,
        items=len(blocks),
        duplicates=duplicates,
        dropped=dropped,
        shortened=shortened,
        total_chars=total,
    )
