import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "voices"))

from voice_fixtures import other_speech, redis_server, speech  # noqa: F401
