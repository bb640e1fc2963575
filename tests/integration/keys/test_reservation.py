"""Key reservation by role (``min_role``): capacity kept for higher roles, invisible below.

``premium`` is reserved for ``pro`` callers; ``shared`` serves anyone, up to
2 requests a minute. A ``pro`` caller spends the reserved capacity first; a
``free`` caller goes to ``shared`` and, once that is spent, gets 429 as if
``premium`` did not exist. Nothing the free caller did touches ``premium``.

A reservation is the credential's (001): deployments naming one credential
all take the strictest ``min_role`` among them, in every pool, so each
reserved deployment here has a credential of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edgeproxy.routing.snapshot import CircuitState
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.secrets import remember
from tests.fixtures.table import TableView
from tests.integration.keys.helpers import ENV, chat, create_key

DEPLOYMENT = "x-edgeproxy-deployment"
PRO_CREDENTIAL = "env:EDGEPROXY_CRED_PRO_KEY"
VIP_CREDENTIAL = "env:EDGEPROXY_CRED_VIP_KEY"
CREDENTIALS = {
    "EDGEPROXY_CRED_PRO_KEY": remember("sk-pro-upstream-key"),
    "EDGEPROXY_CRED_VIP_KEY": remember("sk-vip-upstream-key"),
}


def test_a_pro_caller_reaches_the_reserved_deployment_and_a_free_caller_never_does(
    start_gateway: Callable[..., Any],
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    table: TableView,
    clock: FleetClock,
) -> None:
    into = clock.now() % 60
    if into > 40:  # the shared deployment's rpm limit counts within one minute
        clock.advance(60 - into + 1)
    cfg = config(
        deployment("premium", upstream_a, min_role="pro", credential=PRO_CREDENTIAL),
        deployment("shared", upstream_b, rpm_limit=2),
        deployment(
            "vip", upstream_a, model="vip-chat", min_role="internal", credential=VIP_CREDENTIAL
        ),
        router={"sticky": {"enabled": False}},
        fallbacks=[{"model": "vip-chat", "to": ["fast-chat"]}],
    )
    gw = start_gateway(cfg, env={**ENV, **CREDENTIALS})
    pro = create_key(gw.base_url, name="pro", role="pro")["key"]
    free = create_key(gw.base_url, name="free", role="free")["key"]

    served = [chat(gw.base_url, pro) for _ in range(3)]
    assert [(a.status_code, a.headers[DEPLOYMENT]) for a in served] == [(200, "premium")] * 3
    upstream_a.clear()

    first = [chat(gw.base_url, free) for _ in range(2)]
    assert [(a.status_code, a.headers[DEPLOYMENT]) for a in first] == [(200, "shared")] * 2
    refused = chat(gw.base_url, free)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert int(refused.headers["retry-after"]) >= 1
    # A pool reserved wholly above the caller: its fallback chain runs instead
    # (fast-chat, where the free caller's capacity is spent).
    assert chat(gw.base_url, free, "vip-chat").status_code == 429
    assert upstream_a.requests() == []  # the free caller never reached a reserved deployment
    pro_vip = chat(gw.base_url, pro, "vip-chat")  # vip is above pro: served by the fallback
    assert (pro_vip.status_code, pro_vip.headers[DEPLOYMENT]) == (200, "premium")

    # The reserved deployments' state is untouched by everything the lower callers did.
    for reserved in ("premium", "vip"):
        circuit = table.circuit(reserved)
        assert (circuit.state, circuit.version, circuit.failures) == (CircuitState.CLOSED, 0, 0)
    assert table.successes("vip") == 0
    assert chat(gw.base_url, pro).headers[DEPLOYMENT] == "premium"  # still there for pro


def test_every_deployment_sharing_a_pro_reserved_credential_is_out_of_a_free_caller_s_reach(
    start_gateway: Callable[..., Any],
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    table: TableView,
) -> None:
    # ``second`` and ``side`` declare no reservation, but spend premium's credential:
    # ``second`` in the same pool, ranked first for everyone, ``side`` in another pool.
    cfg = config(
        deployment("premium", upstream_a, min_role="pro", credential=PRO_CREDENTIAL),
        deployment("second", upstream_a, priority=1, credential=PRO_CREDENTIAL),
        deployment("open", upstream_b),
        deployment("side", upstream_a, model="side-chat", credential=PRO_CREDENTIAL),
        router={"sticky": {"enabled": False}},
    )
    gw = start_gateway(cfg, env={**ENV, **CREDENTIALS})
    pro = create_key(gw.base_url, name="pro", role="pro")["key"]
    free = create_key(gw.base_url, name="free", role="free")["key"]

    served = [chat(gw.base_url, free) for _ in range(6)]
    assert [(a.status_code, a.headers[DEPLOYMENT]) for a in served] == [(200, "open")] * 6
    refused = chat(gw.base_url, free, "side-chat")  # a pool wholly on the reserved credential
    assert refused.status_code == 429, refused.text
    assert upstream_a.requests() == []  # the pro credential was never spent for the free key
    assert [table.usage_total(d, "requests") for d in ("premium", "second", "side")] == [0, 0, 0]

    # The pro caller reaches both deployments of its credential, and the other pool's.
    assert chat(gw.base_url, pro).headers[DEPLOYMENT] == "second"  # the higher tier
    assert chat(gw.base_url, pro, "side-chat").headers[DEPLOYMENT] == "side"
    table.wait_successes(1, "second")
    sent = {r["headers"].get("authorization") for r in upstream_a.requests()}
    assert sent == {"Bearer sk-pro-upstream-key"}
