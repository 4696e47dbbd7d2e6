"""espeak-ng behind a process boundary: inputs known to crash it are defused, and a crash
that still happens costs one call (:mod:`emostream.text.espeak`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from emostream.text import espeak
from emostream.text.espeak import MAX_DOTTED_LETTERS, IsolatedEspeak, defuse
from emostream.text.espeak_worker import ESPEAK_DATA_DIR_NAME, Worker, bridge_path, load_bridge
from emostream.text.frontend import EspeakCrashed
from tests.text.crashing_worker import ARGV, CRASH_WORD

CRASHERS = Path(__file__).parent / "data" / "espeak_crashers.txt"
DATA_DIR = str(bridge_path().parent / ESPEAK_DATA_DIR_NAME)
SENTENCES = [
    "Hello there, this is a test.",
    "The U.S.A. and the U.K., e.g. at 9:05 p.m.; ok?",
    "Wait... what?! No way — it's 3.5 km away.",
    "Dr. Smith lives on St. James St. in Washington D.C.",
]


def crashers() -> list[str]:
    """Inputs that crashed espeak-ng (kept from reports and the fuzz campaign), one per line,
    written as Python string expressions (``'a.' * 100``)."""
    lines = CRASHERS.read_text(encoding="utf-8").splitlines()
    return [eval(line, {"__builtins__": {}}) for line in lines if line and line[0] != "#"]


@pytest.fixture
def bridge() -> IsolatedEspeak:
    b = IsolatedEspeak(call_timeout_s=10)
    b.initialize(DATA_DIR)
    b.set_voice("en-us")
    yield b
    b.close()


# -- defuse --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [*SENTENCES, "I.B.M., N.A.S.A. and A.T.&T.", "a.b.c.d.e.f.g.h. ok", "你好。a.b.", ""],
)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert defuse(text) == text


@pytest.mark.parametrize(
    "text",
    ["a." * 100, "x.y." * 50, ", ".join(["a.a.a.a."] * 25), " ".join(["A. B."] * 40), "Ж." * 60],
)
def test_long_dotted_runs_keep_at_most_eight_dotted_letters(text: str) -> None:
    out = defuse(text)
    assert out != text
    assert out.count(".") == MAX_DOTTED_LETTERS
    # the letters are all still there, in order
    letters = [c for c in text if c.isalpha()]
    assert [c for c in out if c.isalpha()] == letters


def test_a_run_after_a_word_is_cut_from_its_first_dotted_letter() -> None:
    out = defuse("see " + "a." * 20 + " then")
    assert out.startswith("see " + "a." * MAX_DOTTED_LETTERS + " a ")
    assert out.endswith(" then")


# -- the isolated bridge -------------------------------------------------------------------
def test_same_phonemes_as_the_native_bridge(bridge: IsolatedEspeak) -> None:
    native = Worker(load_bridge())  # in this process: these texts are safe
    assert native.handle(["init", DATA_DIR]) == ["ok", None]
    for text in SENTENCES:
        ok, clauses = native.handle(["phonemes", "en-us", text])
        assert ok == "ok"
        assert bridge.get_phonemes(text) == [tuple(c) for c in clauses]


@pytest.mark.parametrize("text", crashers())
def test_known_crashers_are_spoken(bridge: IsolatedEspeak, text: str) -> None:
    assert bridge.get_phonemes(text)
    assert bridge.crashes == 0


def test_a_crash_costs_one_call() -> None:
    crashing = IsolatedEspeak(argv=ARGV)
    crashing.initialize(DATA_DIR)
    crashing.set_voice("en-us")
    before = crashing.get_phonemes("Before.")
    first_pid = crashing.pid
    with pytest.raises(EspeakCrashed, match="SIGSEGV"):
        crashing.get_phonemes(f"say {CRASH_WORD}")
    assert crashing.crashes == 1 and crashing.pid is None
    assert crashing.get_phonemes("Before.") == before  # a fresh child, same voice
    assert crashing.pid != first_pid
    assert crashing.starts == 2
    crashing.close()


def test_espeak_ng_crashes_on_the_reported_input_without_defuse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """espeak-ng's own SIGSEGV (9 runs in 10 on this input), caught. Whether it crashes
    depends on the child's memory layout, and a child that survived the input once tends to
    survive it again (a clean-clone run saw 5 tries in one child pass), so each try is a new
    child: 8 fresh children that all survive would be about 1e-8."""
    monkeypatch.setattr(espeak, "defuse", lambda text: text)
    for _ in range(8):
        bridge = IsolatedEspeak(call_timeout_s=10)
        bridge.initialize(DATA_DIR)
        bridge.set_voice("en-us")
        try:
            try:
                bridge.get_phonemes("a." * 100)
            except EspeakCrashed as exc:
                assert "SIGSEGV" in str(exc) or "SIGABRT" in str(exc)
                assert bridge.crashes == 1
                assert bridge.get_phonemes("Still here.")  # the next call restarts the child
                return
        finally:
            bridge.close()
    pytest.fail("espeak-ng survived the reported input in 8 fresh children")


def test_a_hang_is_cut_at_the_timeout() -> None:
    hung = IsolatedEspeak(
        call_timeout_s=0.5, argv=[sys.executable, "-c", "import time; time.sleep(60)"]
    )
    hung.initialize(DATA_DIR)
    hung.set_voice("en-us")
    with pytest.raises(EspeakCrashed, match="longer than 0.5 s"):
        hung.get_phonemes("hello")
    assert hung.pid is None  # killed, not left behind
    hung.close()


def test_worker_errors_are_reported_not_fatal(bridge: IsolatedEspeak) -> None:
    bridge.set_voice("no-such-voice")
    with pytest.raises(RuntimeError, match="espeak-ng worker"):
        bridge.get_phonemes("hello")
    bridge.set_voice("en-us")
    assert bridge.get_phonemes("hello")
    assert bridge.crashes == 0


def test_install_puts_it_where_piper_looks() -> None:
    installed = espeak.install()
    assert espeak.install() is installed
    from piper import espeakbridge
    from piper.phonemize_espeak import EspeakPhonemizer

    assert espeakbridge is installed
    assert EspeakPhonemizer().phonemize("en-us", "a." * 100)  # piper's own code, no crash
