import sys

from ledgerbench.dataset._cli import main

sys.exit(main())
