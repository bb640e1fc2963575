"""Memory stays bounded under hostile upstreams, with the default caps (one gateway process).

Measured as the growth of the gateway process's peak RSS (``VmHWM``) over
endless JSON answers, endless ``data:`` lines and an endless stream.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.failover import failover_pair
from tests.integration.hardening.helpers import CHAT, config, fast_router

MiB = 1024 * 1024
# answer_bytes (32 MiB) buffered once, plus the interpreter's slack in freeing it.
BOUND = 96 * MiB


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_peak_memory_stays_bounded_with_the_default_caps(
    spawn_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:  # type: ignore[no-untyped-def]
    gw = spawn_gateway(
        config(
            *failover_pair(upstream_a, upstream_b),
            router=fast_router(),
        )
    )
    with httpx.Client(base_url=gw.base_url, timeout=60) as client:
        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200
        before = peak_rss(gw.process.pid)
        for fault, body in (
            ({"endless_json": True}, CHAT),
            ({"huge_json_bytes": 200 * MiB}, CHAT),
            ({"data_lines_bytes": 64 * MiB}, {**CHAT, "stream": True}),
            ({"long_line_bytes": 64 * MiB}, {**CHAT, "stream": True}),
        ):
            for _ in range(2):
                upstream_a.set_faults([fault])
                assert client.post("/v1/chat/completions", json=body).status_code == 200
        growth = peak_rss(gw.process.pid) - before
    print(f"peak RSS growth under hostile upstreams: {growth / MiB:.1f} MiB")
    assert growth < BOUND
