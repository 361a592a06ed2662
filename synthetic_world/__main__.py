import sys

from ledgerbench_core._startup import pause_collection, report_step

report_step("importing the world server")  # before the imports that take most of a start
if sys.argv[1:2] == ["serve"]:
    pause_collection()  # until the server is ready (erp_mcp._serve_cli.serve resumes it)

from synthetic_world._cli import main  # noqa: E402

sys.exit(main())
