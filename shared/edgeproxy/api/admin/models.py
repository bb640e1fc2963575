"""``/admin/pools/{pool}/effective``, ``/admin/model-rules`` and ``/admin/aliases``.

The effective view answers every setting of one pool with the level it came
from (``config.effective``), for the operation and protocol given in the query
(default ``chat`` on ``openai.chat``), since 003's model capability and
protocol rules depend on them. Model rules and aliases are versioned,
audited writes like the pools'.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body, version_of, versioned
from edgeproxy.api.admin.settings import edit, editor
from edgeproxy.config.aliases import Alias
from edgeproxy.config.effective import report
from edgeproxy.config.levels import PROTOCOLS, ModelSettings
from edgeproxy.config.policies import Operation
from edgeproxy.errors import NotFound, RequestError
from edgeproxy.service.admin import model_changes as changes
from edgeproxy.service.admin.config_edit import checked


def _surface(call: AdminCall) -> tuple[Operation, str | None]:
    query = call.request.query_params
    raw = query.get("operation", Operation.CHAT.value)
    if raw not in {op.value for op in Operation}:
        allowed = ", ".join(op.value for op in Operation)
        raise RequestError(f"Unknown operation `{raw}`; one of {allowed}.", param="operation")
    protocol = query.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        allowed = ", ".join(sorted(PROTOCOLS))
        raise RequestError(f"Unknown protocol `{protocol}`; one of {allowed}.", param="protocol")
    return Operation(raw), protocol


async def get_effective(call: AdminCall) -> Response:
    """Every effective setting of one pool (an alias names its model's pool)."""
    operation, protocol = _surface(call)
    current = await editor(call).current()
    config = current.config
    pool = config.canonical(str(call.request.path_params["model"]))
    if not config.pool(pool):
        raise NotFound(f"No deployment serves the pool `{pool}`.", param="model")
    return versioned(report(config, pool, operation, protocol), current.version)


def _model(call: AdminCall) -> str:
    return str(call.request.path_params["model"])


def _rules_view(document: dict[str, Any], name: str) -> dict[str, Any]:
    alias = document.get("aliases", {}).get(name)
    model = alias["model"] if alias else name  # an alias names its model's settings
    return {"model": model, "settings": document.get("models", {}).get(model)}


async def list_model_rules(call: AdminCall) -> Response:
    """Every model's levels as set."""
    current = await editor(call).current()
    return versioned({"models": current.document["models"]}, current.version)


async def put_model_rules(call: AdminCall) -> Response:
    """Replace one model's levels."""
    body = await json_body(call)
    version = version_of(call, body)
    checked(ModelSettings, body)
    model = _model(call)
    done = await edit(call, version, changes.put_model_rules(model, body), "model.update", model)
    return versioned(_rules_view(done.document, model), done.version)


async def delete_model_rules(call: AdminCall) -> Response:
    """Drop one model's levels."""
    version = version_of(call)
    model = _model(call)
    done = await edit(call, version, changes.delete_model_rules(model), "model.delete", model)
    return versioned(_rules_view(done.document, model), done.version)


async def list_aliases(call: AdminCall) -> Response:
    """Every alias, its model and its deprecation notice."""
    current = await editor(call).current()
    return versioned({"aliases": current.document["aliases"]}, current.version)


def _alias(call: AdminCall) -> str:
    return str(call.request.path_params["alias"])


async def put_alias(call: AdminCall) -> Response:
    """Create or replace one alias (validated as at load)."""
    body = await json_body(call)
    version = version_of(call, body)
    checked(Alias, body)
    name = _alias(call)
    done = await edit(call, version, changes.put_alias(name, body), "alias.update", name)
    return versioned({"aliases": done.document["aliases"]}, done.version)


async def delete_alias(call: AdminCall) -> Response:
    """Remove one alias."""
    version = version_of(call)
    name = _alias(call)
    done = await edit(call, version, changes.delete_alias(name), "alias.delete", name)
    return versioned({"aliases": done.document["aliases"]}, done.version)


MODELS = "models"
RULES_PATH = "/admin/model-rules/{model:path}"
ALIAS_PATH = "/admin/aliases/{alias:path}"

ROUTES = [
    AdminRoute(
        "GET",
        "/admin/pools/{model:path}/effective",
        get_effective,
        "Every effective setting of a pool, with the level it came from",
        "pools",
        query=(
            ("operation", "string", "the request's operation (capability), default chat"),
            ("protocol", "string", "the inbound protocol, default openai.<operation>"),
        ),
    ),
    AdminRoute("GET", "/admin/model-rules", list_model_rules, "Every model's levels", MODELS),
    AdminRoute(
        "PUT",
        RULES_PATH,
        put_model_rules,
        "Set a model's default, protocol rules and capability rules",
        MODELS,
        body=ModelSettings,
        versioned=True,
    ),
    AdminRoute(
        "DELETE", RULES_PATH, delete_model_rules, "Drop a model's levels", MODELS, versioned=True
    ),
    AdminRoute("GET", "/admin/aliases", list_aliases, "Every model alias", MODELS),
    AdminRoute(
        "PUT",
        ALIAS_PATH,
        put_alias,
        "Create or replace a model alias",
        MODELS,
        body=Alias,
        versioned=True,
    ),
    AdminRoute("DELETE", ALIAS_PATH, delete_alias, "Remove a model alias", MODELS, versioned=True),
]
