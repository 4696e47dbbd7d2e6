"""lab.teacher_speakers: which plan speakers it samples, by kind (no teacher, no ASR here)."""

from lab.teacher_speakers import kind, sample


def spec(name: str, lang: str = "zh") -> dict[str, object]:
    return {"name": name, "lang": lang, "weights": {name: 1.0}}


def test_kind_from_plan_names() -> None:
    assert kind("zf_xiaoni") == "stock"
    assert kind("zh_blend07") == "blend" and kind("val_zh_blend1") == "blend"
    assert kind("zh_cross048") == "cross" and kind("en_cross003") == "cross"


def test_sample_draws_each_kind_of_one_language_reproducibly() -> None:
    specs = [spec(f"zf_{i}") for i in range(4)] + [spec("af_x", "en")]
    specs += [spec(f"zh_blend{i:02d}") for i in range(10)]
    specs += [spec(f"zh_cross{i:03d}") for i in range(10)]
    got = sample(specs, "zh", 3, seed=1, exclude={"zf_0"})
    names = [s["name"] for s in got]
    assert [kind(n) for n in names] == ["stock"] * 3 + ["blend"] * 3 + ["cross"] * 3
    assert "zf_0" not in names and "af_x" not in names
    assert names == [s["name"] for s in sample(specs, "zh", 3, seed=1, exclude={"zf_0"})]
    assert len(sample(specs, "zh", 20, seed=1, exclude=set())) == 4 + 10 + 10  # all there are
