import sys

from ledgerbench_core._startup import report_step

report_step("importing the world server")  # before the imports that take most of a start

from synthetic_world._cli import main  # noqa: E402

sys.exit(main())
