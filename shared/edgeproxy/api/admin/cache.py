"""``/admin/cache``: the response cache's rules (the configuration's ``cache:`` section).

``GET /admin/cache`` returns the section and the configuration version;
``PUT /admin/cache/{level}/{name}`` sets one rule (``level``: ``pools``,
``teams`` or ``keys``; the body is a ``CacheRule``), ``DELETE`` drops it.
Both are versioned and audited like every configuration edit, and the whole
document is validated again, so a rule on a pool no deployment serves is a
400 naming it, and so is one on a team or key the table does not hold
(``service.admin.cache_owners``). Gateway-level: closed to scoped admins (``api.admin.scopes``).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body, version_of, versioned
from edgeproxy.api.admin.settings import edit, editor
from edgeproxy.config.cache import CacheRule
from edgeproxy.errors import NotFound, RequestError
from edgeproxy.service.admin import cache_owners
from edgeproxy.service.admin import config_changes as changes

LEVELS = ("pools", "teams", "keys")
CACHE = "response cache"
RULE_PATH = "/admin/cache/{level}/{name:path}"


def _section(document: dict[str, Any]) -> dict[str, Any]:
    section = dict(document.get("cache") or {})
    return {level: section.get(level, {}) for level in LEVELS}


def _target(call: AdminCall) -> tuple[str, str]:
    level = str(call.request.path_params["level"])
    if level not in LEVELS:
        raise NotFound(
            f"`{level}` is not a cache level: one of {', '.join(LEVELS)}.", param="level"
        )
    name = str(call.request.path_params["name"])
    if not name:
        raise RequestError("A cache rule needs the name of its pool, team or key.", param="name")
    return level, name


async def get_cache(call: AdminCall) -> Response:
    """The ``cache:`` section (each level's rules) and the configuration version."""
    current = await editor(call).current()
    return versioned({"cache": _section(current.document)}, current.version)


async def put_rule(call: AdminCall) -> Response:
    """Set one level's rule for one pool, team or key."""
    level, name = _target(call)
    body = await json_body(call)
    version = version_of(call, body)
    await cache_owners.check_rule(call.gateway.store, level, name)
    done = await edit(
        call, version, changes.put_cache_rule(level, name, body), "cache.update", f"{level}/{name}"
    )
    return versioned({"cache": _section(done.document)}, done.version)


async def delete_rule(call: AdminCall) -> Response:
    """Drop one rule (404 if there is none)."""
    level, name = _target(call)
    version = version_of(call)
    done = await edit(
        call, version, changes.delete_cache_rule(level, name), "cache.delete", f"{level}/{name}"
    )
    return versioned({"cache": _section(done.document)}, done.version)


ROUTES = [
    AdminRoute("GET", "/admin/cache", get_cache, "The response cache's rules", CACHE),
    AdminRoute(
        "PUT",
        RULE_PATH,
        put_rule,
        "Set the cache rule of a pool, team or key (level: pools, teams, keys)",
        CACHE,
        body=CacheRule,
        versioned=True,
    ),
    AdminRoute("DELETE", RULE_PATH, delete_rule, "Drop a cache rule", CACHE, versioned=True),
]
