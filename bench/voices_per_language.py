"""A voice per language, judged on the audio: mixed English/Mandarin lines through a running
server, each segment's sound checked against the voice its ``segment`` event names.

    .venv/bin/python bench/voices_per_language.py --url ws://127.0.0.1:8000/v1/stream \\
        [--voices en=af_heart,zh=zf_xiaoxiao] [--out FILE]

Each mixed line (written for this bench, chat-like: clause-level switches and a few words of one
language inside the other) is sent as one ``start`` with ``voices`` (PCM 16 kHz, ``cache:
false``) and its audio cut at the ``start_ms`` of its ``segment`` events. Two judges, neither
part of the server:

* **speaker**: the d-vector encoder of ``lab.dvector`` (not the GE2E the model is conditioned
  on). Each voice's reference is the mean d-vector of single-voice renders of six sentences,
  three English and three Mandarin (a stock English voice reads the Mandarin ones with the
  model's cross-lingual rendering), so that language weighs the same in both references; a
  segment is assigned to the voice whose reference is nearer. Chance is 50 %. The judge's own
  accuracy is checked first on held-out single-voice renders (each voice, both languages,
  sentences not in the references).
* **language**: Whisper base's language detection (faster-whisper, ``lab.asr``'s weights) on
  the segment's audio, against the segment's ``language``.

The same lines sent with the English voice alone (no ``voices``: what a bridge with one voice
did) are the baseline: their Mandarin is read by the English voice, which the speaker judge
then scores on segments of one language (the line's segments split by language afterwards is
not possible there: the server did not cut them), so the baseline is scored per line:
Whisper's language and the d-vector of each whole line.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]  # emostream, and lab (the judges)

from lab.asr import assemble_whisper_base
from lab.dvector import DVectorJudge

RATE = 16000
MIXED = [
    "Hello everyone, 大家好！Welcome back to the stream.",
    "主播你好, can you play that song again?",
    "I just got home from work, 今天真的好累啊。",
    "这个游戏太难了, but I'm not giving up!",
    "Good morning! 早上好，今天天气不错。",
    "谢谢大家的礼物, thank you so much for the support!",
    "I think 这个主播 is really funny.",
    "我们下一局再来, let's win this one.",
    "That was amazing! 太厉害了，我都看呆了。",
    "晚安各位, see you tomorrow night.",
    "这个 bug 太离谱了, I can't believe it happened again.",
    "Can you say 你好朋友 in the next game?",
]
REFERENCE = {
    "en": ["The weather is lovely today, let's go for a walk in the park.",
           "Thanks for watching, and don't forget to subscribe to the channel.",
           "I will see all of you again next week at the same time."],
    "zh": ["今天的天气很好，我们一起去公园散步吧。",
           "谢谢大家的观看，记得点赞和关注频道。",
           "我们下周同一时间再见，大家晚安。"],
}  # fmt: skip
HELD_OUT = {
    "en": ["My cat knocked the coffee off the table this morning.",
           "Do you want to play another round after dinner?"],
    "zh": ["我的猫今天早上把咖啡打翻了。", "晚饭以后还想再玩一局吗？"],
}  # fmt: skip


async def speak(url: str, text: str, **start: Any) -> tuple[list[dict[str, Any]], bytes]:
    import websockets

    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "start", "cache": False, **start,
                                  "format": {"codec": "pcm_s16le", "sample_rate": RATE}}))  # fmt: skip
        await ws.send(json.dumps({"type": "text", "text": text}))
        await ws.send(json.dumps({"type": "end"}))
        events: list[dict[str, Any]] = []
        audio = bytearray()
        async with asyncio.timeout(120):
            while True:
                msg = await ws.recv()
                if isinstance(msg, bytes):
                    audio += msg
                    continue
                events.append(json.loads(msg))
                if events[-1]["type"] == "error":
                    raise RuntimeError(f"server error: {events[-1]}")
                if events[-1]["type"] == "done":
                    return events, bytes(audio)


def floats(pcm: bytes) -> npt.NDArray[np.float32]:
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


def segment_audio(events: list[dict[str, Any]], pcm: bytes) -> list[tuple[dict[str, Any], Any]]:
    segments = [e for e in events if e["type"] == "segment"]
    starts = [round(e["start_ms"] * RATE / 1000) * 2 for e in segments] + [len(pcm)]
    return [(e, floats(pcm[a:b])) for e, a, b in zip(segments, starts, starts[1:], strict=False)]


class Judges:
    def __init__(self, threads: int) -> None:
        from faster_whisper import WhisperModel

        self.dvector = DVectorJudge(threads=threads)
        self.whisper = WhisperModel(str(assemble_whisper_base()), device="cpu",
                                    compute_type="int8", cpu_threads=threads)  # fmt: skip

    def language(self, audio: npt.NDArray[np.float32]) -> tuple[str, float, float]:
        """Whisper's language, its probability, and P(en) / (P(en) + P(zh))."""
        lang, prob, ranked = self.whisper.detect_language(audio=np.ascontiguousarray(audio))
        probs = dict(ranked)
        en, zh = probs.get("en", 0.0), probs.get("zh", 0.0)
        return lang, float(prob), float(en / max(en + zh, 1e-9))


def nearest(judge: DVectorJudge, refs: dict[str, npt.NDArray[np.float32]],
            audio: npt.NDArray[np.float32]) -> tuple[str, dict[str, float]]:  # fmt: skip
    emb = judge.embed(audio)
    sims = {voice: judge.similarity(emb, ref) for voice, ref in refs.items()}
    return max(sims, key=lambda v: sims[v]), sims


class References:
    """Each voice's reference d-vector (module docs), made once."""

    def __init__(self, url: str, judge: DVectorJudge) -> None:
        self.url, self.judge = url, judge
        self.refs: dict[str, npt.NDArray[np.float32]] = {}

    async def of(self, voice: str) -> npt.NDArray[np.float32]:
        if voice not in self.refs:
            embs = []
            for text in REFERENCE["en"] + REFERENCE["zh"]:
                _, pcm = await speak(self.url, text, voice=voice)
                embs.append(self.judge.embed(floats(pcm)))
            mean = np.mean(embs, axis=0)
            self.refs[voice] = (mean / np.linalg.norm(mean)).astype(np.float32)
        return self.refs[voice]


async def measure(a: argparse.Namespace, spec: str, judges: Judges, refs: References
                  ) -> dict[str, Any]:  # fmt: skip
    asked = dict(pair.split("=", 1) for pair in spec.split(","))
    probe, _ = await speak(a.url, "Hi, 你好。", voices=asked)
    voices: dict[str, str] = probe[0]["voices"]  # as the server filled them in
    mine = {v: await refs.of(v) for v in dict.fromkeys(voices.values())}
    sanity = []
    for voice in mine:
        for lang, texts in HELD_OUT.items():
            for text in texts:
                _, pcm = await speak(a.url, text, voice=voice)
                got, sims = nearest(judges.dvector, mine, floats(pcm))
                sanity.append({"voice": voice, "language": lang, "text": text, "judged": got,
                               "similarity": {k: round(v, 4) for k, v in sims.items()}})  # fmt: skip
    rows = []
    first_audio: dict[str, list[float]] = {"voices": [], "one_voice": []}
    baseline = []
    for text in MIXED:
        events, pcm = await speak(a.url, text, voices=asked)
        first_audio["voices"].append(events[-1]["first_audio_ms"])
        for event, audio in segment_audio(events, pcm):
            got, sims = nearest(judges.dvector, mine, audio)
            lang, prob, p_en = judges.language(audio)
            rows.append({
                "line": text, "segment": event["text"], "voice": event["voice"],
                "language": event["language"], "seconds": round(len(audio) / RATE, 2),
                "judged_voice": got, "similarity": {k: round(v, 4) for k, v in sims.items()},
                "whisper_language": lang, "whisper_probability": round(prob, 3),
                "p_en_vs_zh": round(p_en, 3),
            })  # fmt: skip
        one, pcm1 = await speak(a.url, text, voice=voices["en"])
        first_audio["one_voice"].append(one[-1]["first_audio_ms"])
        got, sims = nearest(judges.dvector, mine, floats(pcm1))
        baseline.append({"line": text, "judged_voice": got,
                         "similarity": {k: round(v, 4) for k, v in sims.items()},
                         "segments": sum(e["type"] == "segment" for e in one)})  # fmt: skip
    return summarise(asked, voices, rows, sanity, baseline, first_audio)


def summarise(asked: dict[str, str], voices: dict[str, str], rows: list[dict[str, Any]],
              sanity: list[dict[str, Any]], baseline: list[dict[str, Any]],
              first_audio: dict[str, list[float]]) -> dict[str, Any]:  # fmt: skip
    def share(items: list[dict[str, Any]], ok: Any) -> dict[str, Any]:
        hits = sum(1 for r in items if ok(r))
        return {"n": len(items), "hits": hits, "share": round(hits / max(len(items), 1), 3)}

    def margin(r: dict[str, Any]) -> float:
        other = [v for k, v in r["similarity"].items() if k != r["voice"]]
        return r["similarity"][r["voice"]] - max(other) if other else 0.0

    long = [r for r in rows if r["seconds"] >= 1.0]
    en_voice = voices["en"]
    return {
        "voices_asked": asked,
        "voices": voices,
        "lines": len(MIXED),
        "segments": len(rows),
        "segments_per_language": {
            lang: sum(r["language"] == lang for r in rows) for lang in voices
        },
        "judge_sanity_single_voice": share(sanity, lambda r: r["judged"] == r["voice"]),
        "speaker_matches_event": share(rows, lambda r: r["judged_voice"] == r["voice"]),
        "speaker_matches_event_1s_or_more": share(long, lambda r: r["judged_voice"] == r["voice"]),
        "speaker_margin_median": round(statistics.median(margin(r) for r in rows), 4),
        "whisper_language_matches_event": share(
            rows, lambda r: r["whisper_language"] == r["language"]
        ),
        "whisper_language_matches_event_1s_or_more": share(
            long, lambda r: r["whisper_language"] == r["language"]
        ),
        "whisper_en_vs_zh_matches_event": share(
            rows, lambda r: (r["p_en_vs_zh"] >= 0.5) == (r["language"] == "en")
        ),
        "baseline_one_voice": {
            "voice": en_voice,
            "lines_judged_as_it": share(baseline, lambda r: r["judged_voice"] == en_voice),
            "what": "the same lines with voice alone (no voices): every line, Mandarin included, "
            "in the English voice",
        },
        "first_audio_ms_p50": {k: statistics.median(v) for k, v in first_audio.items()},
        "rows": rows,
        "sanity_rows": sanity,
        "baseline_rows": baseline,
    }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", default="ws://127.0.0.1:8000/v1/stream")
    p.add_argument("--voices", action="append", default=None,
                   help="LANG=VOICE,... (repeat for more runs; a language left out is filled in "
                   "by the server). Default: en=af_heart,zh=zf_xiaoxiao; en=am_michael,zh=zm_yunxi; "
                   "en=af_heart (Mandarin by timbre match)")  # fmt: skip
    p.add_argument("--threads", type=int, default=1, help="judges' CPU threads")
    p.add_argument("--server-commit", default="", help="what the server ran (for the record)")
    p.add_argument("--machine", default="2-core CPU (shared)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    specs = a.voices or ["en=af_heart,zh=zf_xiaoxiao", "en=am_michael,zh=zm_yunxi", "en=af_heart"]
    t0 = time.monotonic()
    load_before = os.getloadavg()
    judges = Judges(a.threads)
    refs = References(a.url, judges.dvector)
    runs = [asyncio.run(measure(a, spec, judges, refs)) for spec in specs]
    names = sorted(refs.refs)
    result = {
        "what": "a voice per language: each segment's audio judged against the voice its "
        "segment event names (d-vector, references in both languages) and its language "
        "(Whisper base language detection); bench/voices_per_language.py",
        "date": datetime.date.today().isoformat(),
        "url": a.url,
        "server_commit": a.server_commit,
        "machine": a.machine,
        "cpu": cpu_model(),
        "nproc": os.cpu_count(),
        "loadavg_before_after": [list(load_before), list(os.getloadavg())],
        "reference_similarity": {
            x: {y: round(float(refs.refs[x] @ refs.refs[y]), 4) for y in names} for x in names
        },
        "runs": runs,
        "elapsed_s": round(time.monotonic() - t0, 1),
    }
    text = json.dumps(result, ensure_ascii=False, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n", encoding="utf-8")
    brief = {**result, "runs": [{k: v for k, v in r.items() if not k.endswith("rows")}
                                for r in runs]}  # fmt: skip
    print(json.dumps(brief, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
