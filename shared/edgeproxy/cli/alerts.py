"""``edgeproxy alerts``: budget alerts not delivered yet (pending or given up).

Reads ``GET /admin/alerts/undelivered`` of a running gateway (``--url``, the
admin key in ``$EDGEPROXY_ADMIN_KEY``) or the alerts' pointers in a state table
(``--table``); the same list either way. One line per alert: its level and
id, the threshold and period, ``pending`` with when it is tried again or
``given up``, its failed attempts and the destinations that did take it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from edgeproxy.api.admin.alerts import alert_view
from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_http import admin_request
from edgeproxy.runtime import open_store, process_rng

EXAMPLE = """examples:
  export EDGEPROXY_ADMIN_KEY=ep-... EDGEPROXY_URL=http://127.0.0.1:8080
  edgeproxy alerts                     # what is still owed, soonest due first
  edgeproxy alerts --json
  edgeproxy alerts --table edgeproxy-prod"""
HELP = "budget alerts not delivered yet (pending or given up)"


def add_command(commands: Any) -> None:
    """Register ``alerts`` on the main parser's subcommands."""
    parser = commands.add_parser(
        "alerts",
        help=HELP,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cli_target.add_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")


async def _on_table(args: argparse.Namespace) -> list[dict[str, Any]]:
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(cli_target.table_settings(args), stack, rng=process_rng())
        found = await store.undelivered_alerts()
    found.sort(key=lambda a: (a.next_at, a.level, a.level_id, a.name))
    return [alert_view(a) for a in found]


def _when(at: float | None) -> str:
    if at is None:
        return "given up"
    return "pending, next " + datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def print_alerts(alerts: list[dict[str, Any]], out: TextIO) -> None:
    """One line per alert (``no undelivered alerts`` when there are none)."""
    if not alerts:
        print("no undelivered alerts", file=out)
        return
    for alert in alerts:
        body = alert.get("notification") or {}
        threshold = body.get("threshold")
        share = f"{float(threshold) * 100:g}%" if isinstance(threshold, int | float) else "?"
        sent = ",".join(alert["sent"]) or "-"
        print(
            f"{alert['level']} {alert['id']}  {share} of {body.get('budget_usd', '?')} USD "
            f"({body.get('period', '?')})  {_when(alert['next_at'])}  "
            f"attempts={alert['attempts']}  sent={sent}",
            file=out,
        )


async def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Print the undelivered alerts from ``--url`` or ``--table``."""
    out = out or sys.stdout
    if cli_target.url_of(args):
        alerts: list[dict[str, Any]] = admin_request(args, "GET", "/admin/alerts/undelivered")[
            "data"
        ]
    else:
        alerts = await _on_table(args)
    if args.json:
        print(json.dumps(alerts, indent=2), file=out)
    else:
        print_alerts(alerts, out)
    return 0
