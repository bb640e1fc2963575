"""A binding never forces a request onto a deployment that cannot take it now."""

from __future__ import annotations

from typing import Any

from edgeproxy.routing.snapshot import Circuit, CircuitState, OpenCause
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.gateway import store
from tests.fixtures.table import TableView
from tests.fixtures.upstream import MakeUpstream
from tests.integration.sticky.helpers import ALICE, attempts, chat, served_by

CONFIG_REFRESH_S = 0.3  # the test gateways cache configuration for 0.2 s (TEST_ENV)


def _bound_to_a(start_gateway: Any, table: TableView, a_fields: dict[str, Any], mocks: Any) -> Any:
    a, b = mocks
    cfg = config(deployment("a", a, priority=1, **a_fields), deployment("b", b, priority=0))
    gateway = start_gateway(cfg)
    assert served_by(chat(gateway)) == "a"
    table.wait_binding(ALICE, "a")
    return gateway


def _change_config(
    clock: FleetClock, dynamo_endpoint: str, gateway_table: str, cfg: dict[str, Any]
) -> None:
    store(dynamo_endpoint, gateway_table, cfg)
    clock.advance(CONFIG_REFRESH_S)  # past every gateway's configuration cache


def _skipped_and_replaced(gateway: Any, table: TableView, a: Any) -> None:
    answer = chat(gateway)
    assert attempts(answer) == [("b", False)]  # a is not even tried
    table.wait_binding(ALICE, "b")
    assert attempts(chat(gateway)) == [("b", True)]
    assert len(a.requests()) == 1  # only the first request


def test_weight_zero_skips_the_bound_deployment(
    start_gateway: Any,
    make_upstream: MakeUpstream,
    table: TableView,
    dynamo_endpoint: str,
    gateway_table: str,
    clock: FleetClock,
) -> None:
    a, b = make_upstream("a"), make_upstream("b")
    gateway = _bound_to_a(start_gateway, table, {}, (a, b))
    drained = config(deployment("a", a, priority=1, weight=0), deployment("b", b, priority=0))
    _change_config(clock, dynamo_endpoint, gateway_table, drained)
    _skipped_and_replaced(gateway, table, a)


def test_a_disabled_deployment_is_skipped_though_bound(
    start_gateway: Any,
    make_upstream: MakeUpstream,
    table: TableView,
    dynamo_endpoint: str,
    gateway_table: str,
    clock: FleetClock,
) -> None:
    a, b = make_upstream("a"), make_upstream("b")
    gateway = _bound_to_a(start_gateway, table, {}, (a, b))
    drained = config(deployment("a", a, priority=1, enabled=False), deployment("b", b))
    _change_config(clock, dynamo_endpoint, gateway_table, drained)
    _skipped_and_replaced(gateway, table, a)


def test_removed_deployment_is_skipped(
    start_gateway: Any,
    make_upstream: MakeUpstream,
    table: TableView,
    dynamo_endpoint: str,
    gateway_table: str,
    clock: FleetClock,
) -> None:
    a, b = make_upstream("a"), make_upstream("b")
    gateway = _bound_to_a(start_gateway, table, {}, (a, b))
    _change_config(clock, dynamo_endpoint, gateway_table, config(deployment("b", b)))
    _skipped_and_replaced(gateway, table, a)


def test_open_circuit_skips_the_bound_deployment(
    start_gateway: Any, make_upstream: MakeUpstream, table: TableView, clock: FleetClock
) -> None:
    a, b = make_upstream("a"), make_upstream("b")
    gateway = _bound_to_a(start_gateway, table, {}, (a, b))
    now = clock.now()
    table.put_circuit(
        Circuit(
            "a",
            CircuitState.OPEN,
            failures=4,
            window_start=now,
            open_until=now + 60,
            cause=OpenCause.TRANSIENT,
            version=1,
            opened_at=now,
        )
    )
    _skipped_and_replaced(gateway, table, a)


def test_a_binding_never_pins_a_request_the_deployment_cannot_serve(
    start_gateway: Any, make_upstream: MakeUpstream, table: TableView
) -> None:
    a, b = make_upstream("a"), make_upstream("b")
    vision: dict[str, Any] = {"modalities": ["text", "image"]}
    cfg = config(deployment("a", a, priority=1), deployment("b", b, priority=0, **vision))
    gateway = start_gateway(cfg)
    assert served_by(chat(gateway)) == "a"
    table.wait_binding(ALICE, "a")

    answer = chat(gateway, image=True)
    assert attempts(answer) == [("b", False)]  # the text-only binding is passed over
    assert len(a.requests()) == 1
    # The last successful target now holds the conversation (image included).
    table.wait_binding(ALICE, "b")


def test_a_bound_deployment_over_its_rpm_limit_is_skipped(
    start_gateway: Any, make_upstream: MakeUpstream, table: TableView, clock: FleetClock
) -> None:
    a, b = make_upstream("a"), make_upstream("b")
    clock.advance(60 - clock.now() % 60)  # a fresh minute bucket: both requests fall in it
    gateway = _bound_to_a(start_gateway, table, {"rpm_limit": 1}, (a, b))
    _skipped_and_replaced(gateway, table, a)
