import soundfile as sf

from emostream.cli import main


def test_say_writes_a_wav(tmp_path: object, capsys: object) -> None:
    out = f"{tmp_path}/hello.wav"
    assert main(["say", "Hello from the command line.", "-o", out, "--speed", "1.1"]) == 0
    audio, rate = sf.read(out)
    assert rate == 24000 and 1.0 < len(audio) / rate < 4.0


def test_say_refuses_unsupported_control(tmp_path: object) -> None:
    assert main(["say", "Hi.", "-o", f"{tmp_path}/x.wav", "--emotion", "happy"]) == 2


def test_bench_usage() -> None:
    assert main(["bench", "nope"]) == 2
