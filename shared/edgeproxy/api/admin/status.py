"""``/admin/status`` and ``/admin/history``: the read-only views the status page is built on.

Both are ordinary admin routes (admin key, OpenAPI document); the page
(``api/admin/page.py``) reads nothing else but these and the other admin
routes. See ``service/admin/status_view.py`` for what each field means.
"""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute
from edgeproxy.api.admin.settings import editor
from edgeproxy.errors import RequestError
from edgeproxy.service.admin import status_view


def _minutes(call: AdminCall, top: int, default: int) -> int:
    """The ``minutes`` query parameter: an integer from 1 to ``top``."""
    minutes = call.request.query_params.get("minutes", str(default))
    # isascii: "²".isdigit() holds, and int() would raise on it (a 500, not a 400).
    if not (minutes.isascii() and minutes.isdigit()) or not 0 < int(minutes) <= top:
        raise RequestError(f"`minutes` must be an integer from 1 to {top}.", param="minutes")
    return int(minutes)


async def status(call: AdminCall) -> Response:
    """Every pool's deployments: state, retry-after, cause, health, EWMAs, use, quota, weight,
    and streams that ended without a finish reason over the last ``minutes``."""
    top = status_view.STATUS_MAX_MINUTES
    minutes = _minutes(call, top, top)
    current = await editor(call).current()
    report = await status_view.status_report(
        call.gateway.store, current.config, current.version, call.gateway.now(), minutes
    )
    return JSONResponse(report)


async def history(call: AdminCall) -> Response:
    """Per-minute requests, failures by class, median latency and tokens of a pool."""
    params = call.request.query_params
    pool = params.get("pool") or ""
    if not pool:
        raise RequestError("Name the pool: `?pool=<model>`.", param="pool")
    minutes = _minutes(call, status_view.HISTORY_MAX_MINUTES, 60)
    current = await editor(call).current()
    report = await status_view.history(
        call.gateway.store, current.config, pool, minutes=minutes, now=call.gateway.now()
    )
    return JSONResponse(report)


TAG = "status"
ROUTES = [
    AdminRoute(
        "GET",
        "/admin/status",
        status,
        "Every pool's standing (the status page)",
        TAG,
        query=(("minutes", "integer", "window of unfinished_streams, default and at most 60"),),
    ),
    AdminRoute(
        "GET",
        "/admin/history",
        history,
        "Per-minute history of a pool",
        TAG,
        query=(
            ("pool", "string", "the pool"),
            ("minutes", "integer", "window, default 60 (at most 180)"),
        ),
    ),
]
