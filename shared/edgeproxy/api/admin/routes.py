"""The admin API's route table, and its OpenAPI 3 document built from it.

``ROUTE_TABLES`` is the registry: every admin module contributes its
``ROUTES`` here (the client-key routes join as one more entry). The app
serves exactly these routes behind the admin guard, and
``GET /admin/openapi.json`` describes exactly these routes, with request
schemas generated from the pydantic models that validate the bodies.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from edgeproxy.api.admin import alerts as admin_alerts
from edgeproxy.api.admin import cache as admin_cache
from edgeproxy.api.admin import config as admin_config
from edgeproxy.api.admin import deployments as admin_deployments
from edgeproxy.api.admin import explain as admin_explain
from edgeproxy.api.admin import key_changes as admin_key_changes
from edgeproxy.api.admin import keys as admin_keys
from edgeproxy.api.admin import models as admin_models
from edgeproxy.api.admin import ops as admin_ops
from edgeproxy.api.admin import scopes
from edgeproxy.api.admin import settings as admin_settings
from edgeproxy.api.admin import status as admin_status
from edgeproxy.api.admin import strategies as admin_strategies
from edgeproxy.api.admin import teams as admin_teams
from edgeproxy.api.admin import usage as admin_usage
from edgeproxy.api.admin.guard import AdminCall, AdminRoute, admin_call
from edgeproxy.api.errors import guarded

OPENAPI_PATH = "/admin/openapi.json"


async def openapi(call: AdminCall) -> Response:
    """The OpenAPI 3 document of the whole admin API."""
    return JSONResponse(openapi_document(admin_routes()))


# The registry: one entry per admin module.
ROUTE_TABLES: tuple[Sequence[AdminRoute], ...] = (
    admin_models.ROUTES,  # first: /admin/pools/{pool}/effective before /admin/pools/{pool}
    admin_settings.ROUTES,
    admin_deployments.ROUTES,
    admin_ops.ROUTES,
    admin_keys.ROUTES,
    admin_key_changes.ROUTES,
    admin_status.ROUTES,
    admin_strategies.ROUTES,
    admin_explain.ROUTES,
    admin_config.ROUTES,
    admin_usage.ROUTES,
    admin_teams.ROUTES,
    admin_alerts.ROUTES,
    admin_cache.ROUTES,
    [AdminRoute("GET", OPENAPI_PATH, openapi, "This document", "meta")],
)


def admin_routes() -> list[AdminRoute]:
    """Every admin route, in registry order."""
    return [route for table in ROUTE_TABLES for route in table]


def _serve(route: AdminRoute) -> Any:
    async def endpoint(request: Request) -> Response:
        call = await admin_call(request)
        await scopes.authorize(route, call)  # a scoped admin's rights, per route (deny first)
        return await route.endpoint(call)

    endpoint.__name__ = route.endpoint.__name__
    return guarded(endpoint)


def starlette_routes() -> list[Route]:
    """The admin routes for the app, each behind the admin guard (same path, all methods)."""
    by_path: dict[str, dict[str, AdminRoute]] = {}
    for route in admin_routes():
        by_path.setdefault(route.path, {})[route.method] = route
    out = []
    for path, methods in by_path.items():
        handlers = {method: _serve(route) for method, route in methods.items()}

        async def dispatch(request: Request, handlers: dict[str, Any] = handlers) -> Response:
            # Starlette adds HEAD to every GET route: it is answered as the GET (no body).
            method = "GET" if request.method == "HEAD" else request.method
            response: Response = await handlers[method](request)
            return response

        out.append(Route(path, dispatch, methods=list(methods)))
    return out


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorBody(BaseModel):
    """Every admin error, in OpenAI's format."""

    error: ErrorDetail


ERRORS = {
    "400": "invalid body or parameter",
    "401": "missing or unknown key",
    "403": "the key is not an admin key",
    "404": "unknown id",
    "409": "stale version (or the id exists)",
    "428": "no version sent",
}
VERSION_DOC = (
    "The version this write is based on (the ETag or `version` of the read). "
    "Alternatively send it as the `version` field of the body (or `?version=` without a body)."
)


def _operation(route: AdminRoute, refs: dict[type[BaseModel], dict[str, Any]]) -> dict[str, Any]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"{(\w+)(?::\w+)?}", route.path)
    ]
    params += [
        {"name": n, "in": "query", "required": False, "schema": {"type": t}, "description": d}
        for n, t, d in route.query
    ]
    codes = ["401", "403"]
    if route.versioned:
        params.append(
            {
                "name": "If-Match",
                "in": "header",
                "schema": {"type": "string"},
                "description": VERSION_DOC,
            }
        )
        codes += ["409"] if route.unconditional else ["409", "428"]
    if route.body is not None or route.query or route.versioned:
        codes.append("400")
    if "{" in route.path:
        codes.append("404")
    error = {"application/json": {"schema": refs[ErrorBody]}}
    op: dict[str, Any] = {
        "summary": route.summary,
        "operationId": route.endpoint.__name__,
        "tags": [route.tag],
        "parameters": params,
        "responses": {
            "200": {
                "description": "done",
                "content": {"application/json": {"schema": {"type": "object"}}},
            },
            **{code: {"description": ERRORS[code], "content": error} for code in sorted(codes)},
        },
    }
    if route.body is not None:
        schema: dict[str, Any] = {"allOf": [refs[route.body]]}
        if route.versioned:
            schema = {
                "allOf": [refs[route.body]],
                "properties": {"version": {"type": "integer", "minimum": 0}},
            }
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
    return op


def openapi_document(routes: Sequence[AdminRoute]) -> dict[str, Any]:
    """An OpenAPI 3.1 document of ``routes`` (schemas from their pydantic body models)."""
    bodies: list[type[BaseModel]] = [r.body for r in routes if r.body is not None]
    models: list[type[BaseModel]] = list(dict.fromkeys([ErrorBody, *bodies]))
    mapping, top = models_json_schema(
        [(m, "validation") for m in models], ref_template="#/components/schemas/{model}"
    )
    refs = {m: mapping[(m, "validation")] for m in models}
    paths: dict[str, dict[str, Any]] = {}
    taken: set[str] = set()
    for route in routes:
        path = re.sub(r"{(\w+):\w+}", r"{\1}", route.path)
        operation = _operation(route, refs)
        if operation["operationId"] in taken:  # one function behind two routes: ids stay unique
            operation["operationId"] += "_" + re.sub(r"\W+", "_", path).strip("_")
        taken.add(operation["operationId"])
        paths.setdefault(path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "edgeproxy admin API",
            "version": "1",
            "description": "Every route needs an admin key (Authorization: Bearer). Errors use "
            "OpenAI's error JSON. Writes are versioned: If-Match or `version`.",
        },
        "security": [{"adminKey": []}],
        "paths": paths,
        "components": {
            "schemas": top.get("$defs", {}),
            "securitySchemes": {"adminKey": {"type": "http", "scheme": "bearer"}},
        },
    }
