from emostream.cli import main

raise SystemExit(main())
