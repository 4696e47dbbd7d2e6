"""First audio of an LLM's reply streamed word by word, and what the cuts cost in quality.

    .venv/bin/python bench/word_paced.py --url ws://127.0.0.1:8000/v1/stream \\
        [--interval-ms 50] [--repeats 1] [--start '{"latency":"natural"}'] \\
        [--quality] [-o bench/results/DATE-cpu2-word-paced-first-audio.json]

Sixteen held-out replies (written for this benchmark, in no test set or corpus: eight English,
eight Mandarin, an assistant's answer each, with no punctuation in the first sentence) are sent
over ``/v1/stream`` as a chat model streams them: English one word (with its trailing space)
every ``--interval-ms``, Mandarin two characters, then ``end``. First audio is timed from the
first token sent to the first binary frame (client clock), p50/p95 per language. The whole
reply's audio is kept (PCM 24 kHz), and a player is simulated that starts at the first frame
with ``--prebuffer-ms`` buffered and plays in real time: every frame that comes after the
player needed it is an underrun (the stall it caused, in ms).

The same reply is also sent whole (one ``text``, then ``end``), and with ``--quality`` both
renderings are transcribed by Whisper base (``lab.asr``; English WER after Whisper's normaliser,
Mandarin CER) and rated by DNSMOS P.835 (``lab.acoustic_quality.dnsmos_scores``): the cost of
speaking the reply in more pieces. Every start asks for ``cache: false``; the server's default
voice unless ``--voice`` / ``--zh-voice``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

RATE = 24000
FRAME_MS = 20.0

ENGLISH = [
    (
        "I think the easiest way to fix this is to restart your router and wait about a minute "
        "before trying again. If the light still blinks red, the problem is probably with your "
        "provider."
    ),
    (
        "Most people find that drinking a glass of water right after waking up helps them feel more "
        "alert in the morning. Coffee can wait until later, when your body has settled."
    ),
    (
        "The museum opens at nine on weekdays but on weekends the doors open an hour later so plan "
        "your visit around that. Tickets are cheaper if you book them online."
    ),
    (
        "You can save a lot of time by preparing your lunches on Sunday evening and keeping them in "
        "the fridge for the week. Soups and grain bowls keep especially well."
    ),
    (
        "My best guess is that the package was delayed at the sorting center because of the holiday "
        "rush this week. It should arrive within two or three days."
    ),
    (
        "To change your password open the settings page and look for the security section near the "
        "bottom of the screen. From there, you can pick a new one."
    ),
    (
        "Learning a new language gets much easier when you practice a little bit every day instead "
        "of cramming once a week. Even ten minutes of listening makes a difference."
    ),
    (
        "The recipe works best with ripe bananas that have plenty of brown spots on the peel because "
        "they are sweeter. Bake it for about fifty minutes, then let it cool."
    ),
]
MANDARIN = [
    (
        "我觉得最简单的办法是先把路由器重启一下然后等一分钟再试一次。如果指示灯还是红色的，"
        "那可能是运营商那边的问题。"
    ),
    "明天早上的会议改到十点开始了因为经理的航班晚点了。请大家提前看一下上周的报告。",
    "这家餐厅的招牌菜是红烧肉和清蒸鱼很多客人都是专门为了这两道菜来的。周末人比较多，最好提前订位。",
    "如果你想提高睡眠质量可以试着每天在同一个时间上床睡觉并且睡前一小时不看手机。坚持两周，效果会很明显。",
    "你的快递现在已经到了本地的分拣中心预计明天下午就能送到你家。到时候快递员会先给你打电话。",
    "学习编程最重要的是多动手写代码而不是只看教程和视频。遇到问题的时候，先试着自己查资料。",
    "这个周末的天气预报说会有大雨所以我们的野餐计划可能要推迟到下周了。我会在群里通知大家新的时间。",
    "要修改你的账户密码请先打开设置页面然后找到安全选项点击修改密码按钮。新密码需要包含数字和字母。",
]


def tokens(text: str, lang: str) -> list[str]:
    """As a chat model streams them: English a word and its trailing space, Mandarin two
    characters."""
    if lang == "en":
        return re.findall(r"\S+\s*", text)
    return [text[i : i + 2] for i in range(0, len(text), 2)]


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def underruns(arrivals: list[float], first: float, prebuffer_ms: float) -> tuple[int, float]:
    """A player that starts ``prebuffer_ms`` after the first frame and plays 20 ms frames in
    real time, waiting (a stall) whenever the next frame is not there yet: the number of stalls
    and their total length (ms). ``arrivals``: each frame's arrival (s, client clock)."""
    clock = first + prebuffer_ms / 1000.0  # when the next frame is due
    count, stalled = 0, 0.0
    for t in arrivals:
        if t > clock + 1e-4:
            count += 1
            stalled += t - clock
            clock = t
        clock += FRAME_MS / 1000.0
    return count, 1000.0 * stalled


async def speak(
    url: str, start: dict[str, Any], parts: list[str], interval_s: float
) -> dict[str, Any]:
    """One utterance on a fresh socket: ``parts`` sent ``interval_s`` apart (one part: whole)."""
    import websockets

    async with websockets.connect(url, compression=None, max_size=None) as ws:
        await ws.send(json.dumps(start))
        started = json.loads(await ws.recv())
        if started.get("type") != "started":
            raise RuntimeError(f"server answered {started}")
        arrivals: list[float] = []
        pcm: list[bytes] = []
        segments: list[str] = []
        done: dict[str, Any] = {}
        t0 = time.perf_counter()

        async def send() -> None:
            for i, part in enumerate(parts):
                if i:
                    await asyncio.sleep(max(0.0, t0 + i * interval_s - time.perf_counter()))
                await ws.send(json.dumps({"type": "text", "text": part}))
            await ws.send(json.dumps({"type": "end"}))

        sender = asyncio.create_task(send())
        while True:
            msg = await ws.recv()
            if isinstance(msg, bytes):
                arrivals.append(time.perf_counter())
                pcm.append(msg)
                continue
            event = json.loads(msg)
            if event["type"] == "segment":
                segments.append(event["text"])
            elif event["type"] == "error":
                raise RuntimeError(f"server error: {event}")
            elif event["type"] == "done":
                done = event
                break
        await sender
    first = arrivals[0] if arrivals else float("nan")
    return {
        "first_audio_ms": round(1000.0 * (first - t0), 1),
        "arrivals": arrivals,
        "first": first,
        "segments": segments,
        "audio_ms": done.get("audio_ms"),
        "server_first_audio_ms": done.get("first_audio_ms"),
        "pcm": b"".join(pcm),
    }


def audio_of(pcm: bytes) -> npt.NDArray[np.float32]:
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 0.5), 1),
        "p95": round(percentile(values, 0.95), 1),
        "min": round(min(values), 1),
        "max": round(max(values), 1),
        "n": len(values),
    }


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


async def measure(a: argparse.Namespace) -> dict[str, Any]:
    extra = json.loads(a.start) if a.start else {}
    rows: list[dict[str, Any]] = []
    for lang, texts, voice in (("en", ENGLISH, a.voice), ("zh", MANDARIN, a.zh_voice)):
        if lang not in a.languages:
            continue
        start: dict[str, Any] = {
            "type": "start",
            "cache": False,
            "format": {"codec": "pcm_s16le", "sample_rate": RATE},
            **extra,
        }
        if voice:
            start["voice"] = voice
        for text in texts[: a.n]:
            row: dict[str, Any] = {"lang": lang, "text": text, "runs": []}
            for _ in range(a.repeats):
                paced = await speak(a.url, start, tokens(text, lang), a.interval_ms / 1000.0)
                count, stalled = underruns(paced["arrivals"], paced["first"], a.prebuffer_ms)
                row["runs"].append(
                    {
                        "first_audio_ms": paced["first_audio_ms"],
                        "server_first_audio_ms": paced["server_first_audio_ms"],
                        "underruns": count,
                        "stall_ms": round(stalled, 1),
                        "segments": paced["segments"],
                        "audio_ms": paced["audio_ms"],
                    }
                )
            row["paced_pcm"] = paced["pcm"]
            whole = await speak(a.url, start, [text], 0.0)
            row["whole"] = {
                "first_audio_ms": whole["first_audio_ms"],
                "segments": whole["segments"],
                "audio_ms": whole["audio_ms"],
            }
            row["whole_pcm"] = whole["pcm"]
            rows.append(row)
            print(
                json.dumps(
                    {k: v for k, v in row.items() if not k.endswith("_pcm")}, ensure_ascii=False
                ),
                file=sys.stderr,
            )
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([sys.executable.rsplit("/", 1)[-1], *sys.argv]),
        "server_commit": a.server_commit,
        "bench_commit": git_commit(),
        "host": {
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "loadavg_1m_start": a.load_start,
            "loadavg_1m_end": round(os.getloadavg()[0], 2),
        },
        "url": a.url,
        "interval_ms": a.interval_ms,
        "token": "English: one word with its trailing space; Mandarin: two characters",
        "start_extra": extra,
        "voice": a.voice or "(server default)",
        "zh_voice": a.zh_voice or "(server default)",
        "prebuffer_ms": a.prebuffer_ms,
        "languages": {},
    }
    for lang in a.languages:
        mine = [r for r in rows if r["lang"] == lang]
        if not mine:
            continue
        runs = [run for r in mine for run in r["runs"]]
        report["languages"][lang] = {
            "paced_first_audio_ms": summary([run["first_audio_ms"] for run in runs]),
            "whole_first_audio_ms": summary([r["whole"]["first_audio_ms"] for r in mine]),
            "underruns": sum(run["underruns"] for run in runs),
            "replies_with_underrun": sum(1 for run in runs if run["underruns"]),
            "stall_ms_total": round(sum(run["stall_ms"] for run in runs), 1),
            "segments_per_reply_paced": round(
                statistics.fmean(len(run["segments"]) for run in runs), 2
            ),
            "segments_per_reply_whole": round(
                statistics.fmean(len(r["whole"]["segments"]) for r in mine), 2
            ),
        }
    if a.quality:
        report["quality"] = judge(rows, a.threads)
    report["replies"] = [{k: v for k, v in r.items() if not k.endswith("_pcm")} for r in rows]
    return report


def judge(rows: list[dict[str, Any]], threads: int) -> dict[str, Any]:
    """Whisper base and DNSMOS on each reply, word-paced against whole."""
    from lab.acoustic_quality import dnsmos_scores
    from lab.asr import whisper_base, zh_chars, zh_tokens
    from lab.quality import edits, words

    asr = whisper_base(threads=threads)
    out: dict[str, Any] = {"asr": asr.name}
    for lang in ("en", "zh"):
        mine = [r for r in rows if r["lang"] == lang]
        if not mine:
            continue
        tally: dict[str, dict[str, Any]] = {}
        for mode in ("paced", "whole"):
            errs = total = 0
            ovrl: list[float] = []
            sig: list[float] = []
            for r in mine:
                audio = audio_of(r[f"{mode}_pcm"])
                heard = asr(audio, RATE, language=lang)
                if lang == "en":
                    ref, hyp = words(r["text"]), words(heard)
                else:
                    ref, hyp = zh_tokens(r["text"], heard, zh_chars)
                errs += edits(ref, hyp)
                total += len(ref)
                scores = dnsmos_scores(audio, RATE)
                ovrl.append(scores["ovrl"])
                sig.append(scores["sig"])
                r.setdefault("heard", {})[mode] = heard
                r.setdefault("dnsmos_ovrl", {})[mode] = round(scores["ovrl"], 3)
            tally[mode] = {
                "error_rate_pct": round(100.0 * errs / max(total, 1), 2),
                "errors": errs,
                "reference_units": total,
                "dnsmos_ovrl": round(statistics.fmean(ovrl), 3),
                "dnsmos_sig": round(statistics.fmean(sig), 3),
            }
        out[lang] = {
            "metric": "WER (words, Whisper normaliser)" if lang == "en" else "CER (characters)",
            **tally,
            "error_rate_delta_pts": round(
                tally["paced"]["error_rate_pct"] - tally["whole"]["error_rate_pct"], 2
            ),
            "dnsmos_ovrl_delta": round(
                tally["paced"]["dnsmos_ovrl"] - tally["whole"]["dnsmos_ovrl"], 3
            ),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", default="ws://127.0.0.1:8000/v1/stream")
    p.add_argument("--interval-ms", type=float, default=50.0)
    p.add_argument("--repeats", type=int, default=1, help="word-paced runs per reply")
    p.add_argument("--n", type=int, default=8, help="replies per language")
    p.add_argument("--languages", default="en,zh", type=lambda s: s.split(","))
    p.add_argument("--voice", default=None, help="English voice (default: the server's)")
    p.add_argument("--zh-voice", default=None, help="Mandarin voice (default: the server's)")
    p.add_argument("--start", default="", help="extra start fields, JSON")
    p.add_argument("--prebuffer-ms", type=float, default=60.0)
    p.add_argument("--quality", action="store_true", help="Whisper and DNSMOS, paced vs whole")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--server-commit", default="", help="what the server ran (for the record)")
    p.add_argument("--warmup", type=int, default=2, help="unmeasured replies first")
    p.add_argument("-o", "--output", default=None)
    a = p.parse_args(argv)

    async def warm() -> None:
        for text in ENGLISH[: a.warmup]:
            start: dict[str, Any] = {"type": "start", "cache": False}
            await speak(a.url, start, tokens(text, "en"), a.interval_ms / 1000.0)

    asyncio.run(warm())
    a.load_start = round(os.getloadavg()[0], 2)
    report = asyncio.run(measure(a))
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(json.dumps(report["languages"], indent=2))
    if "quality" in report:
        print(json.dumps(report["quality"], indent=2, ensure_ascii=False))
    if a.output:
        Path(a.output).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
