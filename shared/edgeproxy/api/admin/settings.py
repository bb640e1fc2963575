"""``/admin/router-settings``, ``/admin/pools`` and ``/admin/fallbacks``.

Router settings follow the primary spec: ``GET`` returns the effective
settings (the defaults if never set; ``?names=000`` in 000's field names); in
``PUT`` every field is optional and an omitted one keeps its value (objects
such as ``circuit`` merge field by field), except ``execution_policies``,
which is sent whole: a matrix that misses an operation is refused with 400
naming it. A ``PUT`` without a version is last-writer-wins.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from starlette.responses import Response

from edgeproxy.api.admin.guard import (
    AdminCall,
    AdminRoute,
    json_body,
    sent_version,
    version_of,
    versioned,
)
from edgeproxy.api.admin.spec_names import from_spec_names, to_spec_names
from edgeproxy.config.base import Strict
from edgeproxy.config.models import FallbackReason
from edgeproxy.config.router import Continuation, PoolSettings, RouterSettings
from edgeproxy.errors import NotFound, RequestError
from edgeproxy.service.admin import config_changes as changes
from edgeproxy.service.admin.config_edit import Change, ConfigEditor, Versioned, checked


class FallbackTargets(Strict):
    """The body of ``PUT /admin/fallbacks/{reason}/{model}``: the models to try, in order."""

    to: Annotated[list[str], Field(min_length=1)]
    # Left out: a replaced chain keeps its own; null: the router's ``continuation``.
    continuation: Continuation | None = None


def editor(call: AdminCall) -> ConfigEditor:
    """The configuration editor over this gateway's store."""
    return ConfigEditor(call.gateway.store, call.gateway.now, owner=call.who.owner)


async def edit(
    call: AdminCall, version: int, change: Change, action: str, target: str
) -> Versioned:
    """One audited, versioned edit; this process re-reads the configuration at once."""
    done = await editor(call).edit(version, change, actor=call.actor, action=action, target=target)
    call.gateway.config_changed()
    return done


PLATFORM = "platform"  # the read-only limits of the endpoint that answered


async def get_router_settings(call: AdminCall) -> Response:
    """The effective router settings and the configuration version.

    Behind a platform limit (API Gateway's 30 s) the answer also says what this
    endpoint caps every request's ``total_ms`` at: ``platform.max_total_ms``
    (read-only; a ``PUT`` may send it back and it is ignored).
    """
    spec = _spec_names_asked(call)
    current = await editor(call).current()
    settings = dict(current.document["router"])
    if call.gateway.max_total_ms is not None:
        settings[PLATFORM] = {"max_total_ms": call.gateway.max_total_ms}
    return versioned(to_spec_names(settings) if spec else settings, current.version)


NAMES = "names"
SPEC_NAMES = "000"  # ?names=000: the primary spec's field names
OWN_NAMES = "edgeproxy"


def _spec_names_asked(call: AdminCall) -> bool:
    asked = call.request.query_params.get(NAMES, OWN_NAMES)
    if asked not in (SPEC_NAMES, OWN_NAMES):
        raise RequestError(
            f"`names` must be `{SPEC_NAMES}` (the primary spec's field names) or `{OWN_NAMES}`.",
            param=NAMES,
        )
    return asked == SPEC_NAMES


UNCONDITIONAL = "router-settings.update.unconditional"  # the audit action of a versionless PUT


async def put_router_settings(call: AdminCall) -> Response:
    """Partial update: omitted fields keep their value; ``execution_policies`` whole.

    000's field names (``routingStrategy``, ``allowedFails``...) are accepted too.
    Without a version (as 000's clients send it) the update applies over whatever
    is stored, last writer wins, and is audited as unconditional; with one, a
    stale version is a 409 (the recommended form).
    """
    body = from_spec_names(await json_body(call))
    body.pop(PLATFORM, None)  # what the platform imposes is not a setting
    version = sent_version(call, body)
    change = changes.router_settings(body)
    if version is not None:
        done = await edit(call, version, change, "router-settings.update", "router")
    else:
        done = await editor(call).edit_latest(
            change, actor=call.actor, action=UNCONDITIONAL, target="router"
        )
        call.gateway.config_changed()
    return versioned(done.document["router"], done.version)


def _pool_view(current: Versioned, pool: str) -> dict[str, Any]:
    config = current.config
    settings = config.pool_settings(pool)
    deployments = config.pool(pool)
    tiers = sorted({d.priority for d in deployments}, reverse=True)
    return {
        "model": pool,
        "settings": settings.model_dump(mode="json"),
        "effective": {
            "strategy_by_tier": {str(t): config.strategy_for(pool, t).value for t in tiers},
            "params_by_tier": {
                str(t): config.params_for(pool, t, config.strategy_for(pool, t)).model_dump()
                for t in tiers
            },
            "sticky": config.sticky_for(pool).model_dump(mode="json"),
        },
        "deployments": [d.id for d in deployments],
    }


async def list_pools(call: AdminCall) -> Response:
    """Every pool: its overrides, the effective strategy per tier and stickiness."""
    current = await editor(call).current()
    pools = [_pool_view(current, pool) for pool in current.config.public_models()]
    return versioned({"pools": pools}, current.version)


def _pool(call: AdminCall) -> str:
    return str(call.request.path_params["model"])


async def get_pool(call: AdminCall) -> Response:
    """One pool (404 if no deployment serves it)."""
    current = await editor(call).current()
    pool = _pool(call)
    if not current.config.pool(pool):
        raise NotFound(f"No deployment serves the pool `{pool}`.", param="model")
    return versioned(_pool_view(current, pool), current.version)


async def put_pool(call: AdminCall) -> Response:
    """Replace one pool's overrides (strategy, tier_strategies, sticky)."""
    body = await json_body(call)
    version = version_of(call, body)
    checked(PoolSettings, body)
    pool = _pool(call)
    done = await edit(call, version, changes.put_pool(pool, body), "pool.update", pool)
    return versioned(_pool_view(done, pool), done.version)


async def delete_pool(call: AdminCall) -> Response:
    """Drop one pool's overrides."""
    version = version_of(call)
    pool = _pool(call)
    done = await edit(call, version, changes.delete_pool(pool), "pool.delete", pool)
    return versioned(_pool_view(done, pool), done.version)


async def list_fallbacks(call: AdminCall) -> Response:
    """Every fallback chain."""
    current = await editor(call).current()
    return versioned({"fallbacks": current.document["fallbacks"]}, current.version)


def _chain(call: AdminCall) -> tuple[str, str]:
    reason = str(call.request.path_params["reason"])
    if reason not in {r.value for r in FallbackReason}:
        allowed = ", ".join(r.value for r in FallbackReason)
        raise RequestError(f"Unknown fallback reason `{reason}`; one of {allowed}.", param="reason")
    return reason, str(call.request.path_params["model"])


async def put_fallback(call: AdminCall) -> Response:
    """Create or replace the chain of one model for one reason."""
    reason, model = _chain(call)
    body = await json_body(call)
    version = version_of(call, body)
    checked(FallbackTargets, body)
    if "continuation" in body:
        change = changes.put_fallback(reason, model, body["to"], body["continuation"])
    else:
        change = changes.put_fallback(reason, model, body["to"])
    done = await edit(call, version, change, "fallback.update", f"{model}/{reason}")
    return versioned({"fallbacks": done.document["fallbacks"]}, done.version)


async def delete_fallback(call: AdminCall) -> Response:
    """Remove the chain of one model for one reason."""
    reason, model = _chain(call)
    version = version_of(call)
    change = changes.delete_fallback(reason, model)
    done = await edit(call, version, change, "fallback.delete", f"{model}/{reason}")
    return versioned({"fallbacks": done.document["fallbacks"]}, done.version)


SETTINGS = "router settings"
POOLS = "pools"
FALLBACKS = "fallbacks"
FALLBACK_PATH = "/admin/fallbacks/{reason}/{model:path}"

ROUTES = [
    AdminRoute(
        "GET",
        "/admin/router-settings",
        get_router_settings,
        "Effective router settings",
        SETTINGS,
        query=[
            (
                NAMES,
                "string",
                f"`{SPEC_NAMES}`: the primary spec's field names (routingStrategy, "
                f"allowedFails, ..., executionPolicies); `{OWN_NAMES}` (the default): the YAML's",
            )
        ],
    ),
    AdminRoute(
        "PUT",
        "/admin/router-settings",
        put_router_settings,
        "Update router settings (omitted fields keep their value; execution_policies whole; "
        "without a version, last writer wins)",
        SETTINGS,
        body=RouterSettings,
        versioned=True,
        unconditional=True,
    ),
    AdminRoute("GET", "/admin/pools", list_pools, "Every pool and its settings", POOLS),
    AdminRoute("GET", "/admin/pools/{model:path}", get_pool, "One pool", POOLS),
    AdminRoute(
        "PUT",
        "/admin/pools/{model:path}",
        put_pool,
        "Set a pool's overrides",
        POOLS,
        body=PoolSettings,
        versioned=True,
    ),
    AdminRoute(
        "DELETE",
        "/admin/pools/{model:path}",
        delete_pool,
        "Drop a pool's overrides",
        POOLS,
        versioned=True,
    ),
    AdminRoute("GET", "/admin/fallbacks", list_fallbacks, "Every fallback chain", FALLBACKS),
    AdminRoute(
        "PUT",
        FALLBACK_PATH,
        put_fallback,
        "Create or replace a fallback chain",
        FALLBACKS,
        body=FallbackTargets,
        versioned=True,
    ),
    AdminRoute(
        "DELETE",
        FALLBACK_PATH,
        delete_fallback,
        "Remove a fallback chain",
        FALLBACKS,
        versioned=True,
    ),
]
