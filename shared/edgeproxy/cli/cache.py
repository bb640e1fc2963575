"""``edgeproxy cache``: the response cache's rules, through a running gateway's admin API.

    edgeproxy cache show [--json]
    edgeproxy cache set pools fast-chat --scope team --ttl 600 [--coalesce --wait 10]
    edgeproxy cache set keys 3f2a9c0d1e2b4a5c --off     # one key opts out
    edgeproxy cache delete teams research

``set`` and ``delete`` read the configuration's version first and send it
back (a concurrent edit is a 409, never lost). ``--url`` / ``EDGEPROXY_URL``
names the gateway and ``$EDGEPROXY_ADMIN_KEY`` the admin key; the rules are
the configuration's ``cache:`` section, so ``config load`` sets them too.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_http import admin_request
from edgeproxy.errors import UsageError

HELP = "the response cache's rules per pool, team or key"
LEVELS = ("pools", "teams", "keys")


def add_command(commands: Any) -> None:
    """Register ``cache`` on the main parser's subcommands."""
    parser = commands.add_parser("cache", help=HELP)
    actions = parser.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help="every rule")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    put = actions.add_parser("set", help="set the rule of one pool, team or key")
    drop = actions.add_parser("delete", help="drop the rule of one pool, team or key")
    for sub in (show, put, drop):
        cli_target.add_gateway_options(sub)
    for sub in (put, drop):
        sub.add_argument("level", choices=LEVELS)
        sub.add_argument("name", help="the pool (public model), team id or key id")
    put.add_argument("--scope", choices=("key", "team", "gateway"), default="key")
    put.add_argument("--ttl", type=int, help="seconds an answer is kept (default 3600)")
    put.add_argument("--max-bytes", type=int, help="largest answer body stored")
    put.add_argument("--coalesce", action="store_true", help="identical requests in flight wait")
    put.add_argument("--wait", type=float, help="the longest such wait, in seconds")
    put.add_argument("--off", action="store_true", help="turn the cache off at this level")


def rule_of(args: argparse.Namespace) -> dict[str, Any]:
    """The rule the ``set`` options describe (unset numbers keep the defaults)."""
    rule: dict[str, Any] = {"enabled": not args.off, "scope": args.scope}
    for field, value in (
        ("ttl_seconds", args.ttl),
        ("max_answer_bytes", args.max_bytes),
        ("coalesce_wait_seconds", args.wait),
    ):
        if value is not None:
            rule[field] = value
    if args.coalesce:
        rule["coalesce"] = True
    return rule


def print_rules(section: dict[str, Any], out: TextIO) -> None:
    """One line per rule (``no cache rules: the cache is off`` when there are none)."""
    lines = [
        f"{level} {name}: "
        + ("off" if not rule.get("enabled", True) else f"scope={rule.get('scope', 'key')}")
        + f" ttl={rule.get('ttl_seconds', 3600)}s"
        + (" coalesce" if rule.get("coalesce") else "")
        for level in LEVELS
        for name, rule in sorted(section.get(level, {}).items())
    ]
    print("\n".join(lines) if lines else "no cache rules: the cache is off", file=out)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Show, set or delete rules on the gateway ``--url`` names."""
    out = out or sys.stdout
    if not cli_target.url_of(args):
        raise UsageError("edgeproxy cache acts through a gateway: pass --url or EDGEPROXY_URL")
    current = admin_request(args, "GET", "/admin/cache")
    if args.action == "show":
        if args.json:
            print(json.dumps(current["cache"], indent=2), file=out)
        else:
            print_rules(current["cache"], out)
        return 0
    path = f"/admin/cache/{args.level}/{args.name}"
    if args.action == "set":
        body = {**rule_of(args), "version": current["version"]}
        done = admin_request(args, "PUT", path, body)
    else:
        done = admin_request(args, "DELETE", f"{path}?version={current['version']}")
    print_rules(done["cache"], out)
    return 0
