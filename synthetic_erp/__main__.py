"""``python -m synthetic_erp`` entry point."""

import sys

from ledgerbench_core._cli import run_cli
from synthetic_erp._cli import main

sys.exit(run_cli(main, "synthetic_erp"))
