"""The egress rule where connections are made: resolved names, at admin writes and at connect time.

``config.egress`` judges literal addresses when a configuration loads;
a host name can only be judged once resolved. ``GuardedResolver`` is the
upstream connector's resolver: every name is resolved through it, once per
new connection (no DNS cache), and a name any of whose addresses the rule
refuses fails to connect, so a name that resolved to a public address at the
admin write and to ``169.254.169.254`` later (DNS rebinding) never receives
a request. The rule in force is the calling request's (``EGRESS``, set by
the transport from the request's ``egress`` extension). ``name_problems``
resolves the names of a configuration when an admin writes it (a name that
does not resolve then is left to the connect-time check).
"""

from __future__ import annotations

import asyncio
import contextvars
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from edgeproxy.config.egress import (
    Address,
    EgressSettings,
    is_canonical,
    literal_address,
    refusal,
    url_host,
)
from edgeproxy.config.entry_rules import Problem
from edgeproxy.config.models import GatewayConfig
from edgeproxy.tls import verified_context

EGRESS: contextvars.ContextVar[EgressSettings | None] = contextvars.ContextVar(
    "edgeproxy_egress", default=None
)
REFUSED = "the upstream address is refused by the egress rule"
RESOLVE_TIMEOUT_S = 2.0  # an admin write does not wait longer for DNS

# Resolves a host name to its addresses (the event loop's getaddrinfo by default).
NameResolver = Callable[[str], Awaitable[list[Address]]]


def host_refusal(host: str, addresses: list[Address], egress: EgressSettings) -> str | None:
    """Why connecting to ``host`` at ``addresses`` is refused (None: it is not)."""
    if egress.allows_host(host):
        return None
    for address in addresses:
        reason = refusal(address, egress)
        if reason is not None:
            return reason
    return None


def literal_refusal(url: str, egress: EgressSettings) -> str | None:
    """Why a request to ``url`` is refused before any connection, for a literal address host."""
    host = url_host(url)
    if host is None:
        return "the URL has no host"
    address = literal_address(host)
    if address is None or egress.allows_host(host):
        return None
    if not is_canonical(host, address):
        return f"non-standard address form {host!r}"
    return refusal(address, egress)


class GuardedResolver(AbstractResolver):
    """Resolves through ``inner``, then applies the calling request's egress rule."""

    def __init__(self, inner: AbstractResolver) -> None:
        self._inner = inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        egress = EGRESS.get()
        if egress is not None:
            addresses = [literal_address(str(r["host"])) for r in results]
            if any(a is None for a in addresses):
                raise OSError(REFUSED)  # aiohttp reports it as a failed connect
            if host_refusal(host, [a for a in addresses if a is not None], egress):
                raise OSError(REFUSED)  # aiohttp reports it as a failed connect
        return results

    async def close(self) -> None:
        await self._inner.close()


async def system_resolve(host: str) -> list[Address]:
    """``host``'s addresses by the event loop's resolver (getaddrinfo in a thread)."""
    infos: list[Any] = await asyncio.get_running_loop().getaddrinfo(
        host, None, type=socket.SOCK_STREAM
    )
    out = [literal_address(str(info[4][0])) for info in infos]
    return [a for a in out if a is not None]


async def name_problems(
    config: GatewayConfig, resolve: NameResolver = system_resolve
) -> list[Problem]:
    """The deployments whose ``base_url`` names a host that resolves to a refused address.

    Every name is resolved at once, all within ``RESOLVE_TIMEOUT_S``.
    """
    egress = config.gateway.egress
    named: list[tuple[int, str]] = []
    for index, dep in enumerate(config.deployments):
        host = url_host(dep.base_url) if dep.base_url else None
        if host is not None and literal_address(host) is None and not egress.allows_host(host):
            named.append((index, host))

    async def lookup(host: str) -> list[Address] | None:
        try:
            async with asyncio.timeout(RESOLVE_TIMEOUT_S):
                return await resolve(host)
        except (OSError, TimeoutError):
            return None  # unresolvable now: the connect-time check still applies

    found = await asyncio.gather(*(lookup(host) for _, host in named))
    out: list[Problem] = []
    for (index, host), addresses in zip(named, found, strict=True):
        reason = host_refusal(host, addresses or [], egress)
        if reason is not None:
            out.append(
                Problem(
                    f"deployments[{index}].base_url", "base_url", f"{host} resolves to {reason}"
                )
            )
    return out


def guarded_connector() -> aiohttp.TCPConnector:
    """Connections for a one-off post (the alert webhook): names resolved through
    ``GuardedResolver``, HTTPS verified with the process's one context (never aiohttp's
    import-time default, which a Lambda function's ``lean_init`` leaves trusting nothing)."""
    return aiohttp.TCPConnector(
        ssl=verified_context(), resolver=GuardedResolver(aiohttp.DefaultResolver())
    )
