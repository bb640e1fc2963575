"""``edgeproxy status``, ``settings get|set``, ``audit`` and ``drain|undrain DEPLOYMENT``.

Each talks to a running gateway's admin API (``--url``, or ``EDGEPROXY_URL``;
the admin key is read from the environment variable ``EDGEPROXY_ADMIN_KEY``,
or the one named by ``--admin-key-env``, never from an argument) or to a state
table named explicitly (``--table`` or ``EDGEPROXY_TABLE``, and the AWS
environment); see ``cli_target``. Registered on the main parser by
``add_commands``; ``run`` carries one out.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_client import AdminClient, HttpAdmin, TableAdmin
from edgeproxy.errors import UsageError
from edgeproxy.runtime import open_store, process_rng

COMMANDS = frozenset({"status", "settings", "audit", "drain", "undrain"})

STATUS_EXAMPLE = """example:
  EDGEPROXY_ADMIN_KEY=ep-... edgeproxy status --url http://127.0.0.1:8080
  edgeproxy status --table edgeproxy-local   # or EDGEPROXY_TABLE: read the table itself"""
SETTINGS_EXAMPLE = """examples:
  export EDGEPROXY_ADMIN_KEY=ep-... EDGEPROXY_URL=http://127.0.0.1:8080
  edgeproxy settings get
  edgeproxy settings set strategy=least-busy circuit.cooldown_seconds=10
  edgeproxy settings set --json '{"sticky": {"idle_ttl_seconds": 600}}'
Values are JSON when they parse as JSON (10, true, "x"), else strings. Omitted
fields keep their value; execution_policies must be sent whole. The write is
based on the version just read (or --version N) and fails with 409 if another
admin changed the settings in between."""
DRAIN_EXAMPLE = """examples:
  export EDGEPROXY_ADMIN_KEY=ep-... EDGEPROXY_URL=http://127.0.0.1:8080
  edgeproxy drain gpt-east      # enabled: false: no strategy, binding or probe sends it traffic
  edgeproxy undrain gpt-east    # enabled: true again
Every gateway routes by the change within the configuration propagation bound
(config_refresh_seconds). Weight is left alone (it keeps its meaning per strategy)."""
AUDIT_EXAMPLE = """example:
  EDGEPROXY_ADMIN_KEY=ep-... edgeproxy audit --url http://127.0.0.1:8080 --limit 20"""


def _common(parser: argparse.ArgumentParser) -> None:
    cli_target.add_options(parser)  # --url / EDGEPROXY_URL, --admin-key-env, --table


def add_commands(commands: Any) -> None:
    """Add ``status``, ``settings`` and ``audit`` to the main parser's subcommands."""
    raw = argparse.RawDescriptionHelpFormatter
    status = commands.add_parser(
        "status",
        help="each pool's deployments: state, retry-after, health, rpm/tpm use",
        epilog=STATUS_EXAMPLE,
        formatter_class=raw,
    )
    _common(status)
    status.add_argument("--json", action="store_true", help="the /health/deep JSON")
    settings = commands.add_parser(
        "settings",
        help="read or change the router settings",
        epilog=SETTINGS_EXAMPLE,
        formatter_class=raw,
    )
    actions = settings.add_subparsers(dest="action", required=True)
    get = actions.add_parser(
        "get",
        help="print the effective router settings (JSON)",
        epilog=SETTINGS_EXAMPLE,
        formatter_class=raw,
    )
    _common(get)
    put = actions.add_parser(
        "set", help="change some router settings", epilog=SETTINGS_EXAMPLE, formatter_class=raw
    )
    _common(put)
    put.add_argument("pairs", nargs="*", metavar="FIELD=VALUE", help="dotted field, JSON value")
    put.add_argument("--json", dest="body", help="a JSON object of settings to change")
    put.add_argument("--version", type=int, help="the version the change is based on")
    audit = commands.add_parser(
        "audit",
        help="recent admin changes, newest first",
        epilog=AUDIT_EXAMPLE,
        formatter_class=raw,
    )
    _common(audit)
    for name, what in (("drain", "disable"), ("undrain", "enable")):
        switch = commands.add_parser(
            name,
            help=f"{what} one deployment (enabled: {str(name == 'undrain').lower()})",
            epilog=DRAIN_EXAMPLE,
            formatter_class=raw,
        )
        _common(switch)
        switch.add_argument("deployment", help="the deployment's id")
    audit.add_argument("--limit", type=int, default=20, help="how many entries (default 20)")
    audit.add_argument("--json", action="store_true", help="machine-readable output")


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def settings_patch(pairs: list[str], body: str | None) -> dict[str, Any]:
    """The PUT body from ``FIELD=VALUE`` pairs (dotted paths) and/or a JSON object."""
    patch: dict[str, Any] = {}
    if body is not None:
        parsed = _value(body)
        if not isinstance(parsed, dict):
            raise UsageError("--json takes a JSON object")
        patch.update(parsed)
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"expected FIELD=VALUE, got {pair!r}")
        *parents, leaf = name.split(".")
        node = patch
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise UsageError(f"{name}: {part} is not an object")
        node[leaf] = _value(text)
    if not patch:
        raise UsageError("nothing to change: give FIELD=VALUE pairs or --json")
    return patch


def _cell(used: int, limit: int | None) -> str:
    return f"{used}/{limit if limit is not None else '-'}"


def _state(row: dict[str, Any]) -> str:
    circuit = row["circuit"]
    state = str(row["status"])
    if row.get("credential_problem"):
        return f"{state} ({row['credential_problem']})"
    if circuit["cause"]:
        state += (
            f" ({circuit['cause']}" + (f": {circuit['reason']}" if circuit["reason"] else "") + ")"
        )
    return state


def print_status(report: dict[str, Any], out: TextIO) -> None:
    """One table per pool: deployment, state, retry-after, health, rpm/tpm use vs limit."""
    print(
        f"edgeproxy: {report['status']} (configuration version {report['config_version']})",
        file=out,
    )
    head = ("deployment", "state", "retry-after", "health", "rpm", "tpm", "rejections")
    for pool in report["pools"]:
        rows = [
            (
                r["id"],
                _state(r),
                f"{r['retry_after_ms'] / 1000:.1f}s" if r["retry_after_ms"] else "-",
                f"{r['health_score']:.2f}",
                _cell(r["rpm"]["used"], r["rpm"]["limit"]),
                _cell(r["tpm"]["used"], r["tpm"]["limit"]),
                str(r["credential_rejections"]),
            )
            for r in pool["deployments"]
        ]
        widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
        print(f"\n{pool['pool']}", file=out)
        for row in [head, *rows]:
            print(
                "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(),
                file=out,
            )


def _short(value: Any, width: int = 80) -> str:
    text = json.dumps(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def print_audit(entries: list[dict[str, Any]], out: TextIO) -> None:
    """One line per entry: time, who, what, target, version, then the changed paths."""
    for e in entries:
        when = datetime.fromtimestamp(e["at"], UTC).strftime("%Y-%m-%d %H:%M:%S")
        version = f"v{e['version']}" if e["version"] is not None else "-"
        print(f"{when}Z  {e['actor']}  {e['action']}  {e['target']}  {version}", file=out)
        for change in e["changes"]:
            if "path" in change:
                old = _short(change["old"]) if "old" in change else "(none)"
                new = _short(change["new"]) if "new" in change else "(removed)"
                print(f"    {change['path']}: {old} -> {new}", file=out)
            else:
                print(f"    {json.dumps(change)}", file=out)


async def _carry_out(args: argparse.Namespace, admin: AdminClient, out: TextIO) -> int:
    if args.command == "status":
        report = await admin.deep_health()
        if args.json:
            print(json.dumps(report, indent=2), file=out)
        else:
            print_status(report, out)
    elif args.command == "settings" and args.action == "get":
        print(json.dumps(await admin.router_settings(), indent=2), file=out)
    elif args.command == "settings":
        patch = settings_patch(args.pairs, args.body)
        version = args.version
        if version is None:
            version = int((await admin.router_settings())["version"])
        done = await admin.put_router_settings(patch, version)
        print(f"router settings stored as configuration version {done['version']}", file=out)
    elif args.command in ("drain", "undrain"):
        enabled = args.command == "undrain"
        done = await admin.set_enabled(args.deployment, enabled)
        state = "enabled" if enabled else "disabled (drained)"
        print(
            f"{args.deployment}: {state}, stored as configuration version {done['version']}",
            file=out,
        )
    else:
        if args.limit <= 0:
            raise UsageError("--limit must be positive")
        entries = await admin.audit(args.limit)
        if args.json:
            print(json.dumps(entries, indent=2), file=out)
        else:
            print_audit(entries, out)
    return 0


async def run(args: argparse.Namespace) -> int:
    """Carry out one of ``COMMANDS`` over HTTP (``--url``) or on the table (``--table``)."""
    url = cli_target.url_of(args)
    if url:
        async with HttpAdmin(url, cli_target.admin_key(args)) as admin:
            return await _carry_out(args, admin, sys.stdout)
    settings = cli_target.table_settings(args)
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(settings, stack, rng=process_rng())
        table = TableAdmin(store, time.time, actor=f"cli:{getpass.getuser()}")
        return await _carry_out(args, table, sys.stdout)
