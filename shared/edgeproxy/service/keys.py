"""Client keys at the edge: minting, the per-process lookup cache, admission, last-used.

A lookup is one GetItem, then trusted for ``ttl_seconds``
(``EDGEPROXY_KEY_CACHE_TTL_SECONDS``, 10 s): a revocation, a new limit or an
expiry change, a rotation's end of grace reaches every process within that time. Unknown digests are
cached too (bounded, least recently used dropped first), so a flood of wrong
keys costs one read per distinct key and TTL, not one per request.

The bootstrap admin key is a credential reference (``EDGEPROXY_ADMIN_KEY_REF``)
resolved once per process like an upstream credential; only its digest is kept.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from edgeproxy.config.models import ApiKey
from edgeproxy.config.roles import Role
from edgeproxy.errors import CredentialError, StoreError
from edgeproxy.routing.access import KEY_PREFIX, BudgetPeriod, ClientKey, display_prefix
from edgeproxy.routing.affinity import key_digest
from edgeproxy.routing.judge.ruling import KeySnapshot, judge
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.service.limits.enforcement import count_request, planned
from edgeproxy.state.store import KeyStore

logger = logging.getLogger(__name__)

KEY_BYTES = 32
MAX_CACHED = 10_000
TOUCH_EVERY_S = 60.0  # last-used is written at most once a minute per key and process


@dataclass(frozen=True, slots=True)
class NewKey:
    """What creating a key returns: the key itself (shown once) and what is stored."""

    secret: str
    key: ClientKey


def mint_key(
    name: str,
    role: Role,
    now: float,
    *,
    models: frozenset[str] | None = None,
    rpm_limit: int | None = None,
    tpm_limit: int | None = None,
    max_parallel_requests: int | None = None,
    budget_usd: float | None = None,
    budget_period: BudgetPeriod = BudgetPeriod.TOTAL,
    expires_at: float | None = None,
) -> NewKey:
    """A new client key: ``ep-`` and 32 random bytes (URL-safe base64); stored as its digest."""
    secret = KEY_PREFIX + secrets.token_urlsafe(KEY_BYTES)
    key = ClientKey(
        digest=key_digest(secret),
        name=name,
        role=role,
        prefix=display_prefix(secret),
        models=models,
        rpm_limit=rpm_limit,
        tpm_limit=tpm_limit,
        max_parallel_requests=max_parallel_requests,
        budget_usd=budget_usd,
        budget_period=budget_period,
        expires_at=expires_at,
        created_at=now,
    )
    return NewKey(secret, key)


IMPORTED_PREFIX = "(imported)"  # a YAML key's secret was never seen: no display prefix


def imported_key(legacy: ApiKey, now: float) -> ClientKey:
    """The table key a legacy YAML entry (``gateway.api_keys``) becomes: same digest and role."""
    return ClientKey(
        legacy.sha256, legacy.name, legacy.effective_role, IMPORTED_PREFIX, created_at=now
    )


class KeyRing:
    """The process's view of the client keys (one per gateway, shared by every request)."""

    def __init__(
        self,
        store: KeyStore,
        clock: Callable[[], float],
        *,
        ttl_seconds: float = 10.0,
        admin_key_ref: str | None = None,
        credentials: CredentialResolver | None = None,
        auth_off: bool = False,
    ) -> None:
        self._store = store
        self._clock = clock
        self._ttl = ttl_seconds
        self._admin_ref = admin_key_ref
        self._credentials = credentials
        self.auth_off = auth_off
        self._cache: OrderedDict[str, tuple[float, ClientKey | None]] = OrderedDict()
        self._admin_digest: str | None = None
        self._admin_failed_at = float("-inf")
        self._touched: dict[str, float] = {}
        self._background: set[asyncio.Task[None]] = set()

    def now(self) -> float:
        """The gateway's clock (expiry is judged on it)."""
        return self._clock()

    async def lookup(self, digest: str) -> ClientKey | None:
        """The stored key with this digest (cached for the TTL), or None."""
        now = self._clock()
        cached = self._cache.get(digest)
        if cached is not None and now - cached[0] < self._ttl:
            self._cache.move_to_end(digest)
            return cached[1]
        key = await self._store.get_client_key(digest)
        self._cache[digest] = (now, key)
        self._cache.move_to_end(digest)
        while len(self._cache) > MAX_CACHED:
            self._cache.popitem(last=False)
        return key

    def forget(self, digest: str) -> None:
        """Drop every cached lookup of the key stored at ``digest``, by any of its secrets
        (this process just changed the key)."""
        stale = [
            d for d, (_, k) in self._cache.items() if d == digest or (k and k.digest == digest)
        ]
        for cached in stale:
            self._cache.pop(cached, None)

    async def is_bootstrap_admin(self, digest: str) -> bool:
        """Whether ``digest`` is the bootstrap admin key's (compared in constant time)."""
        expected = await self._bootstrap_digest()
        return expected is not None and hmac.compare_digest(expected, digest)

    async def _bootstrap_digest(self) -> str | None:
        if self._admin_ref is None or self._credentials is None:
            return None
        if self._admin_digest is None and self._clock() - self._admin_failed_at >= self._ttl:
            try:
                secret = await self._credentials.resolve_bootstrap(self._admin_ref)
            except CredentialError as exc:
                # Retried after the key TTL, not on every request.
                logger.error("bootstrap admin key unavailable: %s", exc)
                self._admin_failed_at = self._clock()
                return None
            if secret is not None:
                self._admin_digest = key_digest(secret.get_secret_value().strip())
        return self._admin_digest

    async def admit(self, key: ClientKey | None, model: str, names: Sequence[str] = ()) -> None:
        """The key's verdict on a request that is not routed (a token count) for ``model`` by
        its ``names``: its status, its models (404, as if absent), its rpm count (429)."""
        now = self._clock()
        plan = planned(judge(KeySnapshot(key, model, names, routed=False), now))
        await count_request(self._store, plan, key, now)

    def touch(self, key: ClientKey) -> None:
        """Record that ``key`` was used: in the background, at most once a minute."""
        now = self._clock()
        last = max(self._touched.get(key.digest, float("-inf")), key.last_used_at)
        if now - last < TOUCH_EVERY_S:
            return
        self._touched[key.digest] = now
        task = asyncio.ensure_future(self._touch(key.digest, now))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _touch(self, digest: str, now: float) -> None:
        try:
            await self._store.touch_client_key(digest, now)
        except StoreError as exc:
            logger.warning("could not record a key's last use: %s", type(exc).__name__)
