import sys

from ledgerbench_core._startup import pause_collection, report_step

report_step("importing the ERP server")  # before the imports that take most of a start
pause_collection()  # until the server is ready (erp_mcp._serve_cli.serve resumes it)

from erp_mcp._cli import main  # noqa: E402
from ledgerbench_core._cli import run_cli  # noqa: E402

sys.exit(run_cli(main, "erp_mcp"))
