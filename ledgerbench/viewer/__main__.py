from ledgerbench.viewer._cli import main

raise SystemExit(main())
