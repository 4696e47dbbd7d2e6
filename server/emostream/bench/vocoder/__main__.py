"""``python -m emostream.bench.vocoder``: as ``emostream bench vocoder``."""

from emostream.bench.vocoder.command import main

raise SystemExit(main())
