"""The Mandarin text front end: sentence preparation (numbers, units, English inside Chinese),
word segmentation and pinyin (``g2p``), polyphone readings, tone sandhi, and their types.
:mod:`emostream.text.phonemes` calls it for Mandarin text."""
