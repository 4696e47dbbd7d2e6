"""Benchmarks (``emostream bench ...``)."""
