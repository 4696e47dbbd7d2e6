"""EmoStream TTS for Pipecat (``pip install "emostream[pipecat]"``)."""

try:
    from pipecat_emostream.tts import EmoStreamTTSService, EmoStreamTTSSettings
except ModuleNotFoundError as e:  # pragma: no cover - depends on the install
    if e.name and e.name.split(".")[0] == "pipecat":
        raise ImportError(
            'pipecat_emostream needs Pipecat: pip install "emostream[pipecat]"'
        ) from e
    raise

__all__ = ["EmoStreamTTSService", "EmoStreamTTSSettings"]
