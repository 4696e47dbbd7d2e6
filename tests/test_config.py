from emostream.config import Settings


def test_defaults() -> None:
    s = Settings()
    assert s.port == 8000 and s.device == "cpu" and s.max_text_chars == 5000


def test_env_then_overrides() -> None:
    env = {"EMOSTREAM_PORT": "9000", "EMOSTREAM_MAX_TEXT_CHARS": "100", "EMOSTREAM_DEVICE": "cuda"}
    s = Settings.from_env(env)
    assert (s.port, s.max_text_chars, s.device) == (9000, 100, "cuda")
    s = Settings.from_env(env, port=9100, device=None)
    assert s.port == 9100 and s.device == "cuda"  # None means "not given on the CLI"


def test_gpu_tuning_settings() -> None:
    s = Settings()
    assert (s.workers, s.switch_interval_ms, s.acoustic_graphs) == (1, 5.0, False)
    env = {"EMOSTREAM_ACOUSTIC_GRAPHS": "1", "EMOSTREAM_SWITCH_INTERVAL_MS": "0.5"}
    s = Settings.from_env(env, workers=4)
    assert (s.workers, s.switch_interval_ms, s.acoustic_graphs) == (4, 0.5, True)


def test_engine_acoustic_linger_setting() -> None:
    assert Settings().engine_acoustic_linger_ms == 40.0
    s = Settings.from_env({"EMOSTREAM_ENGINE_ACOUSTIC_LINGER_MS": "0"})
    assert s.engine_acoustic_linger_ms == 0.0  # off


def test_engine_vocoder_linger_setting() -> None:
    assert Settings().engine_vocoder_linger_ms == 40.0
    s = Settings.from_env({"EMOSTREAM_ENGINE_VOCODER_LINGER_MS": "0"})
    assert s.engine_vocoder_linger_ms == 0.0  # off


def test_clone_gain_setting() -> None:
    assert Settings().clone_gain == 1.3
    assert Settings.from_env({"EMOSTREAM_CLONE_GAIN": "1.0"}).clone_gain == 1.0  # off
    import pytest

    with pytest.raises(ValueError, match="clone_gain"):
        Settings.from_env({"EMOSTREAM_CLONE_GAIN": "-1"})


def test_cuda_defaults_fill_what_is_not_set() -> None:
    s = Settings.from_env({}, cores=16, device="cuda")
    assert (s.engine, s.acoustic_graphs, s.workers) == ("process", True, 14)
    assert (s.vocoder, s.opus_application, s.opus_bitrate, s.opus_complexity) == (
        "lite", "lowdelay", 64000, 1)  # fmt: skip
    s = Settings.from_env({"EMOSTREAM_DEVICE": "cuda"}, cores=4)
    assert (s.engine, s.workers) == ("process", 2)
    assert Settings.from_env({"EMOSTREAM_DEVICE": "cuda"}, cores=2).workers == 1
    assert Settings.from_env({"EMOSTREAM_DEVICE": "cuda"}, cores=64).workers == 14


def test_cuda_defaults_never_override_what_is_given() -> None:
    env = {"EMOSTREAM_DEVICE": "cuda", "EMOSTREAM_ENGINE": "inprocess",
           "EMOSTREAM_ACOUSTIC_GRAPHS": "0", "EMOSTREAM_VOCODER": "v1"}  # fmt: skip
    s = Settings.from_env(env, cores=16, workers=3, opus_complexity=5)
    assert (s.engine, s.acoustic_graphs, s.workers) == ("inprocess", False, 3)
    assert (s.vocoder, s.opus_complexity, s.opus_application) == ("v1", 5, "lowdelay")


def test_cpu_keeps_its_defaults() -> None:
    s = Settings.from_env({}, cores=16)
    assert (s.engine, s.acoustic_graphs, s.workers) == ("inprocess", False, 1)
