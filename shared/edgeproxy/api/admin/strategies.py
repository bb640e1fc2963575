"""``GET /admin/strategies``: the strategy registry, each strategy's parameters and settings.

The catalogue comes from the registry itself (``routing.ordering.registry``), so it
lists exactly what the configuration validates against: per strategy its
summary, whether it reads usage counters, and its parameters (type, range,
default, meaning), plus the values ``router.strategy_params`` sets for it.
``edgeproxy strategies`` prints the same catalogue without a gateway.
"""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute
from edgeproxy.routing.ordering.catalogue import catalogue


async def list_strategies(call: AdminCall) -> Response:
    """The registry, with the global strategy and the global parameters set."""
    return JSONResponse({"strategies": catalogue(call.config.router)})


ROUTES = [
    AdminRoute(
        "GET",
        "/admin/strategies",
        list_strategies,
        "Every ordering strategy and its parameters",
        "router settings",
    ),
]
