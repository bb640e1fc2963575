"""``edgeproxy fallbacks``: the fallback chains, through a running gateway's admin API.

    edgeproxy fallbacks show [--json]
    edgeproxy fallbacks set fast-chat smart-chat other-chat [--reason context_window]
    edgeproxy fallbacks set fast-chat smart-chat --continuation prefill
    edgeproxy fallbacks delete fast-chat [--reason general]

``set`` and ``delete`` read the configuration's version first and send it back
(a concurrent edit is a 409, never lost); ``set`` keeps a replaced chain's
``continuation`` unless ``--continuation`` names one (``router``: the router's).
``--url`` / ``EDGEPROXY_URL`` names the gateway and ``$EDGEPROXY_ADMIN_KEY`` the admin key.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO
from urllib.parse import quote

from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_http import admin_request
from edgeproxy.config.models import FallbackReason
from edgeproxy.config.router import Continuation
from edgeproxy.errors import UsageError

HELP = "the fallback chains: which models a request tries next, and why"


def add_command(commands: Any) -> None:
    """Register ``fallbacks`` on the main parser's subcommands."""
    parser = commands.add_parser("fallbacks", help=HELP)
    actions = parser.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help="every chain")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    put = actions.add_parser("set", help="create or replace one model's chain for one reason")
    drop = actions.add_parser("delete", help="remove one model's chain for one reason")
    for sub in (show, put, drop):
        cli_target.add_gateway_options(sub)
    for sub in (put, drop):
        sub.add_argument("model", help="the public model whose requests fall back")
        sub.add_argument("--reason", choices=[r.value for r in FallbackReason], default="general")
    put.add_argument("to", nargs="+", help="the models to try next, in order")
    put.add_argument(
        "--continuation",
        choices=[*(c.value for c in Continuation), "router"],
        help="may a cut stream continue on them (router: the router's setting)",
    )


def print_chains(chains: list[dict[str, Any]], out: TextIO) -> None:
    """One line per chain (``no fallback chains`` when there are none)."""
    lines = [
        f"{c['model']} ({c.get('reason', 'general')}) -> {' -> '.join(c['to'])}"
        + (f" continuation={c['continuation']}" if c.get("continuation") else "")
        for c in chains
    ]
    print("\n".join(lines) if lines else "no fallback chains", file=out)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Show, set or delete chains on the gateway ``--url`` names."""
    out = out or sys.stdout
    if not cli_target.url_of(args):
        raise UsageError("edgeproxy fallbacks acts through a gateway: pass --url or EDGEPROXY_URL")
    current = admin_request(args, "GET", "/admin/fallbacks")
    if args.action == "show":
        if args.json:
            print(json.dumps(current["fallbacks"], indent=2), file=out)
        else:
            print_chains(current["fallbacks"], out)
        return 0
    path = f"/admin/fallbacks/{args.reason}/{quote(args.model, safe='')}"
    if args.action == "set":
        body: dict[str, Any] = {"to": args.to, "version": current["version"]}
        if args.continuation is not None:
            body["continuation"] = None if args.continuation == "router" else args.continuation
        done = admin_request(args, "PUT", path, body)
    else:
        done = admin_request(args, "DELETE", f"{path}?version={current['version']}")
    print_chains(done["fallbacks"], out)
    return 0
