"""``edgeproxy teams``: organizations, teams, and which team a key belongs to.

    export EDGEPROXY_ADMIN_KEY=ep-...  EDGEPROXY_URL=http://127.0.0.1:8080
    edgeproxy teams org-create acme --name "Acme" --model fast-chat --tag cost-center=42
    edgeproxy teams create search --org acme --name "Search" --model fast-chat
    edgeproxy teams list                 # or: org-list, show ID, org-show ID
    edgeproxy teams update search --model fast-chat --model other-chat
    edgeproxy teams add-key search 3f9a0c1d2e4b5a6c    # or: remove-key 3f9a0c1d2e4b5a6c
    edgeproxy teams move search --org globex           # the team to another organization
    edgeproxy teams effective 3f9a0c1d2e4b5a6c         # each limit and the level it is from
    edgeproxy teams delete search        # or: org-delete acme (only once empty)

With ``--url`` (or ``EDGEPROXY_URL``) it calls the admin API; with ``--table``
(or ``EDGEPROXY_TABLE``) it does the same on the table through the same
service functions (audited as ``cli:<user>``). Output is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import time
from typing import Any

from pydantic import ValidationError

from edgeproxy.api.admin.keys import parsed
from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_http import admin_request
from edgeproxy.config.loader import from_document
from edgeproxy.errors import EdgeproxyError, UsageError
from edgeproxy.routing.hierarchy import Level
from edgeproxy.runtime import open_store, process_rng
from edgeproxy.service.admin import team_moves, teams
from edgeproxy.service.admin.team_bodies import (
    CreateOrganization,
    CreateTeam,
    UpdateGroup,
    group_fields,
    new_group,
)

EXAMPLE = __doc__.split("\n\n")[1] if __doc__ else ""
HELP = "organizations and teams, and moving keys between teams"


def register(commands: Any) -> None:
    """Add ``teams`` and its actions to the ``edgeproxy`` parser."""
    parser = commands.add_parser(
        "teams",
        help=HELP,
        description="Manage organizations and teams. Examples:\n" + EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True)
    subs = []
    for prefix, noun in (("org-", "organization"), ("", "team")):
        create = actions.add_parser(prefix + "create", help=f"create an {noun}")
        create.add_argument("id")
        create.add_argument("--name", required=True)
        if noun == "team":
            create.add_argument("--org", required=True, help="its organization's id")
        update = actions.add_parser(prefix + "update", help=f"change an {noun}")
        update.add_argument("id")
        update.add_argument("--name")
        for sub in (create, update):
            sub.add_argument("--model", action="append", dest="models", help="allowed model")
            sub.add_argument("--tag", action="append", dest="tags", help="metadata KEY=VALUE")
        listing = actions.add_parser(prefix + "list", help=f"every {noun}")
        show = actions.add_parser(prefix + "show", help=f"one {noun}")
        delete = actions.add_parser(prefix + "delete", help=f"delete an empty {noun}")
        for sub in (show, delete):
            sub.add_argument("id")
        subs += [create, update, listing, show, delete]
    add = actions.add_parser("add-key", help="move a key into a team")
    add.add_argument("id", help="the team")
    add.add_argument("key_id")
    move = actions.add_parser("move", help="move a team to another organization")
    move.add_argument("id", help="the team")
    move.add_argument("--org", required=True, help="the organization it moves to")
    remove = actions.add_parser("remove-key", help="take a key out of its team")
    effective = actions.add_parser("effective", help="a key's limits and their levels")
    for sub in (remove, effective):
        sub.add_argument("key_id")
    for sub in (*subs, add, move, remove, effective):
        cli_target.add_options(sub)


def _kind(args: argparse.Namespace) -> Level:
    return Level.ORGANIZATION if args.action.startswith("org-") else Level.TEAM


def _verb(args: argparse.Namespace) -> str:
    return str(args.action.removeprefix("org-"))


def _body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if getattr(args, "name", None) is not None:
        body["name"] = args.name
    if getattr(args, "models", None):
        body["models"] = args.models
    if getattr(args, "tags", None):
        pairs = [tag.partition("=") for tag in args.tags]
        if any(not sep or not k for k, sep, _ in pairs):
            raise UsageError("--tag takes KEY=VALUE")
        body["tags"] = {k: v for k, _, v in pairs}
    if _verb(args) == "create":
        body["id"] = args.id
        if _kind(args) is Level.TEAM:
            body["organization_id"] = args.org
    return body


def _path(args: argparse.Namespace) -> str:
    return "/admin/organizations" if _kind(args) is Level.ORGANIZATION else "/admin/teams"


def _remote(args: argparse.Namespace) -> Any:
    if args.action == "add-key":
        return admin_request(args, "PUT", f"/admin/keys/{args.key_id}/team", {"team_id": args.id})
    if args.action == "remove-key":
        return admin_request(args, "PUT", f"/admin/keys/{args.key_id}/team", {"team_id": None})
    if args.action == "effective":
        return admin_request(args, "GET", f"/admin/keys/{args.key_id}/effective")
    if args.action == "move":
        body = {"organization_id": args.org}
        return admin_request(args, "PUT", f"/admin/teams/{args.id}/organization", body)
    verb, path = _verb(args), _path(args)
    if verb == "create":
        return admin_request(args, "POST", path, _body(args))
    if verb == "list":
        return admin_request(args, "GET", path)
    if verb == "update":
        return admin_request(args, "PATCH", f"{path}/{args.id}", _body(args))
    return admin_request(args, "DELETE" if verb == "delete" else "GET", f"{path}/{args.id}")


async def _table(args: argparse.Namespace) -> Any:
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(cli_target.table_settings(args), stack, rng=process_rng())
        actor, now, kind, verb = f"cli:{getpass.getuser()}", time.time(), _kind(args), _verb(args)
        if args.action in ("add-key", "remove-key"):
            team = args.id if args.action == "add-key" else None
            _, moved = await teams.move_key(store, args.key_id, team, None, actor, now)
            return {"object": "api_key", "id": moved.id, "team_id": moved.team_id}
        if args.action == "move":
            _, after = await team_moves.move_team(store, args.id, args.org, None, actor, now)
            return teams.group_view(after)
        if args.action == "effective":
            key = await store.find_client_key(args.key_id)
            if key is None:
                raise EdgeproxyError(f"no key has the id {args.key_id}")
            return await teams.effective_view(store, key)
        if verb == "list":
            return {"data": [teams.group_view(g) for g in await store.list_groups(kind)]}
        if verb == "show":
            return teams.group_view(await teams.found(store, kind, args.id))
        if verb == "delete":
            gone = await teams.delete(store, kind, args.id, None, actor, now)
            return {"object": kind.value, "id": gone.id, "deleted": True}
        stored = await store.load_config()
        if stored is None:
            raise UsageError("no configuration is stored yet to check the models against")
        config = from_document(stored.document)
        if verb == "create":
            model = CreateTeam if kind is Level.TEAM else CreateOrganization
            group = new_group(kind, parsed(model, _body(args)))
            return teams.group_view(await teams.create(store, group, config, actor, now))
        fields = group_fields(parsed(UpdateGroup, _body(args)), kind)
        _, after = await teams.update(store, kind, args.id, fields, None, config, actor, now)
        return teams.group_view(after)


def run(args: argparse.Namespace) -> int:
    """Carry out one ``teams`` action; returns the exit status."""
    try:
        result = _remote(args) if cli_target.url_of(args) else asyncio.run(_table(args))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UsageError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    print(json.dumps(result, indent=2))
    return 0
