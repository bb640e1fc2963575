"""Who a binding belongs to, per-pool sticky settings, concurrent creators and the admin pin."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from edgeproxy.routing.affinity import caller_id, key_digest
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView
from tests.fixtures.upstream import MakeUpstream
from tests.integration.sticky.helpers import (
    ALICE,
    ALICE_KEY,
    attempts,
    chat,
    served_by,
)

ADMIN_KEY = "sk-admin-fedcba9876543210"


def _sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def test_the_raw_key_never_reaches_the_table(
    start_gateway: Any, upstream_a: Any, table: TableView
) -> None:
    gateway = start_gateway(config(deployment("a", upstream_a)))
    for _ in range(3):
        served_by(chat(gateway))
    table.wait_binding(ALICE, "a")
    dump = repr(table.scan())
    assert _sha(ALICE_KEY) in dump  # the binding is keyed by the hash ...
    assert ALICE_KEY not in dump  # ... and the key itself is nowhere
    assert ALICE_KEY[3:] not in dump


def test_ipv6_callers_in_one_64_share_a_binding(
    monkeypatch: pytest.MonkeyPatch,
    start_gateway: Any,
    make_upstream: MakeUpstream,
    table: TableView,
) -> None:
    # Locally the peer is always 127.0.0.1; a trusted proxy's header carries the client address.
    monkeypatch.setenv("EDGEPROXY_TRUST_FORWARDED_FOR", "true")
    gateway = start_gateway(
        config(deployment("a", make_upstream("a")), deployment("b", make_upstream("b")))
    )

    def anonymous(ip: str) -> list[tuple[str, bool]]:
        return attempts(chat(gateway, key=None, headers={"x-forwarded-for": ip}))

    [(first, _)] = anonymous("2001:db8:0:7:1111:2222:3333:4444")
    table.wait_binding("ip:2001:db8:0:7::/64", first)
    assert anonymous("2001:db8:0:7:9999:8888:7777:6666") == [(first, True)]  # a rotated address
    [(_, sticky)] = anonymous("2001:db8:0:8::1")  # the neighbouring /64 is someone else
    assert not sticky


def test_concurrent_creators_end_with_one_binding_and_both_are_served(
    start_gateway: Any, make_upstream: MakeUpstream, table: TableView
) -> None:
    mocks = [make_upstream(name) for name in ("a", "b")]
    for mock in mocks:
        # Both requests read "no binding" before either answer (and its write) comes back.
        mock.set_faults([], persistent={"latency_ms": 300})
    cfg = config(*(deployment(m.name, m) for m in mocks))
    gateways = [start_gateway(cfg), start_gateway(cfg)]
    keys = [f"sk-racer-{i}" for i in range(4)]

    with ThreadPoolExecutor(max_workers=2 * len(keys)) as pool:
        racing = {key: [pool.submit(chat, gw, key) for gw in gateways] for key in keys}
        served = {key: [served_by(f.result()) for f in futures] for key, futures in racing.items()}

    table.wait_successes(2 * len(keys), "a", "b")
    for key, where in served.items():
        binding = table.wait_bound(caller_id(key_digest(key), None, None))
        assert binding.deployment_id in where
        assert binding.version == 1  # created once; the loser adopted it, never overwrote
    assert len(table.bindings()) == len(keys)


def test_admin_pin_selects_the_deployment_and_disables_fallback(
    start_gateway: Any, make_upstream: MakeUpstream, table: TableView
) -> None:
    a, b, spare = make_upstream("a"), make_upstream("b"), make_upstream("spare")
    gateway = start_gateway(
        config(
            deployment("a", a, priority=1),
            deployment("b", b, priority=0),
            deployment("spare", spare, model="spare-chat"),
            fallbacks=[{"model": "fast-chat", "to": ["spare-chat"]}],
            gateway={
                "api_keys": [
                    {"name": "ops", "sha256": _sha(ADMIN_KEY), "admin": True},
                    {"name": "alice", "sha256": _sha(ALICE_KEY)},
                ]
            },
        )
    )
    pin_b = {"x-route-pin": "b"}
    assert served_by(chat(gateway, headers=pin_b)) == "a"  # ignored for an ordinary client
    assert served_by(chat(gateway, ADMIN_KEY, headers=pin_b)) == "b"

    b.set_faults([{"status": 401}])
    failed = chat(gateway, ADMIN_KEY, headers=pin_b)
    assert failed.status_code == 401  # the pinned deployment's own answer, once
    assert [len(m.requests()) for m in (a, b, spare)] == [1, 2, 0]  # no failover, no fallback

    unknown = chat(gateway, ADMIN_KEY, headers={"x-route-pin": "nope"})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["code"] == "invalid_pin"

    table.wait_binding(ALICE, "a")
    table.wait_successes(1, "b")
    assert (
        table.binding(caller_id(key_digest(ADMIN_KEY), None, None)) is None
    )  # a pin writes no binding


def test_sticky_can_be_switched_off_per_pool(
    start_gateway: Any, upstream_a: Any, upstream_b: Any, table: TableView
) -> None:
    gateway = start_gateway(
        config(
            deployment("a", upstream_a),
            deployment("b", upstream_b),
            pools={"fast-chat": {"sticky": {"enabled": False}}},
        )
    )
    for _ in range(4):
        [(_, sticky)] = attempts(chat(gateway))
        assert not sticky
    table.wait_successes(4, "a", "b")
    assert table.bindings() == []


def test_per_pool_idle_ttl_sets_the_expiry(
    start_gateway: Any, upstream_a: Any, table: TableView, clock: FleetClock
) -> None:
    gateway = start_gateway(
        config(
            deployment("a", upstream_a), pools={"fast-chat": {"sticky": {"idle_ttl_seconds": 120}}}
        )
    )
    before = clock.now()
    served_by(chat(gateway))
    binding = table.wait_binding(ALICE, "a")
    after = clock.now()
    assert before + 120 <= binding.expires_at <= after + 120
