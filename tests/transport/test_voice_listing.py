"""GET /v1/voices as a catalogue, sans-I/O: entries, filters, defaults."""

from __future__ import annotations

import pytest

from emostream.transport.voice_listing import (
    SERVED_RATE,
    BadQuery,
    ListingQuery,
    clone_entry,
    listing,
    served_defaults,
    stock_entry,
)
from emostream.voices.base import VoiceInfo

DEFAULTS = {"en": "af_heart", "zh": "zf_xiaoxiao"}


def info(voice_id: str, language: str = "en-US", model: str = "emostream-fs2") -> VoiceInfo:
    return VoiceInfo(voice_id, model, language, 22050, ("speed", "emotion"), "model's own")


def entries() -> list[dict[str, object]]:
    stock = [info("af_heart"), info("bm_george", "en-GB"), info("zf_xiaoxiao", "zh-CN"),
             info("zm_yunxi", "zh-CN"), info("joe", model="piper-vits"),
             info("zh_cross042", "zh-CN"), info("en_blend03")]  # fmt: skip
    view = {"id": "clone_" + "1" * 16, "name": "Me", "type": "cloned", "state": "refined"}
    return [*(stock_entry(i, DEFAULTS) for i in stock), clone_entry(view, info(str(view["id"])))]


def ids(query: ListingQuery) -> list[str]:
    body = listing(entries(), query, defaults=DEFAULTS, default="af_heart")
    return [str(v["id"]) for v in body["voices"]]


def test_named_entries_say_who_they_are() -> None:
    heart = stock_entry(info("af_heart"), DEFAULTS)
    assert (heart["gender"], heart["accent"], heart["language"]) == ("female", "American", "en-US")
    assert heart["default"] is True and heart["default_for"] == ["en"]
    assert heart["sample_url"] == "/v1/voices/af_heart/sample"
    assert heart["sample_rate"] == SERVED_RATE == 24000 and heart["model_sample_rate"] == 22050
    assert heart["sample_rates"] == [48000, 24000, 16000]
    assert "pitch" in str(heart["description"]) and "default" in heart["tags"]  # type: ignore[operator]
    corpus = stock_entry(info("zh_cross042", "zh-CN"), DEFAULTS)
    assert corpus["hidden"] is True and corpus["gender"] is None and corpus["tags"] == ["corpus"]
    assert corpus["default"] is False


def test_the_default_listing_leaves_the_corpus_out() -> None:
    body = listing(entries(), ListingQuery(), defaults=DEFAULTS, default="af_heart")
    assert [v["id"] for v in body["voices"]] == [
        "af_heart", "bm_george", "zf_xiaoxiao", "zm_yunxi", "joe", "clone_" + "1" * 16]  # fmt: skip
    assert body["hidden"] == 2 and body["defaults"] == DEFAULTS
    assert all("hidden" not in v for v in body["voices"])
    assert len(ids(ListingQuery(all=True))) == 8
    assert ids(ListingQuery(tags=("corpus",))) == ["zh_cross042", "en_blend03"]


def test_filters() -> None:
    assert ids(ListingQuery(language="zh")) == ["zf_xiaoxiao", "zm_yunxi", "clone_" + "1" * 16]
    assert ids(ListingQuery(language="en-gb")) == ["bm_george"]
    assert ids(ListingQuery(gender="male", language="en")) == ["bm_george", "joe"]
    assert ids(ListingQuery(type="cloned")) == ["clone_" + "1" * 16]
    assert ids(ListingQuery(tags=("default",))) == ["af_heart", "zf_xiaoxiao"]
    assert ids(ListingQuery(tags=("default", "mandarin"))) == ["zf_xiaoxiao"]


def test_query_parsing() -> None:
    q = ListingQuery.parse({"all": ["1"], "lang": ["ZH"], "gender": ["Female"],
                            "tag": ["warm,Default", "bright"]})  # fmt: skip
    assert q == ListingQuery(True, "zh", "female", ("warm", "default", "bright"), None)
    assert ListingQuery.parse({}) == ListingQuery()
    for params, param in (({"gender": ["robot"]}, "gender"), ({"all": ["maybe"]}, "all"),
                          ({"type": ["x"]}, "type")):  # fmt: skip
        with pytest.raises(BadQuery) as bad:
            ListingQuery.parse(params)
        assert bad.value.param == param


def test_server_default_for_its_language() -> None:
    joe = info("joe", model="piper-vits")
    assert served_defaults(DEFAULTS, "af_heart", info("af_heart")) == DEFAULTS
    assert served_defaults(DEFAULTS, "joe", joe) == {"en": "joe", "zh": "zf_xiaoxiao"}
    assert served_defaults({}, "joe", joe) == {"en": "joe"}
