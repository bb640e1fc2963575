"""The response cache's rules: which rule a request is under, its key, and its controls.

Pure: no clock, no I/O (``api.cached`` carries them out).

The cache key is the sha256 of the scope it is shared in and the canonical
request: the surface (``openai.chat``, ``anthropic.messages``...), the
public model (an alias counts as its model), and the body's semantic fields
as canonical JSON (sorted keys, no whitespace, integral floats as integers),
``stream`` and ``stream_options`` included, so a stored stream is only
replayed to a request that asked for exactly that stream
(``api.stored.replay``). Left out: ``model`` (the public model stands for
it) and the fields that name the caller rather than the question
(``NON_SEMANTIC``).

    >>> a = cache_digest("key:k1", "openai.chat", "m", {"messages": [], "temperature": 1.0})
    >>> a == cache_digest("key:k1", "openai.chat", "m", {"temperature": 1, "messages": []})
    True
    >>> a == cache_digest("key:k2", "openai.chat", "m", {"messages": [], "temperature": 1})
    False
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgeproxy.config.cache import MAX_TTL_S, CacheRule, CacheScope, CacheSettings
from edgeproxy.errors import RequestError

TTL_HEADER = "x-edgeproxy-cache-ttl"  # seconds this request's answer is kept (1..MAX_TTL_S)
STATUS_HEADER = "x-edgeproxy-cache"  # hit | miss | bypass
NON_SEMANTIC = frozenset({"model", "user", "metadata", "safety_identifier"})
GATEWAY_SCOPE = "gateway"


@dataclass(frozen=True, slots=True)
class Controls:
    """What this request lets the cache do: read a stored answer, store its own, for how long."""

    lookup: bool = True
    store: bool = True
    ttl_s: int | None = None  # None: the rule's


def rule_for(
    settings: CacheSettings, pool: str, team: str | None, key_id: str | None
) -> CacheRule | None:
    """The most specific rule naming the request (key, then team, then pool); None: off."""
    for level, name in ((settings.keys, key_id), (settings.teams, team), (settings.pools, pool)):
        rule = level.get(name) if name is not None else None
        if rule is not None:
            return rule if rule.enabled else None
    return None


def scope_id(scope: CacheScope, caller: str, team: str | None) -> str:
    """The partition of answers a request shares in: ``key:<caller>``, ``team:<id>`` (a key
    without a team: its own key's), or ``gateway``."""
    if scope is CacheScope.GATEWAY:
        return GATEWAY_SCOPE
    if scope is CacheScope.TEAM and team is not None:
        return f"team:{team}"
    return f"key:{caller}"


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def cache_digest(scope: str, surface: str, model: str, body: Mapping[str, Any]) -> str:
    """sha256 of the scope and the canonical request (module doc)."""
    semantic = {k: _canonical(v) for k, v in body.items() if k not in NON_SEMANTIC}
    canonical = json.dumps(semantic, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{scope}\0{surface}\0{model}\0{canonical}".encode()).hexdigest()


def controls(cache_control: str | None, ttl: str | None) -> Controls:
    """The request's ``Cache-Control`` and ``x-edgeproxy-cache-ttl``; a bad TTL is a 400.

    ``no-cache``: skip the lookup, store the fresh answer; ``no-store``: neither.

    >>> controls("no-cache", "60")
    Controls(lookup=False, store=True, ttl_s=60)
    >>> controls("max-age=0, no-store", None)
    Controls(lookup=False, store=False, ttl_s=None)
    """
    directives = {d.strip().lower().split("=", 1)[0] for d in (cache_control or "").split(",")}
    no_store = "no-store" in directives
    lookup = not no_store and "no-cache" not in directives
    ttl_s: int | None = None
    if ttl is not None:
        text = ttl.strip()
        if not text.isdigit() or not 1 <= int(text) <= MAX_TTL_S:
            raise RequestError(
                f"The {TTL_HEADER} header must be a whole number of seconds from 1 to {MAX_TTL_S}.",
                param=TTL_HEADER,
                code="invalid_cache_ttl",
            )
        ttl_s = int(text)
    return Controls(lookup=lookup, store=not no_store, ttl_s=ttl_s)
