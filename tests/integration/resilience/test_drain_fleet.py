"""A drain through the admin API holds fleet-wide within the configuration propagation bound.

Two gateway processes share one table. ``usage-based-rpm`` ranks the
deployment with the fewest requests this minute first, so once the other one
has served, the drained deployment is the strategy's first choice on every
request (weight 0 would not stop it: 000 gives weight no meaning there).
After ``PATCH {"enabled": false}`` on one gateway and the configuration
cache's bound on the fleet's clock, neither gateway sends it a request; the
CLI's ``undrain`` brings it back and both gateways say so.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from edgeproxy.cli import main
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.integration.resilience.helpers import (
    ADMIN_KEY,
    CLIENT_KEY,
    HELLO,
    keys,
    model_requests,
    router,
)

CONFIG_BOUND_S = 0.3  # the test gateways cache configuration for 0.2 s (TEST_ENV)
DEADLINE_S = 15.0


def _admin(url: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {ADMIN_KEY}", **kwargs.pop("headers", {})}
    return httpx.request(method, url + path, headers=headers, timeout=30, **kwargs)


def _chat(url: str) -> httpx.Response:
    body = {"model": "fast-chat", "messages": HELLO}
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    return httpx.post(url + "/v1/chat/completions", json=body, headers=headers, timeout=30)


def _status_of(url: str, dep: str) -> str:
    report = _admin(url, "GET", "/health/deep").json()
    return next(r["status"] for p in report["pools"] for r in p["deployments"] if r["id"] == dep)


def _wait_status(urls: list[str], dep: str, status: str) -> None:
    """Poll every gateway (the clock stands still) until it reports ``status`` for ``dep``."""
    deadline = time.monotonic() + DEADLINE_S
    while [_status_of(u, dep) for u in urls] != [status] * len(urls):
        assert time.monotonic() < deadline, f"{dep} never {status} on every gateway"
        time.sleep(0.05)


def test_a_drain_through_the_admin_api_holds_on_every_gateway(
    spawn_gateway: Any,
    start_gateway: Any,
    clock: FleetClock,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = config(
        deployment("a", upstream_a, weight=5),
        deployment("b", upstream_b),
        router=router(strategy="usage-based-rpm", sticky=True),
        gateway=keys(),
    )
    remote, local = spawn_gateway(cfg), start_gateway(cfg)
    urls = [remote.base_url, local.base_url]
    for url in urls:
        assert _chat(url).status_code == 200

    etag = _admin(local.base_url, "GET", "/admin/deployments/a").headers["etag"]
    drained = _admin(
        local.base_url,
        "PATCH",
        "/admin/deployments/a",
        json={"enabled": False},
        headers={"if-match": etag},
    )
    assert drained.status_code == 200, drained.text
    assert (drained.json()["enabled"], drained.json()["weight"]) == (False, 5)
    clock.advance(CONFIG_BOUND_S)
    _wait_status(urls, "a", "disabled")

    upstream_a.clear()
    answers = [_chat(urls[i % 2]) for i in range(20)]
    assert {a.status_code for a in answers} == {200}
    assert model_requests(upstream_a) == []  # neither gateway, whatever the strategy ranks
    assert len(model_requests(upstream_b)) >= 20

    # The CLI's undrain, through the other gateway: both see it within the same bound.
    monkeypatch.setenv("EDGEPROXY_ADMIN_KEY", ADMIN_KEY)
    assert main(["undrain", "a", "--url", remote.base_url]) == 0
    assert "a: enabled" in capsys.readouterr().out
    clock.advance(CONFIG_BOUND_S)
    _wait_status(urls, "a", "available")
    assert main(["drain", "a", "--url", local.base_url]) == 0
    assert "a: disabled (drained)" in capsys.readouterr().out
    clock.advance(CONFIG_BOUND_S)
    _wait_status(urls, "a", "disabled")
    main(["status", "--url", remote.base_url])
    row = next(
        line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("a ")
    )
    assert row.split()[:2] == ["a", "disabled"]
