"""``GET /admin/alerts/undelivered``: budget alerts not delivered yet (gateway admins only).

    GET /admin/alerts/undelivered      {"object": "list", "data": [...]}

Each entry is one threshold of one level's budget in one period that a
process claimed (``service/alerts/notifier.py``) but not every configured
destination took: ``state`` is ``pending`` (``next_at``: when the sweep tries
again) or ``given_up`` (``routing.alerts.MAX_ATTEMPTS`` failed attempts; never
tried again). ``sent`` names the destinations that did take it (``webhook``,
``sns``). ``notification`` is the body the destinations get (or got). Never
the webhook's URL or secret.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute
from edgeproxy.routing.alerts import NEVER, PendingAlert


def alert_view(alert: PendingAlert) -> dict[str, Any]:
    """One undelivered alert as the admin API and the CLI show it."""
    try:
        body = json.loads(alert.body)
    except ValueError:
        body = None
    given_up = alert.next_at >= NEVER
    return {
        "object": "budget_alert",
        "level": alert.level,
        "id": alert.level_id,
        "alert": alert.name,
        "state": "given_up" if given_up else "pending",
        "attempts": alert.attempts,
        "next_at": None if given_up else alert.next_at,
        "sent": sorted(alert.sent),
        "notification": body,
    }


async def undelivered(call: AdminCall) -> Response:
    """Every budget alert not delivered yet, pending first (soonest due), then given up."""
    found = await call.gateway.store.undelivered_alerts()
    found.sort(key=lambda a: (a.next_at, a.level, a.level_id, a.name))
    return JSONResponse({"object": "list", "data": [alert_view(a) for a in found]})


ROUTES = [
    AdminRoute(
        "GET",
        "/admin/alerts/undelivered",
        undelivered,
        "Budget alerts not delivered yet (pending or given up)",
        "alerts",
    ),
]
