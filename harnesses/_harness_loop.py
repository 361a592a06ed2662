"""A harness loop: a thread running its own event loop, where a plug-in harness answers questions.

The runner's clock lives on the runner's loop. A plug-in that blocks its loop (``time.sleep``, a
synchronous SDK call, a busy computation) would stop that clock, and a question on a 3 s budget
would end when the plug-in felt like it. Plug-ins therefore run on their own loop in their own
thread: the runner's deadline fires on time whatever the plug-in does, the record is closed at the
deadline, and a plug-in that never yields is abandoned (the thread is a daemon and dies with the
process). Each question gets a loop of its own, so a plug-in that blocks holds up no other
question: a client a plug-in keeps between questions must not be bound to one event loop (make it
per question, or key it by ``asyncio.get_running_loop()``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class HarnessLoop:
    """``await loop.call(lambda: harness.run(...))`` runs the coroutine on the loop thread.

    Cancelling the awaiting task cancels the coroutine on the harness loop and waits for it to
    finish its clean-up; the caller bounds that wait (the runner's ``cancel_grace_s``).
    """

    def __init__(self, name: str = "harness") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=f"{name}-loop", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                self._wind_down()
            with contextlib.suppress(Exception):
                self._loop.close()

    def _wind_down(self) -> None:
        """Let what the harness left on this loop end (closing connections) before it closes."""
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        if pending:
            gathered = asyncio.gather(*pending, return_exceptions=True)
            self._loop.run_until_complete(asyncio.wait_for(gathered, timeout=1.0))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())

    async def call(self, make: Callable[[], Awaitable[T]]) -> T:
        caller = asyncio.get_running_loop()
        finished: asyncio.Future[T] = caller.create_future()

        async def guarded() -> None:
            try:
                result = await make()
            except asyncio.CancelledError:
                _post(caller, finished, cancelled=True)
                raise
            except BaseException as error:
                _post(caller, finished, error=error)
                return
            _post(caller, finished, result=result)

        handle: concurrent.futures.Future[None] = asyncio.run_coroutine_threadsafe(
            guarded(), self._loop
        )
        try:
            return await asyncio.shield(finished)
        except asyncio.CancelledError:
            handle.cancel()  # cancels guarded() on the harness loop
            with contextlib.suppress(BaseException):
                await finished  # its clean-up; the caller decides how long to wait
            raise

    async def responds(self, within: float) -> bool:
        """Whether the harness loop runs a callback within ``within`` seconds (False when its
        thread is blocked, or the loop is gone)."""
        caller = asyncio.get_running_loop()
        answered: asyncio.Future[bool] = caller.create_future()
        try:
            self._loop.call_soon_threadsafe(lambda: _post(caller, answered, result=True))
        except RuntimeError:  # closed
            return False
        try:
            return await asyncio.wait_for(asyncio.shield(answered), within)
        except TimeoutError:
            return False

    def close(self, timeout: float = 2.0) -> None:
        """Stop the loop once its current callbacks end; a blocked thread is left (daemon)."""
        if self._loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)


def _post(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    *,
    result: Any = None,
    error: BaseException | None = None,
    cancelled: bool = False,
) -> None:
    """Settle ``future`` on its own loop from the harness thread (the runner may be gone)."""

    def settle() -> None:
        if future.done():
            return
        if cancelled:
            future.cancel()
        elif error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the runner's loop already closed
        loop.call_soon_threadsafe(settle)
