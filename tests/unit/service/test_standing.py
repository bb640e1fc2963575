"""The status page's judgements at a glance, from plain values: rates, last errors, drains, states."""

from __future__ import annotations

from typing import Any

from edgeproxy.config.models import GatewayConfig
from edgeproxy.routing.snapshot import Circuit, CircuitState, OpenCause, PoolSnapshot, Usage
from edgeproxy.service.admin import standing
from edgeproxy.state.audit import AuditEntry

MINUTE = 1000
NOW = MINUTE * 60 + 30.0


def _config(*deps: dict[str, Any], **sections: Any) -> GatewayConfig:
    base = {"provider": "openai_compat", "base_url": "http://127.0.0.1:1", "upstream_model": "m"}
    return GatewayConfig.model_validate({"deployments": [{**base, **d} for d in deps], **sections})


def _open(dep: str, cause: OpenCause = OpenCause.MAINTENANCE) -> Circuit:
    return Circuit(dep, CircuitState.OPEN, open_until=NOW + 300, cause=cause, opened_at=NOW - 1)


def test_the_error_rate_counts_five_minutes_and_not_the_callers_own_errors() -> None:
    buckets = [
        Usage("d", MINUTE - 5, requests=50, transient_failures=50),  # out of the window
        Usage("d", MINUTE - 4, requests=4, transient_failures=1, throttles=1),
        Usage("d", MINUTE, requests=6, configuration_failures=1, request_errors=3),
    ]
    rate = standing.error_rate(buckets, MINUTE)
    assert (rate["requests"], rate["errors"], rate["rate"]) == (10, 3, 0.3)
    assert rate["by_class"] == {"transient": 1, "configuration": 1, "throttle": 1, "request": 3}
    assert standing.error_rate([], MINUTE)["rate"] == 0.0


def test_the_last_error_is_the_latest_minute_with_one_and_its_commonest_class() -> None:
    buckets = [
        Usage("d", MINUTE - 30, transient_failures=1),
        Usage("d", MINUTE - 2, transient_failures=1, throttles=4),
        Usage(
            "d", MINUTE, requests=3, request_errors=3
        ),  # the caller's errors: not the deployment's
    ]
    assert standing.last_error(buckets) == {"class": "throttle", "at": (MINUTE - 2) * 60}
    assert standing.last_error([Usage("d", MINUTE, requests=9, successes=9)]) is None


def _entry(at: float, *changes: dict[str, Any]) -> AuditEntry:
    return AuditEntry(f"e{at}", at, "ops", "deployment.update", "a", list(changes))


def test_a_drain_is_the_newest_switch_to_disabled() -> None:
    entries = [  # newest first, as the store reads them
        _entry(30.0, {"path": "deployments[b].enabled", "new": False}),
        _entry(20.0, {"path": "deployments[a].enabled", "old": False, "new": True}),
        _entry(10.0, {"path": "deployments[a].enabled", "new": False}),
        _entry(5.0, {"path": "deployments[c].weight", "old": 4.5, "new": 0}),  # weight: no drain
    ]
    found = standing.drains(entries, ["a", "b", "c", "d"])
    assert found["a"] == {"at": 10.0, "actor": "ops"}
    assert found["b"] == {"at": 30.0, "actor": "ops"}
    assert "c" not in found
    assert "d" not in found  # drained in the file, or longer ago than the entries read


def test_a_pool_answers_what_the_router_would() -> None:
    config = _config(
        {"id": "a", "model": "p", "weight": 0},
        {"id": "b", "model": "p"},
        {"id": "q1", "model": "q"},
        fallbacks=[{"model": "p", "to": ["q"]}],
    )
    # b can serve: the pool answers.
    assert standing.answer(config, "p", PoolSnapshot(), NOW) is None
    # Only the drained one is left, b's circuit open for 300 s: 503 model_overloaded with
    # b's wait (a drained deployment does not hide a circuit that reopens), fallback named.
    only_drained = PoolSnapshot(circuits={"b": _open("b")})
    assert standing.answer(config, "p", only_drained, NOW) == {
        "status": 503,
        "code": "model_overloaded",
        "retry_after_s": 300.0,
        "fallbacks": ["q"],
    }
    # Every circuit open: 503 model_overloaded, with the wait until the first one ends.
    both = _config({"id": "a", "model": "p"}, {"id": "b", "model": "p"})
    every_open = PoolSnapshot(circuits={"a": _open("a"), "b": _open("b", OpenCause.TRANSIENT)})
    found = standing.answer(both, "p", every_open, NOW)
    assert found is not None
    assert (found["status"], found["code"], found["retry_after_s"]) == (
        503,
        "model_overloaded",
        300.0,
    )
    # At their rpm limits: 429.
    limited = _config({"id": "a", "model": "p", "rpm_limit": 2})
    full = PoolSnapshot(usage={"a": [Usage("a", MINUTE, requests=2)]})
    found = standing.answer(limited, "p", full, NOW)
    assert found is not None
    assert (found["status"], found["code"]) == (429, "rate_limit_exceeded")


def _row(dep: str, **fields: Any) -> dict[str, Any]:
    errors = {"requests": 10, "errors": 0, "rate": 0.0}
    row = {"id": dep, "status": "available", "drained": False, "credential_rejections": 0}
    return {**row, "errors_5m": errors, **fields}


def test_pool_states_order_and_the_summary() -> None:
    failing = _row("f", errors_5m={"requests": 10, "errors": 1, "rate": 0.1})
    assert standing.pool_state([_row("a")], None) == "healthy"
    assert standing.pool_state([_row("a"), failing], None) == "degraded"
    assert standing.pool_state([_row("a", drained=True)], None) == "degraded"
    assert standing.pool_state([_row("a", credential_rejections=1)], None) == "degraded"
    assert standing.pool_state([_row("a")], {"status": 503}) == "down"

    pools = [
        {"pool": "b", "state": "healthy", "deployments": [_row("x")]},
        {"pool": "c", "state": "degraded", "deployments": [failing]},
        {"pool": "a", "state": "healthy", "deployments": [_row("x")]},  # x again: counted once
        {"pool": "d", "state": "down", "deployments": [_row("y", status="cooldown")]},
    ]
    assert [p["pool"] for p in standing.trouble_first(pools)] == ["d", "c", "a", "b"]
    summary = standing.summary(pools)
    assert summary["pools"] == {"total": 4, "down": 1, "degraded": 1}
    assert summary["deployments"]["total"] == 3
    assert summary["deployments"]["cooldown"] == 1
    assert summary["errors_5m"] == {"minutes": 5, "requests": 30, "errors": 1, "rate": 0.0333}


def test_unfinished_streams_count_the_window_and_the_last_is_looked_for_in_every_bucket() -> None:
    buckets = [
        Usage("d", MINUTE - 40, requests=9, unfinished_streams=7),
        Usage("d", MINUTE - 15, requests=3, unfinished_streams=2),  # just out of 15 min
        Usage("d", MINUTE - 14, requests=5, unfinished_streams=1),
        Usage("d", MINUTE, requests=4),
    ]
    assert standing.unfinished_streams(buckets, MINUTE, 15) == {
        "minutes": 15,
        "count": 1,
        "last_at": (MINUTE - 14) * 60,
    }
    assert standing.unfinished_streams(buckets, MINUTE, 60)["count"] == 10
    assert standing.unfinished_streams(buckets[3:], MINUTE, 60) == {
        "minutes": 60,
        "count": 0,
        "last_at": None,
    }
