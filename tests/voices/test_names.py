"""Voices by name: clones' given names, and one short line for a voice not found."""

from __future__ import annotations

import json

import numpy as np
import pytest

from emostream.voices.cloning.voice_record import ClonedVoice
from emostream.voices.names import (
    MAX_MESSAGE_BYTES,
    ambiguous_message,
    closest,
    name_clash,
    named,
    unknown_voice_message,
)

STOCK = {"af_heart", "am_michael", "zf_xiaoxiao", "joe"}


def clone(voice_id: str, name: str) -> ClonedVoice:
    return ClonedVoice(id=voice_id, name=name, created=0.0, clip_sha256="", duration_s=5.0,
                       speech_s=5.0, encoder="e", embedding=np.zeros(4, np.float32))  # fmt: skip


def test_names_match_in_any_case_and_clash() -> None:
    mine = [clone("clone_" + "1" * 16, "Chat Voice"), clone("clone_" + "2" * 16, "其他")]
    assert [c.id for c in named(mine, " chat VOICE ")] == ["clone_" + "1" * 16]
    assert named(mine, "chat") == []
    assert name_clash("CHAT VOICE", mine, STOCK.__contains__) is not None
    assert "stock voice" in (name_clash("AF_Heart", mine, STOCK.__contains__) or "")
    assert name_clash("clone_" + "a" * 16, mine, STOCK.__contains__) is not None
    assert name_clash("New one", mine, STOCK.__contains__) is None
    two = [*mine, clone("clone_" + "3" * 16, "chat voice")]
    assert "2 of your voices" in ambiguous_message("chat voice", named(two, "chat voice"))


def test_closest_names() -> None:
    ids = [*STOCK, *(f"zh_cross{i:03d}" for i in range(250))]
    assert closest("af_hart", ids)[0] == "af_heart"
    assert closest("AF_HEART", ids) == ["af_heart"] or closest("AF_HEART", ids)[0] == "af_heart"
    assert closest("zh_cross42", ids)[0] in ("zh_cross042", "zh_cross142", "zh_cross242")
    assert closest("completely different", ids) == []


@pytest.mark.parametrize(
    "asked",
    ["af_hart", "nobody", "x" * 5000, "主播" * 500, "'\"\\\n\t" * 100, "\U0001f600" * 90],
)
def test_an_unknown_voice_is_one_short_line(asked: str) -> None:
    names = ["af_heart", "非常长的名字" * 20, "another-very-long-clone-name-" * 5]
    message = unknown_voice_message(asked, closest(asked, names) or names)
    assert len(message.encode()) <= MAX_MESSAGE_BYTES and "\n" not in message
    # as the HTTP error body (OpenAI's shape) it stays under 300 bytes
    body = {"error": {"message": message, "type": "invalid_request_error", "param": "voice",
                      "code": "unknown_voice"}}  # fmt: skip
    assert len(json.dumps(body, ensure_ascii=False).encode()) <= 300


def test_the_message_suggests_or_lists() -> None:
    assert "did you mean af_heart?" in unknown_voice_message("af_hart", ["af_heart"])
    listed = unknown_voice_message("robot", [], ["alloy", "ash", "nova"])
    assert "voices here include alloy, ash, nova" in listed
    assert unknown_voice_message("robot", []).endswith("GET /v1/voices lists them")
