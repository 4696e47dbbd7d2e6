"""EmoStream TTS for LiveKit Agents (``pip install "emostream[livekit]"``)."""

try:
    from livekit_emostream.tts import TTS, SynthesizeStream
except ModuleNotFoundError as e:  # pragma: no cover - depends on the install
    if e.name and e.name.split(".")[0] == "livekit":
        raise ImportError('livekit_emostream needs LiveKit Agents: pip install "emostream[livekit]"'
                          ) from e  # fmt: skip
    raise

__all__ = ["TTS", "SynthesizeStream"]
