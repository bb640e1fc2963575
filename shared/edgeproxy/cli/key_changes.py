"""``edgeproxy keys update`` and ``keys rotate``: change a key's limits, give it a new secret.

    edgeproxy keys update 3f9a0c1d2e4b5a6c --rpm 120 --budget 50 --period monthly
    edgeproxy keys update 3f9a0c1d2e4b5a6c --no-tpm --model gpt-4o --model fast-chat
    edgeproxy keys rotate 3f9a0c1d2e4b5a6c --grace 3600   # the old secret for one more hour

Against a gateway (``--url``) they are the admin API's ``PATCH
/admin/keys/{id}`` and ``POST /admin/keys/{id}/rotate``; against a table
the same service calls, checked against the stored configuration.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from edgeproxy.api.admin.key_changes import RotateKey, UpdateKey, fields_of
from edgeproxy.api.admin.keys import key_view
from edgeproxy.config.loader import from_document
from edgeproxy.errors import UsageError
from edgeproxy.service.admin.key_lifecycle import check_models, rotate_key, update_key
from edgeproxy.state.store import AdminStore, KeyLifecycleStore

_REMOVABLE = {
    "rpm": "rpm_limit",
    "tpm": "tpm_limit",
    "parallel": "max_parallel_requests",
    "budget": "budget_usd",
}


def add_parsers(actions: Any) -> list[argparse.ArgumentParser]:
    """The ``update`` and ``rotate`` sub-commands (their target options are added by the caller)."""
    update = actions.add_parser("update", help="change a key's limits, models, role, expiry")
    update.add_argument("id")
    update.add_argument("--name")
    update.add_argument("--role", help="free | pro | internal | admin")
    update.add_argument("--model", action="append", dest="models", help="allowed model (repeat)")
    update.add_argument("--all-models", action="store_true", help="allow every model")
    update.add_argument("--rpm", type=int, help="requests per minute")
    update.add_argument("--tpm", type=int, help="tokens per minute")
    update.add_argument("--parallel", type=int, help="requests in flight at once, fleet-wide")
    update.add_argument("--budget", type=float, help="spend budget in USD")
    update.add_argument("--period", help="budget period: daily | weekly | monthly | total")
    update.add_argument("--expires", help="expiry, ISO 8601 (e.g. 2027-01-01T00:00:00Z)")
    for flag, field in _REMOVABLE.items():
        update.add_argument(f"--no-{flag}", action="store_true", help=f"remove {field}")
    update.add_argument("--no-expiry", action="store_true", help="the key never expires")
    rotate = actions.add_parser("rotate", help="a new secret for a key (printed once)")
    rotate.add_argument("id")
    rotate.add_argument(
        "--grace", type=float, default=None, help="seconds the old secret stays valid (24 h)"
    )
    return [update, rotate]


def update_body(args: argparse.Namespace) -> dict[str, Any]:
    """The PATCH body the options ask for (``null`` for a ``--no-...``)."""
    body: dict[str, Any] = {
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
    body = {k: v for k, v in body.items() if v is not None}
    for flag, field in _REMOVABLE.items():
        if getattr(args, f"no_{flag}"):
            body[field] = None
    if args.no_expiry:
        body["expires_at"] = None
    if args.all_models:
        body["models"] = None
    if not body:
        raise UsageError("nothing to change: give at least one option (see --help)")
    UpdateKey.model_validate(body)  # a bad body is refused before any target
    return body


def rotate_body(args: argparse.Namespace) -> dict[str, Any]:
    """The rotate body (empty: the default grace)."""
    body = {} if args.grace is None else {"grace_seconds": args.grace}
    RotateKey.model_validate(body)
    return body


async def check_stored_models(store: AdminStore, models: list[str] | None) -> None:
    """400 for a model the table's stored configuration does not serve."""
    stored = await store.load_config()
    if stored is None:
        raise UsageError("no configuration is stored yet to check the models against")
    check_models(models, from_document(stored.document))


def remote_path(args: argparse.Namespace) -> tuple[str, str, dict[str, Any]]:
    """Method, path and body of the admin API call."""
    if args.action == "update":
        return "PATCH", f"/admin/keys/{args.id}", update_body(args)
    return "POST", f"/admin/keys/{args.id}/rotate", rotate_body(args)


async def on_table(args: argparse.Namespace, store: Any) -> dict[str, Any]:
    """The same change, straight on the table (``store``: the CLI's ``DynamoStore``)."""
    lifecycle: KeyLifecycleStore = store
    now = time.time()
    if args.action == "rotate":
        grace = RotateKey.model_validate(rotate_body(args)).grace_seconds
        change = await rotate_key(lifecycle, args.id, now, grace)
        return {**key_view(change.after, now=now), "key": change.secret, "grace_seconds": grace}
    body = UpdateKey.model_validate(update_body(args))
    fields = fields_of(body, now)
    if "models" in fields:
        await check_stored_models(store, body.models)
    change = await update_key(lifecycle, args.id, fields)
    return key_view(change.after, now=now)
