"""``DeferredRoutes``: a group of routes imported on the first request that reaches them.

A Lambda cold start pays for every import before its first answer, and the
admin API (a dozen modules, their pydantic bodies, the OpenAPI builder) is
not what a first request usually needs. The group claims every path under
its prefixes; the first request there imports and builds the real routes,
which then answer exactly as if they had been in the app from the start:
their own 404 and 405 (raised to the app's exception handlers), HEAD for
GET, path parameters.

    >>> admin = DeferredRoutes(("/admin",), lambda: [])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from starlette.routing import BaseRoute, Match, NoMatchFound, Router
from starlette.types import Receive, Scope, Send

Loader = Callable[[], Sequence[BaseRoute]]


class DeferredRoutes(BaseRoute):
    """Every path equal to or under one of ``prefixes``, served by ``load()``'s routes."""

    def __init__(self, prefixes: Sequence[str], load: Loader) -> None:
        self._prefixes = tuple(p.rstrip("/") for p in prefixes)
        self._load = load
        self._router: Router | None = None

    def _claims(self, path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in self._prefixes)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path, root = scope["path"], scope.get("root_path", "")
        if root and path.startswith(root):  # as Starlette's own routes see the path
            path = path[len(root) :]
        if scope["type"] == "http" and self._claims(path):
            return Match.FULL, {}
        return Match.NONE, {}

    def router(self) -> Router:
        """The real routes (imported and built now, once)."""
        if self._router is None:
            self._router = Router(routes=list(self._load()))
        return self._router

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.router()(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        raise NoMatchFound(name, path_params)
