import sys

from erp_mcp._cli import main
from ledgerbench._cli import run_cli

sys.exit(run_cli(main, "erp_mcp"))
