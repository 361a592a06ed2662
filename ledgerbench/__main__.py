"""``python -m ledgerbench``: the one-command pipeline (same as the ``ledgerbench`` script)."""

from ledgerbench.pipeline import main

raise SystemExit(main())
