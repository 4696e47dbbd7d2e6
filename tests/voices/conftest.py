from tests.voices.voice_fixtures import (  # noqa: F401
    other_speech,
    persistent_redis,
    redis_server,
    speech,
)
