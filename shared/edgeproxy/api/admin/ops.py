"""Operations over HTTP: circuits, sticky bindings, the audit log, ``/health/deep``, ``/metrics``.

Circuit actions are versioned on the circuit (its ``version`` from the
``GET``), because a request may move the same circuit at the same moment.
Binding actions are idempotent removals (unbind one caller, invalidate a
whole pool): two admins doing them at once lose nothing, so they take no
version; they are audited like every change.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Annotated, Any, Self

from pydantic import Field, model_validator
from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body, version_of, versioned
from edgeproxy.api.admin.settings import editor
from edgeproxy.config.base import Strict
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import NotFound, RequestError
from edgeproxy.routing.affinity import caller_id, key_digest
from edgeproxy.service.admin import audit, bindings, circuit_admin
from edgeproxy.service.admin.config_edit import checked
from edgeproxy.service.admin.deep_health import deep_health
from edgeproxy.service.admin.redaction import redact_caller

Text = Annotated[str, Field(min_length=1, max_length=500)]


class ForceOpen(Strict):
    """Open a circuit for maintenance: a reason, and an end (``seconds`` from now or ``until``)."""

    reason: Text
    seconds: Annotated[float, Field(gt=0)] | None = None
    until: Annotated[float, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _one_end(self) -> Self:
        if (self.seconds is None) == (self.until is None):
            raise ValueError("give exactly one of `seconds` and `until` (epoch seconds)")
        return self


class Unbind(Strict):
    """Drop one caller's binding in a pool (every protocol unless ``protocol`` is given).

    ``caller``: a caller id (``key:<sha256>``, ``grant:<id>``, ``ip:<bucket>``) or an IP;
    ``api_key``: the client key itself, hashed at once and never stored or echoed.
    """

    pool: Text
    caller: Text | None = None
    api_key: Text | None = None
    protocol: Text | None = None

    @model_validator(mode="after")
    def _one_caller(self) -> Self:
        if (self.caller is None) == (self.api_key is None):
            raise ValueError("give exactly one of `caller` and `api_key`")
        return self


class Invalidate(Strict):
    """Invalidate every binding of a pool."""

    pool: Text


async def _fresh(call: AdminCall) -> GatewayConfig:
    return (await editor(call).current()).config


async def _deployment(call: AdminCall) -> str:
    dep_id = str(call.request.path_params["deployment"])
    if (await _fresh(call)).deployment(dep_id) is None:
        raise NotFound(f"No deployment `{dep_id}`.", param="deployment")
    return dep_id


async def list_circuits(call: AdminCall) -> Response:
    """Every deployment's circuit."""
    config = await _fresh(call)
    store, now = call.gateway.store, call.gateway.now()
    found = await asyncio.gather(*(store.read_circuit(d.id) for d in config.deployments))
    return JSONResponse({"circuits": [circuit_admin.circuit_view(c, now) for c in found]})


async def get_circuit(call: AdminCall) -> Response:
    """One deployment's circuit: state, cause, maintenance reason and end, version."""
    dep_id = await _deployment(call)
    found = await call.gateway.store.read_circuit(dep_id)
    return versioned(circuit_admin.circuit_view(found, call.gateway.now()), found.version)


async def open_circuit(call: AdminCall) -> Response:
    """Force a circuit open for maintenance until its end; routing skips the deployment."""
    dep_id = await _deployment(call)
    body = await json_body(call)
    version = version_of(call, body)
    order = checked(ForceOpen, body)
    assert isinstance(order, ForceOpen)
    now = call.gateway.now()
    until = order.until if order.until is not None else now + (order.seconds or 0.0)
    new = await circuit_admin.force_open(
        call.gateway.store,
        dep_id,
        version,
        until=until,
        reason=order.reason,
        actor=call.actor,
        now=now,
    )
    return versioned(circuit_admin.circuit_view(new, now), new.version)


async def close_circuit(call: AdminCall) -> Response:
    """Close a circuit now, whatever opened it."""
    dep_id = await _deployment(call)
    has_body = call.request.headers.get("content-length", "0") not in ("", "0")
    version = version_of(call, await json_body(call) if has_body else None)
    now = call.gateway.now()
    new = await circuit_admin.force_close(
        call.gateway.store, dep_id, version, actor=call.actor, now=now
    )
    return versioned(circuit_admin.circuit_view(new, now), new.version)


def _known_pool(config: GatewayConfig, pool: str) -> None:
    if not config.pool(pool):
        raise NotFound(f"No deployment serves the pool `{pool}`.", param="pool")


async def unbind(call: AdminCall) -> Response:
    """Drop one caller's sticky binding in a pool."""
    order = checked(Unbind, await json_body(call))
    assert isinstance(order, Unbind)
    _known_pool(await _fresh(call), order.pool)
    if order.caller is not None and not bindings.looks_like_caller_id(order.caller):
        raise RequestError(
            "`caller` takes a caller id (key:<sha256>, grant:<id>, ip:<bucket>) or an IP; "
            "send a client key as `api_key`.",
            param="caller",
        )
    caller = (
        caller_id(key_digest(order.api_key), None, None)
        if order.api_key is not None
        else bindings.resolve_caller(order.caller or "")
    )
    if order.protocol is not None and order.protocol not in bindings.PROTOCOLS:
        known = ", ".join(bindings.PROTOCOLS)
        raise RequestError(f"Unknown protocol; one of {known}.", param="protocol")
    protocols = bindings.PROTOCOLS if order.protocol is None else (order.protocol,)
    removed = []
    for protocol in protocols:
        found = await bindings.unbind(call.gateway.store, caller, order.pool, protocol)
        if found is not None:
            removed.append({"protocol": protocol, "deployment": found.deployment_id})
    changes: list[dict[str, Any]] = [
        {"path": "caller", "new": redact_caller(caller)},  # a key's digest stays out
        {"path": "removed", "new": removed},
    ]
    await _audit(call, "binding.unbind", order.pool, changes)
    return JSONResponse({"pool": order.pool, "caller": caller, "removed": removed})


async def invalidate(call: AdminCall) -> Response:
    """Invalidate every binding of a pool at once."""
    order = checked(Invalidate, await json_body(call))
    assert isinstance(order, Invalidate)
    _known_pool(await _fresh(call), order.pool)
    generation = await bindings.invalidate_pool(call.gateway.store, order.pool)
    await _audit(
        call, "binding.invalidate", order.pool, [{"path": "generation", "new": generation}]
    )
    return JSONResponse({"pool": order.pool, "generation": generation})


async def share(call: AdminCall) -> Response:
    """Binding share versus configured weight (``?pool=...&minutes=60``)."""
    params = call.request.query_params
    pool = params.get("pool") or ""
    if not pool:
        raise RequestError("Name the pool: `?pool=<model>`.", param="pool")
    minutes = params.get("minutes", "60")
    if not minutes.isdigit() or not 0 < int(minutes) <= 1440:
        raise RequestError("`minutes` must be an integer from 1 to 1440.", param="minutes")
    report = await bindings.binding_share(
        call.gateway.store, await _fresh(call), pool, minutes=int(minutes), now=call.gateway.now()
    )
    return JSONResponse(dataclasses.asdict(report))


async def _audit(call: AdminCall, action: str, target: str, changes: list[dict[str, Any]]) -> None:
    entry = audit.entry(call.actor, action, target, changes, call.gateway.now())
    await call.gateway.store.record_audit(entry)


async def audit_log(call: AdminCall) -> Response:
    """Audit entries, newest first (``?limit=50&before=<cursor>``)."""
    params = call.request.query_params
    limit = params.get("limit", "50")
    if not limit.isdigit() or not 0 < int(limit) <= 500:
        raise RequestError("`limit` must be an integer from 1 to 500.", param="limit")
    entries, cursor = await call.gateway.store.read_audit(int(limit), params.get("before") or None)
    return JSONResponse({"data": [e.as_json() for e in entries], "next": cursor})


async def health_deep(call: AdminCall) -> Response:
    """Per deployment: availability, circuit state and cause, retry-after, health, rpm/tpm use."""
    current = await editor(call).current()
    resolver = call.gateway.credentials
    report = await deep_health(
        call.gateway.store,
        current.config,
        current.version,
        call.gateway.now(),
        resolver.problem if resolver is not None else None,
    )
    return JSONResponse(report)


async def scrape(call: AdminCall) -> Response:
    """The process's metrics in Prometheus' text format (``EDGEPROXY_METRICS=on``)."""
    metrics = call.gateway.metrics
    if metrics is None:
        raise NotFound("Metrics are off in this process; set EDGEPROXY_METRICS=on to serve them.")
    body, content_type = metrics.exposition()
    return Response(body, media_type=content_type)


CIRCUITS = "circuits"
BINDINGS = "bindings"
ONE = "/admin/circuits/{deployment}"

ROUTES = [
    AdminRoute("GET", "/admin/circuits", list_circuits, "Every deployment's circuit", CIRCUITS),
    AdminRoute("GET", ONE, get_circuit, "One deployment's circuit", CIRCUITS),
    AdminRoute(
        "POST",
        ONE + "/open",
        open_circuit,
        "Force a circuit open for maintenance",
        CIRCUITS,
        body=ForceOpen,
        versioned=True,
    ),
    AdminRoute(
        "POST", ONE + "/close", close_circuit, "Close a circuit now", CIRCUITS, versioned=True
    ),
    AdminRoute(
        "POST", "/admin/bindings/unbind", unbind, "Drop one caller's binding", BINDINGS, body=Unbind
    ),
    AdminRoute(
        "POST",
        "/admin/bindings/invalidate",
        invalidate,
        "Invalidate a pool's bindings",
        BINDINGS,
        body=Invalidate,
    ),
    AdminRoute(
        "GET",
        "/admin/bindings/share",
        share,
        "Binding share versus weight",
        BINDINGS,
        query=(("pool", "string", "the pool"), ("minutes", "integer", "window, default 60")),
    ),
    AdminRoute(
        "GET",
        "/admin/audit",
        audit_log,
        "Audit log, newest first",
        "audit",
        query=(
            ("limit", "integer", "entries per page (1-500, default 50)"),
            ("before", "string", "the `next` cursor of the previous page"),
        ),
    ),
    AdminRoute("GET", "/health/deep", health_deep, "Every deployment's standing", "health"),
    AdminRoute("GET", "/metrics", scrape, "Prometheus metrics of this process", "health"),
]
