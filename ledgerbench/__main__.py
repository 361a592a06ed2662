"""``python -m ledgerbench``: the one-command pipeline (same as the ``ledgerbench`` script)."""

from ledgerbench.pipeline import cli

raise SystemExit(cli())
