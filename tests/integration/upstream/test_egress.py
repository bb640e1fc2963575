"""The egress rule at connect time: a name is resolved, and judged, for every new connection.

The resolver is a stand-in the test controls (no DNS): ``rebind.test``
answers a public address when the admin write checks it, then the loopback
mock's address when the gateway connects, the way a rebinding DNS server
would. The connection is refused before any byte, so the credential never
leaves.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.egress import EgressSettings, literal_address
from edgeproxy.config.loader import parse_config
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.call import UpstreamCall
from edgeproxy.upstream.client import UpstreamClient
from edgeproxy.upstream.egress import name_problems
from edgeproxy.upstream.transport import AiohttpTransport
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.integration.upstream.helpers import chat


class Rebinding(AbstractResolver):
    """Answers each name from a script of addresses, one per lookup (the last repeats)."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.lookups: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.lookups.append(host)
        script = self.answers[host]
        address = script.pop(0) if len(script) > 1 else script[0]
        return [
            {"hostname": host, "host": address, "port": port, "family": socket.AF_INET,
             "proto": 0, "flags": 0}
        ]  # fmt: skip

    async def close(self) -> None:
        return None


@pytest.fixture
async def resolver_client() -> AsyncIterator[tuple[Rebinding, UpstreamClient]]:
    resolver = Rebinding({})
    http = httpx.AsyncClient(transport=AiohttpTransport(resolver=resolver))
    yield resolver, UpstreamClient(http)
    await http.aclose()


def named(upstream: MockUpstream, host: str) -> Deployment:
    url = upstream.base_url.replace("127.0.0.1", host)
    return Deployment.model_validate(
        {"id": "r", "model": "m", "provider": "openai", "base_url": url, "upstream_model": "u"}
    )


def call_to(upstream: MockUpstream, host: str, egress: EgressSettings) -> UpstreamCall:
    return dataclasses.replace(chat(upstream, egress=egress), deployment=named(upstream, host))


async def test_a_name_rebound_to_loopback_after_the_admin_check_is_refused_at_connect(
    upstream_a: MockUpstream, resolver_client: tuple[Rebinding, UpstreamClient]
) -> None:
    resolver, client = resolver_client
    resolver.answers["rebind.test"] = ["93.184.216.34", "127.0.0.1"]
    dep = named(upstream_a, "rebind.test")
    config = parse_config({"deployments": [dep.model_dump(mode="json")]}, "admin write")

    async def first_lookup(host: str) -> list[object]:  # the admin write's resolution
        found = await resolver.resolve(host)
        return [literal_address(str(r["host"])) for r in found]

    assert await name_problems(config, first_lookup) == []  # public when checked: accepted
    with pytest.raises(UpstreamFault) as caught:
        await client.send(call_to(upstream_a, "rebind.test", EgressSettings()))
    assert caught.value.fault.kind is FaultKind.CONNECT
    assert upstream_a.requests() == []  # nothing, not even the credential, reached it
    assert resolver.lookups == ["rebind.test", "rebind.test"]


async def test_every_new_connection_is_resolved_again(
    upstream_a: MockUpstream, resolver_client: tuple[Rebinding, UpstreamClient]
) -> None:
    resolver, client = resolver_client
    resolver.answers["mock.test"] = ["127.0.0.1"]
    allowed = EgressSettings(allow=["127.0.0.0/8"])
    by_name = EgressSettings(allow=["mock.test"])
    answers = await asyncio.gather(
        client.send(call_to(upstream_a, "mock.test", allowed)),
        client.send(call_to(upstream_a, "mock.test", by_name)),
    )
    assert [a.status for a in answers] == [200, 200]  # the stand-in resolver is the one used
    assert resolver.lookups == ["mock.test", "mock.test"]  # two connections, two lookups
    assert len(upstream_a.requests()) == 2


async def test_literal_addresses_are_judged_before_connecting(
    upstream_a: MockUpstream, resolver_client: tuple[Rebinding, UpstreamClient]
) -> None:
    _, client = resolver_client
    for host in ("127.0.0.1", "127.1", "2130706433"):
        with pytest.raises(UpstreamFault) as caught:
            await client.send(call_to(upstream_a, host, EgressSettings()))
        assert caught.value.fault.kind is FaultKind.CONNECT
    # Even allowed, a non-standard form is a clean connect failure, never a 500.
    with pytest.raises(UpstreamFault) as odd:
        await client.send(call_to(upstream_a, "127.1", EgressSettings(allow=["127.0.0.0/8"])))
    assert odd.value.fault.kind is FaultKind.CONNECT
    assert upstream_a.requests() == []


async def test_the_admin_check_refuses_names_that_resolve_to_refused_addresses() -> None:
    config = parse_config(
        {"deployments": [{"id": "l", "model": "m", "provider": "openai",
                          "base_url": "http://localhost:9/v1", "upstream_model": "u"}]},
        "x",
    )  # fmt: skip
    problems = await name_problems(config)  # /etc/hosts: localhost is loopback, no DNS needed
    assert [(p.path, p.field) for p in problems] == [("deployments[0].base_url", "base_url")]
    assert (
        "localhost resolves to 127.0.0.1 is loopback" in problems[0].reason
        or "::1" in problems[0].reason
    )

    async def unresolvable(host: str) -> list[object]:
        raise OSError("no such name")

    assert await name_problems(config, unresolvable) == []  # left to the connect-time check


async def test_a_stored_base_url_with_a_port_past_65535_is_a_connect_failure_not_a_500(
    upstream_a: MockUpstream, resolver_client: tuple[Rebinding, UpstreamClient]
) -> None:
    # Refused where a configuration comes in (tests/unit/config/test_egress.py); a document
    # stored before that check fails each attempt as a connect error, not with a traceback.
    _, client = resolver_client
    dep = named(upstream_a, "127.0.0.1").model_copy(
        update={"base_url": "http://127.0.0.1:99999/v1"}
    )
    bad = dataclasses.replace(chat(upstream_a, egress=EgressSettings(allow=["127.0.0.0/8"])))
    with pytest.raises(UpstreamFault) as caught:
        await client.send(dataclasses.replace(bad, deployment=dep))
    assert caught.value.fault.kind is FaultKind.CONNECT
