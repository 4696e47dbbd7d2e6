#!/usr/bin/env bash
# A base image for the Dockerfile made from Debian packages alone, for a machine that reaches
# a Debian mirror and PyPI but no container registry. The Dockerfile's stages start FROM
# ${BASE_IMAGE} (default python:3.11-slim-bookworm from Docker Hub); this makes a stand-in
# with what the Dockerfile needs of it: Debian bookworm, apt, python3 (3.11) with venv, CA
# certificates.
#   scripts/container_base.sh [--host-ca] [TAG]     (TAG default localhost/emostream-base:bookworm)
#   podman build --build-arg BASE_IMAGE=localhost/emostream-base:bookworm --target cpu -t emostream:cpu .
# --host-ca copies this machine's own CA certificates (/usr/local/share/ca-certificates/*.crt)
# into the image: pip inside the build then trusts a TLS-inspecting proxy this machine trusts.
# Needs root, mmdebstrap and podman (apt-get install mmdebstrap podman). DEBIAN_MIRROR
# overrides the mirror (default http://deb.debian.org/debian).
set -euo pipefail
HOST_CA=0
if [ "${1:-}" = "--host-ca" ]; then HOST_CA=1; shift; fi
TAG=${1:-localhost/emostream-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

hooks=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr)  # /usr merged without usrmerge (and perl)
if [ $HOST_CA -eq 1 ]; then
  shopt -s nullglob
  cas=(/usr/local/share/ca-certificates/*.crt)
  shopt -u nullglob
  for ca in "${cas[@]}"; do
    hooks+=(--customize-hook="copy-in $ca /usr/local/share/ca-certificates/")
  done
  hooks+=(--customize-hook='chroot "$1" update-ca-certificates')
fi
# minbase: essential packages + apt; no docs or man pages (as the slim images).
mmdebstrap --variant=minbase --mode=root \
  --include=python3,python3-venv,ca-certificates \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  "${hooks[@]}" \
  bookworm - \
  "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
  "deb $SECURITY bookworm-security main" \
  | podman import --change 'CMD ["python3"]' - "$TAG"
echo "== base image $TAG"
