"""The egress rule: which addresses an upstream URL may point at.

A deployment's ``base_url`` receives the deployment's credential, so an
admin key must not be able to aim one at the gateway's own neighbourhood:
cloud metadata (``169.254.169.254``, ``fd00:ec2::254``), loopback, private
and shared ranges, link-local, multicast, unspecified and every other
special-purpose range are refused, unless ``gateway.egress.allow`` names
the host or a range holding the address (the local example and the tests
allow ``127.0.0.0/8`` for their loopback mocks). ``make run``'s runner, and
only it, allows loopback for its whole process (``allow_local_loopback``).

Pure: no resolution here. ``literal_address`` reads a host the way the
system resolver would (``inet_aton``: ``127.1``, ``2130706433``,
``0x7f.1``, ``0177.0.0.1`` are all ``127.0.0.1``), so a literal is judged
at load time; names are resolved and judged by ``upstream.egress``, at
admin writes and again at connect time (DNS rebinding).

    gateway:
      egress:
        allow: ["127.0.0.0/8", "vllm.internal"]

``bedrock_endpoints`` names the VPC endpoints bedrock deployments may sign
for besides AWS's own (``config.bedrock_endpoints``). The whole section is
the owner's (``config.roles``): an admin key cannot change it.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from edgeproxy.config.base import Strict
from edgeproxy.config.bedrock_endpoints import origin

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT (RFC 6598)
NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


class EgressSettings(Strict):
    """``gateway.egress``: hosts and ranges upstream URLs may reach despite the rule."""

    # Host names (exact, case-insensitive) or CIDR ranges / addresses.
    allow: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    # Origins bedrock deployments may sign for besides AWS's (normalized once read).
    bedrock_endpoints: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)

    @field_validator("bedrock_endpoints")
    @classmethod
    def _endpoint_origins(cls, values: list[str]) -> list[str]:
        out = []
        for value in values:
            found = origin(value.strip())
            path = urlsplit(value.strip()).path if "://" in value else ""
            if found is None or path not in ("", "/"):
                raise ValueError(f"{value!r} is not an endpoint (scheme://host[:port], no path)")
            out.append(found)
        return out

    @field_validator("allow")
    @classmethod
    def _entries(cls, values: list[str]) -> list[str]:
        for value in values:
            if _network(value) is None and not _is_name(value):
                raise ValueError(f"{value!r} is neither a host name nor an address range")
        return values

    def networks(self) -> list[Network]:
        """The ranges of ``allow``."""
        return [net for net in map(_network, self.allow) if net is not None]

    def allows_host(self, host: str) -> bool:
        """Whether ``host`` is named on the allow list (names only, not ranges)."""
        name = host.rstrip(".").lower()
        return any(entry.rstrip(".").lower() == name for entry in self.allow if _is_name(entry))

    def allows_address(self, address: Address) -> bool:
        """Whether ``address`` lies in an allowed range."""
        return any(address in net for net in self.networks() if net.version == address.version)


def _network(value: str) -> Network | None:
    try:
        return ipaddress.ip_network(value.strip(), strict=False)
    except ValueError:
        return None


def _is_name(value: str) -> bool:
    return literal_address(value) is None and all(
        part and part.replace("-", "").replace("_", "").isalnum()
        for part in value.rstrip(".").split(".")
    )


def url_host(url: str) -> str | None:
    """The host of ``url`` as the client will connect to it (brackets and zone removed)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if host is None:
        return None
    return host.split("%", 1)[0]


def literal_address(host: str) -> Address | None:
    """The address ``host`` denotes without DNS, or None if it is a name.

    IPv6 as written; IPv4 by ``inet_aton``, as the system resolver reads it
    (so ``127.1`` and ``0x7f000001`` are addresses, not names).
    """
    host = host.strip()
    if host.endswith(".") and not host.endswith(".."):
        host = host[:-1]  # an absolute name: the resolver reads ``127.0.0.1.`` as 127.0.0.1
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if ":" in host or not host:
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def is_canonical(host: str, address: Address) -> bool:
    """Whether ``host`` writes ``address`` the standard way (``127.0.0.1``, not ``127.1``)."""
    return host.split("%", 1)[0].lower() == str(address) or (
        address.version == 6 and ipaddress.ip_address(host.split("%", 1)[0]) == address
    )


def _embedded(address: Address) -> list[Address]:
    """Every IPv4 address ``address`` carries (mapped, 6to4, Teredo, NAT64), then itself."""
    out: list[Address] = []
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            out.append(address.ipv4_mapped)
        if address.sixtofour is not None:
            out.append(address.sixtofour)
        if address.teredo is not None:
            out.extend(address.teredo)
        if any(address in net for net in NAT64):
            out.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [*out, address]


def address_problem(address: Address) -> str | None:
    """Why ``address`` may not be an upstream (None: a public unicast address)."""
    for one in _embedded(address):
        kind = _kind(one)
        if kind is not None:
            return kind if one == address else f"{kind} (it carries {one})"
    return None


def _kind(address: Address) -> str | None:
    if address in METADATA:
        return "cloud metadata"
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("shared address space", isinstance(address, ipaddress.IPv4Address) and address in SHARED),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    )
    for name, hit in checks:
        if hit:
            return name
    if not address.is_global:
        return "special-purpose"
    return None


MAPPED = (ipaddress.ip_network("::ffff:0:0/96"), ipaddress.ip_network("::ffff:0:0:0/96"))
COMPATIBLE = ipaddress.ip_network("::/96")


def spelled_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv4-mapped (``::ffff:a.b.c.d``, ``::ffff:0:a.b.c.d``) or
    IPv4-compatible (``::a.b.c.d``) IPv6 address writes, else None (``::`` and ``::1`` too)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if any(address in net for net in MAPPED) or (address in COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


class _Process:
    """What the process's owner decided, outside every document: ``allow_local_loopback``."""

    loopback = False


def allow_local_loopback() -> None:
    """Let this process's upstreams be loopback addresses (``make run``'s runner only).

    On a developer's machine a server on localhost (Ollama, vLLM, llama.cpp)
    is the point; a deployed gateway shares its host with nothing it should
    call. So this is not a setting of the configuration, the admin API or
    the environment: only the local runner calls it, before it loads
    anything, and a document cannot turn it on.
    """
    _Process.loopback = True


def local_loopback() -> bool:
    """Whether ``allow_local_loopback`` was called in this process."""
    return _Process.loopback


def refusal(address: Address, allow: EgressSettings) -> str | None:
    """Why ``address`` is refused under ``allow`` (None: it may be reached).

    An IPv4 address written as IPv6 is refused however it is allowed (write
    it as IPv4), and an allowed IPv4 range does not extend to the IPv6
    addresses that carry it (6to4, Teredo, NAT64): only the address as
    written is looked up in the allow list.
    """
    spelled = spelled_ipv4(address)
    if spelled is not None:
        return f"{address} is IPv4 written as IPv6; upstreams must write it as {spelled}"
    if allow.allows_address(address):
        return None
    kind = address_problem(address)
    if kind is None or (_Process.loopback and kind.startswith("loopback")):
        return None
    return (
        f"{address} is {kind}; upstreams must be public addresses "
        "unless gateway.egress.allow names the host or its range"
    )


def url_problem(url: str, allow: EgressSettings) -> str | None:
    """What the egress rule says of ``url`` without resolving it (None: no objection yet).

    A literal address is judged now (written any way the resolver accepts,
    though only its standard form is accepted); a name is left to
    resolution (``upstream.egress``) unless it is allowed by name.
    """
    host = url_host(url)
    if host is None:
        return "the URL has no host"
    try:
        urlsplit(url).port  # noqa: B018 - reading it is the check (0-65535, digits only)
    except ValueError:
        return "the URL's port is not a number from 0 to 65535"
    address = literal_address(host)
    if address is None:
        return None
    if not is_canonical(host, address):
        return f"{host!r} is a non-standard form of the address {address}; write {address}"
    return refusal(address, allow)
