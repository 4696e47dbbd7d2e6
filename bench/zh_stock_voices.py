"""Mandarin on the two default stock voices (seen in training), held-out texts, Whisper base.

    python bench/zh_stock_voices.py v0.2|v0.1|teacher      → /tmp/zhseen-<system>.json

v0.1 is read from /tmp/v01.pt (`git show d3f4a8e:models/acoustic/emostream-fs2-v0.1-fp16.pt`)
and skips the held-out lines it cannot encode (the erhua unit it predates); the teacher needs
/tmp/kok/kokoro.onnx and the kokoro-js voices in /tmp/kjs/package/voices (see the model card).
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]  # emostream, and lab (the ASR)

from emostream.networks.acoustic import AcousticModel
from emostream.networks.hifigan import HifiGan
from emostream.text.phonemes import G2P, SYMBOLS
from emostream.voices.acoustic import AcousticVoice
from emostream.voices.base import Controls, VoiceInfo
from lab.asr import cer, syllable_error, whisper_base
from train.sentences import heldout

torch.set_num_threads(1)
which = sys.argv[1]
asr = whisper_base(threads=1)
g2p = G2P()
texts = heldout("zh")[:42]
rows = []
if which == "teacher":
    from train.teacher import KokoroTeacher, kokoro_vocab, load_voices

    t = KokoroTeacher(Path("/tmp/kok/kokoro.onnx"), threads=1)
    vocab = kokoro_vocab()
    voices = load_voices(Path("/tmp/kjs/package/voices"), ["zf_xiaoxiao", "zm_yunxi"])
    speak = lambda spk, text: (
        t([vocab[c] for c in g2p(text).teacher_text], voices[spk]).audio,
        24000,
    )
else:
    ck, sp = {
        "v0.2": ("models/acoustic/emostream-fs2-v0.2.onnx", "models/acoustic/speakers-v0.2.npz"),
        "v0.1": ("/tmp/v01.pt", "models/corpus/v1/speakers.npz"),
    }[which]
    m = AcousticModel.load(Path(ck)).float().eval()
    spk_t = dict(np.load(sp))
    voc = HifiGan.load("universal").eval()

    def dec(mel):
        with torch.no_grad():
            return voc(torch.from_numpy(mel)[None]).reshape(-1).numpy()

    n_sym = m.config.n_symbols if hasattr(m, "config") else len(SYMBOLS)

    def speak(spk, text):
        v = AcousticVoice(
            VoiceInfo(spk, "fs2", "zh", 22050, ("speed",)),
            m,
            spk_t[spk].astype(np.float32),
            g2p,
            dec,
        )
        return (np.asarray(v.decode(v.acoustic(text, Controls()).frames), np.float32), 22050)


for spk in ("zf_xiaoxiao", "zm_yunxi"):
    for text in texts:
        if which == "v0.1" and any(i >= 162 for i in g2p(text).ids()):
            continue
        a, sr = speak(spk, text)
        h = asr(a, sr, language="zh")
        rows.append(
            {
                "speaker": spk,
                "text": text,
                "asr": h,
                "cer": cer(text, h),
                "syllable_error": syllable_error(text, h),
            }
        )
out = {
    "system": which,
    "utterances": len(rows),
    "cer": float(np.mean([r["cer"] for r in rows])),
    "syllable_error": float(np.mean([r["syllable_error"] for r in rows])),
    "per_speaker": {
        s: float(np.mean([r["syllable_error"] for r in rows if r["speaker"] == s]))
        for s in ("zf_xiaoxiao", "zm_yunxi")
    },
    "rows": rows,
}
Path(f"/tmp/zhseen-{which}.json").write_text(json.dumps(out, ensure_ascii=False, indent=1))
print(which, {k: v for k, v in out.items() if k != "rows"})
