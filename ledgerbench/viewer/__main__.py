from ledgerbench._cli import run_cli
from ledgerbench.viewer._cli import main

raise SystemExit(run_cli(main, "ledgerbench view"))
