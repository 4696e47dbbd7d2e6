from tests.voices.voice_fixtures import other_speech, redis_server, speech  # noqa: F401
