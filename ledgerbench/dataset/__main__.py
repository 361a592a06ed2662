import sys

from ledgerbench._cli import run_cli
from ledgerbench.dataset._cli import main

sys.exit(run_cli(main, "ledgerbench.dataset"))
