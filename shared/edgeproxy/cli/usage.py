"""``edgeproxy usage``: spend and tokens by key, model, deployment, team and organization.

Reads ``GET /admin/usage`` of a running gateway (``--url``, with the admin
key in ``$EDGEPROXY_ADMIN_KEY``) or the aggregates in a state table
(``--table``); the same report either way. ``--log`` lists one hour of the
request log instead.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from typing import Any, TextIO

import httpx

from edgeproxy.cli import target as cli_target
from edgeproxy.errors import EdgeproxyError, UpstreamError, UsageError
from edgeproxy.runtime import open_store, process_rng
from edgeproxy.service.usage.report import (
    DIMENSIONS,
    ReportQuery,
    json_ready,
    parse_time,
    report_csv,
    usage_report,
)
from edgeproxy.state.dynamodb.dynamo_usage import DynamoUsageLog
from edgeproxy.state.usage_log import HOUR_S

EXAMPLE = """examples:
  export EDGEPROXY_ADMIN_KEY=ep-... EDGEPROXY_URL=http://127.0.0.1:8080
  edgeproxy usage                                    # last 24 h by key and model
  edgeproxy usage --from 2026-11-01 --to 2026-12-01 --group-by key,model,deployment
  edgeproxy usage --group-by organization,team       # spend per organization and team
  edgeproxy usage --granularity hour --format csv > usage.csv
  edgeproxy usage --log --limit 20                   # this hour's request log
  edgeproxy usage --table edgeproxy-local            # read the table itself"""


def add_command(commands: Any) -> None:
    """Register ``usage`` on the main parser's subcommands."""
    usage = commands.add_parser(
        "usage",
        help="spend and tokens by key, model, deployment, team, organization (or the log)",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cli_target.add_options(usage)
    usage.add_argument("--from", dest="start", help="start: ISO date/time or epoch seconds")
    usage.add_argument("--to", dest="end", help="end (exclusive); default now")
    usage.add_argument(
        "--group-by",
        default="key,model",
        help=f"any of {','.join(DIMENSIONS)} (a team admin's key: its team's rows only)",
    )
    usage.add_argument("--granularity", default="day", choices=("day", "hour"))
    usage.add_argument("--format", default="table", choices=("table", "json", "csv"))
    usage.add_argument("--log", action="store_true", help="list the request log of one hour")
    usage.add_argument("--at", help="with --log: a time in the hour (default now)")
    usage.add_argument("--limit", type=int, default=50, help="with --log: records (default 50)")
    usage.add_argument("--end-user", help="with --log: only the requests naming this end user")


def _params(args: argparse.Namespace) -> dict[str, str]:
    params = {"group_by": args.group_by, "granularity": args.granularity}
    if args.start:
        params["from"] = args.start
    if args.end:
        params["to"] = args.end
    return params


async def _over_http(args: argparse.Namespace, url: str) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {cli_target.admin_key(args)}"}
    async with httpx.AsyncClient(base_url=url.rstrip("/"), headers=headers, timeout=60) as http:
        if args.log:
            params: dict[str, str] = {"limit": str(args.limit)}
            if args.at:
                params["at"] = args.at
            if args.end_user:
                params["end_user"] = args.end_user
            path = "/admin/usage/requests"
        else:
            params, path = _params(args), "/admin/usage"
        try:
            answer = await http.get(path, params=params)
        except httpx.HTTPError as exc:
            raise EdgeproxyError(f"cannot reach the gateway: {type(exc).__name__}") from None
    body: dict[str, Any] = answer.json() if answer.content else {}
    if answer.status_code >= 400:
        message = (body.get("error") or {}).get("message") or f"HTTP {answer.status_code}"
        raise UpstreamError(f"{answer.status_code}: {message}", status=answer.status_code)
    return body


async def _on_table(args: argparse.Namespace) -> dict[str, Any]:
    settings = cli_target.table_settings(args)
    now = time.time()
    async with contextlib.AsyncExitStack() as stack:
        log = DynamoUsageLog.sharing(await open_store(settings, stack, rng=process_rng()))
        if args.log:
            at = parse_time(args.at, "at") if args.at else now
            hour = int(at // HOUR_S)
            records = await log.read_requests(hour, args.limit, now, end_user=args.end_user)
            return {"object": "list", "data": [dataclasses.asdict(r) for r in records]}
        report = await usage_report(log, ReportQuery.parse(_params(args), now), now)
        return json_ready(report)


def print_report(report: dict[str, Any], out: TextIO) -> None:
    """The report as an aligned table, with a totals line."""
    dims = ["key_name" if d == "key" else d for d in DIMENSIONS if d in report["group_by"]]
    head = ("period", *dims, "requests", "failures", "tokens", "cache_read", "cache_write")
    head = (*head, "cost_usd", "cache_hits", "saved_usd")
    rows = [
        (
            r["period"],
            *(
                str(r[d] or r.get("key_id") or "-") if d == "key_name" else _cell(r, d)
                for d in dims
            ),
            str(r["requests"]),
            str(r["failures"]),
            str(r["tokens"]),
            *_cache(r),
            f"{r['cost_usd']:.6f}",
            *_hits(r),
        )
        for r in report["rows"]
    ]
    t = report["totals"]
    total = ("total", *([""] * len(dims)), str(t["requests"]), str(t["failures"]))
    rows.append((*total, str(t["tokens"]), *_cache(t), f"{t['cost_usd']:.6f}", *_hits(t)))
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    print(f"usage {report['from']} .. {report['to']}", file=out)
    for row in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)


async def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Print the report (or the log) from ``--url`` or ``--table`` (to ``out``: stdout)."""
    out = out or sys.stdout
    if args.limit <= 0:
        raise UsageError("--limit must be positive")
    url = cli_target.url_of(args)
    body = await (_over_http(args, url) if url else _on_table(args))
    if args.log or args.format == "json":
        print(json.dumps(body, indent=2), file=out)
    elif args.format == "csv":
        out.write(report_csv(body))
    else:
        print_report(body, out)
    return 0


def _cell(row: dict[str, Any], column: str) -> str:
    value = row.get(column)  # a server from before a label reports no column for it
    return "-" if value is None else str(value)


def _cache(row: dict[str, Any]) -> tuple[str, str]:
    # A server from before prompt-cache pricing reports neither.
    return str(row.get("cache_read_tokens", 0)), str(row.get("cache_write_tokens", 0))


def _hits(row: dict[str, Any]) -> tuple[str, str]:
    # A server from before the response cache reports neither.
    return str(row.get("cache_hits", 0)), f"{float(row.get('saved_usd', 0)):.6f}"
