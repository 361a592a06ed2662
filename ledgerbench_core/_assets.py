"""Browser assets shared by the pages LedgerBench writes (the viewer, the human grading packet)."""

from __future__ import annotations

from importlib import resources


def markdown_script() -> str:
    """The safe markdown renderer (``markdown.js``: the global ``LedgerBenchMarkdown`` with
    ``markdown(text)`` -> a DOM element, ``el``, ``link``), for any page that shows answers as
    users see them: the viewer and the human grading packet."""
    return resources.files("ledgerbench_core").joinpath("markdown.js").read_text(encoding="utf-8")


__all__ = ["markdown_script"]
