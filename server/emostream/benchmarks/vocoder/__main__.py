"""``python -m emostream.benchmarks.vocoder``: as ``emostream bench vocoder``."""

from emostream.benchmarks.vocoder.command import main

raise SystemExit(main())
