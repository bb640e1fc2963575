"""``edgeproxy keys``: create, list, show, revoke and import client keys.

    export EDGEPROXY_ADMIN_KEY=ep-...      # an admin key; never a command-line argument
    edgeproxy keys create --url http://127.0.0.1:8080 --name billing-app --role pro --rpm 60
    edgeproxy keys list --url http://127.0.0.1:8080
    edgeproxy keys revoke --url http://127.0.0.1:8080 3f9a0c1d2e4b5a6c
    edgeproxy keys create --name batch --model gpt-4o --budget 25 --expires 2027-01-01T00:00:00Z
    edgeproxy keys import config.yaml      # copy the YAML's gateway.api_keys into the table

With ``--url`` (or ``EDGEPROXY_URL``) a command talks to a running gateway's
admin API (the admin key is read from ``$EDGEPROXY_ADMIN_KEY``, or the
variable ``--admin-key-env`` names); with ``--table`` (or ``EDGEPROXY_TABLE``)
to that table directly; with neither it fails saying so (``cli_target``).
``import`` works on a table only. A new key is printed once, on the line
``key: ep-...``; nothing can show it again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from typing import Any

import httpx
from pydantic import ValidationError

from edgeproxy.api.admin.keys import CreateKey, epoch_seconds, key_view
from edgeproxy.cli import target as cli_target
from edgeproxy.config.loader import load_config_file
from edgeproxy.errors import EdgeproxyError, UsageError
from edgeproxy.routing.access import ClientKey
from edgeproxy.runtime import open_store
from edgeproxy.service.keys import mint_key

ADMIN_KEY_ENV = "EDGEPROXY_ADMIN_KEY"
EXAMPLE = __doc__.split("\n\n")[1] if __doc__ else ""


def register(commands: Any) -> None:
    """Add ``keys`` and its actions to the ``edgeproxy`` parser."""
    keys = commands.add_parser(
        "keys",
        help="create, list, show, revoke and import client keys",
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
    create.add_argument("--budget", type=float, help="spend budget in USD")
    create.add_argument("--expires", help="expiry, ISO 8601 (e.g. 2027-01-01T00:00:00Z)")
    listing = actions.add_parser("list", help="every key (prefixes only)", allow_abbrev=False)
    show = actions.add_parser("show", help="one key, with its spend", allow_abbrev=False)
    show.add_argument("id")
    revoke = actions.add_parser(
        "revoke", help="revoke a key (takes effect within the key TTL)", allow_abbrev=False
    )
    revoke.add_argument("id")
    for sub in (create, listing, show, revoke):
        cli_target.add_options(sub)
        sub.add_argument("--json", action="store_true", help="machine-readable output")
    imported = actions.add_parser("import", help="copy a YAML file's gateway.api_keys to the table")
    imported.add_argument("file")
    cli_target.add_options(imported, url=False)
    for sub in (create, listing, show, revoke, imported):
        sub.epilog = "Examples:\n" + EXAMPLE
        sub.formatter_class = argparse.RawDescriptionHelpFormatter


def _body(args: argparse.Namespace) -> dict[str, Any]:
    body = {
        "name": args.name,
        "role": args.role,
        "models": args.models,
        "rpm_limit": args.rpm,
        "tpm_limit": args.tpm,
        "budget_usd": args.budget,
        "expires_at": args.expires,
    }
    return {k: v for k, v in body.items() if v is not None}


def _http(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    admin_key = cli_target.admin_key(args)
    base = cli_target.url_of(args) or ""
    headers = {"authorization": f"Bearer {admin_key}"}
    try:
        answer = httpx.request(
            method, base.rstrip("/") + path, json=body, headers=headers, timeout=30
        )
    except httpx.HTTPError as exc:
        raise EdgeproxyError(f"cannot reach {base}: {type(exc).__name__}") from None
    if answer.status_code >= 400:
        try:
            message = answer.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = answer.text[:200]
        raise EdgeproxyError(f"{answer.status_code}: {message}")
    return answer.json()


async def _table(args: argparse.Namespace) -> Any:
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(cli_target.table_settings(args), stack)
        now = time.time()
        if args.action == "create":
            body = CreateKey.model_validate(_body(args))
            expires = epoch_seconds(body.expires_at)
            models = frozenset(body.models) if body.models is not None else None
            new = mint_key(
                body.name,
                body.role,
                now,
                models=models,
                rpm_limit=body.rpm_limit,
                tpm_limit=body.tpm_limit,
                budget_usd=body.budget_usd,
                expires_at=expires,
            )
            await store.put_client_key(new.key)
            return {**key_view(new.key), "key": new.secret}
        if args.action == "list":
            return {"data": [key_view(k) for k in await store.list_client_keys()]}
        found = await (store.find_client_key if args.action == "show" else store.revoke_client_key)(
            args.id
        )
        if found is None:
            raise EdgeproxyError(f"no key has the id {args.id}")
        usage = await store.read_key_usage(found.id, int(now // 60))
        return key_view(found, usage if args.action == "show" else None)


def _remote(args: argparse.Namespace) -> Any:
    if args.action == "create":
        return _http(args, "POST", "/admin/keys", _body(args))
    if args.action == "list":
        return _http(args, "GET", "/admin/keys")
    if args.action == "show":
        return _http(args, "GET", f"/admin/keys/{args.id}")
    return _http(args, "POST", f"/admin/keys/{args.id}/revoke")


async def _import(args: argparse.Namespace) -> int:
    config = load_config_file(args.file)
    settings = cli_target.table_settings(args, url_form=False)
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(settings, stack)
        for legacy in config.gateway.api_keys:
            key = ClientKey(
                legacy.sha256,
                legacy.name,
                legacy.effective_role,
                "(imported)",
                created_at=time.time(),
            )
            created = await store.put_client_key(key)
            print(f"{'imported' if created else 'already there'}: {key.id} {legacy.name}")
    print("remove gateway.api_keys from the file once every key is imported")
    return 0


def _print(action: str, result: Any) -> None:
    rows = result["data"] if action == "list" else [result]
    for row in rows:
        state = "revoked" if row["revoked"] else "active"
        print(f"{row['id']}  {row['prefix']:<14} {row['role']:<8} {state:<7} {row['name']}")
    if action == "show" and "spend_usd" in result:
        print(
            f"spend_usd: {result['spend_usd']}  tokens this minute: {result['tokens_this_minute']}"
        )
    if action == "create":
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
