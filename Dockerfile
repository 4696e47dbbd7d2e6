# EmoStream server images.
#   docker build --target cpu -t emostream:cpu .     embedded voice, ONNX Runtime on CPU
#   docker build --target gpu -t emostream:gpu .     CUDA runtime + torch for --device cuda
FROM python:3.11-slim-bookworm AS cpu
RUN apt-get update && apt-get install -y --no-install-recommends libopus0 libsndfile1 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY server ./server
COPY client_js ./client_js
COPY models ./models
# [media]: PyAV (FFmpeg) for response_format "aac" and WebM/MP4 reference clips
RUN pip install --no-cache-dir ".[media]"
ENV EMOSTREAM_HOST=0.0.0.0 EMOSTREAM_PORT=8000 EMOSTREAM_MODELS_DIR=/app/models \
    EMOSTREAM_DATA_DIR=/data
VOLUME /data
EXPOSE 8000
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
# Bound to 0.0.0.0, the server refuses to start without API keys: run with
# -e EMOSTREAM_API_KEYS=<key>[,<key>...] (or -e EMOSTREAM_ALLOW_UNAUTHENTICATED=1 on a private
# network you trust). See docs/security.md.
CMD ["emostream", "serve"]

FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 AS gpu
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv \
    libopus0 libsndfile1 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /app
COPY pyproject.toml README.md ./
COPY server ./server
COPY client_js ./client_js
COPY models ./models
RUN pip install --no-cache-dir ".[gpu,redis,media]"
ENV EMOSTREAM_HOST=0.0.0.0 EMOSTREAM_PORT=8000 EMOSTREAM_DEVICE=cuda \
    EMOSTREAM_MODELS_DIR=/app/models EMOSTREAM_DATA_DIR=/data
VOLUME /data
EXPOSE 8000
# Needs EMOSTREAM_API_KEYS (or EMOSTREAM_ALLOW_UNAUTHENTICATED=1), as above.
CMD ["emostream", "serve"]
