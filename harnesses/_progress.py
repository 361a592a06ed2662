"""The progress bar a run shows on stderr."""

from __future__ import annotations

from harnesses.records import Status


class RunProgress:
    def __init__(self, enabled: bool, total: int, already: int, counts: dict[str, int]) -> None:
        self.counts = counts
        self._progress = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]questions"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "[green]ok {task.fields[ok]}[/] [yellow]timeout {task.fields[timeout]}[/] "
                "[red]error {task.fields[error]}[/]"
            ),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._progress.add_task(
            "run", total=total, completed=already, **self._fields()
        )

    def _fields(self) -> dict[str, int]:
        return {
            "ok": self.counts.get("ok", 0),
            "timeout": self.counts.get("timeout", 0) + self.counts.get("max_turns", 0),
            "error": self.counts.get("error", 0),
        }

    def __enter__(self) -> RunProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, status: Status) -> None:
        self.counts[status.value] = self.counts.get(status.value, 0) + 1
        if self._progress is not None:
            self._progress.update(self._task, advance=1, **self._fields())
