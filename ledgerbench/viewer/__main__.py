from ledgerbench.viewer._cli import main
from ledgerbench_core._cli import run_cli

raise SystemExit(run_cli(main, "ledgerbench view"))
