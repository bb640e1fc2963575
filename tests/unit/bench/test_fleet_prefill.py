"""The fleet simulator's prefill leg: servers in virtual time, routed by the real core."""

from __future__ import annotations

import math

from bench.fleet.prefill import POLICIES, PrefillScenario, _Job, _Replica, rows, run


def test_a_fifo_server_holds_a_short_prompt_behind_a_large_one() -> None:
    server = _Replica("fifo", 10_000.0)
    large, short = _Job(0.0, 200_000, 0.0, 200_000.0), _Job(1.0, 1_000, 1.0, 1_000.0)
    server.take(large)
    server.take(short)
    assert (large.first_token, short.first_token) == (20.0, 20.1)
    usage = server.usage("r", seen_at=5.0)  # both leases held, the large one counted as large
    assert (usage.inflight, usage.prefill_tokens, usage.prefill_elephants) == (2, 201_000, 1)
    server.advance(20.05)
    assert server.usage("r", seen_at=20.05).prefill_tokens == 1_000  # released at first token


def test_a_shared_server_lets_a_short_prompt_through_at_half_the_rate() -> None:
    server = _Replica("shared", 10_000.0)
    large, short = _Job(0.0, 200_000, 0.0, 200_000.0), _Job(0.0, 1_000, 0.0, 1_000.0)
    server.take(large)
    server.take(short)
    server.advance(math.inf)
    assert math.isclose(short.first_token, 0.2)  # 1,000 tokens at 5,000/s
    assert math.isclose(large.first_token, 20.1)  # the whole work at the full rate


def test_on_a_fifo_pool_the_rule_cuts_the_short_requests_tail_at_equal_throughput() -> None:
    scenario = PrefillScenario(server="fifo", seconds=900.0, seed=1)
    off, on = (run(scenario, policy) for policy in ("off (default)", "prefill rule"))
    assert len(off.short_s) == len(on.short_s) > 4000  # the same arrivals
    assert on.q(on.short_s, 0.99) < 0.6 * off.q(off.short_s, 0.99)
    assert math.isclose(on.throughput()[0], off.throughput()[0], rel_tol=0.02)
    table = rows([off, on])
    assert len(table) == 4
    assert all(name in "".join(table) for name in ("off", "prefill rule"))
    assert set(POLICIES) == {"off (default)", "in-flight two choices", "prefill rule"}
