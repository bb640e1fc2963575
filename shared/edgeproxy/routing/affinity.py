"""Caller identity and sticky-binding lifecycle (pure decisions; the store persists them).

The caller is the first that applies of: the client key's hash, the grant,
the client IP bucket. IPv6 addresses fold to their /64 so that rotating
privacy addresses of one host stay on one deployment. A binding is valid
until its idle TTL passes or its pool's generation moves on; a success
renews it, except within ``RENEW_SLACK_S`` of its last write (at most one
write a minute per conversation: it may lapse that much before a full idle
TTL after the last success, never more).
"""

from __future__ import annotations

import hashlib
import ipaddress

from edgeproxy.routing.snapshot import Binding, BindingKey

UNKNOWN_IP = "ip:unknown"
RENEW_SLACK_S = 60.0  # successes this soon after a binding's write do not rewrite it


def _ip_bucket(client_ip: str) -> str:
    try:
        address = ipaddress.ip_address(client_ip.strip())
    except ValueError:
        return UNKNOWN_IP
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return f"ip:{address.ipv4_mapped}"
        network = ipaddress.IPv6Network((address, 64), strict=False)
        return f"ip:{network.with_prefixlen}"
    return f"ip:{address}"


def key_digest(api_key: str) -> str:
    """The SHA-256 hex digest of a client key: what the configuration lists and bindings name.

    The edge computes it once per request; nothing below the edge sees the raw key.
    """
    return hashlib.sha256(api_key.encode()).hexdigest()


def caller_id(key_hash: str | None, grant_id: str | None, client_ip: str | None) -> str:
    """The affinity identity of a caller, from its key's digest (``key_digest``), grant or IP.

    >>> caller_id(None, None, "2001:db8::1")
    'ip:2001:db8::/64'
    >>> caller_id(None, "g-7", "10.0.0.1")
    'grant:g-7'
    """
    if key_hash:
        return f"key:{key_hash}"
    if grant_id:
        return f"grant:{grant_id}"
    if client_ip:
        return _ip_bucket(client_ip)
    return UNKNOWN_IP


def binding_valid(binding: Binding | None, now: float, pool_generation: int) -> bool:
    """Whether ``binding`` still applies: not idle past its TTL, not from an older generation.

    DynamoDB deletes expired items lazily, so readers must check expiry themselves.
    """
    if binding is None:
        return False
    return now < binding.expires_at and binding.generation >= pool_generation


def should_renew(binding: Binding, now: float, ttl: float) -> bool:
    """Whether a success at ``now`` should rewrite the binding's expiry (003: each renews it).

    Skipped within ``RENEW_SLACK_S`` (or half of a shorter TTL) of the last write,
    so a busy conversation costs one write a minute, not one a request.
    """
    return binding.expires_at - now <= ttl - min(RENEW_SLACK_S, ttl / 2.0)


def new_binding(
    key: BindingKey,
    deployment_id: str,
    now: float,
    ttl: float,
    generation: int,
    previous: Binding | None,
) -> Binding:
    """A binding of ``key`` to ``deployment_id`` expiring ``ttl`` seconds after ``now``.

    ``version`` follows ``previous`` (the stored binding the write is
    conditional on), whatever it named.
    """
    version = previous.version + 1 if previous is not None else 1
    return Binding(
        key=key,
        deployment_id=deployment_id,
        expires_at=now + ttl,
        generation=generation,
        version=version,
    )


def after_success(
    key: BindingKey,
    stored: Binding | None,
    deployment_id: str,
    now: float,
    ttl: float,
    pool_generation: int,
) -> Binding | None:
    """The binding to write after ``deployment_id`` served the caller, or None to write nothing.

    A valid binding to the same deployment is renewed (``should_renew``);
    anything else (absent, expired, stale, or naming another
    deployment) is replaced.
    """
    if (
        stored is not None
        and binding_valid(stored, now, pool_generation)
        and stored.deployment_id == deployment_id
        and not should_renew(stored, now, ttl)
    ):
        return None
    generation = max(pool_generation, stored.generation if stored else 0)
    return new_binding(key, deployment_id, now, ttl, generation, stored)
