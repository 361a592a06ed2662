"""Field tables for the format docs, rendered from the pydantic records themselves.

``docs/trajectory-format.md`` embeds the output between ``<!-- fields:start -->`` and
``<!-- fields:end -->``; a test re-renders it so the doc cannot drift from the models.
Regenerate with ``python -m ledgerbench._docs``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from pydantic import BaseModel

START, END = "<!-- fields:start -->", "<!-- fields:end -->"
TRAJECTORY_DOC = Path(__file__).resolve().parents[1] / "docs" / "trajectory-format.md"


def _type_name(annotation: object) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    text = re.sub(r"\b[\w.]+\.(\w+)", r"\1", str(annotation) if "[" in str(annotation) else text)
    return text.replace("NoneType", "None").replace("<class '", "").replace("'>", "")


def render_fields(model: type[BaseModel]) -> str:
    """A markdown table of ``model``'s fields: name (wire alias), type, default, description."""
    lines = [f"### `{model.__name__}`", "", "| field | type | description |", "|---|---|---|"]
    for name, field in model.model_fields.items():
        wire = field.serialization_alias or field.alias or name
        description = " ".join((field.description or "").split()).replace("|", "\\|")
        type_name = _type_name(field.annotation).replace("|", "\\|")
        lines.append(f"| `{wire}` | `{type_name}` | {description} |")
    return "\n".join(lines)


def trajectory_models() -> list[type[BaseModel]]:
    from ledgerbench_core.trajectory import (
        ConversationLog,
        ConversationTurn,
        ErrorInfo,
        Message,
        MessageToolCall,
        ModelEndpointCheck,
        ModelEvent,
        PreviousAttempt,
        RunManifest,
        Source,
        Termination,
        ToolCall,
        ToolEvent,
        TrajectoryRecord,
        Usage,
        UserTurnTag,
    )

    return [
        TrajectoryRecord,
        Termination,
        ConversationLog,
        ConversationTurn,
        UserTurnTag,
        ToolCall,
        Message,
        MessageToolCall,
        ModelEvent,
        ToolEvent,
        PreviousAttempt,
        Source,
        Usage,
        ErrorInfo,
        RunManifest,
        ModelEndpointCheck,
    ]


def render_section(models: list[type[BaseModel]]) -> str:
    return "\n\n".join(render_fields(model) for model in models)


def rewrite(doc: Path, section: str) -> str:
    """The doc's text with the generated section replaced."""
    text = doc.read_text()
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{section}\n{END}{tail}"


def main() -> int:
    TRAJECTORY_DOC.write_text(rewrite(TRAJECTORY_DOC, render_section(trajectory_models())))
    print(f"wrote {TRAJECTORY_DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
