"""PNG of a sweep: first-audio percentiles and underruns against the load level."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any


def plot_levels(
    levels: list[dict[str, Any]],
    path: str | Path,
    *,
    x_label: str = "concurrent streams",
    bound_ms: float | None = 200.0,
    largest_good: float | None = None,
    title: str = "",
) -> Path:
    """Two panels sharing the x axis: first audio p50/p95/p99 (ms) and underruns per
    stream-minute (with the aggregate real-time factor on a second axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted(levels, key=lambda r: float(r["level"]))
    xs = [float(r["level"]) for r in pts]

    def col(*keys: str) -> list[float]:
        out = []
        for r in pts:
            v: Any = r
            for k in keys:
                v = v.get(k) if isinstance(v, dict) else None
            out.append(float("nan") if v is None else float(v))
        return out

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7.5, 6.5), sharex=True, height_ratios=[3, 2])
    for q, style in (("p50", "o-"), ("p95", "s-"), ("p99", "^--")):
        ax1.plot(xs, col("first_audio_ms", q), style, label=f"first audio {q}")
    if bound_ms is not None:
        ax1.axhline(bound_ms, color="red", lw=1, ls=":", label=f"bound {bound_ms:g} ms")
    if largest_good:
        ax1.axvline(largest_good, color="green", lw=1, ls="--",
                    label=f"largest good: {largest_good:g}")  # fmt: skip
        ax2.axvline(largest_good, color="green", lw=1, ls="--")
    ax1.set_ylabel("first audio (ms, client clock)")
    ax1.set_yscale("log")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=8, loc="upper left")
    if title:
        ax1.set_title(textwrap.fill(title, 80), fontsize=9)

    ax2.plot(xs, col("underruns", "per_stream_minute"), "o-", color="tab:red", label="underruns")
    ax2.set_ylabel("underruns / stream-minute", color="tab:red")
    ax2.set_xlabel(x_label)
    ax2.grid(True, alpha=0.3)
    ax3 = ax2.twinx()
    rt = col("rtf", "aggregate_audio_s_per_wall_s")
    ax3.plot(xs, rt, "d:", color="tab:gray", label="audio s / wall s")
    ax3.set_ylabel("aggregate audio s per wall s", color="tab:gray")
    if len(xs) > 1 and max(xs) / max(min(xs), 1e-9) >= 8:
        ax2.set_xscale("log", base=2)
    if all(float(x).is_integer() for x in xs) and len(xs) <= 16:
        ax2.set_xticks(xs, [f"{x:g}" for x in xs])
        ax2.minorticks_off()
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
