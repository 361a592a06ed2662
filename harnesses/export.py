"""Moved: ``python -m harnesses.export`` forwards to ``python -m ledgerbench.export`` for one
version (see the README, "Moved in this version"). The export reads score records and the
analysis' intervals, so it lives in the roof; this forwarder runs it by name, without importing
the roof, so harnesses stays below judge, analysis and ledgerbench."""

from __future__ import annotations

import runpy
import sys

NEW_COMMAND = "ledgerbench.export"


def forward() -> None:
    """Run ``python -m ledgerbench.export`` with this process's arguments."""
    print(
        f"harnesses.export is deprecated: use python -m {NEW_COMMAND} (same arguments)",
        file=sys.stderr,
    )
    sys.argv[0] = NEW_COMMAND
    runpy.run_module(NEW_COMMAND, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    forward()
