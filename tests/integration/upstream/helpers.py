"""Builders shared by the upstream integration tests."""

from __future__ import annotations

import socket
from typing import Any

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.config.policies import Operation
from edgeproxy.upstream.call import StreamEvent, UpstreamCall
from edgeproxy.upstream.stream import UpstreamStream
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import LOOPBACK_EGRESS

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "ping"},
]


def deployment(
    upstream: MockUpstream | str, provider: ProviderKind = ProviderKind.OPENAI
) -> Deployment:
    base_url = upstream if isinstance(upstream, str) else upstream.base_url
    return Deployment(
        id=f"dep-{provider.value}",
        model="gpt-4o",
        provider=provider,
        base_url=base_url,
        upstream_model="upstream-model-1",
    )


def chat(
    upstream: MockUpstream | str,
    *,
    stream: bool = False,
    provider: ProviderKind = ProviderKind.OPENAI,
    body: dict[str, Any] | None = None,
    response_timeout_s: float = 2.0,
    idle_timeout_s: float | None = 2.0,
    credential: str | None = "sk-test-credential",
    **kwargs: Any,
) -> UpstreamCall:
    return UpstreamCall(
        deployment(upstream, provider),
        Operation.CHAT,
        body if body is not None else {"model": "gpt-4o", "messages": MESSAGES},
        stream=stream,
        credential=credential,
        response_timeout_s=response_timeout_s,
        idle_timeout_s=idle_timeout_s,
        **{"egress": LOOPBACK_EGRESS, **kwargs},
    )


def closed_port_url() -> str:
    """A loopback URL nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


async def drain(stream: UpstreamStream, into: list[StreamEvent]) -> None:
    """Read ``stream`` to its end into ``into``, closing it whatever happens."""
    async with stream:
        async for event in stream:
            into.append(event)
