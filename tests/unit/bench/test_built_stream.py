"""``bench.built``'s arithmetic for the stream and job functions: the CPU fit, a stream's price."""

from __future__ import annotations

from typing import Any

import pytest
from bench import built_jobs, built_stream
from bench.built import SIZES_MB, share, shares
from bench.compare_report import built_lines


def _server(short_cpu_s: float, long_cpu_s: float) -> dict[str, Any]:
    return {
        **{"startup_s": 1.0, "startup_cpu_s": 0.45, "first_stream_cpu_s": 0.05},
        **{"first_stream_s": 0.15, "rss_after_startup_mib": 57.0},
        **{"rss_after_streams_mib": 61.0, "peak_rss_mib": 61.5},
        "short": {"cpu_s": short_cpu_s, "wall_s": 0.07, "chunks": 12},
        "long": {"cpu_s": long_cpu_s, "wall_s": 2.1, "chunks": 212},
    }


# Medians over three servers: 12 chunks 6 ms, 212 chunks 46 ms: 0.2 ms a chunk, 3.6 ms a stream.
STREAM = built_stream.summary([_server(0.006, 0.046), _server(0.005, 0.050), _server(0.007, 0.040)])
SIZES = {size: share(size) for size in SIZES_MB}


def test_the_two_stream_lengths_split_the_cpu_into_a_stream_and_a_chunk() -> None:
    assert STREAM["cpu_per_chunk_s"] == pytest.approx(0.0002)
    assert STREAM["cpu_per_stream_s"] == pytest.approx(0.0036)
    assert STREAM["repeats"] == 3


def test_a_stream_is_billed_its_duration_at_each_memory_size() -> None:
    priced = built_stream.sizes(STREAM, SIZES)
    # 30 s x 0.5 GB x the arm64 rate, plus one request.
    assert priced["512"]["stream_usd"] == pytest.approx(30 * 0.5 * 0.0000133334 + 0.2e-6)
    assert priced["1024"]["stream_usd"] == pytest.approx(2 * priced["512"]["stream_usd"], 1e-3)
    # 3.6 ms + 1500 chunks x 0.2 ms = 0.3036 s of CPU, at 256 MB's share.
    assert priced["256"]["stream_cpu_bound_s"] == pytest.approx(0.3036 * 1769 / 256)
    assert priced["256"]["cold_cpu_s"] == pytest.approx(0.5 * 1769 / 256)


def test_a_stream_whose_cpu_outlasts_it_is_billed_its_cpu_bound_time() -> None:
    slow = {**STREAM, "cpu_per_chunk_s": 0.01}  # 15 s of CPU: 103 s at 256 MB's share
    priced = built_stream.sizes(slow, SIZES)
    billed_s = (0.0036 + 15) * 1769 / 256
    assert priced["256"]["stream_usd"] == pytest.approx(billed_s * 0.25 * 0.0000133334 + 0.2e-6)
    assert priced["1024"]["stream_usd"] == pytest.approx(30 * 1.0 * 0.0000133334 + 0.2e-6)


def test_the_report_has_the_stream_and_job_rows() -> None:
    job = {
        **{"memory_mb": 256, "import_cpu_s": 0.42, "first_invocation_cpu_s": 0.005},
        **{"warm_invocation_cpu_s": 0.002, "warm_invocation_s": 0.0025},
        **{"rss_after_events_mib": 59.9, "answer": {"scored": 3}},
    }
    built = {
        **{"cold_start_s": 0.45, "cold_start_range_s": [0.42, 0.61], "import_init_s": 0.3},
        **{"first_event_s": 0.1, "modules": 663, "import_cpu_s": 0.3, "first_event_cpu_s": 0.04},
        **{"warm_cpu_s": 0.0035, "warm_wall_s": 0.006, "rss_after_events_mib": 56.0},
        **{"repeats": 7, "shares": shares(0.34, 0.0035)},
        "stream": {**STREAM, "sizes": built_stream.sizes(STREAM, SIZES)},
        "jobs": {"HealthJobFunction": job},
    }
    page = "\n".join(built_lines(built))
    assert "3.60 ms a stream + 0.200 ms a chunk" in page
    assert "| 512 | 0.289 | 1.73 | 12.4 | 0.691 | 1.05 | 3.5% | 0.0002002 |" in page
    assert '| HealthJobFunction | 256 | 420 | 5.0 | 2.0 | 2.5 | 59.9 | `{"scored": 3}` |' in page
    assert built_jobs.lines(None) == built_stream.lines(None) == []
