"""``edgeproxy config export|diff|load``: the stored configuration as a file, and back.

    edgeproxy config export > live.yaml          # secrets redacted; the version in its header
    edgeproxy config diff live.yaml              # what loading it would change
    edgeproxy config load live.yaml --dry-run    # the same, said as a load
    edgeproxy config load live.yaml              # refused if admins changed it since (--force)

Each works through a running gateway (``--url`` / ``EDGEPROXY_URL``, admin
key in ``$EDGEPROXY_ADMIN_KEY``) or on a state table (``--table`` /
``EDGEPROXY_TABLE``); see ``cli_target``. ``[redacted]`` values in a loaded
file keep the stored ones (``service/config_secrets``).
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import yaml

from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_client import AdminClient, HttpAdmin, TableAdmin
from edgeproxy.errors import ConfigError
from edgeproxy.runtime import open_store, process_rng
from edgeproxy.service.admin.config_roundtrip import base_version, export_text

EXAMPLE = __doc__.split("\n\n")[1] if __doc__ else ""


def add_commands(actions: Any) -> None:
    """Add ``export``, ``diff`` and ``load`` to the ``config`` subcommands."""
    raw = argparse.RawDescriptionHelpFormatter
    epilog = "Examples:\n" + EXAMPLE
    export = actions.add_parser(
        "export",
        help="print the stored configuration (secrets redacted)",
        epilog=epilog,
        formatter_class=raw,
    )
    cli_target.add_options(export)
    diff = actions.add_parser(
        "diff", help="what loading FILE would change", epilog=epilog, formatter_class=raw
    )
    diff.add_argument("file", help="the YAML configuration file")
    cli_target.add_options(diff)
    load = actions.add_parser(
        "load", help="validate and store FILE", epilog=epilog, formatter_class=raw
    )
    load.add_argument("file", help="the YAML configuration file")
    load.add_argument("--dry-run", action="store_true", help="say what would change; store nothing")
    load.add_argument(
        "--force", action="store_true", help="overwrite admin changes made since the file's base"
    )
    cli_target.add_options(load)


def _read(path: str) -> tuple[dict[str, Any], int | None]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return data, base_version(text)


def _value(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def print_changes(changes: list[dict[str, Any]], out: TextIO) -> None:
    for change in changes:
        if "path" not in change:
            print(f"  ({json.dumps(change)})", file=out)
            continue
        old = _value(change["old"]) if "old" in change else "(none)"
        new = _value(change["new"]) if "new" in change else "(removed)"
        print(f"  {change['path'] or '(everything)'}: {old} -> {new}", file=out)


def _print_overwritten(entries: list[dict[str, Any]], out: TextIO) -> None:
    for e in entries:
        print(f"  v{e['version']} {e['action']} {e['target']} by {e['actor']}", file=out)


def report(action: str, path: str, result: dict[str, Any], out: TextIO) -> None:
    changes, overwritten, version = result["changes"], result["overwritten"], result["version"]
    if not changes:
        print(f"no changes: the stored configuration (version {version}) matches {path}", file=out)
        return
    if result["stored"]:
        print(f"stored configuration version {version} ({len(changes)} changes):", file=out)
    elif action == "diff":
        print(f"{path} against the stored configuration (version {version}):", file=out)
    else:
        print(f"dry run: loading {path} would make {len(changes)} changes:", file=out)
    print_changes(changes, out)
    if overwritten:
        verb = "overwrote" if result["stored"] else "would overwrite (refused without --force)"
        print(f"{verb} {len(overwritten)} admin change(s) made since the file's base:", file=out)
        _print_overwritten(overwritten, out)
    if not result["stored"]:
        print("nothing stored", file=out)


async def _carry_out(args: argparse.Namespace, admin: AdminClient, source: str, out: TextIO) -> int:
    if args.action == "export":
        current = await admin.config()
        out.write(export_text(current["document"], int(current["version"]), source))
        return 0
    document, base = _read(args.file)
    body = {
        "document": document,
        "base_version": base,
        "force": args.action == "diff" or args.force,
        "dry_run": args.action == "diff" or args.dry_run,
        "source": args.file,
    }
    report(args.action, args.file, await admin.load_config(body), out)
    return 0


async def run(args: argparse.Namespace) -> int:
    """Carry out ``config export|diff|load`` through the gateway or on the table."""
    url = cli_target.url_of(args)
    if url:
        async with HttpAdmin(url, cli_target.admin_key(args)) as admin:
            return await _carry_out(args, admin, url, sys.stdout)
    settings = cli_target.table_settings(args)
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(settings, stack, rng=process_rng())
        table = TableAdmin(store, time.time, actor=f"cli:{getpass.getuser()}")
        return await _carry_out(args, table, f"table {settings.table}", sys.stdout)
