"""``edgeproxy bindings unbind|invalidate|share``: sticky bindings, through the admin API
(``--url`` / ``EDGEPROXY_URL``) or on the table (``--table`` / ``EDGEPROXY_TABLE``).

    edgeproxy bindings unbind --pool gpt-4o --caller ip:203.0.113.7
    edgeproxy bindings unbind --pool gpt-4o --api-key-env CLIENT_KEY   # key read from $CLIENT_KEY
    edgeproxy bindings invalidate --pool gpt-4o
    edgeproxy bindings share --pool gpt-4o --minutes 60 [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import time
from typing import Any, TextIO

from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_http import admin_request
from edgeproxy.config.loader import from_document
from edgeproxy.errors import UsageError
from edgeproxy.routing.affinity import caller_id, key_digest
from edgeproxy.runtime import open_store, process_rng
from edgeproxy.service.admin.bindings import (
    PROTOCOLS,
    binding_share,
    invalidate_pool,
    looks_like_caller_id,
    resolve_caller,
    unbind,
)
from edgeproxy.state.dynamodb.dynamo import DynamoStore


def add_commands(commands: Any) -> None:
    """Register ``bindings`` on the main parser's subcommands."""
    bindings = commands.add_parser("bindings", help="inspect and clear sticky bindings")
    binding_cmds = bindings.add_subparsers(dest="action", required=True)
    unbind_cmd = binding_cmds.add_parser("unbind", help="drop one caller's binding")
    unbind_cmd.add_argument("--pool", required=True, help="public model (or model:group)")
    who = unbind_cmd.add_mutually_exclusive_group(required=True)
    who.add_argument("--caller", help="a caller id (key:<sha256>, grant:<id>, ip:<bucket>) or IP")
    who.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the key")
    unbind_cmd.add_argument(
        "--protocol", default="all", help="e.g. openai.chat (default: every protocol)"
    )
    invalidate = binding_cmds.add_parser("invalidate", help="drop every binding of a pool")
    invalidate.add_argument("--pool", required=True)
    share = binding_cmds.add_parser("share", help="binding share versus configured weight")
    share.add_argument("--pool", required=True)
    share.add_argument("--minutes", type=int, default=60, help="report window (default 60)")
    share.add_argument("--json", action="store_true", help="machine-readable output")
    for sub in (unbind_cmd, invalidate, share):
        cli_target.add_options(sub)


def _client_key(args: argparse.Namespace) -> str | None:
    if args.api_key_env is None:
        return None
    key = os.environ.get(args.api_key_env, "").strip()
    if not key:
        raise UsageError(f"environment variable {args.api_key_env} is unset or empty")
    return key


def _caller(args: argparse.Namespace) -> str:
    key = _client_key(args)
    if key is not None:
        return caller_id(key_digest(key), None, None)
    if not looks_like_caller_id(args.caller):
        raise UsageError(
            "--caller takes a caller id (key:<sha256>, grant:<id>, ip:<bucket>) or an IP "
            "address; pass a raw API key with --api-key-env"
        )
    return resolve_caller(args.caller)


def print_share(report: dict[str, Any], minutes: int, out: TextIO) -> None:
    print(
        f"{report['pool']}: last {minutes} min, {report['requests']} attempts, "
        f"{report['sticky_fraction']:.0%} of successes routed by a binding, "
        f"{report['moved']:.0%} of traffic moved away from the weights",
        file=out,
    )
    rows = report["deployments"]
    width = max([len("deployment"), *(len(d["deployment_id"]) for d in rows)])
    print(f"{'deployment':<{width}}  weight%  traffic%  binding%  requests  sticky", file=out)
    for d in rows:
        print(
            f"{d['deployment_id']:<{width}}  {d['weight_share']:>7.1%}  "
            f"{d['traffic_share']:>8.1%}  {d['sticky_share']:>8.1%}  {d['requests']:>8}  "
            f"{d['sticky_hits']:>6}",
            file=out,
        )


async def _on_table(args: argparse.Namespace, store: DynamoStore, caller: str | None) -> Any:
    if args.action == "unbind":
        assert caller is not None
        protocols = PROTOCOLS if args.protocol == "all" else (args.protocol,)
        removed = []
        for protocol in protocols:
            found = await unbind(store, caller, args.pool, protocol)
            if found is not None:
                removed.append({"protocol": protocol, "deployment": found.deployment_id})
        return {"pool": args.pool, "caller": caller, "removed": removed}
    if args.action == "invalidate":
        return {"pool": args.pool, "generation": await invalidate_pool(store, args.pool)}
    stored = await store.load_config()
    if stored is None:
        raise UsageError("no configuration is stored yet (edgeproxy config load FILE)")
    config = from_document(stored.document)
    report = await binding_share(store, config, args.pool, minutes=args.minutes, now=time.time())
    return dataclasses.asdict(report)


def _remote(args: argparse.Namespace) -> Any:
    if args.action == "share":
        params = {"pool": args.pool, "minutes": args.minutes}
        return admin_request(args, "GET", "/admin/bindings/share", params=params)
    body: dict[str, Any] = {"pool": args.pool}
    if args.action == "unbind":
        key = _client_key(args)
        body.update({"api_key": key} if key is not None else {"caller": args.caller})
        if args.protocol != "all":
            body["protocol"] = args.protocol
    return admin_request(args, "POST", f"/admin/bindings/{args.action}", body)


def _print(args: argparse.Namespace, result: dict[str, Any], out: TextIO) -> None:
    if args.action == "unbind":
        for gone in result["removed"]:
            print(
                f"unbound {result['caller']} from {gone['deployment']} "
                f"({result['pool']}, {gone['protocol']})",
                file=out,
            )
        if not result["removed"]:
            print(f"no binding for {result['caller']} in {result['pool']}", file=out)
    elif args.action == "invalidate":
        print(
            f"invalidated every binding of {result['pool']} (generation {result['generation']})",
            file=out,
        )
    elif args.json:
        print(json.dumps(result, indent=2), file=out)
    else:
        print_share(result, args.minutes, out)


async def run(args: argparse.Namespace) -> int:
    """Carry out one ``bindings`` action; returns the exit status."""
    if args.action == "share" and args.minutes <= 0:
        raise UsageError("--minutes must be positive")
    caller = _caller(args) if args.action == "unbind" else None  # refuse a raw key first
    if cli_target.url_of(args):
        result = _remote(args)
    else:
        settings = cli_target.table_settings(args)
        async with contextlib.AsyncExitStack() as stack:
            result = await _on_table(
                args, await open_store(settings, stack, rng=process_rng()), caller
            )
    _print(args, result, sys.stdout)
    return 0
