"""``torch.compile`` for the engine's vocoder, one bucket shape at a time, at start-up only.

The engine runs the vocoder over a fixed set of ``(batch, frames)`` bucket shapes, each
replayed as a CUDA graph (:class:`~emostream.engine.gpu.vocoder_backend.TorchVocoderBackend`).
:class:`ShapeCompiler` compiles the module with ``dynamic=False`` (one specialised graph per
shape, the best kernels for each) and compiles a shape by running it once on an example
input (timed, logged); the backend then warms that shape up and captures it as it would the
eager module. A shape never compiled runs the eager module (:meth:`ShapeCompiler.module_for`),
so a request never waits for a compile.

Only inductor's modes that leave CUDA graphs to the caller are offered
(:data:`emostream.config.VOCODER_COMPILE`): ``reduce-overhead`` and ``max-autotune`` capture
graphs of their own, which would clash with the engine's shared graph pool.

Each shape adds one entry to Dynamo's cache of the module's ``forward``; past
``torch._dynamo.config.recompile_limit`` (8 by default) Dynamo would silently run the rest
eagerly, so :class:`ShapeCompiler` raises the limits (the engine has ~20 shapes).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from emostream.config import VOCODER_COMPILE

log = logging.getLogger(__name__)

MODES = VOCODER_COMPILE[1:]  # torch.compile modes ("off" aside)
RECOMPILE_LIMIT = 256  # cache entries per code object: shapes x modes compiled in one process


def compile_mode(value: str) -> str | None:
    """A ``vocoder_compile`` value as a torch.compile mode (``None``: off); raises on others."""
    if value == "off":
        return None
    if value not in MODES:
        raise ValueError(f"vocoder compile {value!r}: use {', '.join(VOCODER_COMPILE)}")
    return value


def _raise_recompile_limits(torch: Any) -> None:
    config = torch._dynamo.config
    for name, least in (("recompile_limit", RECOMPILE_LIMIT),
                        ("accumulated_recompile_limit", 4 * RECOMPILE_LIMIT)):  # fmt: skip
        if hasattr(config, name):
            setattr(config, name, max(int(getattr(config, name)), least))


class ShapeCompiler:
    """``model`` compiled in ``mode`` (``dynamic=False``), with the shapes compiled so far and
    how long each took (seconds). ``backend``: torch.compile's (``"inductor"``; tests on CPU
    may use ``"aot_eager"``, which takes no mode)."""

    def __init__(self, model: Any, mode: str, *, backend: str = "inductor") -> None:
        import torch

        if mode not in MODES:
            raise ValueError(f"compile mode {mode!r}: use one of {', '.join(MODES)}")
        self._torch = torch
        self.model = model
        self.mode = mode
        self.backend = backend
        _raise_recompile_limits(torch)
        kwargs: dict[str, Any] = {"mode": mode} if backend == "inductor" else {}
        self.compiled: Callable[..., Any] = torch.compile(
            model, backend=backend, dynamic=False, **kwargs
        )
        self.seconds: dict[tuple[int, ...], float] = {}

    def compile_shape(self, example: Any) -> float:
        """Compile for ``example``'s shape by running it once (no-op when already done);
        the seconds it took (0.0 when already compiled)."""
        shape = tuple(int(n) for n in example.shape)
        if shape in self.seconds:
            return 0.0
        torch = self._torch
        start = time.perf_counter()
        with torch.inference_mode():
            self.compiled(example)
        if example.is_cuda:
            torch.cuda.synchronize(example.device)
        took = time.perf_counter() - start
        self.seconds[shape] = took
        log.info("vocoder compile mode=%s shape=%s: %.1f s", self.mode,
                 "x".join(map(str, shape)), took)  # fmt: skip
        return took

    def module_for(self, shape: tuple[int, ...]) -> Callable[..., Any]:
        """The compiled module when ``shape`` was compiled, else the eager one. The compiled
        one refuses to compile again (``fail_on_recompile``): an input unlike the example
        compiled (another shape, or an inference tensor where the example was not) raises
        instead of stalling a call for a compile."""
        return self._compiled_only if tuple(shape) in self.seconds else self.model

    def _compiled_only(self, *args: Any) -> Any:
        set_stance = getattr(self._torch.compiler, "set_stance", None)
        if set_stance is None:  # torch < 2.6
            return self.compiled(*args)
        with set_stance("fail_on_recompile"):
            return self.compiled(*args)

    def report(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "backend": self.backend,
            "total_s": round(sum(self.seconds.values()), 1),
            "shapes_s": {"x".join(map(str, k)): round(v, 2) for k, v in self.seconds.items()},
        }
