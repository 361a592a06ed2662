"""The progress bar a run shows on stderr."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ledgerbench_core.trajectory import Status


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


class PreparationWatch:
    """Says what the run is doing when preparing it takes long (a busy machine can stretch the
    dataset checks and the servers' starts from seconds to minutes): after ``quiet_s`` in one
    step, and every ``every_s`` after that, one line with the step, the time so far and the load.
    A thread does the telling, since the steps themselves may hold the event loop. Like the
    progress bar it speaks only to a terminal (``enabled``): a redirected run's stderr keeps its
    one-line errors."""

    def __init__(
        self, log: Any, *, enabled: bool = True, quiet_s: float = 10.0, every_s: float = 15.0
    ) -> None:
        import threading
        import time

        self._log = log
        self._quiet_s = quiet_s
        self._every_s = every_s
        self._clock = time.monotonic
        self._started = self._clock()
        self._step = "starting"
        self._step_since = self._started
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="preparation-watch", daemon=True)
        self._enabled = enabled

    def start(self) -> PreparationWatch:
        if self._enabled:
            self._thread.start()
        return self

    def stop(self) -> None:
        """The first question starts (or the run ends before it): nothing more to say."""
        self._wake.set()

    def step(self, name: str | Callable[[], str]) -> None:
        """The step the run is at now; a callable is asked each time (a server's own step)."""
        self._step = name
        self._step_since = self._clock()

    def _watch(self) -> None:
        from ledgerbench_core._startup import describe_load

        told_at = None
        while not self._wake.wait(1.0):
            now = self._clock()
            in_step = now - self._step_since
            if in_step < self._quiet_s or (told_at is not None and now - told_at < self._every_s):
                continue
            told_at = now
            step = self._step() if callable(self._step) else self._step
            self._log(
                f"preparing the run: {step} ({in_step:.0f} s so far, "
                f"{now - self._started:.0f} s since start){describe_load()}"
            )
