# shellcheck shell=bash
# Sourced by bench/gpu_engine.sh and bench/gpu_engine_probe.sh (after PY, DEVICE and GRAPHS are
# set): the HiFi-GAN checkpoint from the staged xz parts (bench/gpu_loadtest.sh stage) and the
# settings every engine-process run shares. Exits 3 when a cuda run finds nothing staged.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# A lite run (EMOSTREAM_VOCODER=lite) loads no HiFi-GAN: .gpujob/lt1 alone stages it, and the
# one part lt1 carries is not unpacked (alone it is incomplete).
if [ -z "${EMOSTREAM_VOCODER_CHECKPOINT:-}" ] && [ "${EMOSTREAM_VOCODER:-}" != lite ]; then
  parts=(/tmp/hifigan/hifigan_fp16.pt.xz.part*)
  if [ -f "${parts[0]}" ]; then
    cat "${parts[@]}" | "$PY" -c \
      'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)' \
      >/tmp/hifigan_fp16.pt || { echo "HiFi-GAN parts incomplete: ${parts[*]}"; exit 3; }
    export EMOSTREAM_VOCODER_CHECKPOINT=/tmp/hifigan_fp16.pt
  elif [ "$DEVICE" = cuda ]; then
    echo "no /tmp/hifigan/hifigan_fp16.pt.xz.part*: stage .gpujob/lt1 and lt2 (bench/gpu_loadtest.sh)"
    exit 3
  fi
fi
export EMOSTREAM_EMBEDDED_VOICE=${EMOSTREAM_EMBEDDED_VOICE:-0}  # the Piper voice is not staged
if [ "${DEFAULTS:-0}" = 1 ]; then
  # `emostream serve --device cuda` as a user runs it: engine, graphs, workers, vocoder, Opus
  # and limits from the cuda defaults (config.cuda_defaults); only the staging's two above.
  return 0
fi
export EMOSTREAM_DEFAULT_VOICE=${EMOSTREAM_DEFAULT_VOICE:-af_heart}
export EMOSTREAM_ACOUSTIC=${EMOSTREAM_ACOUSTIC:-on} EMOSTREAM_LOG_LEVEL=${EMOSTREAM_LOG_LEVEL:-info}
export EMOSTREAM_ENGINE=process EMOSTREAM_ACOUSTIC_GRAPHS=$GRAPHS
export EMOSTREAM_MAX_STREAMS=${EMOSTREAM_MAX_STREAMS:-16384}
