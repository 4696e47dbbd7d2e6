"""The ONNX Runtime session options every CPU model of the project runs with."""

from __future__ import annotations

import onnxruntime as ort


def cpu_options(threads: int) -> ort.SessionOptions:
    """``threads`` intra-op threads, one inter-op thread, sequential execution, all graph
    optimisations (constant folding included: the shipped files' fp16→fp32 casts fold at load)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return opts
