import sys

from synthetic_world._cli import main

sys.exit(main())
