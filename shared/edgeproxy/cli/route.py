"""``edgeproxy route explain``: which deployment a request would get now, as a table.

Asks a running gateway's ``POST /admin/route/explain`` (``--url`` or
``EDGEPROXY_URL``; the admin key in ``$EDGEPROXY_ADMIN_KEY``): the router's
own read and core, with no upstream call and nothing written. The request is
``--body FILE`` (JSON, ``-`` for standard input; ``--model`` replaces its
model) or, without one, a one-message request of ``--operation``.

    edgeproxy route explain --model fast-chat --key-id 3f2a9c0d1e2b4a5f
    edgeproxy route explain --model fast-chat --caller ip:203.0.113.7 --json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from edgeproxy.cli import target as cli_target
from edgeproxy.cli.admin_client import HttpAdmin
from edgeproxy.config.roles import Role
from edgeproxy.errors import UsageError

OPERATIONS = ("chat", "completions", "embeddings", "responses", "messages")
_SAMPLES: dict[str, dict[str, Any]] = {
    "chat": {"messages": [{"role": "user", "content": "hi"}]},
    "completions": {"prompt": "hi"},
    "embeddings": {"input": "hi"},
    "responses": {"input": "hi"},
    "messages": {"max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
}
_COLUMNS = ("deployment", "tier", "outcome", "cause", "rank", "score", "retry-after", "detail")


def add_commands(commands: Any) -> None:
    """Add ``route explain`` to the main parser's subcommands."""
    route = commands.add_parser("route", help="explain routing decisions")
    actions = route.add_subparsers(dest="action", required=True)
    explain = actions.add_parser(
        "explain", help="which deployment a request would get now, and why not the others"
    )
    explain.add_argument("--model", help="the model (replaces the body's)")
    who = explain.add_mutually_exclusive_group()
    who.add_argument("--key-id", help="a client key's id (its role and identity)")
    who.add_argument("--caller", help="an affinity identity: key:<sha256>, grant:<id>, ip:<addr>")
    explain.add_argument("--body", help="the request's JSON body in a file ('-': stdin)")
    explain.add_argument("--operation", choices=OPERATIONS, default="chat")
    roles = [role.value for role in Role]
    explain.add_argument("--role", choices=roles, help="explain for this role, not the caller's")
    explain.add_argument("--seed", type=int, help="repeat a random strategy's draw")
    explain.add_argument("--end-user", help="the end user the request names (its team's limits)")
    explain.add_argument("--json", action="store_true", help="the API's JSON answer")
    explain.add_argument("--url", help=f"a running gateway's base URL (or {cli_target.URL_ENV})")
    explain.add_argument(
        "--admin-key-env", default=cli_target.ADMIN_KEY_ENV, metavar="VAR",
        help="environment variable holding the admin key",
    )  # fmt: skip


def order(args: argparse.Namespace, stdin: TextIO) -> dict[str, Any]:
    """The explain API's request body for these arguments."""
    if args.body:
        text = stdin.read() if args.body == "-" else Path(args.body).read_text()
        try:
            body = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--body: not JSON ({exc})") from None
        if not isinstance(body, dict):
            raise UsageError("--body: a JSON object is needed")
    else:
        body = dict(_SAMPLES[args.operation])
    if args.model:
        body["model"] = args.model
    if "model" not in body:
        raise UsageError("name the model: --model, or a body with a model")
    if not (args.key_id or args.caller):
        raise UsageError("name the caller: --key-id ID or --caller ID")
    out: dict[str, Any] = {"operation": args.operation, "body": body}
    for name in ("key_id", "caller", "role", "seed", "end_user"):
        if getattr(args, name) is not None:
            out[name] = getattr(args, name)
    return out


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def render(report: dict[str, Any], out: TextIO) -> None:
    """The verdict line, then one row per deployment of the pool."""
    who = f"{report['caller']} ({report['role']})"
    head = f"{report['model']} ({report['operation']}) for {who}: "
    if report["chosen"]:
        how = "sticky binding" if report["sticky"] else report["strategy"] or "the only deployment"
        head += f"{report['chosen']} by {how}" + (" (probe)" if report["probe"] else "")
    else:
        blocked = report["blocked"] or {}
        head += f"nothing routable ({blocked.get('reason', 'stopped')})"
        if report["fallbacks"]:
            head += "; fallbacks: " + ", ".join(report["fallbacks"])
    if not report["key_allows_model"]:
        head += "; the key may not use this model (404)"
    print(head, file=out)
    refused = report.get("refused_by")
    if refused:
        print(
            f"  refused at level {refused['level']} `{refused['id']}` ({refused['reason']}): "
            + refused["message"],
            file=out,
        )
    rows = [_COLUMNS] + [
        (
            ("*" if c["outcome"] == "chosen" else "")
            + c["deployment"]
            + ("^" if c["bound"] else ""),
            str(c["tier"]),
            c["outcome"],
            c["cause"] + (f" ({c['strategy']})" if c["strategy"] else ""),
            "-" if c["rank"] is None else str(c["rank"]),
            _score(c["score"]),
            f"{c['retry_after_ms'] / 1000:.1f}s" if c["retry_after_ms"] else "-",
            c["detail"] or "-",
        )
        for c in report["candidates"]
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    for row in rows:
        print(
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(),
            file=out,
        )
    print("  (* chosen, ^ the caller's binding; lower scores rank first)", file=out)


async def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Ask the gateway and print its answer (on ``out``, standard output by default)."""
    out = out or sys.stdout
    url = cli_target.url_of(args)
    if not url:
        raise UsageError(
            f"route explain asks a running gateway: --url URL (or {cli_target.URL_ENV})"
        )
    payload = order(args, sys.stdin)
    async with HttpAdmin(url, cli_target.admin_key(args)) as admin:
        report = await admin.explain(payload)
    if args.json:
        print(json.dumps(report, indent=2), file=out)
    else:
        render(report, out)
    return 0
