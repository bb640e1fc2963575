"""``/admin/config``: the whole configuration, for ``edgeproxy config export|diff|load --url``.

``GET`` answers the configuration as a file states it, secrets redacted
(``[redacted]``), with its version. ``PUT`` loads a whole document: values
still ``[redacted]`` keep the stored ones; the load is refused (409) while
the stored configuration holds admin changes made since ``base_version``
(or, without one, since the last load) unless ``force``; ``dry_run`` only
answers what would change. The answer lists the changes (secrets hidden)
and the admin changes overwritten.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body
from edgeproxy.api.admin.settings import editor
from edgeproxy.config.base import Strict
from edgeproxy.errors import ConfigError, RequestError
from edgeproxy.service.admin import config_roundtrip, config_teams
from edgeproxy.service.admin.config_edit import checked


class LoadConfig(Strict):
    """The body of ``PUT /admin/config``."""

    document: dict[str, Any]
    base_version: int | None = None
    force: bool = False
    dry_run: bool = False
    source: str = "admin API"


async def get_config(call: AdminCall) -> Response:
    """The configuration, secrets redacted, and its version."""
    current = await editor(call).current()
    document = config_roundtrip.export_document(current.config)
    document.update(await config_teams.export_sections(call.gateway.store))
    return JSONResponse(
        {"document": document, "version": current.version},
        headers={"etag": f'"{current.version}"'},
    )


async def put_config(call: AdminCall) -> Response:
    """Load a whole configuration (or, with ``dry_run``, say what loading it would change)."""
    order = checked(LoadConfig, await json_body(call))
    assert isinstance(order, LoadConfig)
    try:
        result = await config_roundtrip.load(
            call.gateway.store,
            call.gateway.now,
            order.document,
            base=order.base_version,
            force=order.force,
            dry_run=order.dry_run,
            actor=call.actor,
            source=order.source[:200],
            owner=call.who.owner,
        )
    except ConfigError as exc:
        raise RequestError(str(exc).replace("\n", "; "), param="document") from None
    if result.stored:
        call.gateway.config_changed()
    return JSONResponse(result.as_json())


TAG = "configuration"
ROUTES = [
    AdminRoute("GET", "/admin/config", get_config, "The configuration (secrets redacted)", TAG),
    AdminRoute(
        "PUT", "/admin/config", put_config, "Load a whole configuration", TAG, body=LoadConfig
    ),
]
