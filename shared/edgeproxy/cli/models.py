"""``edgeproxy pools effective POOL`` and ``edgeproxy aliases list|set|delete``.

``pools effective`` prints every effective setting of one pool with the level
it came from (003's chain: tier, pool, model capability, model protocol,
model, global, default), as ``GET /admin/pools/{pool}/effective`` answers it.
``aliases`` reads and writes ``aliases:`` (versioned and audited, as the admin
API's ``/admin/aliases``). Both act through a gateway (``--url``) or on a
table (``--table``), see ``cli.target``.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO
from urllib.parse import quote

from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_client import HttpAdmin
from edgeproxy.config.aliases import Alias
from edgeproxy.config.effective import report
from edgeproxy.config.policies import Operation
from edgeproxy.errors import NotFound, UsageError
from edgeproxy.runtime import open_store, process_rng
from edgeproxy.service.admin import model_changes
from edgeproxy.service.admin.config_edit import ConfigEditor, checked

COMMANDS = frozenset({"pools", "aliases"})
EXAMPLE = """examples:
  export EDGEPROXY_ADMIN_KEY=ep-... EDGEPROXY_URL=http://127.0.0.1:8080
  edgeproxy pools effective fast-chat --operation chat --protocol anthropic.messages
  edgeproxy aliases set gpt-4-legacy fast-chat --since 2026-11-01T00:00:00Z
  edgeproxy aliases list
  edgeproxy aliases delete gpt-4-legacy"""


def add_commands(commands: Any) -> None:
    """Add ``pools`` and ``aliases`` to the main parser's subcommands."""
    raw = argparse.RawDescriptionHelpFormatter
    pools = commands.add_parser("pools", help="a pool's effective settings", epilog=EXAMPLE)
    pool_actions = pools.add_subparsers(dest="action", required=True)
    effective = pool_actions.add_parser(
        "effective",
        help="every effective setting and its level",
        epilog=EXAMPLE,
        formatter_class=raw,
    )
    cli_target.add_options(effective)
    effective.add_argument(
        "pool", help="the pool (model or model:group; an alias names its model's)"
    )
    effective.add_argument(
        "--operation", default="chat", help="the request's operation (default chat)"
    )
    effective.add_argument("--protocol", help="the inbound protocol (default openai.<operation>)")
    effective.add_argument("--json", action="store_true", help="the admin API's JSON")
    aliases = commands.add_parser(
        "aliases", help="model aliases", epilog=EXAMPLE, formatter_class=raw
    )
    alias_actions = aliases.add_subparsers(dest="action", required=True)
    listing = alias_actions.add_parser("list", help="every alias (JSON)")
    cli_target.add_options(listing)
    put = alias_actions.add_parser("set", help="create or replace an alias")
    cli_target.add_options(put)
    put.add_argument("name", help="the alias")
    put.add_argument("model", help="the canonical public model")
    put.add_argument("--since", help="deprecated from this instant (ISO 8601 with a zone)")
    put.add_argument("--sunset", help="expected to stop answering at this instant")
    put.add_argument("--link", help="a page about the deprecation (https://...)")
    delete = alias_actions.add_parser("delete", help="remove an alias")
    cli_target.add_options(delete)
    delete.add_argument("name", help="the alias")


def alias_body(args: argparse.Namespace) -> dict[str, Any]:
    """The alias as ``PUT /admin/aliases/{name}`` takes it."""
    body: dict[str, Any] = {"model": args.model}
    notice = {"since": args.since, "sunset": args.sunset, "link": args.link}
    if any(notice.values()):
        if args.since is None:
            raise UsageError("--sunset and --link need --since (when the deprecation starts)")
        body["deprecation"] = {k: v for k, v in notice.items() if v is not None}
    return body


def _rows(view: dict[str, Any]) -> Iterator[tuple[str, str, str, str]]:
    def row(name: str, setting: dict[str, Any]) -> tuple[str, str, str, str]:
        return name, json.dumps(setting["value"]), setting["level"], setting["source"] or "-"

    for tier, settings in view["tiers"].items():
        yield row(f"tier {tier} strategy", settings["strategy"])
        for name, setting in settings["params"].items():
            yield row(f"tier {tier} {name}", setting)
    for name, setting in view["sticky"].items():
        yield row(f"sticky.{name}", setting)
    yield row("continuation", view["continuation"])
    for name, setting in view["circuit"].items():
        yield row(f"circuit.{name}", setting)
    # An older gateway's view has no reservations: nothing to print for them.
    for dep, setting in view.get("min_role", {}).items():
        yield row(f"{dep} min_role", setting)


def print_effective(view: dict[str, Any], out: TextIO) -> None:
    """One line per setting: name, value, level, the YAML key that set it."""
    print(
        f"{view['pool']} ({view['operation']} on {view['protocol']}); "
        f"precedence: {' > '.join(view['precedence'])}",
        file=out,
    )
    head = ("setting", "value", "level", "source")
    rows = [head, *_rows(view)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        print(
            "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(), file=out
        )


async def _http(args: argparse.Namespace, url: str) -> Any:
    async with HttpAdmin(url, cli_target.admin_key(args)) as admin:
        call = admin.call
        if args.command == "pools":
            params = {"operation": args.operation}
            if args.protocol:
                params["protocol"] = args.protocol
            return await call(
                "GET", f"/admin/pools/{quote(args.pool, safe='')}/effective", params=params
            )
        if args.action == "list":
            return await call("GET", "/admin/aliases")
        version = (await call("GET", "/admin/aliases"))["version"]
        path = f"/admin/aliases/{quote(args.name, safe='')}"
        if args.action == "set":
            return await call("PUT", path, json={**alias_body(args), "version": version})
        return await call("DELETE", path, params={"version": version})


async def _table(args: argparse.Namespace) -> Any:
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(cli_target.table_settings(args), stack, rng=process_rng())
        editor = ConfigEditor(store, time.time, owner=True)
        current = await editor.current()
        if args.command == "pools":
            if args.operation not in {op.value for op in Operation}:
                raise UsageError(f"unknown operation {args.operation!r}")
            pool = current.config.canonical(args.pool)
            if not current.config.pool(pool):
                raise NotFound(f"No deployment serves the pool `{pool}`.")
            view = report(current.config, pool, Operation(args.operation), args.protocol)
            return {**view, "version": current.version}
        if args.action == "list":
            return {"aliases": current.document["aliases"], "version": current.version}
        if args.action == "set":
            body = alias_body(args)
            checked(Alias, body)
            change, action = model_changes.put_alias(args.name, body), "alias.update"
        else:
            change, action = model_changes.delete_alias(args.name), "alias.delete"
        actor = f"cli:{getpass.getuser()}"
        done = await editor.edit(
            current.version, change, actor=actor, action=action, target=args.name
        )
        return {"aliases": done.document["aliases"], "version": done.version}


async def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Carry out one ``pools`` or ``aliases`` command (printing to ``out``, else stdout)."""
    out = out or sys.stdout
    url = cli_target.url_of(args)
    result = await (_http(args, url) if url else _table(args))
    if args.command == "pools" and not args.json:
        print_effective(result, out)
    else:
        print(json.dumps(result, indent=2), file=out)
    return 0
