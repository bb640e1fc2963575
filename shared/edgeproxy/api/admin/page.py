"""``/admin/``: the console (status, keys, log, teams, deployments, usage), static files served by the same app.

The page (``edgeproxy/admin_ui/``: HTML, CSS and one small script per view, no build step)
holds no data and needs no key to load; everything it shows comes from the
admin API, which the script calls with the admin key the operator typed
(kept in the tab's session storage, sent as ``Authorization: Bearer``). Every
URL the page uses is relative, so a stage prefix (``/prod/admin/``) or the
streaming Function URL serve it unchanged; ``/admin`` redirects to
``admin/`` (relative too, so the prefix survives).

Answers carry a strict Content-Security-Policy (no inline script or style,
connections to this origin only, no framing, no form targets), no referrer,
``nosniff`` and ``no-store``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from edgeproxy.api.errors import guarded
from edgeproxy.errors import RouteNotFound

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}
ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "explain.js": "text/javascript; charset=utf-8",
    "usage.js": "text/javascript; charset=utf-8",  # the usage view
    "console.js": "text/javascript; charset=utf-8",  # shared: API calls, DOM helpers, views
    "key_form.js": "text/javascript; charset=utf-8",  # the key editor (create, change)
    "keys.js": "text/javascript; charset=utf-8",  # the keys view
    "log.js": "text/javascript; charset=utf-8",  # the request log view
    "teams.js": "text/javascript; charset=utf-8",  # the teams view
    "deployments.js": "text/javascript; charset=utf-8",  # deployments: list, editor, test
    "routing.js": "text/javascript; charset=utf-8",  # presets, strategies, rules, aliases
    "cache_rules.js": "text/javascript; charset=utf-8",  # the response cache's rules
    "charts.js": "text/javascript; charset=utf-8",  # hand-written SVG charts
    "usage_time.js": "text/javascript; charset=utf-8",  # the usage-over-time view
    "style.css": "text/css; charset=utf-8",
}


@cache
def asset(name: str) -> bytes:
    """One of the page's files, read from the installed package once per process."""
    return (resources.files("edgeproxy") / "admin_ui" / name).read_bytes()


def _file(name: str) -> Response:
    return Response(asset(name), headers={**HEADERS, "content-type": ASSETS[name]})


async def index(request: Request) -> Response:
    """``GET /admin/``: the page."""
    return _file("index.html")


async def static(request: Request) -> Response:
    """``GET /admin/assets/{name}``: the page's script and style sheet."""
    name = str(request.path_params["name"])
    if name == "index.html" or name not in ASSETS:
        raise RouteNotFound(f"No asset `{name}`.")
    return _file(name)


async def to_index(request: Request) -> Response:
    """``GET /admin``: to ``admin/``, relative, so a stage prefix in front is kept."""
    return Response(status_code=308, headers={**HEADERS, "location": "admin/"})


def routes() -> list[Route]:
    """The page's routes (before the admin API's, which take every other ``/admin/...``)."""
    return [
        Route("/admin", guarded(to_index), methods=["GET"]),
        Route("/admin/", guarded(index), methods=["GET"]),
        Route("/admin/assets/{name}", guarded(static), methods=["GET"]),
    ]
