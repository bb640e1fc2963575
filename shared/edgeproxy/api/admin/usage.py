"""``/admin/usage``: spend and tokens by key, model, deployment, team and organization; the log.

    GET /admin/usage?from=&to=&group_by=key,model,deployment,team,organization
                    &granularity=day|hour&format=json|csv
    GET /admin/usage/requests?at=<time in the hour>&limit=50      one hour of the log, newest first

The report reads the hourly aggregates only (``service/usage/report.py``);
the log is read one hour partition at a time. A team admin (an organization
admin) gets both held to its team's (organization's) label: rows and records
of requests made with that team's keys while they were in it
(``scope_label``); a viewer of the gateway sees everything.
"""

from __future__ import annotations

import dataclasses

from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute
from edgeproxy.errors import RequestError
from edgeproxy.routing.hierarchy import AdminScope, Level
from edgeproxy.routing.judge.end_user import MAX_END_USER
from edgeproxy.service.usage.report import (
    ReportQuery,
    json_ready,
    parse_time,
    period_of,
    report_csv,
    usage_report,
)
from edgeproxy.state.usage_log import HOUR_S, UsageLogStore

MAX_RECORDS = 1000
# The record label a scoped admin's level holds its reports and log view to.
SCOPE_LABELS = {Level.TEAM: "team", Level.ORGANIZATION: "organization"}


def scope_label(scope: AdminScope | None) -> tuple[str, str] | None:
    """``(label, value)`` the caller's report and log are held to (None: everything)."""
    if scope is None or scope.level is None or scope.id is None:
        return None
    return SCOPE_LABELS[scope.level], scope.id


def _store(call: AdminCall) -> UsageLogStore:
    store = call.gateway.usage_log.store
    if store is None:
        raise RequestError("This gateway keeps no request log.", param=None)
    return store


async def usage(call: AdminCall) -> Response:
    """Usage and cost grouped by key, model, deployment and day or hour (JSON or CSV)."""
    now = call.gateway.now()
    query = ReportQuery.parse(dict(call.request.query_params), now, scope_label(call.scope))
    report = await usage_report(_store(call), query, now)
    if query.format == "csv":
        return Response(
            report_csv(report),
            media_type="text/csv; charset=utf-8",
            headers={"content-disposition": 'attachment; filename="edgeproxy-usage.csv"'},
        )
    return JSONResponse(json_ready(report))


async def requests(call: AdminCall) -> Response:
    """One hour of the request log, newest first."""
    params = call.request.query_params
    now = call.gateway.now()
    at = parse_time(params["at"], "at") if params.get("at") else now
    limit = params.get("limit", "50")
    if not limit.isdigit() or not 0 < int(limit) <= MAX_RECORDS:
        raise RequestError(f"`limit` must be an integer from 1 to {MAX_RECORDS}.", param="limit")
    hour = int(at // HOUR_S)
    end_user = params.get("end_user")
    if end_user is not None and not (0 < len(end_user) <= MAX_END_USER and end_user.isprintable()):
        raise RequestError(
            f"`end_user` must be 1-{MAX_END_USER} printable characters.", param="end_user"
        )
    where = scope_label(call.scope)
    records = await _store(call).read_requests(hour, int(limit), now, where, end_user)
    return JSONResponse(
        {
            "object": "list",
            "hour": period_of(hour, "hour"),
            "data": [dataclasses.asdict(r) for r in records],
        }
    )


TAG = "usage"
ROUTES = [
    AdminRoute(
        "GET",
        "/admin/usage",
        usage,
        "Usage and cost by key, model, deployment, team and organization",
        TAG,
        query=(
            (
                "from",
                "string",
                "start (ISO date or time, epoch seconds); default: 24 h before `to`",
            ),
            ("to", "string", "end, exclusive; default: now"),
            (
                "group_by",
                "string",
                "any of key,model,deployment,team,organization; default key,model",
            ),
            ("granularity", "string", "day (default) or hour"),
            ("format", "string", "json (default) or csv"),
        ),
    ),
    AdminRoute(
        "GET",
        "/admin/usage/requests",
        requests,
        "One hour of the request log, newest first",
        TAG,
        query=(
            ("at", "string", "a time in the hour (default: now)"),
            ("limit", "integer", f"records, default 50 (at most {MAX_RECORDS})"),
            ("end_user", "string", "only the requests that named this end user"),
        ),
    ),
]
