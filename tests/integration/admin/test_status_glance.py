"""``/admin/status`` at a glance: error rates, last errors, drains, pool states and the summary."""

from __future__ import annotations

from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.secrets import remember
from tests.fixtures.table import wait_for
from tests.integration.admin.helpers import ADMIN_ACTOR, CLIENT_KEY, admin, chat, keys, ok

SECRET = "sk-upstream-leaked-0123456789abcdef"
remember(SECRET)
NO_CIRCUIT = {"circuit": {"allowed_fails": 100}, "sticky": {"enabled": False}}


def _status(base_url: str) -> dict[str, Any]:
    return ok(admin(base_url, "GET", "/admin/status"))


def _rows(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for pool in report["pools"] for row in pool["deployments"]}


def _version(base_url: str, dep: str) -> str:
    return str(admin(base_url, "GET", f"/admin/deployments/{dep}").headers["etag"])


def test_error_rate_and_last_error_count_the_last_five_minutes_by_class(
    failover_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(
        gateway=keys(),
        router=NO_CIRCUIT,
    )
    # a fails every attempt with a body that names a secret; b serves each request after it.
    upstream_a.set_faults([], persistent={"status": 500, "error": {"message": SECRET}})
    for _ in range(3):
        assert chat(gw.base_url).headers["x-edgeproxy-deployment"] == "b"
    minute = int(clock.now() // 60)

    report = wait_for(
        lambda: _status(gw.base_url),
        # Each outcome is written in the background: wait for all six attempts, not only a's.
        lambda r: (
            _rows(r)["a"]["errors_5m"]["errors"] == 3 and r["summary"]["errors_5m"]["requests"] == 6
        ),
        "a's three failures and b's three answers counted",
    )
    a, b = _rows(report)["a"], _rows(report)["b"]
    assert (a["errors_5m"]["requests"], a["errors_5m"]["rate"]) == (3, 1.0)
    assert a["errors_5m"]["by_class"]["transient"] == 3
    assert a["last_error"] == {"class": "transient", "at": minute * 60}
    assert (b["errors_5m"]["errors"], b["last_error"]) == (0, None)
    assert report["summary"]["errors_5m"] == {
        "minutes": 5,
        "requests": 6,
        "errors": 3,
        "rate": 0.5,
    }
    pool = report["pools"][0]
    assert (pool["state"], pool["answer"]) == ("degraded", None)  # it serves, failing half
    assert report["summary"]["pools"] == {"total": 1, "down": 0, "degraded": 1}
    assert SECRET not in admin(gw.base_url, "GET", "/admin/status").text

    # Five minutes on, the failures are out of the rate's window; the last error stays.
    upstream_a.clear()
    clock.advance(5 * 60)
    a = _rows(_status(gw.base_url))["a"]
    assert (a["errors_5m"]["requests"], a["errors_5m"]["rate"]) == (0, 0.0)
    assert a["last_error"] == {"class": "transient", "at": minute * 60}
    assert _status(gw.base_url)["pools"][0]["state"] == "healthy"


def test_a_drained_pool_answers_503_and_says_so_and_the_drain_is_traced(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a, weight=3),
            deployment("b", upstream_b),
            gateway=keys(),
        )
    )
    answer = admin(
        gw.base_url,
        "PATCH",
        "/admin/deployments/a",
        json={"enabled": False},
        headers={"if-match": _version(gw.base_url, "a")},
    )
    ok(answer)
    report = _status(gw.base_url)
    a = _rows(report)["a"]
    assert (a["status"], a["available"], a["drained"]) == ("disabled", False, True)
    assert a["weight"] == 3  # weight keeps its meaning; the switch is the drain
    assert a["drain"]["actor"] == ADMIN_ACTOR
    deep = {
        r["id"]: r
        for p in ok(admin(gw.base_url, "GET", "/health/deep"))["pools"]
        for r in p["deployments"]
    }
    assert (deep["a"]["status"], deep["a"]["available"]) == ("disabled", False)
    assert report["pools"][0]["state"] == "degraded"
    assert report["summary"]["deployments"]["drained"] == 1

    circuit = ok(admin(gw.base_url, "GET", "/admin/circuits/b"))
    ok(
        admin(
            gw.base_url,
            "POST",
            "/admin/circuits/b/open",
            json={"reason": "maintenance", "seconds": 600},
            headers={"if-match": f'"{circuit["version"]}"'},
        )
    )
    report = _status(gw.base_url)
    pool = report["pools"][0]
    assert pool["state"] == "down"
    # a drained, b open for 600 s: the router answers 503 model_overloaded with b's wait.
    answer = pool["answer"]
    assert (answer["status"], answer["code"], answer["fallbacks"]) == (503, "model_overloaded", [])
    assert 590 <= answer["retry_after_s"] <= 600
    assert report["summary"]["pools"]["down"] == 1
    assert report["summary"]["deployments"]["cooldown"] == 1
    # What the gateway really answers is what the view says.
    refused = chat(gw.base_url)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "model_overloaded"
    assert 590 <= int(refused.headers["retry-after"]) <= 600


def test_a_pool_with_every_deployment_disabled_answers_503_naming_it_without_a_call(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(deployment("a", upstream_a), deployment("b", upstream_b), gateway=keys())
    )
    refused = admin(
        gw.base_url,
        "PATCH",
        "/admin/deployments/a",
        json={"enabled": "nope"},
        headers={"if-match": _version(gw.base_url, "a")},
    )
    assert refused.status_code == 400
    assert "enabled" in refused.json()["error"]["message"]
    for dep in ("a", "b"):
        ok(
            admin(
                gw.base_url,
                "PATCH",
                f"/admin/deployments/{dep}",
                json={"enabled": False},
                headers={"if-match": _version(gw.base_url, dep)},
            )
        )
    pool = _status(gw.base_url)["pools"][0]
    assert (pool["state"], pool["answer"]["status"], pool["answer"]["code"]) == (
        "down",
        503,
        "model_unavailable",
    )
    refused = chat(gw.base_url)
    assert refused.status_code == 503
    error = refused.json()["error"]
    assert error["code"] == "model_unavailable"
    assert "disabled" in error["message"]
    assert (upstream_a.requests(), upstream_b.requests()) == ([], [])
    assert _rows(_status(gw.base_url))["b"]["drain"]["actor"] == ADMIN_ACTOR


def test_pools_in_trouble_come_first(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("ok-1", upstream_b, model="alpha"),
            deployment("ok-2", upstream_b, model="beta"),
            deployment("open-1", upstream_a, model="zulu"),
            deployment("open-2", upstream_b, model="zulu"),
            deployment("alone", upstream_a, model="yankee"),
            gateway=keys(),
        )
    )
    for dep in ("open-1", "alone"):
        circuit = ok(admin(gw.base_url, "GET", f"/admin/circuits/{dep}"))
        ok(
            admin(
                gw.base_url,
                "POST",
                f"/admin/circuits/{dep}/open",
                json={"reason": "maintenance", "seconds": 600},
                headers={"if-match": f'"{circuit["version"]}"'},
            )
        )
    report = _status(gw.base_url)
    order = [(p["pool"], p["state"]) for p in report["pools"]]
    assert order == [
        ("yankee", "down"),
        ("zulu", "degraded"),
        ("alpha", "healthy"),
        ("beta", "healthy"),
    ]
    assert report["pools"][0]["answer"]["code"] == "model_overloaded"
    assert report["pools"][0]["answer"]["retry_after_s"] > 500
    assert report["summary"]["pools"] == {"total": 4, "down": 1, "degraded": 1}


def _stream(base_url: str) -> httpx.Response:
    """One streamed chat with the client key, read to its end."""
    return httpx.post(
        base_url + "/v1/chat/completions",
        json={
            "model": "fast-chat",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
        },
        headers={"authorization": f"Bearer {CLIENT_KEY}"},
        timeout=30,
    )


def test_streams_ended_without_a_finish_reason_are_counted_per_deployment_over_the_window(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a, priority=1, counter_shards=4),
            deployment("b", upstream_b),
            gateway=keys(),
            router=NO_CIRCUIT,
        )
    )
    # a ends two streams with [DONE] and no finish chunk (a server cutting running streams).
    upstream_a.set_faults([{"finish_reason": None}, {"finish_reason": None}])
    for _ in range(3):
        answer = _stream(gw.base_url)
        assert answer.status_code == 200
        assert "data: [DONE]" in answer.text
    minute = int(clock.now() // 60)

    report = wait_for(
        lambda: _status(gw.base_url),
        # the counters are written after the answers: wait for all three, not the first two
        lambda r: (
            _rows(r)["a"]["unfinished_streams"]["count"] == 2
            and _rows(r)["a"]["errors_5m"]["requests"] == 3
        ),
        "a's three answers and two unfinished streams counted",
    )
    a, b = _rows(report)["a"], _rows(report)["b"]
    assert a["unfinished_streams"] == {"minutes": 60, "count": 2, "last_at": minute * 60}
    assert b["unfinished_streams"] == {"minutes": 60, "count": 0, "last_at": None}
    assert (a["errors_5m"]["requests"], a["errors_5m"]["errors"]) == (3, 0)  # answers, not errors

    # Ten minutes on, a five-minute window no longer holds them; the last one stays.
    clock.advance(10 * 60)
    narrow = ok(admin(gw.base_url, "GET", "/admin/status?minutes=5"))
    assert _rows(narrow)["a"]["unfinished_streams"] == {
        "minutes": 5,
        "count": 0,
        "last_at": minute * 60,
    }
    assert _rows(_status(gw.base_url))["a"]["unfinished_streams"]["count"] == 2
    for bad in ("0", "61", "x", "²"):
        refused = admin(gw.base_url, "GET", f"/admin/status?minutes={bad}")
        assert refused.status_code == 400, (bad, refused.text)
        assert refused.json()["error"]["param"] == "minutes"
