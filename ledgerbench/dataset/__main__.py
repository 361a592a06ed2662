import sys

from ledgerbench.dataset._cli import main
from ledgerbench_core._cli import run_cli

sys.exit(run_cli(main, "ledgerbench.dataset"))
