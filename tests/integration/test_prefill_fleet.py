"""001's prefill rule over two gateway processes on one table: a large prefill one process
holds is seen by the other, which sends large requests elsewhere only with the rule on; a
stream's lease is released at its first token while the attempt runs on.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from edgeproxy.routing.estimates.tokens import prompt_tokens
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for

ADMIN_KEY = "sk-admin-prefill-0123456789"
LARGE = [{"role": "user", "content": "word " * 300}]  # about 380 prompt tokens
ELEPHANT_TOKENS = 200  # what the test's rule calls large
RULE = {"prefill": {"elephant_tokens": ELEPHANT_TOKENS, "intervene_tokens": 10**9}}


def _settings(rule: bool) -> dict[str, Any]:
    digest = hashlib.sha256(ADMIN_KEY.encode()).hexdigest()
    router: dict[str, Any] = {"strategy": "simple-shuffle", "sticky": {"enabled": False}}
    if rule:
        router["strategy_params"] = {"simple-shuffle": RULE}
    return {
        "router": router,
        "gateway": {"api_keys": [{"name": "ops", "sha256": digest, "admin": True}]},
    }


def _fresh_minute(clock: FleetClock) -> int:
    """Move to the start of a minute, so the test's counts share one bucket."""
    into = clock.now() % 60
    if into > 20:
        clock.advance(60 - into + 1)
    return int(clock.now() // 60)


def _post(base_url: str, *, pin: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    if pin is not None:
        headers["x-route-pin"] = pin
    answer = httpx.post(
        base_url + "/v1/chat/completions",
        json={"model": "fast-chat", "messages": LARGE},
        headers=headers,
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer


def _lease(table: TableView, minute: int) -> tuple[int, int]:
    return (
        table.counter_at("a", "prefill_tokens", minute),
        table.counter_at("a", "prefill_elephants", minute),
    )


@pytest.mark.parametrize("rule", [True, False], ids=["rule on", "rule off"])
def test_a_large_prefill_on_one_process_moves_the_others_large_requests_only_with_the_rule(
    rule: bool,
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    table: TableView,
) -> None:
    cfg = config(deployment("a", upstream_a), deployment("b", upstream_b), **_settings(rule))
    remote, local = spawn_gateway(cfg), start_gateway(cfg)
    minute = _fresh_minute(clock)
    upstream_a.set_faults([{"latency_ms": 5000}])  # a long prefill: no answer for 5 s
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(_post, remote.base_url, pin="a")
        wait_for(lambda: len(upstream_a.requests()), lambda n: n == 1, "a prefilling")
        estimate = prompt_tokens({"messages": LARGE})
        assert estimate >= ELEPHANT_TOKENS
        lease = (estimate, 1) if rule else (0, 0)  # off: nothing is leased or written
        wait_for(lambda: _lease(table, minute), lambda seen: seen == lease, "the remote's lease")
        served = Counter(_post(local.base_url).headers["x-edgeproxy-deployment"] for _ in range(16))
        if rule:
            assert served == Counter({"b": 16})  # a is at its limit of large prefills
        else:
            assert min(served["a"], served["b"]) > 0  # the weights alone (1:1)
        assert held.result(timeout=30).headers["x-edgeproxy-deployment"] == "a"
    table.wait_inflight_zero("a")
    assert _lease(table, minute) == (0, 0)  # released with the outcome, once


def _read_stream(base_url: str, committed: threading.Event) -> str:
    """A large stream: its first token sets ``committed``; then it is read on until the
    upstream's silence times the read out (8 s), and the client leaves."""
    body = {"model": "fast-chat", "messages": LARGE, "stream": True}
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    url = base_url + "/v1/chat/completions"
    first = ""
    timeout = httpx.Timeout(30, read=8)
    with httpx.stream("POST", url, json=body, headers=headers, timeout=timeout) as stream:
        try:
            for line in stream.iter_lines():
                if line.startswith("data: ") and not first:
                    first = line
                    committed.set()
        except httpx.ReadTimeout:
            pass
    return first


def test_a_streams_lease_is_released_at_its_first_token_while_it_runs_on(
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
    table: TableView,
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a), **_settings(True)))
    minute = _fresh_minute(clock)
    # 3 s to the first token (the prefill), then two events and keep-alives: decoding on.
    fault = {"first_token_delay_ms": 3000, "stall_after_chunks": 2, "keepalive_ms": 200}
    upstream_a.set_faults([fault])
    committed = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        stream = pool.submit(_read_stream, gw.base_url, committed)
        estimate = prompt_tokens({"messages": LARGE})
        wait_for(lambda: _lease(table, minute), lambda s: s == (estimate, 1), "the lease")
        assert not committed.is_set()  # held while the prefill runs
        assert committed.wait(30)
        wait_for(lambda: _lease(table, minute), lambda s: s == (0, 0), "the release")
        assert table.counter_at("a", "inflight", minute) == 1  # the attempt runs on
        assert stream.result(timeout=30).startswith("data: ")
    table.wait_inflight_zero("a")
    assert _lease(table, minute) == (0, 0)  # the end of the attempt released nothing twice
