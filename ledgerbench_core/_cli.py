"""How every LedgerBench command meets a fault a newcomer can cause: one line, never a traceback.

- :class:`OneLineParser`: a bad flag prints ``PROG: error: ... (see PROG --help)``, not the usage
  block argparse prints by default.
- :func:`run_cli`: runs a command's ``main``. Ctrl-C and SIGTERM stop it with one line (exit 130
  and 143); a closed stdout (``... | head``) ends it quietly with exit 141, as ``SIGPIPE`` would;
  a full disk or a folder it may not write is one line naming the path and the fix (exit 1).

Imports nothing heavy: every stage's command line uses it.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

QUIET_STOP_ENV = "LEDGERBENCH_QUIET_STOP"
"""Set by the pipeline for the stage commands it runs: a stopped stage leaves the one line to the
pipeline, so a Ctrl-C of ``ledgerbench`` prints one line, not one per process."""

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 128 + signal.SIGTERM
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for a writer whose reader went away."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be: every ``except KeyboardInterrupt`` clean-up runs."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the problem and where help is."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


_received: list[int] = []
"""Signals turned into exceptions so far (a command's own handler may have swallowed one)."""


def _raise_terminated(signum: int, frame: object) -> None:
    _received.append(signum)
    raise Terminated()


def install_sigterm() -> None:
    """SIGTERM raises :class:`Terminated` in the main thread (only there can handlers be set)."""
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


_NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_NOT_ALLOWED = {errno.EACCES, errno.EPERM, errno.EROFS}


def environment_error_line(error: OSError) -> str | None:
    """One line naming the path and the fix for what the machine refused (a full disk, a
    read-only or forbidden folder); None for any other ``OSError`` (a bug to see in full)."""
    path = f" {error.filename}" if error.filename else ""
    reason = error.strerror or str(error)
    if error.errno in _NO_ROOM:
        fix = "free some space there and run the same command again to resume"
    elif error.errno in _NOT_ALLOWED:
        fix = "make it writable, or write elsewhere (--out/--workspace), and run the command again"
    else:
        return None
    return f"cannot write{path}: {reason}; {fix}"


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def run_cli(main: Callable[[Sequence[str] | None], int], prog: str) -> int:
    """``main(None)`` as a command: its exit code, or the one-line ending of a stop or a closed
    pipe. Commands keep their own ``except KeyboardInterrupt`` messages; this catches the rest."""
    install_sigterm()
    try:
        code = main(None)
        sys.stdout.flush()  # here, not at exit, where a closed pipe could only print a warning
    except Terminated:
        _say(f"{prog}: stopped (SIGTERM); what was written so far is kept")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        _say(f"{prog}: interrupted; what was written so far is kept")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `python -m judge.summary runs/x --json | head`
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as error:  # a full disk, a read-only folder: the machine's, not a bug
        line = environment_error_line(error)
        if line is None:
            raise
        print(f"{prog}: error: {line}", file=sys.stderr)
        return 1
    # A command that caught the stop itself (to say how to resume) exits 130; SIGTERM is 143.
    return EXIT_TERMINATED if _received and code == EXIT_INTERRUPTED else code


def _say(line: str) -> None:
    if not os.environ.get(QUIET_STOP_ENV):
        print(line, file=sys.stderr)


def quiet_stop() -> bool:
    """Whether a stop message should be left to the pipeline that started this command."""
    return bool(os.environ.get(QUIET_STOP_ENV))
