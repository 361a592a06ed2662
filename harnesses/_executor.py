"""Executors: what runs the (question, trial) pairs of a run, and how many at once.

An executor only schedules. It receives the pairs still to run and a per-pair coroutine function
(``run_pair(question, trial) -> TrajectoryRecord``, the runner's :class:`QuestionRunner.run`) and
yields each record as soon as its pair finishes, in any order. It never writes records: the driver
in :mod:`harnesses._runner` alone appends them to the run store, so any executor (local tasks
today, distributed workers later) resumes and records the same way.

Contract:

- each pair's record is yielded at most once;
- closing the iterator (``aclose()``, or cancelling the task consuming it) cancels the pairs in
  flight and returns once they have stopped; records not yet yielded are dropped (those pairs run
  again on resume);
- an exception raised by ``run_pair`` (a bug: harness failures become records) propagates to the
  consumer.

A distributed executor may also have ``connect()`` (called before the ERP is served, so a
cluster that refuses the driver is said before any slow work), ``bind(erp=..., instructions=...,
run_dir=..., harness=...)`` (once the ERP is known) and ``close()`` (when the run ends).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Protocol

from ledgerbench_core.dataset import Question
from ledgerbench_core.trajectory import TrajectoryRecord

Pair = tuple[Question, int]
PairRunner = Callable[[Question, int], Awaitable[TrajectoryRecord]]


class Executor(Protocol):
    def execute(
        self, pairs: Sequence[Pair], run_pair: PairRunner
    ) -> AsyncIterator[TrajectoryRecord]:
        """Run every pair with ``run_pair``; yield the records as they finish (see module doc)."""
        ...


class LocalExecutor:
    """Runs up to ``concurrency`` pairs at once as tasks on the current event loop, in order."""

    def __init__(self, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency

    async def execute(
        self, pairs: Sequence[Pair], run_pair: PairRunner
    ) -> AsyncIterator[TrajectoryRecord]:
        waiting: Iterator[Pair] = iter(pairs)
        running: set[asyncio.Task[TrajectoryRecord]] = set()

        def start_next() -> None:
            pair = next(waiting, None)
            if pair is not None:
                running.add(asyncio.create_task(run_pair(*pair)))

        for _ in range(self.concurrency):
            start_next()
        try:
            while running:
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    running.discard(task)
                    start_next()
                for task in done:
                    yield task.result()
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)
