"""Command line for the teacher corpus: ``python -m train.corpus_cli STEP ...``.

Steps: ``text`` (write the sentence set), ``plan`` (G2P + speakers → jobs), ``synth``
(Kokoro → shards; runs where only numpy/onnxruntime/soxr exist), ``manifest``.
See ``models/corpus/README.md`` and ``models/recipes/gpu_corpus.sh``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
from pathlib import Path

from train import corpus, sentences

log = logging.getLogger(__name__)


def _speakers(path: Path) -> list[corpus.Speaker]:
    return [corpus.Speaker(**d) for d in json.loads(path.read_text())]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="train.corpus_cli")
    sub = p.add_subparsers(dest="step", required=True)
    t = sub.add_parser("text", help="write the sentence set")
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--en", type=int, default=4000)
    t.add_argument("--zh", type=int, default=3000)
    t.add_argument("--seed", type=int, default=0)
    pl = sub.add_parser("plan", help="sentences + speakers → jobs")
    pl.add_argument("--text", type=Path, required=True, help="folder with en.txt / zh.txt")
    pl.add_argument("--voices", type=Path, required=True, help="kokoro-js voices/ folder")
    pl.add_argument("--out", type=Path, required=True, help="folder for jobs + speakers")
    pl.add_argument("--limit", type=int, default=0, help="sentences per language (0 = all)")
    pl.add_argument("--seed", type=int, default=0)
    pl.add_argument("--blends-en", type=int, default=28)
    pl.add_argument("--blends-zh", type=int, default=16)
    pl.add_argument("--cross-en", type=int, default=0, help="English speakers, any timbre")
    pl.add_argument("--cross-zh", type=int, default=0, help="Mandarin speakers, any timbre")
    pl.add_argument("--exclude", default="", help="voices kept out of training (held out)")
    pl.add_argument(
        "--only",
        default="",
        help="only these stock voices, no blends or cross speakers (a validation plan)",
    )
    pl.add_argument(
        "--new-only",
        action="store_true",
        help="blends and cross speakers only, named val_*: a validation plan of new timbres",
    )
    pl.add_argument(
        "--timbre-only",
        default="",
        help="comma-separated voices that lend cross speakers their timbre but never their "
        "prosody (not speakers, not blend parents): e.g. zf_xiaoni, whose Mandarin the "
        "teacher renders poorly",
    )
    pl.add_argument("--renderings", type=int, default=1, help="speakers per sentence")
    s = sub.add_parser("synth", help="render jobs with Kokoro into shards")
    s.add_argument("--plan", type=Path, required=True)
    s.add_argument("--model", type=Path, required=True)
    s.add_argument(
        "--voices",
        type=Path,
        default=None,
        help="voices/ folder; without it, the plan's job_styles.npy is used",
    )
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--workers", type=int, default=1)
    s.add_argument("--budget", type=float, default=480.0, help="seconds")
    s.add_argument("--skip", type=int, default=0, help="skip the first N jobs")
    s.add_argument("--prefix", default="shard")
    s.add_argument("--device", default=None)
    k = sub.add_parser("pack", help="first N jobs + their style rows (for a remote host)")
    k.add_argument("--plan", type=Path, required=True)
    k.add_argument("--voices", type=Path, required=True)
    k.add_argument("--skip", type=int, default=0)
    k.add_argument("--count", type=int, required=True)
    k.add_argument("--out", type=Path, required=True)
    e = sub.add_parser("speakers", help="GE2E per speaker from fresh teacher clips")
    e.add_argument("--plan", type=Path, required=True)
    e.add_argument("--model", type=Path, required=True)
    e.add_argument("--voices", type=Path, required=True)
    e.add_argument("--out", type=Path, required=True, help="speakers.npz to write")
    e.add_argument("--clips", type=int, default=2)
    e.add_argument("--only", default="", help="comma-separated speaker names (default all)")
    m = sub.add_parser("manifest")
    m.add_argument("--corpus", type=Path, required=True)
    m.add_argument("--plan", type=Path, required=True)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    if a.step == "text":
        a.out.mkdir(parents=True, exist_ok=True)
        for lang, n in (("en", a.en), ("zh", a.zh)):
            lines = sentences.generate(lang, n, seed=a.seed)
            (a.out / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif a.step == "plan":
        from train.teacher import load_voices

        texts = {}
        for lang in ("en", "zh"):
            lines = (a.text / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
            texts[lang] = lines[: a.limit] if a.limit else lines
        held = set(filter(None, a.exclude.split(",")))
        only = set(filter(None, a.only.split(",")))
        voices = [v for v in load_voices(a.voices) if v not in held and (not only or v in only)]
        if only and set(voices) != only:
            raise SystemExit(f"--only: unknown or excluded voices {sorted(only - set(voices))}")
        spk = corpus.make_speakers(
            voices,
            blends_en=0 if only else a.blends_en,
            blends_zh=0 if only else a.blends_zh,
            cross_en=0 if only else a.cross_en,
            cross_zh=0 if only else a.cross_zh,
            seed=a.seed,
            stock=not a.new_only,
            prefix="val_" if a.new_only else "",
            timbre_only=set(filter(None, a.timbre_only.split(","))),
        )
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "speakers.json").write_text(
            json.dumps([dataclasses.asdict(x) for x in spk], indent=1)
        )
        jobs = corpus.plan(texts, spk, seed=a.seed, renderings=a.renderings)
        corpus.save_jobs(jobs, a.out / "jobs.jsonl.xz")
        log.info("%d jobs, %d speakers", len(jobs), len(spk))
    elif a.step == "synth":
        import numpy as np

        jobs = corpus.load_jobs(a.plan / "jobs.jsonl.xz")[a.skip :]
        styles = None
        if a.voices is None:
            styles = np.load(a.plan / "job_styles.npy")[a.skip :]
        summary = corpus.synthesize(
            jobs,
            _speakers(a.plan / "speakers.json"),
            model=a.model,
            voices=a.voices,
            styles=styles,
            out_dir=a.out,
            workers=a.workers,
            budget_s=a.budget,
            device=a.device,
            prefix=a.prefix,
        )
        (a.out / f"{a.prefix}-summary.json").write_text(json.dumps(summary))
        log.info(
            "%d utterances, %.0f s audio in %.0f s",
            len(summary["utterances"]),
            summary["audio_seconds"],
            summary["wall_seconds"],
        )
    elif a.step == "pack":
        import numpy as np

        from train.teacher import load_voices

        spk = _speakers(a.plan / "speakers.json")
        jobs = corpus.load_jobs(a.plan / "jobs.jsonl.xz")[a.skip : a.skip + a.count]
        a.out.mkdir(parents=True, exist_ok=True)
        corpus.save_jobs(jobs, a.out / "jobs.jsonl.xz")
        (a.out / "speakers.json").write_text((a.plan / "speakers.json").read_text())
        np.save(a.out / "job_styles.npy", corpus.job_styles(jobs, spk, load_voices(a.voices)))
    elif a.step == "speakers":
        import numpy as np

        spk = _speakers(a.plan / "speakers.json")
        if a.only:
            spk = [x for x in spk if x.name in a.only.split(",")]
        texts = {  # held apart from the corpus sentences (another seed, short ones first)
            lang: sorted(sentences.generate(lang, 200, seed=99), key=len)[50 : 50 + a.clips]
            for lang in ("en", "zh")
        }
        emb = corpus.speaker_embeddings(spk, texts, model=a.model, voices=a.voices, clips=a.clips)
        np.savez(a.out, **emb)  # type: ignore[arg-type]
    elif a.step == "manifest":
        man = corpus.write_manifest(a.corpus, _speakers(a.plan / "speakers.json"), {})
        log.info("%d utterances, %.3f h", man["utterances"], man["hours"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
