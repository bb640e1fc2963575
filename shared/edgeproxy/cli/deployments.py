"""``edgeproxy deployments list|add|test|set|delete`` and ``edgeproxy routing pool|rules``.

What the console's deployments and routing view does, through a running
gateway's admin API (``--url`` or ``EDGEPROXY_URL``, the admin key from the
environment): ``add`` runs the connection test first (``POST
/admin/connection-test``: the egress and credential rules, then one chat call
of one token) and saves only when it passed (``--no-test`` skips it);
``set`` changes some fields (``weight=2.5``, ``enabled=false``: each value
JSON, else a string) with the version just read, as the page does;
``routing pool`` sets a pool's strategy (its other overrides kept),
``routing rules`` a model's levels from a JSON or YAML file. The router's
preset and strategy are ``edgeproxy settings set``; aliases ``edgeproxy aliases``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_http import admin_request
from edgeproxy.errors import UsageError

COMMANDS = frozenset({"deployments", "routing"})
EXAMPLE = """examples:
  export EDGEPROXY_ADMIN_KEY=ep-... EDGEPROXY_URL=http://127.0.0.1:8080
  edgeproxy deployments list
  edgeproxy deployments test new.yaml          # one deployment: the connection test only
  edgeproxy deployments add new.yaml           # tested first, saved if it passed
  edgeproxy deployments set gpt-east weight=2.5 enabled=false
  edgeproxy deployments delete gpt-east
  edgeproxy routing pool fast-chat --strategy least-busy
  edgeproxy routing rules fast-chat rules.json   # or --delete"""


def _url_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help=f"a running gateway's base URL (or {cli_target.URL_ENV})")
    parser.add_argument(
        "--admin-key-env",
        default=cli_target.ADMIN_KEY_ENV,
        metavar="VAR",
        help=f"environment variable holding the admin key (default {cli_target.ADMIN_KEY_ENV})",
    )


def add_commands(commands: Any) -> None:
    """Add ``deployments`` and ``routing`` to the main parser's subcommands."""
    raw = argparse.RawDescriptionHelpFormatter
    deps = commands.add_parser(
        "deployments",
        help="list, add (connection-tested), change and remove deployments",
        epilog=EXAMPLE,
        formatter_class=raw,
    )
    actions = deps.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every deployment: pool, state, weight")
    _url_options(listing)
    listing.add_argument("--json", action="store_true", help="the admin API's JSON")
    for name, line in (
        ("test", "the connection test of one deployment (JSON or YAML file), nothing saved"),
        ("add", "add one deployment (JSON or YAML file) once its connection test passed"),
    ):
        one = actions.add_parser(name, help=line)
        _url_options(one)
        one.add_argument("file", help="one deployment, as a `deployments:` entry")
        if name == "add":
            one.add_argument("--no-test", action="store_true", help="save without the test")
    change = actions.add_parser("set", help="change some fields of a deployment")
    _url_options(change)
    change.add_argument("id", help="the deployment's id")
    change.add_argument("pairs", nargs="+", metavar="FIELD=VALUE", help="a field, a JSON value")
    delete = actions.add_parser("delete", help="remove a deployment")
    _url_options(delete)
    delete.add_argument("id", help="the deployment's id")

    routing = commands.add_parser(
        "routing", help="a pool's strategy and a model's rules", epilog=EXAMPLE, formatter_class=raw
    )
    routes = routing.add_subparsers(dest="action", required=True)
    pool = routes.add_parser("pool", help="set a pool's strategy (its other overrides kept)")
    _url_options(pool)
    pool.add_argument("pool", help="the pool (model or model:group)")
    which = pool.add_mutually_exclusive_group(required=True)
    which.add_argument("--strategy", help="the strategy (edgeproxy strategies lists them)")
    which.add_argument("--inherit", action="store_true", help="drop it: the router's applies")
    rules = routes.add_parser("rules", help="set or drop a model's levels")
    _url_options(rules)
    rules.add_argument("model", help="the public model")
    what = rules.add_mutually_exclusive_group(required=True)
    what.add_argument("file", nargs="?", help="its levels (JSON or YAML: strategy, protocols...)")
    what.add_argument("--delete", action="store_true", help="drop the model's levels")


def _read(path: str) -> dict[str, Any]:
    import yaml

    try:
        loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: {exc}") from None
    if isinstance(loaded, list) and len(loaded) == 1:
        loaded = loaded[0]
    if not isinstance(loaded, dict):
        raise UsageError(f"{path}: not one object")
    return loaded


def pairs_body(pairs: list[str]) -> dict[str, Any]:
    """``FIELD=VALUE`` arguments as a JSON body (a value that is not JSON is a string)."""
    body: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"{pair!r} is not FIELD=VALUE")
        try:
            body[name] = json.loads(text)
        except ValueError:
            body[name] = text
    return body


def _version(args: argparse.Namespace) -> int:
    return int(admin_request(args, "GET", "/admin/deployments")["version"])


def _test(args: argparse.Namespace, dep: dict[str, Any], out: TextIO) -> bool:
    found = admin_request(args, "POST", "/admin/connection-test", dep)
    if found["ok"]:
        print(
            f"{found['deployment']}: connection test passed, HTTP {found['status']} "
            f"in {found['latency_ms']} ms",
            file=out,
        )
        return True
    where = f" ({found['field']})" if found.get("field") else ""
    print(f"{found['deployment']}: connection test failed{where}: {found['error']}", file=out)
    return False


def _list(args: argparse.Namespace, out: TextIO) -> int:
    listed = admin_request(args, "GET", "/admin/deployments")
    if args.json:
        print(json.dumps(listed, indent=2), file=out)
        return 0
    print(f"configuration version {listed['version']}", file=out)
    for d in listed["deployments"]:
        state = "enabled" if d.get("enabled", True) else "disabled"
        print(
            f"{d['id']}  {d['model']}  {d['provider']}  {state}  weight {d.get('weight', 1)}"
            f"  priority {d.get('priority', 0)}",
            file=out,
        )
    return 0


def _deployments(args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "list":
        return _list(args, out)
    if args.action in ("test", "add"):
        dep = _read(args.file)
        if (args.action == "test" or not args.no_test) and not _test(args, dep, out):
            return 1
        if args.action == "test":
            return 0
        done = admin_request(args, "POST", "/admin/deployments", {**dep, "version": _version(args)})
        print(f"{done['id']}: added, configuration version {done['version']}", file=out)
        return 0
    path = f"/admin/deployments/{quote(args.id, safe='')}"
    if args.action == "set":
        body = {**pairs_body(args.pairs), "version": _version(args)}
        done = admin_request(args, "PATCH", path, body)
        print(f"{done['id']}: changed, configuration version {done['version']}", file=out)
        return 0
    done = admin_request(args, "DELETE", f"{path}?version={_version(args)}")
    print(f"{done['deleted']}: removed, configuration version {done['version']}", file=out)
    return 0


def _routing(args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "pool":
        path = f"/admin/pools/{quote(args.pool, safe=':')}"
        current = admin_request(args, "GET", path)
        settings = {**current["settings"], "strategy": None if args.inherit else args.strategy}
        done = admin_request(args, "PUT", path, {**settings, "version": current["version"]})
        tiers = ", ".join(
            f"tier {t}: {s}" for t, s in done["effective"]["strategy_by_tier"].items()
        )
        print(f"{args.pool}: {tiers}; configuration version {done['version']}", file=out)
        return 0
    path = f"/admin/model-rules/{quote(args.model, safe='')}"
    version = _version(args)
    if args.delete:
        done = admin_request(args, "DELETE", f"{path}?version={version}")
    else:
        done = admin_request(args, "PUT", path, {**_read(args.file), "version": version})
    print(
        f"{args.model}: rules {'dropped' if args.delete else 'set'}, "
        f"configuration version {done['version']}",
        file=out,
    )
    return 0


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one ``deployments`` or ``routing`` command against the gateway ``--url`` names."""
    out = out or sys.stdout
    if not cli_target.url_of(args):
        raise UsageError(
            f"{args.command} acts through a gateway: pass --url (or "
            f"{cli_target.URL_ENV}) and the admin key in ${args.admin_key_env}"
        )
    return _deployments(args, out) if args.command == "deployments" else _routing(args, out)
