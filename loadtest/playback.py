"""The simulated listener (sans-I/O): a playback clock that counts underruns.

Playback starts ``jitter_buffer_ms`` after the first packet arrives; each packet then
plays for ``frame_ms``. A packet that arrives after its play time is an *underrun*: the
listener hears silence from its play time until it arrives (the stall), and playback
resumes at arrival (plus ``rebuffer_ms``, default 0), so one late packet shifts the clock
for all later ones (as a real player's ring buffer does) instead of making each of them
late too. Inter-arrival gaps and their deviation from ``frame_ms`` go to histograms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loadtest.stats import Histogram


@dataclass
class PlaybackClock:
    """Feed :meth:`on_packet` with each audio packet's arrival time (ms, any monotonic clock).

    frame_ms: audio per packet (20 ms for EmoStream Opus and PCM packets).
    jitter_buffer_ms: audio held back before playback starts (default 60 ms).
    rebuffer_ms: extra wait after an underrun before playback resumes (default 0).
    """

    frame_ms: float = 20.0
    jitter_buffer_ms: float = 60.0
    rebuffer_ms: float = 0.0
    packets: int = 0
    underruns: int = 0
    underrun_ms: float = 0.0
    first_arrival_ms: float | None = None
    first_underrun_audio_ms: float | None = None  # audio position where the first stall began
    last_arrival_ms: float | None = None
    gaps: Histogram = field(default_factory=Histogram)  # inter-arrival gap, ms
    jitter: Histogram = field(default_factory=Histogram)  # |gap - frame_ms|, ms
    rfc3550_jitter_ms: float = 0.0  # smoothed interarrival jitter (RFC 3550 §6.4.1)
    _next_play_ms: float = 0.0

    def on_packet(self, t_ms: float) -> bool:
        """Account one packet arriving at ``t_ms``; True when it caused an underrun."""
        late = False
        if self.first_arrival_ms is None:
            self.first_arrival_ms = t_ms
            self._next_play_ms = t_ms + self.jitter_buffer_ms
        else:
            assert self.last_arrival_ms is not None
            gap = t_ms - self.last_arrival_ms
            self.gaps.add(gap)
            d = abs(gap - self.frame_ms)
            self.jitter.add(d)
            self.rfc3550_jitter_ms += (d - self.rfc3550_jitter_ms) / 16.0
            if t_ms > self._next_play_ms:
                late = True
                if self.first_underrun_audio_ms is None:
                    self.first_underrun_audio_ms = self.packets * self.frame_ms
                self.underruns += 1
                self.underrun_ms += t_ms - self._next_play_ms + self.rebuffer_ms
                self._next_play_ms = t_ms + self.rebuffer_ms
        self.last_arrival_ms = t_ms
        self.packets += 1
        self._next_play_ms += self.frame_ms
        return late

    @property
    def audio_ms(self) -> float:
        return self.packets * self.frame_ms

    @property
    def playback_end_ms(self) -> float | None:
        """When the listener finishes hearing what has arrived so far (None before audio)."""
        return None if self.first_arrival_ms is None else self._next_play_ms
