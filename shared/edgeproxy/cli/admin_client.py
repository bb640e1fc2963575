"""The two ways the admin commands reach a deployment: its admin API, or its table.

``HttpAdmin`` calls a running gateway (admin key in ``Authorization``);
``TableAdmin`` does the same work on the state table with the service
functions the admin API uses, so both give the same answers and the same
audit entries.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from edgeproxy.errors import EdgeproxyError, UpstreamError
from edgeproxy.service.admin import config_changes, config_roundtrip, config_teams
from edgeproxy.service.admin.config_edit import ConfigEditor
from edgeproxy.service.admin.config_teams import RoundTripStore
from edgeproxy.service.admin.deep_health import deep_health


class AdminClient(Protocol):
    """What ``status``, ``settings`` and ``audit`` need."""

    async def deep_health(self) -> dict[str, Any]: ...

    async def router_settings(self) -> dict[str, Any]: ...

    async def put_router_settings(self, patch: dict[str, Any], version: int) -> dict[str, Any]: ...

    async def audit(self, limit: int) -> list[dict[str, Any]]: ...

    async def set_enabled(self, deployment_id: str, enabled: bool) -> dict[str, Any]: ...

    async def config(self) -> dict[str, Any]: ...

    async def load_config(self, body: dict[str, Any]) -> dict[str, Any]: ...


class HttpAdmin:
    """The admin API of a running gateway."""

    def __init__(self, base_url: str, admin_key: str, timeout: float = 30.0) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={"authorization": f"Bearer {admin_key}"},
            timeout=timeout,
        )

    async def __aenter__(self) -> HttpAdmin:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            answer = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise EdgeproxyError(f"cannot reach the gateway: {type(exc).__name__}") from None
        try:
            body = answer.json()
        except ValueError:
            body = {}
        if answer.status_code >= 400:
            error = body.get("error", {}) if isinstance(body, dict) else {}
            message = error.get("message") or f"HTTP {answer.status_code}"
            raise UpstreamError(f"{answer.status_code}: {message}", status=answer.status_code)
        return body

    async def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """Any admin API call, errors as ``_call`` raises them (commands with own resources)."""
        return await self._call(method, path, **kwargs)

    async def deep_health(self) -> dict[str, Any]:
        return dict(await self._call("GET", "/health/deep"))

    async def explain(self, order: dict[str, Any]) -> dict[str, Any]:
        """``POST /admin/route/explain`` (only a gateway answers it: ``edgeproxy route``)."""
        return dict(await self._call("POST", "/admin/route/explain", json=order))

    async def router_settings(self) -> dict[str, Any]:
        return dict(await self._call("GET", "/admin/router-settings"))

    async def put_router_settings(self, patch: dict[str, Any], version: int) -> dict[str, Any]:
        return dict(
            await self._call("PUT", "/admin/router-settings", json={**patch, "version": version})
        )

    async def audit(self, limit: int) -> list[dict[str, Any]]:
        page = await self._call("GET", "/admin/audit", params={"limit": limit})
        return list(page["data"])

    async def set_enabled(self, deployment_id: str, enabled: bool) -> dict[str, Any]:
        """PATCH the deployment's ``enabled``, based on the version just read."""
        path = f"/admin/deployments/{quote(deployment_id, safe='')}"
        current = await self._call("GET", path)
        body = {"enabled": enabled, "version": current["version"]}
        return dict(await self._call("PATCH", path, json=body))

    async def config(self) -> dict[str, Any]:
        return dict(await self._call("GET", "/admin/config"))

    async def load_config(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(await self._call("PUT", "/admin/config", json=body))


class TableAdmin:
    """The same operations straight on the state table (no gateway needed).

    Whoever may write the table is the gateway's owner (``config.roles``).
    """

    def __init__(self, store: RoundTripStore, clock: Callable[[], float], *, actor: str) -> None:
        self._store = store
        self._clock = clock
        self._editor = ConfigEditor(store, clock, owner=True)
        self._actor = actor

    async def deep_health(self) -> dict[str, Any]:
        current = await self._editor.current()
        return await deep_health(self._store, current.config, current.version, self._clock())

    async def router_settings(self) -> dict[str, Any]:
        current = await self._editor.current()
        return {**current.document["router"], "version": current.version}

    async def put_router_settings(self, patch: dict[str, Any], version: int) -> dict[str, Any]:
        done = await self._editor.edit(
            version,
            config_changes.router_settings(patch),
            actor=self._actor,
            action="router-settings.update",
            target="router",
        )
        return {**done.document["router"], "version": done.version}

    async def audit(self, limit: int) -> list[dict[str, Any]]:
        entries, _ = await self._store.read_audit(limit)
        return [e.as_json() for e in entries]

    async def set_enabled(self, deployment_id: str, enabled: bool) -> dict[str, Any]:
        current = await self._editor.current()
        change = config_changes.replace_deployment(
            deployment_id, {"enabled": enabled}, partial=True
        )
        done = await self._editor.edit(
            current.version,
            change,
            actor=self._actor,
            action="deployment.update",
            target=deployment_id,
        )
        return {"id": deployment_id, "enabled": enabled, "version": done.version}

    async def config(self) -> dict[str, Any]:
        current = await self._editor.current()
        document = config_roundtrip.export_document(current.config)
        document.update(await config_teams.export_sections(self._store))
        return {"document": document, "version": current.version}

    async def load_config(self, body: dict[str, Any]) -> dict[str, Any]:
        result = await config_roundtrip.load(
            self._store,
            self._clock,
            body["document"],
            base=body.get("base_version"),
            force=bool(body.get("force")),
            dry_run=bool(body.get("dry_run")),
            actor=self._actor,
            source=str(body.get("source", "cli")),
            owner=True,
        )
        return result.as_json()
