"""The emotion a reply names at its start (sans-I/O: the reply's pieces in, the emotion and
the words to speak out).

The system prompt asks the chat model to begin every reply with a tag in square brackets,
``[happy] Thanks for the gift!``. :class:`TagReader` reads the pieces as they stream (a tag
may come split, ``[`` ``ha`` ``ppy]``): until the first non-space character it knows nothing;
a reply that starts otherwise has no tag (neutral); one that starts with ``[`` is held until
``]`` (at most :data:`MAX_TAG_CHARS`; longer, or a line break first, and it was not a tag: the
text is spoken as it came). The tag's word is matched case-blind against the protocol's
emotions and a few synonyms (``joy``, ``excited``, ``mad``, ``scared`` ...); a tag it does
not know (``[smug]``) gives neutral and says so (:attr:`TagReader.unknown`), as does an
empty one. Fullwidth brackets (``【开心】``) and the Mandarin names work the same way.
"""

from __future__ import annotations

from emostream.text.emotion import EMOTIONS

MAX_TAG_CHARS = 24
OPEN, CLOSE = "[【", "]】"
SYNONYMS: dict[str, str] = {
    "joy": "happy", "joyful": "happy", "excited": "happy", "glad": "happy", "cheerful": "happy",
    "happiness": "happy", "amused": "happy", "delighted": "happy",
    "sadness": "sad", "unhappy": "sad", "upset": "sad", "sorry": "sad",
    "anger": "angry", "mad": "angry", "annoyed": "angry", "furious": "angry",
    "surprise": "surprised", "shocked": "surprised", "amazed": "surprised",
    "fear": "fearful", "scared": "fearful", "afraid": "fearful", "nervous": "fearful",
    "disgust": "disgusted", "grossed out": "disgusted",
    "calm": "neutral", "none": "neutral", "normal": "neutral",
    "开心": "happy", "高兴": "happy", "快乐": "happy", "兴奋": "happy",
    "难过": "sad", "伤心": "sad", "悲伤": "sad",
    "生气": "angry", "愤怒": "angry",
    "惊讶": "surprised", "吃惊": "surprised",
    "害怕": "fearful", "恐惧": "fearful",
    "厌恶": "disgusted", "恶心": "disgusted",
    "平静": "neutral", "中性": "neutral",
}  # fmt: skip


def emotion_for(tag: str) -> str | None:
    """The protocol's emotion for a tag's word, or None when it names none."""
    word = tag.strip().strip(".:!").casefold()
    if word in EMOTIONS:
        return word
    return SYNONYMS.get(word)


class TagReader:
    def __init__(self) -> None:
        self.emotion: str | None = None  # decided: one of EMOTIONS
        self.tag: str | None = None  # the tag's text, when there was one
        self.unknown: str | None = None  # a tag that named no emotion (neutral was used)
        self._held = ""

    @property
    def decided(self) -> bool:
        return self.emotion is not None

    def feed(self, piece: str) -> str:
        """The words of ``piece`` to speak (``""`` while the start is undecided)."""
        if self.decided:
            return piece
        self._held += piece
        held = self._held.lstrip()
        if not held:
            return ""
        if held[0] not in OPEN:
            return self._decide("neutral", held)
        end = next((i for i, c in enumerate(held) if c in CLOSE), -1)
        if end < 0:
            if len(held) > MAX_TAG_CHARS or "\n" in held:
                return self._decide("neutral", held)  # not a tag after all
            return ""
        tag = held[1:end]
        if len(tag) > MAX_TAG_CHARS or "\n" in tag:
            return self._decide("neutral", held)
        self.tag = tag
        found = emotion_for(tag)
        if found is None:
            self.unknown = tag
        return self._decide(found or "neutral", held[end + 1 :].lstrip())

    def finish(self) -> str:
        """The reply ended: whatever is still held (an unclosed ``[`` …) is text."""
        if self.decided:
            return ""
        held = self._held.strip()
        return self._decide("neutral", held) if held else ""

    def _decide(self, emotion: str, text: str) -> str:
        self.emotion = emotion
        self._held = ""
        return text
