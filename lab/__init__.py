"""Lab quality tooling: ASR, DNSMOS, d-vector and prosody judges of EmoStream's voices.

Not part of the ``emostream`` package (not in the wheel): run from a source checkout, from the
repo root, as ``python -m lab.<tool>``, with the ``[eval]`` extra installed. See ``README.md``.
The user-facing benchmarks stay in the product: ``emostream bench first-audio|vocoder``.
"""
