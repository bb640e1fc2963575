"""Who is calling: the key check, the caller's role and its affinity identity.

The client key is hashed here, once; only its digest (inside ``caller``)
travels on to the service. A key is, in this order: the bootstrap admin key
(``EDGEPROXY_ADMIN_KEY_REF``: the gateway's owner), a legacy YAML key
(``gateway.api_keys``, never an admin: an ``admin: true`` entry is imported
into the table when its owner stores it, see ``service/admin/owner_guard``,
and is otherwise not a key at all), or a key of the table (``edgeproxy keys
create``). Digests are compared in
constant time; a table key is found by its digest (a hash lookup, which tells
a timing observer nothing about keys it does not already hold).
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.requests import Request

from edgeproxy.config.models import ApiKey, GatewayConfig
from edgeproxy.config.roles import Role
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.affinity import caller_id, key_digest
from edgeproxy.routing.judge.reasons import Reason, unauthenticated
from edgeproxy.routing.judge.ruling import key_refusal, model_refusal
from edgeproxy.service.keys import KeyRing

MAX_KEY_CHARS = 256  # longer is malformed: refused without a lookup


@dataclass(frozen=True, slots=True)
class Identity:
    """An authenticated caller.

    ``caller``: its affinity id (key digest, grant or IP). ``admin``: the
    caller has the admin role. ``role``: its role (anonymous callers, only
    with authentication off, are ``free``). ``key``: the table key it
    presented (its limits apply), None for the bootstrap admin, YAML keys and
    anonymous callers. ``name``: the key's name, for audit records.
    ``anonymous``: no key was presented (authentication is off). ``owner``:
    the bootstrap admin key, the only caller that may change what the
    gateway's owner set (``config.roles``). ``slot_holder``: whose share of
    the process's request slots the request takes (``service.limits.slots``):
    the table key's id or a YAML key's digest; None for the bootstrap admin
    and anonymous callers.
    """

    caller: str
    admin: bool
    role: Role = Role.FREE
    key: ClientKey | None = None
    name: str | None = None
    anonymous: bool = False
    owner: bool = False
    slot_holder: str | None = None


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return request.headers.get("x-api-key") or request.headers.get("api-key") or None


def client_ip(request: Request, trust_forwarded_for: bool) -> str | None:
    """The caller's IP: the connection's peer (API Gateway's sourceIp under Mangum).

    ``X-Forwarded-For`` is spoofable, so it is used only when the operator says
    a trusted proxy sets it (and then its first entry).
    """
    if trust_forwarded_for:
        forwarded = request.headers.get("x-forwarded-for", "")
        first = forwarded.split(",")[0].strip()
        if first:
            return first
    return request.client.host if request.client else None


def _yaml_key(keys: Sequence[ApiKey], digest: str) -> ApiKey | None:
    match = None
    for key in keys:  # every entry compared, so timing does not tell which one matched
        if hmac.compare_digest(key.sha256, digest):
            match = key
    return match


async def identify(
    request: Request, config: GatewayConfig, ring: KeyRing, trust_forwarded_for: bool
) -> Identity:
    """Authenticate the request: 401 for a missing, malformed, unknown, revoked or expired key.

    With authentication off (``KeyRing.auth_off``, local only) a missing or
    unknown key is an anonymous ``free`` caller instead; known keys keep
    their role and limits, and revoked or expired ones are still refused.
    """
    key = _bearer(request)
    grant = request.headers.get("x-grant-id") or None
    ip = client_ip(request, trust_forwarded_for)
    if key is None:
        if ring.auth_off:
            return Identity(caller=caller_id(None, grant, ip), admin=False, anonymous=True)
        raise unauthenticated(Reason.NO_KEY).error()
    if len(key) > MAX_KEY_CHARS or not key.isprintable():
        raise unauthenticated(Reason.MALFORMED_KEY).error()
    digest = key_digest(key)
    caller = caller_id(digest, grant, ip)
    if await ring.is_bootstrap_admin(digest):
        return Identity(caller, admin=True, role=Role.ADMIN, name="bootstrap-admin", owner=True)
    legacy = _yaml_key(config.gateway.api_keys, digest)
    # A YAML admin entry grants nothing: admin keys are table keys (listed, revocable).
    if legacy is not None and legacy.effective_role is not Role.ADMIN:
        role = legacy.effective_role
        return Identity(
            caller, admin=False, role=role, name=legacy.name, slot_holder=f"yaml:{digest}"
        )
    stored = await ring.lookup(digest)
    if stored is None:
        if ring.auth_off:  # no authentication: an unknown key only names the caller
            return Identity(caller, admin=False, anonymous=True)
        raise unauthenticated(Reason.UNKNOWN_KEY).error()
    refused = key_refusal(stored, ring.now())
    if refused is not None:
        raise refused.error()
    ring.touch(stored)
    # A table key's affinity identity is its item's digest (its first secret's): the same
    # before and after a rotation, so its sticky bindings stay with it.
    caller = caller_id(stored.digest, grant, ip)
    return Identity(
        caller,
        admin=stored.role is Role.ADMIN,
        role=stored.role,
        key=stored,
        name=stored.name,
        slot_holder=f"key:{stored.id}",
    )


def may_use(who: Identity, model: str, names: Sequence[str] = ()) -> bool:
    """Whether the caller's key lets it ask for ``model``, or for any of its other ``names``
    (its aliases: a key allowed a model may call its aliases, and the other way round)."""
    return model_refusal(who.key, model, names) is None


def check_access(who: Identity, model: str, names: Sequence[str] = ()) -> None:
    """404 (as if absent) when the caller's key may not use ``model`` by any of its names."""
    refused = model_refusal(who.key, model, names)
    if refused is not None:
        raise refused.error()


async def admit(who: Identity, model: str, ring: KeyRing, names: Sequence[str] = ()) -> None:
    """The key's verdict on a request that is not routed (``routing.judge``): its models
    (404, as if absent), then its rpm limit (429)."""
    await ring.admit(who.key, model, names)
