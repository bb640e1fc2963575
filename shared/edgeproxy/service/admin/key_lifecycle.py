"""A client key's lifecycle after creation: update, rotate, revoke (admin API and CLI).

Each is a read, then a write conditional on the version read
(``state/dynamo_key_lifecycle.py``). A lost race is re-read and re-applied
(an update names only the fields it changes, so applying it to the newer
key loses nothing), unless the caller named the version it expected: then
it is a 409. Revoking a revoked key changes nothing and says so
(``changed`` False), so the caller writes no second audit entry.

Rotation keeps the key's item, and with it the id, limits, spend and the
affinity identity (``identity.py`` names a table key's caller by the key
item's digest, so sticky bindings survive it); the previous secret is
accepted until ``now + grace_seconds``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import NotFound, RequestError, VersionConflict
from edgeproxy.routing.access import KEY_PREFIX, ClientKey, display_prefix
from edgeproxy.routing.affinity import key_digest
from edgeproxy.state.store import KeyFinder, KeyLifecycleStore

ATTEMPTS = 5  # re-reads after lost races before answering 409
DEFAULT_GRACE_S = 24 * 3600.0
SECRET_BYTES = 32


@dataclass(frozen=True, slots=True)
class Change:
    """What a lifecycle write did: the key before and after; ``changed`` False: nothing."""

    before: ClientKey
    after: ClientKey
    changed: bool = True
    secret: str | None = None  # a rotation's new secret (shown once)


def unknown_models(models: Iterable[str] | None, config: GatewayConfig) -> list[str]:
    """The names in ``models`` that ``config`` serves no pool for (``m``, ``m:group`` or an
    alias of either)."""
    served = set(config.public_models())
    served |= {p.split(":", 1)[0] for p in served}
    return sorted({m for m in models or () if config.canonical(m) not in served})


def check_models(models: Iterable[str] | None, config: GatewayConfig) -> None:
    """400 naming the first model the configuration does not serve."""
    missing = unknown_models(models, config)
    if missing:
        raise RequestError(
            f"models: the configuration serves no model `{missing[0]}`"
            + (f" (nor {', '.join(missing[1:])})" if missing[1:] else ""),
            param="models",
            code="model_not_found",
        )


async def current_key(store: KeyFinder, key_id: str, expected: int | None) -> ClientKey:
    """The stored key ``key_id`` (404 without one) at version ``expected`` (409 at another;
    None: any): where every change to a key starts (here and ``teams``)."""
    key = await store.find_client_key(key_id)
    if key is None:
        raise NotFound(f"No API key has the id `{key_id}`.", param="id")
    if expected is not None and key.version != expected:
        raise VersionConflict(
            f"Key `{key_id}` is at version {key.version}, not {expected}: re-read it first.",
            param="version",
        )
    return key


def _conflict(key_id: str) -> VersionConflict:
    return VersionConflict(f"Key `{key_id}` changed meanwhile; re-read it and retry.")


async def update_key(
    store: KeyLifecycleStore,
    key_id: str,
    fields: Mapping[str, Any],
    expected_version: int | None = None,
) -> Change:
    """Apply ``fields`` (``ClientKey`` field names) to the key; 404, or 409 on a stale version."""
    for _ in range(ATTEMPTS):
        key = await current_key(store, key_id, expected_version)
        if key.revoked:
            raise RequestError(f"Key `{key_id}` is revoked; it cannot be changed.", param="id")
        after = replace(key, **fields, version=key.version + 1)
        if await store.update_client_key(after, key.version):
            return Change(key, after)
        if expected_version is not None:
            break
    raise _conflict(key_id)


async def revoke_key(store: KeyLifecycleStore, key_id: str) -> Change:
    """Mark the key revoked; a revoked key is answered as it is (``changed`` False)."""
    for _ in range(ATTEMPTS):
        key = await current_key(store, key_id, None)
        if key.revoked:
            return Change(key, key, changed=False)
        after = replace(key, revoked=True, version=key.version + 1)
        if await store.update_client_key(after, key.version):
            return Change(key, after)
    raise _conflict(key_id)


async def rotate_key(
    store: KeyLifecycleStore, key_id: str, now: float, grace_seconds: float = DEFAULT_GRACE_S
) -> Change:
    """A new secret for the key; the current one accepted until ``now + grace_seconds``."""
    until = now + grace_seconds
    for _ in range(ATTEMPTS):
        key = await current_key(store, key_id, None)
        if key.revoked:
            raise RequestError(f"Key `{key_id}` is revoked; it cannot be rotated.", param="id")
        secret = KEY_PREFIX + secrets.token_urlsafe(SECRET_BYTES)
        after = replace(
            key,
            secret_digest=key_digest(secret),
            prefix=display_prefix(secret),
            rotated_at=now,
            grace_until=until,
            # The first secret lives in the key item itself: its retirement is stored there.
            secret_expires_at=until if key.secret_digest is None else key.secret_expires_at,
            version=key.version + 1,
        )
        if await store.rotate_client_key(after, key.version, key.secret_digest, until):
            return Change(key, after, secret=secret)
    raise _conflict(key_id)
