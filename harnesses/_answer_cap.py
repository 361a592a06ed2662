"""The cap on an answer's size in a record.

An answer is stored twice in a record (``answer`` and the assistant turn that holds it), so an
agent that writes megabytes would make every record that size. Past :data:`ANSWER_CAP_CHARS` the
answer, and any conversation turn as long, is cut; the record says so in ``extra["answer_cap"]``
(the cap, the length written and the hash of the whole answer) and in its termination detail.
The cut answer is what is judged.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ledgerbench_core.trajectory import Message

ANSWER_CAP_CHARS = 100_000
"""Characters of an answer (and of any one conversation turn) kept in a record: about 25,000
tokens, far past any answer a task asks for."""


def capped_answer(
    answer: str, messages: list[Message], cap: int = ANSWER_CAP_CHARS
) -> tuple[str, list[Message], dict[str, Any] | None]:
    """(answer, messages, note): both cut to ``cap`` characters, and the note for
    ``extra["answer_cap"]`` when anything was cut (None otherwise)."""
    long_turns = [i for i, m in enumerate(messages) if len(m.content) > cap]
    if len(answer) <= cap and not long_turns:
        return answer, messages, None
    kept = [
        m.model_copy(update={"content": m.content[:cap]}) if i in long_turns else m
        for i, m in enumerate(messages)
    ]
    note = {
        "cap_chars": cap,
        "answer_chars": len(answer),
        "answer_sha256": hashlib.sha256(answer.encode("utf-8", "surrogatepass")).hexdigest(),
        "turns_cut": len(long_turns),
    }
    return answer[:cap], kept, note


def cap_detail(note: dict[str, Any]) -> str:
    """One line for the termination detail."""
    return (
        f"answer cut to the record's cap of {note['cap_chars']:,} characters "
        f"({note['answer_chars']:,} written)"
    )
