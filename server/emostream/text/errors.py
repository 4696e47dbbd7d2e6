"""Errors of the text front end that the transport answers (no imports: the app loads this
without :mod:`emostream.text.espeak`, which the voices load when they need it)."""


class EspeakCrashed(RuntimeError):
    """espeak-ng died (or hung) on this call; the next call gets a fresh process."""
