"""``emostream bench vocoder``: HiFi-GAN V1 on a GPU. :mod:`.command`: the command (its
options, the JSON result, what each section measures); :mod:`.calls`: the single-call
sections (latency, throughput, accuracy); :mod:`.streams`: the batched engine under N
simulated real-time streams."""

from emostream.benchmarks.vocoder.command import main

__all__ = ["main"]
