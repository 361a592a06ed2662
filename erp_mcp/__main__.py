import sys

from erp_mcp._cli import main

sys.exit(main())
