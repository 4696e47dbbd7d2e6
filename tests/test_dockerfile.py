"""The Dockerfile installs what scripts/setup.sh installs, and its GPU stage runs with the
settings docs/gpu.md documents: the two cannot drift apart unseen.

The Dockerfile is read as text (no container engine needed); bench/container_build.sh builds,
runs and speaks through the image (bench/results/*-container-build.json)."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
import shlex
import tomllib
from pathlib import Path

from emostream.config import Settings

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
SETUP = (ROOT / "scripts/setup.sh").read_text(encoding="utf-8")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") and not pending:
            continue
        if line.lstrip().startswith("#"):  # a comment inside a continued instruction
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def stages(text: str) -> dict[str, list[tuple[str, str]]]:
    """Each build stage's instructions, by its ``AS`` name (its FROM first)."""
    out: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for word, rest in instructions(text):
        if word == "FROM":
            name = rest.split()[-1] if " as " in f" {rest.lower()} " else str(len(out))
            current = out.setdefault(name, [])
        if current is not None:
            current.append((word, rest))
    return out


def apt_packages(stage: list[tuple[str, str]]) -> list[str]:
    pkgs: list[str] = []
    for word, rest in stage:
        if word != "RUN" or "apt-get install" not in rest:
            continue
        for command in rest.split("&&"):
            args = shlex.split(command)
            if args[:2] == ["apt-get", "install"]:
                pkgs += [a for a in args[2:] if not a.startswith("-")]
    return pkgs


def pip_installs(stage: list[tuple[str, str]]) -> list[list[str]]:
    """The arguments of each ``pip install`` of the project (``.``) in the stage."""
    out = []
    for word, rest in stage:
        if word != "RUN":
            continue
        for command in rest.split("&&"):
            args = shlex.split(command)
            if args[:2] == ["pip", "install"] and any(a.startswith(".") for a in args):
                out.append(args[2:])
    return out


def extras(args: list[str]) -> set[str]:
    target = next(a for a in args if a.startswith("."))
    match = re.fullmatch(r"\.(?:\[([a-z0-9,\-]*)\])?", target)
    assert match, f"pip install target {target!r}"
    return set(filter(None, (match.group(1) or "").split(",")))


def setup_value(name: str) -> str:
    match = re.search(rf"^{name}=(.*)$", SETUP, re.MULTILINE)
    assert match, f"scripts/setup.sh sets no {name}"
    return match.group(1).strip()


def setup_apt_packages() -> list[str]:
    """setup.sh's server packages (its first ``apt_pkgs=(...)``: --dev adds to it)."""
    return shlex.split(setup_value("apt_pkgs").strip("()"))


def env(stage: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for word, rest in stage:
        if word == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                out[key] = value
    return out


STAGES = stages(DOCKERFILE)


def test_the_parser_reads_both_stages() -> None:
    assert set(STAGES) == {"cpu", "gpu"}
    assert STAGES["cpu"][0] == ("FROM", "${BASE_IMAGE} AS cpu")
    assert STAGES["gpu"][0] == ("FROM", "cpu AS gpu")  # the GPU image adds to the CPU one
    # A drifted line must be seen: the parser finds what the checks below compare.
    assert apt_packages(stages("FROM x AS a\nRUN apt-get update && apt-get install -y \\\n"
                               "    --no-install-recommends libfoo1 libbar2\n")["a"]) == [
        "libfoo1", "libbar2"]  # fmt: skip
    assert extras(["--no-cache-dir", "-e", ".[a,b]"]) == {"a", "b"}
    assert extras(["."]) == set()


def test_system_packages_are_setup_sh_s() -> None:
    assert apt_packages(STAGES["cpu"]) == setup_apt_packages()
    assert apt_packages(STAGES["gpu"]) == []  # inherited from the CPU stage


def test_pip_extras_are_setup_sh_s() -> None:
    (cpu,) = pip_installs(STAGES["cpu"])
    (gpu,) = pip_installs(STAGES["gpu"])
    assert extras(cpu) == set(setup_value("server_extras").split(","))
    assert extras(gpu) == set(setup_value("gpu_extras").split(","))
    # Editable, as setup.sh installs: the server finds client_js/ (the demo) beside its source.
    assert "-e" in cpu and "-e" in gpu
    assert re.search(r'pip install -q -e "\.\[\$server_extras\]"', SETUP)
    assert re.search(r'pip install -q -e "\.\[\$gpu_extras\]"', SETUP)
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"])  # fmt: skip
    assert extras(cpu) | extras(gpu) <= declared


def test_every_env_setting_exists() -> None:
    known = {f"EMOSTREAM_{f.name.upper()}" for f in dataclasses.fields(Settings)}
    for name in ("cpu", "gpu"):  # (the GPU stage sets none: its defaults come with cuda)
        settings = {k for k in env(STAGES[name]) if k.startswith("EMOSTREAM_")}
        assert settings <= known, settings - known


def documented_gpu_run() -> tuple[dict[str, str], list[str]]:
    """docs/gpu.md's measured command: its EMOSTREAM_* settings and its ``emostream`` argv."""
    doc = (ROOT / "docs/gpu.md").read_text(encoding="utf-8")
    match = re.search(r"\n((?:    EMOSTREAM_[^\n]*\\\n)+)\s+(emostream serve[^\n]*)\n", doc)
    assert match, "docs/gpu.md: no indented EMOSTREAM_... emostream serve block"
    settings = dict(w.split("=", 1) for w in shlex.split(match.group(1).replace("\\\n", " ")))
    return settings, shlex.split(match.group(2))


def test_gpu_stage_runs_the_documented_settings() -> None:
    """The image sets no tuning of its own: ``--device cuda`` brings the cuda defaults, and
    those are docs/gpu.md's measured settings (workers: one per core but two, 14 there)."""
    settings, argv = documented_gpu_run()
    assert not {k for k in env(STAGES["gpu"]) if k.startswith("EMOSTREAM_")}
    (cmd,) = [rest for word, rest in STAGES["gpu"] if word == "CMD"]
    image_argv = json.loads(cmd)  # the exec form: a JSON list
    assert image_argv == ["emostream", "serve", "--device", "cuda"]
    assert argv[: len(image_argv)] == image_argv
    defaults = Settings.from_env({}, cores=16, device="cuda")
    for name, value in settings.items():
        field = name.removeprefix("EMOSTREAM_").lower()
        assert str(getattr(defaults, field)).lower() in (value.lower(), "true" if value == "1" else "")
    assert argv[argv.index("--workers") + 1] == str(defaults.workers)


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore drops ``path`` (its patterns, or a parent folder's)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        for prefix in prefixes:
            if fnmatch.fnmatchcase(prefix, pattern) or (
                pattern.startswith("**/") and fnmatch.fnmatchcase(prefix.split("/")[-1],
                                                                  pattern[3:])
            ):  # fmt: skip
                return True
    return False


def test_build_context_is_lean_and_complete() -> None:
    patterns = [
        line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]  # fmt: skip
    for heavy in (".git", ".venv", "bench/results/x.json", "models/corpus/v1/a", "tests/data"):
        assert ignored(heavy, patterns), heavy
    copied = [src for word, rest in STAGES["cpu"] if word == "COPY" for src in rest.split()[:-1]]
    assert "server" in copied and "README.md" in copied
    for source in copied + ["models/acoustic", "models/vocoder", "models/speaker_encoder",
                            "client_js/index.html", "server/emostream/cli.py"]:  # fmt: skip
        assert (ROOT / source).exists(), source
        assert not ignored(source, patterns), f"{source} is COPYd but .dockerignore drops it"
