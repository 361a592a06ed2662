import sys

from ledgerbench_core._startup import report_step

report_step("importing the ERP server")  # before the imports that take most of a start

from erp_mcp._cli import main  # noqa: E402
from ledgerbench_core._cli import run_cli  # noqa: E402

sys.exit(run_cli(main, "erp_mcp"))
