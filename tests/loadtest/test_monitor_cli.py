from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadtest.cli import is_loopback_url, main, metrics_url_for, split_evenly
from loadtest.monitor import errors_by_code, metric_total, parse_metric, refusals_by_reason

METRICS = """# HELP emostream_errors_total Errors sent, by code
# TYPE emostream_errors_total counter
emostream_errors_total{code="busy"} 3.0
emostream_errors_total{code="bad_json"} 1.0
emostream_errors_created{code="busy"} 1.7e9
# TYPE emostream_gpu_memory_bytes gauge
emostream_gpu_memory_bytes 1.5e+09
emostream_active_streams 4.0
"""


def test_parse_metric() -> None:
    assert metric_total(METRICS, "emostream_gpu_memory_bytes") == 1.5e9
    assert metric_total(METRICS, "emostream_missing") is None
    assert errors_by_code(METRICS) == {"busy": 3.0, "bad_json": 1.0}
    assert parse_metric(METRICS, "emostream_active_streams") == {(): 4.0}


def test_admission_refusals_by_reason() -> None:
    text = METRICS + (
        'emostream_admission_refusals_total{reason="utilization"} 5.0\n'
        'emostream_admission_refusals_total{reason="late"} 2.0\n'
    )
    assert refusals_by_reason(text) == {"utilization": 5.0, "late": 2.0}
    assert refusals_by_reason(METRICS) == {}


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("ws://127.0.0.1:8000/v1/stream", True),
        ("ws://localhost:8000/v1/stream", True),
        ("ws://127.1.2.3:9/x", True),
        ("ws://[::1]:8000/v1/stream", True),
        ("ws://10.0.0.1:8000/v1/stream", False),
        ("ws://example.com/v1/stream", False),
        ("http://127.0.0.1:8000/", False),
        ("ws:///nohost", False),
    ],
)
def test_loopback_only(url: str, ok: bool) -> None:
    assert is_loopback_url(url) is ok


def test_cli_refuses_remote_targets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", "ws://192.0.2.1:8000/v1/stream"]) == 2
    assert "refusing" in capsys.readouterr().err


def test_helpers() -> None:
    assert split_evenly(10, 3) == [4, 3, 3]
    assert sum(split_evenly(1001, 8)) == 1001
    assert metrics_url_for("ws://127.0.0.1:9000/v1/stream") == "http://127.0.0.1:9000/metrics"


def test_replot_from_saved_report(tmp_path: Path) -> None:
    from loadtest.report import UtteranceRecord, build_report

    levels = []
    for n in (1, 2, 4):
        recs = [
            UtteranceRecord(stream=i, first_audio_ms=100.0 * n, audio_ms=3000.0) for i in range(n)
        ]
        levels.append(build_report(recs, wall_s=10.0, extra={"level": float(n)}))
    report = {
        "date": "2026-12-02T00:00:00+00:00", "label": "test", "levels": levels,
        "config": {"pattern": "steady", "p95_bound_ms": 200.0},
        "find_max": {"largest_good": 2, "criteria": {"p95_first_audio_ms_max": 200.0}},
    }  # fmt: skip
    src, png = tmp_path / "r.json", tmp_path / "r.png"
    src.write_text(json.dumps(report))
    assert main(["--replot", str(src), "--plot", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["--replot", str(src)]) == 2
