"""Choose the clone gain (``EMOSTREAM_CLONE_GAIN``) on speakers the cloning criterion never scores.

A clone is conditioned on the GE2E vector of its reference clip; the served vector is
:func:`emostream.voices.acoustic.clone_embedding` of it: moved away from the centre of the
model's training speakers by a gain. This tool runs ``lab.acoustic_quality``'s similarity
check (the d-vector judge, the same four stock voices, the same English held-out lines) for
each gain on two sets:

* **validation**: three IVR voice talents of Debian's ``asterisk-core-sounds-{fr,it,ru}-wav``
  (fr_CA June, it_IT Carlo, ru_RU IvrvoiceRU; 8 kHz prompts, CC-BY-SA-3.0), speaking other
  languages than the English the clones say: a conditioning part (``demo-congrats.wav``, its
  first 8 s) and a disjoint judge part (``demo-instruct.wav``, its first 15 s). The gain is
  chosen here. The packages are not installed by the project; fetch them once with
  ``apt-get download asterisk-core-sounds-{fr,it,ru}-wav`` and ``dpkg -x FILE DIR`` and pass
  ``--val-root DIR`` (es_MX is left out: its voice is the Allison of the test set).
* **test**: the criterion's eight real speakers (:data:`lab.heldout.REAL_SPEAKERS`), reported
  for each gain but never used to choose it.

Per set and gain: clones beating the best stock voice, the mean margin over it, the mean
clone similarity; the stock voices are not moved (only clones are). And what a gain may
cost: the clones' corpus WER (Whisper base, the acoustic protocol's normaliser) and DNSMOS
OVRL / P808 on the same renderings. CPU path (ONNX Runtime,
light vocoder), ~2 min per gain and set on 2 cores::

    python -m lab.clone_gain --gains 1.0,1.3,1.6,2.0 --val-root /tmp/val/x -o OUT.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import platform
import sys
from pathlib import Path
from typing import Any

from lab.heldout import REAL_SPEAKERS, RealSpeaker, Segment

REPO = Path(__file__).resolve().parents[1]
VAL_VOICES = ("fr_CA_f_June", "it_IT_m_Carlo", "ru_RU_f_IvrvoiceRU")


def validation_speakers(root: Path) -> tuple[RealSpeaker, ...]:
    """The three validation talents under ``root`` (a folder ``dpkg -x`` filled)."""
    out = []
    for voice in VAL_VOICES:
        folder = root / "usr/share/asterisk/sounds" / voice
        out.append(RealSpeaker(
            f"val_{voice}", f"asterisk-core-sounds-{voice[:2]}-wav", "CC-BY-SA-3.0",
            (Segment(str(folder / "demo-congrats.wav"), 0.0, 8.0),),
            (Segment(str(folder / "demo-instruct.wav"), 0.0, 15.0),),
            "IVR prompts, 8 kHz",
        ))  # fmt: skip
    return tuple(out)


def main(argv: list[str] | None = None) -> int:
    from lab.acoustic_quality import OwnModel, corpus_rate, dnsmos_scores, similarity
    from lab.asr import whisper_base
    from lab.heldout import heldout_texts

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gains", default="1.0,1.3,1.6,2.0")
    p.add_argument("--val-root", required=True, help="dpkg -x folder of the asterisk sounds")
    p.add_argument("--sets", default="validation,test")
    p.add_argument("--model", default=str(REPO / "models/acoustic/emostream-fs2-v0.4.onnx"))
    p.add_argument("--speakers-npz", default=str(REPO / "models/acoustic/speakers-v0.4.npz"))
    p.add_argument("--lite", default=str(REPO / "models/vocoder/emostream-lite-vocoder-v0.2.onnx"))
    p.add_argument("--texts", type=int, default=4, help="the last N of the 40 English lines")
    p.add_argument(
        "--path",
        choices=("cpu", "v1"),
        default="cpu",
        help="cpu: ONNX Runtime + light vocoder; v1: torch + HiFi-GAN V1 (the GPU's)",
    )
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    own = OwnModel(Path(a.model), Path(a.speakers_npz), path=a.path, lite=Path(a.lite),
                   threads=a.threads)  # fmt: skip
    texts = [t for t in heldout_texts("en") if own.encodable(t)][:40][-a.texts :]
    sets = {"validation": validation_speakers(Path(a.val_root)), "test": REAL_SPEAKERS}
    report: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python -m lab.clone_gain", *(argv or sys.argv[1:])]),
        "host": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
        "model": a.model, "path": a.path, "texts": texts, "results": {},
    }  # fmt: skip
    asr = whisper_base(threads=a.threads)
    for name in a.sets.split(","):
        for gain in (float(g) for g in a.gains.split(",")):
            audio: dict[str, list[Any]] = {}
            res = similarity(own, texts, speakers=sets[name], clone_gain=gain, audio_out=audio)
            rows, scores = [], []
            for clips in audio.values():
                for text, clip in zip(texts, clips, strict=True):
                    rows.append({"text": text, "asr": asr(clip, 16000)})
                    scores.append(dnsmos_scores(clip, 16000))
            res["clone_quality"] = {
                "clips": len(scores),
                "wer_corpus": corpus_rate(rows, "wer"),
                "dnsmos_ovrl": round(sum(x["ovrl"] for x in scores) / max(1, len(scores)), 4),
                "dnsmos_p808": round(sum(x["p808"] for x in scores) / max(1, len(scores)), 4),
            }
            report["results"].setdefault(name, {})[str(gain)] = res
            s, q = res["summary"], res["clone_quality"]
            print(f"{name:10s} gain {gain:4.2f}: beats best stock {s['clone_beats_best_stock']}"
                  f"/{s['speakers']}, margin {s['mean_margin_over_best_stock']:+.4f}, clone "
                  f"{s['dvector_clone_mean']:.4f}; WER {q['wer_corpus']:.3f}, DNSMOS OVRL "
                  f"{q['dnsmos_ovrl']:.3f} P808 {q['dnsmos_p808']:.3f}", flush=True)  # fmt: skip
            Path(a.output).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
