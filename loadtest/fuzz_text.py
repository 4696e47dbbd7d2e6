"""Fuzz campaign on the text front end: random texts through everything the server does to
text before a model sees it, for every voice family, with espeak-ng crash-isolated.

    python -m loadtest.fuzz_text --n 1000000 --workers 2 --out bench/results/FILE.json

Each input goes through :class:`FrontEnd`: normalisation and sentence splitting (whole, and
fed in random pieces as a token stream is), then per segment the EmoStream voices' G2P
(English by espeak-ng, Mandarin by the project's front end) and the embedded Piper voice's
phonemiser, and on every ``--align-every``-th input both families' word alignment (word
timestamps). espeak-ng runs in its child
process (:mod:`emostream.text.espeak`), so a native crash is counted and kept, not fatal;
any Python exception is a finding too. Inputs come from :func:`random_text` (seeded: input
``i`` of seed ``s`` is the same on every machine), a generator of chat-like text with the
shapes that have broken text front ends: dotted letters, numbers, times, handles, mixed
scripts, emoji, combining marks, control characters, long runs, raw random code points.
``tests/text/test_fuzz_text.py`` runs a slice of it under hypothesis in CI.

Findings (crashes, exceptions, inputs slower than ``--slow-s``) go to the JSON report with
their seeds; a crasher is kept as a regression case in ``tests/text/data/espeak_crashers.txt``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

EN_WORDS = (
    "hello", "there", "thanks", "for", "the", "follow", "welcome", "to", "stream", "everyone",
    "lol", "ok", "sure", "wait", "what", "is", "this", "a", "test", "can", "you", "say", "my",
    "name", "please", "read", "it", "again", "I", "love", "it", "so", "much", "no", "way",
    "Dr", "St", "Mr", "Mrs", "vs", "etc", "approx", "Jan", "Feb", "km", "kg", "mph", "USD",
    "EUR", "GPT", "AI", "ASAP", "FAQ", "brb", "gg", "wp", "omg",
)  # fmt: skip
ZH_COMMON = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后自以会家可下而过天去能对小多然于心学么之都好看起发当没成只如事把还用第样道想作种开美总从无情己面最女但现前些所同日手又行意动"
ZH_POLY = "行长重还乐着了得地的便调传觉好谁"
PUNCT = list(".,!?;:…—-–'\"()[]{}<>/\\|@#$%^&*_+=~`。，！？；：、（）《》「」『』“”‘’·")
EMOJI = ["😀", "❤️", "👍🏽", "🇨🇳", "👨‍👩‍👧", "🎉", "✨", "🔥", "™", "©", "°C", "½", "²", "∞"]
ODD = ["\u200b", "\u200d", "\ufeff", "\u202e", "\u00ad", "\x00", "\x07", "\t", "\n", "\r", "\u3000"]
COMBINING = ["\u0301", "\u0308", "\u0327", "\u20dd", "\u1ab0", "\u1dc0", "\ufe20"]
SEPS = ["", " ", "  ", ", ", "; ", "\n", " - ", "...", "!", "? ", "，", "。"]


def _dotted(r: random.Random) -> str:
    letters = r.choice(["abcxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "éüñøå", "жзшщЖЗ", "αβγ"])
    n = r.choice([1, 2, 3, 5, 8, 9, 12, 20, 40, 80, 150])
    sep = r.choice(["", "", " ", ", ", "; ", " . ", "-", "'", "\n"])
    tail = r.choice(["", "'s", ".", ",", " ok"])
    return sep.join(r.choice(letters) + "." for _ in range(n)) + tail


def _number(r: random.Random) -> str:
    forms = [
        lambda: str(r.randint(0, 10 ** r.randint(1, 30))),
        lambda: f"{r.randint(0, 23)}:{r.randint(0, 59):02d}",
        lambda: f"{r.uniform(0, 1e4):.{r.randint(0, 6)}f}",
        lambda: f"${r.randint(1, 10**9):,}",
        lambda: f"{r.randint(0, 100)}%",
        lambda: f"{r.randint(1900, 2100)}-{r.randint(1, 12):02d}-{r.randint(1, 31):02d}",
        lambda: f"{r.randint(1, 9)}e{r.randint(-30, 300)}",
        lambda: "9" * r.randint(50, 400),
        lambda: ".".join(str(r.randint(0, 255)) for _ in range(r.randint(2, 40))),
        lambda: f"{r.randint(1, 99)}.{r.randint(0, 9)}折",
        lambda: f"满{r.randint(1, 999)}减{r.randint(1, 99)}",
        lambda: f"{r.randint(1, 12)}月{r.randint(1, 31)}日",
        lambda: "-" * r.randint(1, 3) + str(r.randint(0, 999)),
    ]
    return r.choice(forms)()


def _english(r: random.Random) -> str:
    words = [r.choice(EN_WORDS) for _ in range(r.randint(1, 12))]
    if r.random() < 0.2:
        words.append(
            "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(15, 500)))
        )
    if r.random() < 0.3:
        words = [w.upper() if r.random() < 0.5 else w for w in words]
    return " ".join(words) + r.choice(["", ".", "!", "?", "...", ",", "!!!???"])


def _mandarin(r: random.Random) -> str:
    pool = ZH_COMMON + ZH_POLY
    out = "".join(r.choice(pool) for _ in range(r.randint(1, 40)))
    if r.random() < 0.2:
        out += "".join(chr(r.randint(0x3400, 0x9FFF)) for _ in range(r.randint(1, 10)))
    return out + r.choice(["", "。", "，", "！", "？", "……", "吧", "呢"])


def _handle(r: random.Random) -> str:
    name = "".join(
        r.choice("abcdefghijklmnopqrstuvwxyz_XY0123456789") for _ in range(r.randint(1, 40))
    )
    return (
        r.choice(["@", "#", "@@", "https://", "www.", ""])
        + name
        + r.choice(["", ".com", "的", "!"])
    )


def _raw(r: random.Random) -> str:
    cps = []
    for _ in range(r.randint(1, 60)):
        cp = r.choice([r.randint(0x20, 0x7E), r.randint(0xA0, 0x2FFF), r.randint(0x3000, 0xFFFD),
                       r.randint(0x10000, 0x10FFFF), r.randint(0, 0x1F)])  # fmt: skip
        if 0xD800 <= cp <= 0xDFFF:
            cp = 0x20
        cps.append(chr(cp))
    return "".join(cps)


PIECES = (
    (_english, 30), (_mandarin, 25), (_number, 15), (_dotted, 10), (_handle, 6),
    (lambda r: r.choice(EMOJI), 4), (lambda r: "".join(r.choices(PUNCT, k=r.randint(1, 30))), 5),
    (lambda r: r.choice(ODD) * r.randint(1, 5), 2), (_raw, 3),
    (lambda r: r.choice("aeiouxyz") + "".join(r.choices(COMBINING, k=r.randint(1, 20))), 2),
)  # fmt: skip


PROFILES = {
    # a chat line: one to three pieces, at most 400 characters
    "chat": ([1, 1, 1, 2, 2, 3], 0.0, 400),
    # long texts: up to 30 pieces, some repeated up to 20 times, up to 6,000 characters
    "long": ([1, 2, 3, 5, 8, 13, 30], 0.05, 6000),
}


def random_text(r: random.Random, profile: str = "chat") -> str:
    """One input: pieces of the kinds above with random separators, sized by ``profile``
    (:data:`PROFILES`)."""
    counts, repeat, limit = PROFILES[profile]
    makers, weights = zip(*PIECES, strict=True)
    parts = [r.choices(makers, weights)[0](r) for _ in range(r.choice(counts))]
    text = "".join(p + r.choice(SEPS) for p in parts)
    if r.random() < repeat:
        text = text * r.randint(2, 20)
    return text[:limit]


def input_for(seed: int, i: int, profile: str = "chat") -> str:
    return random_text(random.Random(f"{profile}:{seed}:{i}"), profile)


@dataclass
class FrontEnd:
    """Everything the server does to text before a model runs, for both voice families."""

    g2p: Any
    joe: Any
    pieces: random.Random = field(default_factory=lambda: random.Random(0))

    @classmethod
    def load(cls) -> FrontEnd:
        from emostream.text.phonemes import G2P
        from emostream.voices.piper_voice import PiperVoice

        return cls(g2p=G2P(), joe=PiperVoice.load_default(threads=1))

    @property
    def espeak(self) -> Any:
        from emostream.text import espeak

        return espeak.install()

    def __call__(self, text: str, *, align: bool = True) -> int:
        """Run ``text`` through; returns the number of segments. ``align``: also the word
        alignment of word timestamps (pure Python: difflib; the campaign's costliest step)."""
        from emostream.text.frontend import TextFrontEnd
        from emostream.text.normalize import normalize
        from emostream.text.splitter import Segmenter
        from emostream.voices.acoustic import _spoken
        from emostream.voices.words import safe_align

        segments = TextFrontEnd.split(text)
        seg = Segmenter()  # as a token stream: the same text in random pieces
        streamed: list[str] = []
        i = 0
        while i < len(text):
            step = self.pieces.randint(1, 12)
            streamed += seg.feed(normalize(text[i : i + step]))
            i += step
        streamed += seg.flush()
        g2p = self.g2p
        for s in segments:
            seq = g2p(s)
            ids, phonemes = self.joe.phoneme_ids(s)
            if align:
                safe_align(s, seq.symbols, lambda w: _spoken(g2p, w))  # as AcousticVoice does
                safe_align(s, self.joe._id_labels(ids, phonemes), self.joe._spoken)  # as joe
        return len(segments)


def _work(args: tuple[str, int, int, int, float, int]) -> dict[str, Any]:
    profile, seed, start, stop, slow_s, align_every = args
    import logging

    from emostream.text.frontend import EspeakCrashed

    logging.disable(logging.WARNING)  # findings are counted here, not logged per input
    fe = FrontEnd.load()
    out: dict[str, Any] = {"n": 0, "segments": 0, "crashes": [], "errors": [], "slow": []}
    times: list[float] = []
    for i in range(start, stop):
        text = input_for(seed, i, profile)
        t0 = time.perf_counter()
        try:
            out["segments"] += fe(text, align=i % align_every == 0)
        except EspeakCrashed as exc:
            out["crashes"].append({"seed": seed, "i": i, "text": text[:2000], "error": str(exc)})
        except Exception as exc:  # noqa: BLE001 - every Python error is a finding
            out["errors"].append({"seed": seed, "i": i, "text": text[:2000], "error": repr(exc),
                                  "where": traceback.format_exc(limit=-3)})  # fmt: skip
        dt = time.perf_counter() - t0
        times.append(dt)
        if dt > slow_s:
            out["slow"].append({"seed": seed, "i": i, "chars": len(text), "s": round(dt, 3)})
        out["n"] += 1
    times.sort()
    out["ms_p50"] = 1000 * times[len(times) // 2] if times else 0.0
    out["ms_p99"] = 1000 * times[int(len(times) * 0.99)] if times else 0.0
    out["ms_max"] = 1000 * times[-1] if times else 0.0
    out["espeak_crashes_counted"] = fe.espeak.crashes
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10000, help="inputs in all (default 10,000)")
    p.add_argument("--seed", type=int, default=0, help="input i of seed s is fixed")
    p.add_argument("--profile", choices=sorted(PROFILES), default="chat", help="input sizes")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes")
    p.add_argument("--chunk", type=int, default=5000, help="inputs per task")
    p.add_argument("--slow-s", type=float, default=2.0, help="report inputs slower than this")
    p.add_argument(
        "--align-every", type=int, default=10, help="word alignment on every Nth input (1: all)"
    )
    p.add_argument("--out", default="", help="write the JSON report here")
    a = p.parse_args(argv)
    tasks = [
        (a.profile, a.seed, s, min(s + a.chunk, a.n), a.slow_s, a.align_every)
        for s in range(0, a.n, a.chunk)
    ]
    t0 = time.monotonic()
    total: dict[str, Any] = {"n": 0, "segments": 0, "crashes": [], "errors": [], "slow": [],
                             "espeak_crashes_counted": 0}  # fmt: skip
    p50s: list[float] = []
    p99s: list[float] = []
    maxes: list[float] = []

    def report() -> dict[str, Any]:
        wall = time.monotonic() - t0
        return {
            "what": "text front-end fuzz campaign (loadtest.fuzz_text)",
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": "python -m loadtest.fuzz_text " + " ".join(argv or sys.argv[1:]),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "seed": a.seed,
            "profile": a.profile,
            "word_alignment_every": a.align_every,
            "inputs": total["n"],
            "complete": total["n"] == a.n,
            "segments": total["segments"],
            "wall_s": round(wall, 1),
            "inputs_per_s": round(total["n"] / wall, 1) if wall else 0.0,
            "per_input_ms": {"median_of_task_p50s": round(sorted(p50s)[len(p50s) // 2], 3),
                             "max_of_task_p99s": round(max(p99s), 3), "max": round(max(maxes), 1)},
            "espeak_crashes": len(total["crashes"]),
            "python_errors": len(total["errors"]),
            "slow_inputs": len(total["slow"]),
            "findings": {k: total[k][:50] for k in ("crashes", "errors", "slow")},
        }  # fmt: skip

    def write(rep: dict[str, Any]) -> str:
        text = json.dumps(rep, ensure_ascii=False, indent=2)
        if a.out:  # after every task: a run cut short still leaves its figures
            with open(a.out, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        return text

    with multiprocessing.get_context("spawn").Pool(a.workers) as pool:
        for done, part in enumerate(pool.imap_unordered(_work, tasks), 1):
            for k in ("n", "segments", "espeak_crashes_counted"):
                total[k] += part[k]
            for k in ("crashes", "errors", "slow"):
                total[k] += part[k]
            p50s.append(part["ms_p50"])
            p99s.append(part["ms_p99"])
            maxes.append(part["ms_max"])
            print(f"{total['n']:>9,} inputs  {time.monotonic() - t0:7.0f} s  crashes "
                  f"{len(total['crashes'])}  errors {len(total['errors'])}  ({done}/{len(tasks)})",
                  flush=True)  # fmt: skip
            write(report())
    print(write(report())[:4000])
    return 0 if not total["crashes"] and not total["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
