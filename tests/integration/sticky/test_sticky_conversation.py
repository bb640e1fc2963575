"""Bindings through real gateways: one conversation stays put; failures clear, request errors keep."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView
from tests.fixtures.upstream import MakeUpstream
from tests.integration.sticky.helpers import (
    ALICE,
    attempts,
    chat,
    served_by,
    stream_chat,
)

TURNS = 20


def test_a_conversation_stays_on_one_deployment_across_two_processes(
    start_gateway: Any, spawn_gateway: Any, make_upstream: MakeUpstream, table: TableView
) -> None:
    mocks = {name: make_upstream(name) for name in ("a", "b", "c")}
    local = start_gateway(config(*(deployment(n, m) for n, m in mocks.items())))
    other = spawn_gateway(None)  # a second OS process on the same table and configuration

    first = served_by(chat(local))
    bound = table.wait_binding(ALICE, first)
    served = [first]
    for turn in range(1, TURNS):
        answer = chat(other if turn % 2 else local)
        served.append(served_by(answer))
        assert attempts(answer) == [(first, True)]  # routed by the binding, not the strategy

    assert served == [first] * TURNS
    assert {n: len(m.requests()) for n, m in mocks.items()} == {
        n: TURNS if n == first else 0 for n in mocks
    }
    # Within a minute of its write, no turn rewrote the binding: one create, no renewals.
    assert table.binding(ALICE) == bound


def _primary_and_backup(make_upstream: MakeUpstream) -> tuple[MockUpstream, MockUpstream, Any]:
    a, b = make_upstream("a"), make_upstream("b")
    # Priorities make the first choice certain; a binding goes first within its tier.
    return a, b, config(deployment("a", a, priority=1), deployment("b", b, priority=0))


CLEARING = {
    "429": {"status": 429, "retry_after": "1"},
    "401": {"status": 401},
    "403": {"status": 403},
    "500": {"status": 500},
    "503": {"status": 503},
    "524": {"status": 524},
    "reset": {"reset": True},
}


@pytest.mark.parametrize("fault", CLEARING.values(), ids=CLEARING.keys())
def test_failures_clear_the_binding_and_the_next_success_rebinds(
    fault: dict[str, Any], start_gateway: Any, make_upstream: MakeUpstream, table: TableView
) -> None:
    a, _, cfg = _primary_and_backup(make_upstream)
    gateway = start_gateway(cfg)
    assert served_by(chat(gateway)) == "a"
    table.wait_binding(ALICE, "a")

    a.set_faults([fault])
    failed_over = chat(gateway)
    assert served_by(failed_over) == "b"
    assert attempts(failed_over) == [("a", True), ("b", False)]
    rebound = table.wait_binding(ALICE, "b")
    # Version 1: deleted by the failure, then created afresh (a re-point would be version 2).
    assert rebound.version == 1

    a.clear()
    after = chat(gateway)
    if fault in (CLEARING["429"], CLEARING["401"], CLEARING["403"]):
        # Its capacity or configuration circuit is open: a is not eligible, the binding holds.
        assert attempts(after) == [("b", True)]
        assert len(a.requests()) == 0
    else:
        # One transient failure opens nothing: a is eligible and the higher tier, so the
        # caller returns to it (003's tiers before the binding) and is bound there again.
        assert attempts(after) == [("a", False)]
        table.wait_binding(ALICE, "a")


KEEPING = {
    "400": {"status": 400},
    # A 404 that does not say the model is missing is the request's fault, not a's.
    "404": {"status": 404, "error": {"code": None, "message": "No such file: file-abc."}},
}


@pytest.mark.parametrize("fault", KEEPING.values(), ids=KEEPING.keys())
def test_request_errors_keep_the_binding(
    fault: dict[str, Any], start_gateway: Any, make_upstream: MakeUpstream, table: TableView
) -> None:
    a, b, cfg = _primary_and_backup(make_upstream)
    gateway = start_gateway(cfg)
    assert served_by(chat(gateway)) == "a"
    bound = table.wait_binding(ALICE, "a")

    a.set_faults([fault])
    rejected = chat(gateway)
    assert rejected.status_code == fault["status"]  # no failover: b would reject it too
    assert table.binding(ALICE) == bound  # failure writes finish before the answer is sent

    again = chat(gateway)
    assert attempts(again) == [("a", True)]
    assert len(b.requests()) == 0


def test_a_missing_model_404_is_a_configuration_fault_and_the_next_success_rebinds(
    start_gateway: Any, make_upstream: MakeUpstream, table: TableView
) -> None:
    a, _, cfg = _primary_and_backup(make_upstream)
    gateway = start_gateway(cfg)
    served_by(chat(gateway))
    table.wait_binding(ALICE, "a")
    a.set_faults([{"status": 404}])  # the mock's default: code model_not_found
    assert attempts(chat(gateway)) == [("a", True), ("b", False)]
    table.wait_binding(ALICE, "b")


def test_a_stream_binds_and_a_stream_cut_midway_clears(
    start_gateway: Any, make_upstream: MakeUpstream, table: TableView
) -> None:
    a, _, cfg = _primary_and_backup(make_upstream)
    gateway = start_gateway(cfg)
    _, text = stream_chat(gateway)
    assert text.endswith("data: [DONE]\n\n")
    table.wait_binding(ALICE, "a")  # written once the stream completed

    a.set_faults([{"cut_after_chunks": 2}])
    _, text = stream_chat(gateway)
    assert "[DONE]" not in text  # committed to a, then cut: an in-band error ends it
    table.wait_unbound(ALICE)
