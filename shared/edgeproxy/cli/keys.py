"""``edgeproxy keys``: create, list, show, revoke and import client keys.

    export EDGEPROXY_ADMIN_KEY=ep-...      # an admin key; never a command-line argument
    edgeproxy keys create --url http://127.0.0.1:8080 --name billing-app --role pro --rpm 60
    edgeproxy keys list --url http://127.0.0.1:8080
    edgeproxy keys revoke --url http://127.0.0.1:8080 3f9a0c1d2e4b5a6c
    edgeproxy keys create --name batch --model gpt-4o --budget 25 --expires 2027-01-01T00:00:00Z
    edgeproxy keys update --url http://127.0.0.1:8080 3f9a0c1d2e4b5a6c --rpm 120 --period daily
    edgeproxy keys rotate --url http://127.0.0.1:8080 3f9a0c1d2e4b5a6c --grace 3600
    edgeproxy keys import config.yaml      # copy the YAML's gateway.api_keys into the table

With ``--url`` (or ``EDGEPROXY_URL``) a command talks to a running gateway's
admin API (the admin key is read from ``$EDGEPROXY_ADMIN_KEY``, or the
variable ``--admin-key-env`` names); with ``--table`` (or ``EDGEPROXY_TABLE``)
to that table directly; with neither it fails saying so (``cli_target``).
``import`` works on a table only. A new key is printed once, on the line
``key: ep-...``; nothing can show it again (a rotation's new secret too).
``list`` shows each key's limits, budget period, spend this period, expiry
and status (active, expired, revoked, rotating).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from typing import Any

from pydantic import ValidationError

from edgeproxy.api.admin.keys import CreateKey, epoch_seconds, key_view, usage_now
from edgeproxy.cli import key_changes
from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_http import admin_request
from edgeproxy.config.loader import load_config_file
from edgeproxy.errors import EdgeproxyError, UsageError
from edgeproxy.runtime import open_store, process_rng
from edgeproxy.service.admin.key_lifecycle import revoke_key
from edgeproxy.service.keys import imported_key, mint_key

ADMIN_KEY_ENV = "EDGEPROXY_ADMIN_KEY"
EXAMPLE = __doc__.split("\n\n")[1] if __doc__ else ""


def register(commands: Any) -> None:
    """Add ``keys`` and its actions to the ``edgeproxy`` parser."""
    keys = commands.add_parser(
        "keys",
        help="create, list, show, update, rotate, revoke and import client keys",
        description="Manage client keys. Examples:\n" + EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = keys.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="create a key (printed once)", allow_abbrev=False)
    create.add_argument("--name", required=True)
    create.add_argument("--role", default="free", help="free | pro | internal | admin")
    create.add_argument("--model", action="append", dest="models", help="allowed model (repeat)")
    create.add_argument("--rpm", type=int, help="requests per minute")
    create.add_argument("--tpm", type=int, help="tokens per minute")
    create.add_argument("--parallel", type=int, help="requests in flight at once, fleet-wide")
    create.add_argument("--budget", type=float, help="spend budget in USD")
    create.add_argument("--period", help="budget period: daily | weekly | monthly | total")
    create.add_argument("--expires", help="expiry, ISO 8601 (e.g. 2027-01-01T00:00:00Z)")
    listing = actions.add_parser("list", help="every key (prefixes only)", allow_abbrev=False)
    show = actions.add_parser("show", help="one key, with its spend", allow_abbrev=False)
    show.add_argument("id")
    revoke = actions.add_parser(
        "revoke", help="revoke a key (takes effect within the key TTL)", allow_abbrev=False
    )
    revoke.add_argument("id")
    changes = key_changes.add_parsers(actions)
    for sub in (create, listing, show, revoke, *changes):
        cli_target.add_options(sub)
        sub.add_argument("--json", action="store_true", help="machine-readable output")
    imported = actions.add_parser("import", help="copy a YAML file's gateway.api_keys to the table")
    imported.add_argument("file")
    cli_target.add_options(imported, url=False)
    for sub in (create, listing, show, revoke, imported, *changes):
        sub.epilog = "Examples:\n" + EXAMPLE
        sub.formatter_class = argparse.RawDescriptionHelpFormatter


def _body(args: argparse.Namespace) -> dict[str, Any]:
    body = {
        "name": args.name,
        "role": args.role,
        "models": args.models,
        "rpm_limit": args.rpm,
        "tpm_limit": args.tpm,
        "max_parallel_requests": args.parallel,
        "budget_usd": args.budget,
        "budget_period": args.period,
        "expires_at": args.expires,
    }
    return {k: v for k, v in body.items() if v is not None}


async def _table(args: argparse.Namespace) -> Any:
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(cli_target.table_settings(args), stack, rng=process_rng())
        now = time.time()
        if args.action == "create":
            body = CreateKey.model_validate(_body(args))
            if body.models is not None:
                await key_changes.check_stored_models(store, body.models)
            expires = epoch_seconds(body.expires_at)
            models = frozenset(body.models) if body.models is not None else None
            new = mint_key(
                body.name,
                body.role,
                now,
                models=models,
                rpm_limit=body.rpm_limit,
                tpm_limit=body.tpm_limit,
                max_parallel_requests=body.max_parallel_requests,
                budget_usd=body.budget_usd,
                budget_period=body.budget_period,
                expires_at=expires,
            )
            await store.put_client_key(new.key)
            return {**key_view(new.key, now=now), "key": new.secret}
        if args.action == "list":
            found = await store.list_client_keys()
            usages = [await usage_now(store, k, now) for k in found]
            return {"data": [key_view(k, u, now=now) for k, u in zip(found, usages, strict=True)]}
        if args.action in ("update", "rotate"):
            return await key_changes.on_table(args, store)
        if args.action == "revoke":
            return key_view((await revoke_key(store, args.id)).after, now=now)
        key = await store.find_client_key(args.id)
        if key is None:
            raise EdgeproxyError(f"no key has the id {args.id}")
        return key_view(key, await usage_now(store, key, now), now=now)


def _remote(args: argparse.Namespace) -> Any:
    if args.action == "create":
        return admin_request(args, "POST", "/admin/keys", _body(args))
    if args.action == "list":
        return admin_request(args, "GET", "/admin/keys")
    if args.action == "show":
        return admin_request(args, "GET", f"/admin/keys/{args.id}")
    if args.action in ("update", "rotate"):
        return admin_request(args, *key_changes.remote_path(args))
    return admin_request(args, "POST", f"/admin/keys/{args.id}/revoke")


async def _import(args: argparse.Namespace) -> int:
    config = load_config_file(args.file)
    settings = cli_target.table_settings(args, url_form=False)
    legacy_keys = config.gateway.api_keys
    if not legacy_keys:
        print(
            f"imported 0 keys: {args.file} has no gateway.api_keys "
            "(new keys come from: edgeproxy keys create)"
        )
        return 0
    imported = 0
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(settings, stack, rng=process_rng())
        for legacy in legacy_keys:
            key = imported_key(legacy, time.time())
            created = await store.put_client_key(key)
            imported += created
            print(f"{'imported' if created else 'already there'}: {key.id} {legacy.name}")
    print(
        f"imported {imported} of {len(legacy_keys)} keys ({len(legacy_keys) - imported} "
        "already there); remove gateway.api_keys from the file once every key is imported"
    )
    return 0


def _limit(value: Any) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _budget(row: dict[str, Any]) -> str:
    if row["budget_usd"] is None:
        return "-"
    spent = f"{row['spend_usd']:.2f}/" if "spend_usd" in row else ""
    return f"{spent}{row['budget_usd']:g}/{row['budget_period']}"


def _print(action: str, result: Any) -> None:
    rows = result["data"] if action == "list" else [result]
    if action == "list" and rows:
        print(
            f"{'id':<16}  {'prefix':<14} {'role':<8} {'status':<8} {'rpm':>6} {'tpm':>8} "
            f"{'budget $ (spent/limit/period)':<30} {'expires':<20} name"
        )
    for row in rows:
        expires = (row["expires_at"] or "-")[:19]
        print(
            f"{row['id']}  {row['prefix']:<14} {row['role']:<8} {row['status']:<8} "
            f"{_limit(row['rpm_limit']):>6} {_limit(row['tpm_limit']):>8} {_budget(row):<30} "
            f"{expires:<20} {row['name']}"
        )
    if action == "show" and "spend_usd" in result:
        print(
            f"spend_usd this {result['budget_period']} period: {result['spend_usd']}  "
            f"tokens this minute: {result['tokens_this_minute']}"
        )
    if action == "rotate":
        print(f"previous secret accepted until: {result['previous_secret_until']}")
    if action in ("create", "rotate"):
        print(f"key: {result['key']}")
        print("(shown once: store it now)")


def run(args: argparse.Namespace) -> int:
    """Carry out one ``keys`` action; returns the exit status."""
    if args.action == "import":
        return asyncio.run(_import(args))
    try:
        if args.action == "create":
            CreateKey.model_validate(_body(args))  # a bad body is refused before any target
        result = _remote(args) if cli_target.url_of(args) else asyncio.run(_table(args))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UsageError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print(args.action, result)
    return 0
