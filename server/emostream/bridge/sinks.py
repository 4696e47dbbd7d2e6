"""What the danmaku bridge writes for the audio it receives (sans-I/O: frames in, bytes out).

* ``pcm``: raw s16le mono, the server's PCM frames as they come (pipe it to a player).
* ``wav``: the same with a WAV header; its sizes are 'unknown' (streaming players and most
  tools accept that) unless the file can be rewound at the end (:meth:`AudioSink.final_header`).
* ``ogg``: the server's Opus packets in one Ogg Opus stream (every line one after the other).
"""

from __future__ import annotations

from typing import Any, Literal

from emostream.codec.containers import OggOpusWriter, wav_header

OutputFormat = Literal["pcm", "wav", "ogg"]
OPUS_LOOKAHEAD_S = 0.0065  # the encoder's look-ahead: the Ogg stream's pre-skip


def codec_for(fmt: OutputFormat) -> str:
    """The codec to ask the server for."""
    return "opus" if fmt == "ogg" else "pcm_s16le"


def format_for_path(path: str | None) -> OutputFormat:
    """``.wav`` → wav, ``.ogg``/``.opus`` → ogg, anything else (``-``, a pipe) → pcm."""
    name = (path or "").lower()
    if name.endswith(".wav"):
        return "wav"
    if name.endswith((".ogg", ".opus")):
        return "ogg"
    return "pcm"


class AudioSink:
    """Frames of one connection's lines → bytes for the output. ``started`` (each line's
    ``started`` event) fixes the stream's rate at the first line; every later line must
    match it (the bridge asks the same format for all)."""

    def __init__(self, fmt: OutputFormat) -> None:
        self.fmt = fmt
        self.sample_rate: int | None = None
        self.frame_ms = 20.0
        self.data_bytes = 0
        self._ogg: OggOpusWriter | None = None

    def started(self, event: dict[str, Any]) -> bytes:
        rate = int(event.get("sample_rate", 0) or 0)
        self.frame_ms = float(event.get("frame_ms", self.frame_ms))
        if self.sample_rate is not None:
            if rate != self.sample_rate:
                raise ValueError(f"a line came at {rate} Hz after {self.sample_rate} Hz")
            return b""
        self.sample_rate = rate
        if self.fmt == "wav":
            return wav_header(sample_rate=rate)
        if self.fmt == "ogg":
            self._ogg = OggOpusWriter(sample_rate=rate,
                                      pre_skip=round(OPUS_LOOKAHEAD_S * rate))  # fmt: skip
            return self._ogg.header()
        return b""

    def frame(self, data: bytes) -> bytes:
        if self.sample_rate is None:
            return b""  # audio before any started: not a line's (nothing asks for it)
        if self._ogg is not None:
            return self._ogg.pages([data], round(self.sample_rate * self.frame_ms / 1000.0))
        self.data_bytes += len(data)
        return data

    def duration_s(self, data: bytes) -> float:
        """Audio in one frame: an Opus packet is ``frame_ms``; PCM is s16 mono."""
        if self.sample_rate is None:
            return 0.0
        if self.fmt == "ogg":
            return self.frame_ms / 1000.0
        return len(data) / 2.0 / self.sample_rate

    def close(self) -> bytes:
        """The end of the stream (Ogg's last page)."""
        if self._ogg is not None:
            return self._ogg.pages([], 0, last=True)
        return b""

    def final_header(self) -> bytes | None:
        """For a WAV file that can be rewound: the header with the real sizes."""
        if self.fmt != "wav" or self.sample_rate is None:
            return None
        return wav_header(sample_rate=self.sample_rate, data_bytes=self.data_bytes)
