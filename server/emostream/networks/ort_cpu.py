"""The ONNX Runtime session options every CPU model of the project runs with."""

from __future__ import annotations

import onnxruntime as ort


def cpu_options(threads: int) -> ort.SessionOptions:
    """``threads`` intra-op threads, one inter-op thread, sequential execution, all graph
    optimisations (constant folding included: the shipped files' fp16→fp32 casts fold at load),
    and no CPU memory arena.

    The arena keeps the most memory any one call has needed, for the life of the session: 400
    units of the acoustic model need ~100 MB, and before segments were cut into bounded pieces
    one 295-character segment of digits grew the process by 1.6 GB, for good. Without it a
    call's tensors go back to malloc when it ends (the service then trims the heap:
    :mod:`emostream.engine.heap_trim`). It costs a percent or two of CPU time
    (docs/measurements.md, "Figures behind the code")."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.enable_cpu_mem_arena = False
    return opts
