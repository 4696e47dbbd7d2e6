# EmoStream server images.
#   docker build --target cpu -t emostream:cpu .     embedded voice, ONNX Runtime on CPU
#   docker build --target gpu -t emostream:gpu .     + torch (CUDA from the driver) for --device cuda
# BASE_IMAGE: any Debian-family image with apt, python3 >= 3.11 and its venv module. Without a
# registry, scripts/container_base.sh makes one from Debian packages (bench/container_build.sh
# builds, runs and measures the CPU image that way).
# The system libraries and pip extras are scripts/setup.sh's (tests/test_dockerfile.py checks).
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS cpu
RUN apt-get update && apt-get install -y --no-install-recommends libopus0 libsndfile1 \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv && /opt/venv/bin/python -m pip install --no-cache-dir --upgrade pip
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /app
COPY pyproject.toml README.md ./
COPY server ./server
COPY plugins ./plugins
COPY client_js ./client_js
COPY models ./models
# Editable, as scripts/setup.sh: the server finds client_js/ (the demo page) beside its source.
# [media]: PyAV (FFmpeg) for response_format "aac" and WebM/MP4 reference clips
RUN pip install --no-cache-dir -e ".[media]"
ENV EMOSTREAM_HOST=0.0.0.0 EMOSTREAM_PORT=8000 EMOSTREAM_MODELS_DIR=/app/models \
    EMOSTREAM_DATA_DIR=/data
VOLUME /data
EXPOSE 8000
# (the voices load in ~5 s on 2 cores: checks in the first minute may fail uncounted)
HEALTHCHECK --start-period=60s --interval=30s --timeout=5s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
# Bound to 0.0.0.0, the server refuses to start without API keys: run with
# -e EMOSTREAM_API_KEYS=<key>[,<key>...] (or -e EMOSTREAM_ALLOW_UNAUTHENTICATED=1 on a private
# network you trust). See docs/security.md.
CMD ["emostream", "serve"]

# The GPU image: the CPU image + torch from PyPI (its wheels carry CUDA; the host's driver and
# the NVIDIA container toolkit give the device: docker run --gpus all ...).
FROM cpu AS gpu
RUN pip install --no-cache-dir -e ".[gpu,redis,media]"
# --device cuda alone brings docs/gpu.md's measured settings (config.cuda_defaults: engine
# process, graphs, a front end per core but two, light vocoder, CELT-only Opus); override any
# with -e EMOSTREAM_...=... (e.g. EMOSTREAM_VOCODER=v1: more natural, about half the streams).
# Needs EMOSTREAM_API_KEYS (or EMOSTREAM_ALLOW_UNAUTHENTICATED=1), as above.
CMD ["emostream", "serve", "--device", "cuda"]
