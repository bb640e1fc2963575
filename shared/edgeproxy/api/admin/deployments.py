"""``/admin/deployments[/{id}]``: create, read, replace, patch and delete deployments.

A body is a deployment as in the YAML (``deployments:`` entry) and is
validated by the same model; the whole configuration is validated again
after the change (a removed deployment whose pool still has settings or a
fallback chain is refused with 400 saying so).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body, version_of, versioned
from edgeproxy.api.admin.settings import edit, editor
from edgeproxy.config.deployment import Deployment
from edgeproxy.errors import NotFound
from edgeproxy.service.admin import config_changes as changes
from edgeproxy.service.admin.config_edit import Versioned, checked
from edgeproxy.service.admin.connection import try_deployment
from edgeproxy.service.admin.redaction import scrub
from edgeproxy.service.admin.redirect import restating
from edgeproxy.service.credentials import CredentialResolver


def _one(current: Versioned, deployment_id: str) -> dict[str, Any]:
    for dep in current.document["deployments"]:
        if dep["id"] == deployment_id:
            return dict(scrub(dep))
    raise NotFound(f"No deployment `{deployment_id}`.", param="id")


def _id(call: AdminCall) -> str:
    return str(call.request.path_params["id"])


async def list_deployments(call: AdminCall) -> Response:
    """Every deployment, as configured."""
    current = await editor(call).current()
    return versioned({"deployments": scrub(current.document["deployments"])}, current.version)


async def get_deployment(call: AdminCall) -> Response:
    """One deployment (404 for an unknown id)."""
    current = await editor(call).current()
    return versioned(_one(current, _id(call)), current.version)


async def create_deployment(call: AdminCall) -> Response:
    """Add a deployment (409 ``already_exists`` if its id is taken)."""
    body = await json_body(call)
    version = version_of(call, body)
    dep = checked(Deployment, body)
    assert isinstance(dep, Deployment)
    change = changes.create_deployment(body)
    done = await edit(call, version, change, "deployment.create", dep.id)
    return versioned(_one(done, dep.id), done.version, status=201)


async def replace_deployment(call: AdminCall) -> Response:
    """Replace a deployment with the body (every field as in a new one)."""
    body = await json_body(call)
    version = version_of(call, body)
    dep_id = _id(call)
    checked(Deployment, {"id": dep_id, **body})
    change = restating(changes.replace_deployment(dep_id, body, partial=False), dep_id, body)
    done = await edit(call, version, change, "deployment.replace", dep_id)
    return versioned(_one(done, dep_id), done.version)


async def patch_deployment(call: AdminCall) -> Response:
    """Change some fields of a deployment (e.g. ``{"enabled": false}`` to drain it)."""
    body = await json_body(call)
    version = version_of(call, body)
    dep_id = _id(call)
    change = restating(changes.replace_deployment(dep_id, body, partial=True), dep_id, body)
    done = await edit(call, version, change, "deployment.update", dep_id)
    return versioned(_one(done, dep_id), done.version)


async def delete_deployment(call: AdminCall) -> Response:
    """Remove a deployment."""
    version = version_of(call)
    dep_id = _id(call)
    done = await edit(call, version, changes.delete_deployment(dep_id), "deployment.delete", dep_id)
    return versioned({"deleted": dep_id}, done.version)


async def test_connection(call: AdminCall) -> Response:
    """One small call to a deployment not saved yet (or a changed one): the checks of the
    write that would save it first (400 naming the field), then one chat call of one token.
    Nothing is stored; the answer never holds the credential."""
    body = await json_body(call)
    dep = checked(Deployment, body)
    assert isinstance(dep, Deployment)
    known = {d.id for d in (await editor(call).current()).config.deployments}
    # A changed deployment as its PUT would be: a moved base_url restates its secrets, and
    # a secret sent back redacted stands for the stored one only while base_url stays.
    change = (
        restating(changes.replace_deployment(dep.id, body, partial=False), dep.id, body)
        if dep.id in known
        else changes.create_deployment(body)
    )
    config = await editor(call).trial(change)
    [tried] = [d for d in config.deployments if d.id == dep.id]
    credentials = call.gateway.credentials or CredentialResolver({})
    found = await try_deployment(
        call.gateway.upstream, credentials, config, tried, call.gateway.now
    )
    return JSONResponse(found.body())


TAG = "deployments"
ONE = "/admin/deployments/{id}"

ROUTES = [
    AdminRoute("GET", "/admin/deployments", list_deployments, "Every deployment", TAG),
    AdminRoute(
        "POST",
        "/admin/deployments",
        create_deployment,
        "Add a deployment",
        TAG,
        body=Deployment,
        versioned=True,
    ),
    AdminRoute(
        "POST",
        "/admin/connection-test",
        test_connection,
        "Try a deployment before saving it: one chat call of one token (nothing stored)",
        TAG,
        body=Deployment,
    ),
    AdminRoute("GET", ONE, get_deployment, "One deployment", TAG),
    AdminRoute(
        "PUT",
        ONE,
        replace_deployment,
        "Replace a deployment",
        TAG,
        body=Deployment,
        versioned=True,
    ),
    AdminRoute(
        "PATCH",
        ONE,
        patch_deployment,
        "Change some fields of a deployment",
        TAG,
        body=Deployment,
        versioned=True,
    ),
    AdminRoute("DELETE", ONE, delete_deployment, "Remove a deployment", TAG, versioned=True),
]
