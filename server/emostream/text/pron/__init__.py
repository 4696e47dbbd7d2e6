"""Pronunciation control (sans-I/O): how a word is read, said by the client.

* :mod:`~emostream.text.pron.spec`: the three kinds of pronunciation (toned pinyin for hanzi,
  IPA and respelling for English words), each checked against what the acoustic model can say;
* :mod:`~emostream.text.pron.inline`: the inline syntax ``{word|pronunciation}`` read from text
  as it streams in (an override split across tokens is held until it is whole);
* :mod:`~emostream.text.pron.lexicon`: pronunciation dictionaries (entries word →
  pronunciation) and their matcher;
* :mod:`~emostream.text.pron.reader`: one utterance's reading of its text (inline overrides,
  then dictionaries), what :class:`~emostream.text.frontend.TextFrontEnd` feeds on;
* :mod:`~emostream.text.pron.wire`: how an override rides inside a segment on its way to a
  voice (noncharacter marks, like a segment's context), and the display text without it.

The protocol's side is in ``docs/protocol.md`` ("Pronunciation").
"""
