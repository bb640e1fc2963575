"""Circuit breakers through the gateway: opening, skipping, 503 with Retry-After, probes.

Cooldowns pass by moving the test's clock, never by sleeping.
"""

from __future__ import annotations

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for
from tests.integration.resilience.helpers import (
    deployment_status,
    keys,
    model_requests,
    post_chat,
    router,
)


def _end_cooldown(clock: FleetClock, base_url: str, model: str, dep: str) -> None:
    """Move the clock just past the open circuit's cooldown: it is half-open now."""
    status = deployment_status(base_url, model)[dep]
    assert status["status"] == "cooldown"
    clock.advance(status["retry_after_ms"] / 1000 + 0.01)
    assert deployment_status(base_url, model)[dep]["status"] == "half_open"


def _wait_until_available(base_url: str, model: str, dep: str) -> None:
    """Until the probe's success (written after its answer went out) closed the circuit."""
    wait_for(
        lambda: deployment_status(base_url, model)[dep]["status"],
        lambda status: status == "available",
        f"{dep}'s circuit closed by its probe",
    )


def test_circuit_opens_blocks_probes_once_and_closes(
    start_gateway, clock: FleetClock, table: TableView, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(
                # Long: the clock is moved past it; no real wait on a loaded machine outlasts it.
                circuit={"allowed_fails": 1, "cooldown_seconds": 30},
                json={"max_attempts": 1},
            ),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([{"status": 500}, {}], persistent={"status": 500})
    # A success while closed clears the count: fail, succeed, fail leaves it closed.
    assert [post_chat(gw.base_url, "fast-chat").status_code for _ in range(2)] == [500, 200]
    # A JSON success records its outcome after the response is sent (off the critical path).
    table.wait_circuit("a", lambda c: c.failures == 0)
    assert post_chat(gw.base_url, "fast-chat").status_code == 500
    assert deployment_status(gw.base_url, "fast-chat")["a"]["status"] == "available"
    # allowed_fails + 1 transient failures in the window open the circuit ...
    assert post_chat(gw.base_url, "fast-chat").status_code == 500
    status = deployment_status(gw.base_url, "fast-chat")["a"]
    assert (status["status"], status["cause"]) == ("cooldown", "transient")
    # ... and while it is open nobody asks the upstream: every circuit open is 503.
    blocked = post_chat(gw.base_url, "fast-chat")
    assert blocked.status_code == 503
    assert blocked.json()["error"]["code"] == "model_overloaded"
    assert 20 <= int(blocked.headers["retry-after"]) <= 30
    assert len(model_requests(upstream_a)) == 4

    upstream_a.clear()
    _end_cooldown(clock, gw.base_url, "fast-chat", "a")
    probe = post_chat(gw.base_url, "fast-chat", metadata=True)
    assert probe.status_code == 200
    [attempt] = probe.json()["unified_routing"]["attempts"]
    assert attempt["probe"] is True
    # The probe's success closes the circuit (recorded after the answer was sent); later
    # requests are ordinary.
    _wait_until_available(gw.base_url, "fast-chat", "a")
    after = post_chat(gw.base_url, "fast-chat", metadata=True)
    assert after.json()["unified_routing"]["attempts"][0]["probe"] is False
    assert len(model_requests(upstream_a)) == 2


def test_failed_probe_reopens_with_a_longer_cooldown(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(
                circuit={"allowed_fails": 0, "cooldown_seconds": 6}, json={"max_attempts": 1}
            ),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent={"status": 502})
    assert post_chat(gw.base_url, "fast-chat").status_code == 502
    _end_cooldown(clock, gw.base_url, "fast-chat", "a")
    assert post_chat(gw.base_url, "fast-chat").status_code == 502  # the probe failed
    status = deployment_status(gw.base_url, "fast-chat")["a"]
    assert status["status"] == "cooldown"
    # cooldown * 2 ** level, plus up to 25 % jitter: 12 to 15 s, less the time since (a loaded
    # machine may take seconds between the probe and this read); more than the first 6 s.
    assert 8_000 <= status["retry_after_ms"] <= 15_000
    assert len(model_requests(upstream_a)) == 2


def test_open_circuit_is_skipped_while_the_pool_serves(
    failover_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(
        router=router(circuit={"allowed_fails": 0, "cooldown_seconds": 30}),
        gateway=keys(),
    )
    upstream_a.set_faults([], persistent={"status": 500})
    for _ in range(3):
        answer = post_chat(gw.base_url, "fast-chat")
        assert answer.status_code == 200
        assert answer.headers["x-edgeproxy-deployment"] == "b"
    assert len(model_requests(upstream_a)) == 1


def test_primary_down_for_a_while_then_back(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("primary", upstream_a, model="main-chat"),
            deployment("backup", upstream_b, model="spare-chat", upstream_model="mock-spare"),
            fallbacks=[{"model": "main-chat", "to": ["spare-chat"]}],
            router=router(
                # Long: the clock is moved past it; no real wait on a loaded machine outlasts it.
                circuit={"allowed_fails": 1, "cooldown_seconds": 30},
                json={"max_attempts": 1},
            ),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent={"status": 503})
    served = []
    for _ in range(4):
        answer = post_chat(gw.base_url, "main-chat", metadata=True)
        assert answer.status_code == 200
        routing = answer.json()["unified_routing"]
        assert routing["fallback_used"] is True
        assert answer.json()["model"] == "mock-spare"
        served.append(routing["deployment"])
    assert served == ["backup"] * 4
    assert len(model_requests(upstream_a)) == 2  # then its circuit opened: no more calls

    upstream_a.set_faults([])  # recovered
    _end_cooldown(clock, gw.base_url, "main-chat", "primary")
    for expected_probe in (True, False, False):
        answer = post_chat(gw.base_url, "main-chat", metadata=True)
        routing = answer.json()["unified_routing"]
        assert (routing["deployment"], routing["fallback_used"]) == ("primary", False)
        assert routing["attempts"][0]["probe"] is expected_probe
        if expected_probe:  # until its success is recorded, the lease sends others elsewhere
            _wait_until_available(gw.base_url, "main-chat", "primary")
    assert len(model_requests(upstream_a)) == 5
    assert len(model_requests(upstream_b)) == 4


def test_every_circuit_open_is_503_with_retry_after(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            deployment("b", upstream_b),
            router=router(circuit={"allowed_fails": 0, "cooldown_seconds": 20}),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent={"status": 500})
    upstream_b.set_faults([], persistent={"status": 500})
    assert post_chat(gw.base_url, "fast-chat").status_code == 500
    for stream in (False, True):
        answer = post_chat(gw.base_url, "fast-chat", stream=stream)
        assert answer.status_code == 503  # held headers: a stream keeps the real status too
        assert answer.json()["error"]["code"] == "model_overloaded"
        assert 15 <= int(answer.headers["retry-after"]) <= 20
    assert len(model_requests(upstream_a)) + len(model_requests(upstream_b)) == 2


def test_fallback_chains_stop_at_a_loop(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            deployment("b", upstream_b, model="spare-chat"),
            fallbacks=[
                {"model": "fast-chat", "to": ["spare-chat"]},
                {"model": "spare-chat", "to": ["fast-chat"]},
            ],
            router=router(json={"max_attempts": 1}),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent={"status": 500})
    upstream_b.set_faults([], persistent={"status": 502})
    answer = post_chat(gw.base_url, "fast-chat")
    assert answer.status_code == 502  # the last upstream answer, once each model was tried
    assert len(model_requests(upstream_a)) == 1
    assert len(model_requests(upstream_b)) == 1
