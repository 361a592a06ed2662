"""``python -m synthetic_erp`` entry point."""

import sys

from synthetic_erp._cli import main

sys.exit(main())
