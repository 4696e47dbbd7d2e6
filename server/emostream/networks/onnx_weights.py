"""ONNX files as the one shipped artifact of a model: fp16 weights, config inside, readable back.

The project ships each trained network once, as the ONNX graph that ONNX Runtime runs on CPU.
The torch side (GPU serving, training warm starts) reads its ``state_dict`` back from the same
file, so no second copy of the weights is committed:

* :func:`half_weights` stores every float32 initializer as float16 under **its own name**, with
  a ``Cast`` to float32 in front of its consumers: the file halves, ONNX Runtime folds the casts
  when it loads (the arithmetic stays float32), and the values are exactly those of an fp16
  checkpoint.
* Export with ``do_constant_folding=False`` so every parameter and buffer keeps its
  ``state_dict`` name as an initializer name (``torch.onnx.export`` names them so);
  :func:`read_export` returns them (float16 stays float16) with the ``metadata_props`` (the
  model's config, its training step ...).

Only ``onnx`` and numpy are imported: this module is safe on the torch-free CPU install.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

CAST_SUFFIX = "::f32"
CONFIG_KEY = "emostream.config"
LARGE_CONSTANT = 4096  # Constant nodes with at least this many floats are halved too
ALIASES_KEY = "emostream.aliases"  # state_dict name -> the initializer that holds its values


def half_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its float32 initializers stored as float16 (same names) and cast back to
    float32 where used; float ``Constant`` nodes of :data:`LARGE_CONSTANT` values or more
    likewise (they hold non-persistent buffers, e.g. the light vocoder's iSTFT basis: 73 dB
    SNR against the float32 basis). Initializers read inside subgraphs stay float32."""
    graph = model.graph
    inner = _subgraph_inputs(graph)
    casts = []
    renamed: dict[str, str] = {}
    for init in graph.initializer:
        if init.data_type != TensorProto.FLOAT or init.name in inner:
            continue
        half = numpy_helper.to_array(init).astype(np.float16)
        init.CopyFrom(numpy_helper.from_array(half, init.name))
        renamed[init.name] = init.name + CAST_SUFFIX
        casts.append(
            helper.make_node(
                "Cast", [init.name], [renamed[init.name]], to=TensorProto.FLOAT,
                name=f"half_weights/{init.name}",
            )
        )  # fmt: skip
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in renamed:
                node.input[i] = renamed[name]
    for node in list(graph.node):  # large float constants (e.g. an iSTFT basis) likewise
        value = next((a for a in node.attribute if a.name == "value"), None)
        if (
            node.op_type != "Constant"
            or value is None
            or value.t.data_type != TensorProto.FLOAT
            or int(np.prod(value.t.dims)) < LARGE_CONSTANT
        ):
            continue
        value.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(value.t).astype(np.float16)))
        out = node.output[0]
        node.output[0] = out + "::f16"
        casts.append(helper.make_node("Cast", [node.output[0]], [out], to=TensorProto.FLOAT,
                                      name=f"half_weights/{out}"))  # fmt: skip
        casts.insert(0, node)  # the constant itself moves up, ahead of its cast
        graph.node.remove(node)
    for output in graph.output:
        if output.name in renamed:  # a weight that is itself an output: keep its float32 name
            raise ValueError(f"initializer {output.name!r} is a graph output; cannot halve it")
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(casts + nodes)
    return model


def _subgraph_inputs(graph: onnx.GraphProto) -> set[str]:
    """Names read by nodes inside If/Loop/Scan bodies (left as they are)."""
    names: set[str] = set()
    for node in graph.node:
        for attr in node.attribute:
            subs = list(attr.graphs) + ([attr.g] if attr.HasField("g") else [])
            for sub in subs:
                for n in sub.node:
                    names.update(n.input)
                names |= _subgraph_inputs(sub)
    return names


def set_metadata(model: onnx.ModelProto, values: Mapping[str, Any]) -> None:
    """Store ``values`` in ``metadata_props`` (strings as they are, anything else as JSON)."""
    existing = {p.key: p for p in model.metadata_props}
    for key, value in values.items():
        text = value if isinstance(value, str) else json.dumps(value)
        if key in existing:
            existing[key].value = text
        else:
            model.metadata_props.add(key=key, value=text)


def read_export(
    path: str | Path, *, prefix: str = ""
) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
    """One read of a project export: its config (:data:`CONFIG_KEY`) and other metadata
    (JSON values decoded), and its initializers whose names start with ``prefix``, by name
    without it (dtype as stored), plus the weights the exporter merged into an identical one
    (:data:`ALIASES_KEY`)."""
    model = onnx.load(str(path))
    meta = {p.key: p.value for p in model.metadata_props}
    if CONFIG_KEY not in meta:
        raise ValueError(f"{path}: no {CONFIG_KEY!r} in the ONNX metadata (not a project export)")
    inits = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for name, same in json.loads(meta.get(ALIASES_KEY, "{}")).items():
        inits[name] = inits[same]
    info = {k: _json_or_text(v) for k, v in meta.items() if k != ALIASES_KEY}
    state = {k[len(prefix) :]: v for k, v in inits.items() if k.startswith(prefix)}
    return info, state


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def aliases(model: onnx.ModelProto, state: Mapping[str, npt.NDArray[Any]]) -> dict[str, str]:
    """For each ``state`` entry with no initializer of its name (the exporter keeps one of
    several identical tensors, e.g. freshly initialised biases), the initializer holding the
    same values."""
    inits = {init.name: init for init in model.graph.initializer}
    out: dict[str, str] = {}
    for name, value in state.items():
        if name in inits:
            continue
        value = np.asarray(value)
        for other, init in inits.items():
            if tuple(init.dims) == value.shape and np.array_equal(
                numpy_helper.to_array(init), value
            ):
                out[name] = other
                break
        else:
            raise ValueError(f"export lost {name!r}: no initializer holds its values")
    return out


def finish_export(
    path: str | Path,
    *,
    config: Mapping[str, Any],
    half: bool,
    extra: Mapping[str, Any] | None = None,
    state: Mapping[str, npt.NDArray[Any]] | None = None,
    rewrite: Callable[[onnx.ModelProto], None] | None = None,
) -> Path:
    """After ``torch.onnx.export`` wrote ``path``: store ``config`` (and ``extra``) in the
    metadata, optionally halve the weights, check the graph and write it back in place
    (``rewrite`` edits the graph first). ``state`` (names as in the graph): every entry must
    be readable back; those the exporter merged into an identical tensor become aliases."""
    path = Path(path)
    model = onnx.load(str(path))
    if rewrite is not None:
        rewrite(model)
    if state is not None:
        set_metadata(model, {ALIASES_KEY: aliases(model, state)})
    if half:
        model = half_weights(model)
    set_metadata(model, {CONFIG_KEY: dict(config), **(extra or {})})
    onnx.checker.check_model(model)
    tmp = path.with_name(path.name + ".tmp")
    onnx.save(model, str(tmp))
    tmp.replace(path)
    return path
