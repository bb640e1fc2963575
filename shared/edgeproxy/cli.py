"""The ``edgeproxy`` command: load configuration, manage sticky bindings, hash client keys.

    edgeproxy config check config.yaml          # validate only, no AWS access
    edgeproxy config load config.yaml           # validate and store; prints the new version
    edgeproxy config import-litellm litellm.yaml > edgeproxy.yaml  # convert (cli_litellm)
    edgeproxy bindings unbind --pool gpt-4o --caller ip:203.0.113.7
    edgeproxy bindings unbind --pool gpt-4o --api-key-env CLIENT_KEY   # key read from $CLIENT_KEY
    edgeproxy bindings invalidate --pool gpt-4o
    edgeproxy bindings share --pool gpt-4o --minutes 60 [--json]
    printf %s "$KEY" | edgeproxy hash-key      # the sha256 for gateway.api_keys
    edgeproxy status | settings get|set | audit  # see cli_admin (admin API or table)
    edgeproxy job health|quota-refresh           # one pass of a scheduled job (cli_jobs)
    edgeproxy keys create|list|show|revoke|import   # client keys (see edgeproxy keys --help)

The table comes from the environment (``EDGEPROXY_TABLE``,
``EDGEPROXY_DYNAMODB_ENDPOINT``, ``AWS_REGION``; see ``edgeproxy.settings``)
and AWS credentials from the default chain. A client key is never taken as
a command-line argument (it would show in the process list and shell
history): ``hash-key`` reads it from standard input, ``unbind`` from the
environment variable named by ``--api-key-env``.

Exit status: 0 done, 1 the operation failed (store, unknown pool), 2 bad
usage or an invalid configuration file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import getpass
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TextIO

from edgeproxy import cli_admin, cli_jobs, cli_keys, cli_litellm
from edgeproxy.config.loader import from_document, load_config_file
from edgeproxy.errors import ConfigError, EdgeproxyError, UsageError
from edgeproxy.routing.affinity import caller_id, key_digest
from edgeproxy.runtime import open_store
from edgeproxy.service.bindings import (
    PROTOCOLS,
    PoolShare,
    binding_share,
    invalidate_pool,
    looks_like_caller_id,
    resolve_caller,
    unbind,
)
from edgeproxy.service.config_edit import ConfigEditor
from edgeproxy.settings import Settings
from edgeproxy.state.dynamo import DynamoStore

Command = Callable[[argparse.Namespace, DynamoStore], Awaitable[int]]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgeproxy", description="Operate an edgeproxy deployment."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    config = commands.add_parser("config", help="validate or store the configuration")
    config_cmds = config.add_subparsers(dest="action", required=True)
    for action, text in (("check", "validate only"), ("load", "validate and store")):
        sub = config_cmds.add_parser(action, help=text)
        sub.add_argument("file", help="the YAML configuration file")
    convert = config_cmds.add_parser(
        "import-litellm", help="convert a LiteLLM config.yaml (YAML to stdout, warnings to stderr)"
    )
    convert.add_argument("file", help="the LiteLLM proxy config.yaml (model_list, router_settings)")
    convert.add_argument(
        "--strict", action="store_true", help="exit 1, writing nothing, on any warning or error"
    )

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

    commands.add_parser("hash-key", help="print the sha256 of a key read from standard input")
    cli_admin.add_commands(commands)  # status, settings, audit
    cli_jobs.add_commands(commands)  # job
    cli_keys.register(commands)
    return parser


def _caller(args: argparse.Namespace) -> str:
    if args.api_key_env is not None:
        key = os.environ.get(args.api_key_env, "").strip()
        if not key:
            raise UsageError(f"environment variable {args.api_key_env} is unset or empty")
        return caller_id(key_digest(key), None, None)
    if not looks_like_caller_id(args.caller):
        raise UsageError(
            "--caller takes a caller id (key:<sha256>, grant:<id>, ip:<bucket>) or an IP "
            "address; pass a raw API key with --api-key-env"
        )
    return resolve_caller(args.caller)


async def _unbind(args: argparse.Namespace, store: DynamoStore) -> int:
    caller = args.caller_id
    protocols = PROTOCOLS if args.protocol == "all" else (args.protocol,)
    removed = 0
    for protocol in protocols:
        binding = await unbind(store, caller, args.pool, protocol)
        if binding is not None:
            removed += 1
            print(f"unbound {caller} from {binding.deployment_id} ({args.pool}, {protocol})")
    if not removed:
        print(f"no binding for {caller} in {args.pool}")
    return 0


async def _invalidate(args: argparse.Namespace, store: DynamoStore) -> int:
    generation = await invalidate_pool(store, args.pool)
    print(f"invalidated every binding of {args.pool} (generation {generation})")
    return 0


async def _share(args: argparse.Namespace, store: DynamoStore) -> int:
    if args.minutes <= 0:
        raise UsageError("--minutes must be positive")
    stored = await store.load_config()
    if stored is None:
        raise UsageError("no configuration is stored yet (edgeproxy config load FILE)")
    config = from_document(stored.document)
    report = await binding_share(store, config, args.pool, minutes=args.minutes, now=time.time())
    if args.json:
        print(json.dumps(dataclasses.asdict(report), indent=2))
    else:
        _print_share(report, args.minutes, sys.stdout)
    return 0


def _print_share(report: PoolShare, minutes: int, out: TextIO) -> None:
    print(
        f"{report.pool}: last {minutes} min, {report.requests} attempts, "
        f"{report.sticky_fraction:.0%} of successes routed by a binding, "
        f"{report.moved:.0%} of traffic moved away from the weights",
        file=out,
    )
    width = max([len("deployment"), *(len(d.deployment_id) for d in report.deployments)])
    print(f"{'deployment':<{width}}  weight%  traffic%  binding%  requests  sticky", file=out)
    for d in report.deployments:
        print(
            f"{d.deployment_id:<{width}}  {d.weight_share:>7.1%}  {d.traffic_share:>8.1%}  "
            f"{d.sticky_share:>8.1%}  {d.requests:>8}  {d.sticky_hits:>6}",
            file=out,
        )


async def _load(args: argparse.Namespace, store: DynamoStore) -> int:
    config = load_config_file(args.file)
    editor = ConfigEditor(store, time.time)
    version = await editor.replace(config, actor=f"cli:{getpass.getuser()}", source=args.file)
    print(f"stored configuration version {version} ({len(config.deployments)} deployments)")
    return 0


def _check(path: str) -> int:
    config = load_config_file(path)
    models = ", ".join(config.public_models()) or "none"
    print(f"{path}: valid ({len(config.deployments)} deployments; models: {models})")
    return 0


def _hash_key(stdin: TextIO) -> int:
    # A key typed at a terminal is not echoed; a piped one is read as is.
    key = getpass.getpass("API key: ") if stdin.isatty() else stdin.read()
    key = key.strip()
    if not key:
        raise UsageError("no key on standard input")
    print(key_digest(key))
    return 0


async def _with_store(command: Command, args: argparse.Namespace, settings: Settings) -> int:
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(settings, stack)
        return await command(args, store)


STORE_COMMANDS: dict[tuple[str, str], Command] = {
    ("config", "load"): _load,
    ("bindings", "unbind"): _unbind,
    ("bindings", "invalidate"): _invalidate,
    ("bindings", "share"): _share,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (the console script exits with it)."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "hash-key":
            return _hash_key(sys.stdin)
        if args.command == "job":
            return cli_jobs.run(args)
        if args.command == "keys":
            return cli_keys.run(args)
        if args.command in cli_admin.COMMANDS:
            return asyncio.run(cli_admin.run(args))
        if (args.command, args.action) == ("config", "check"):
            return _check(args.file)
        if (args.command, args.action) == ("config", "import-litellm"):
            return cli_litellm.import_litellm(
                args.file, sys.stdout, sys.stderr, os.environ, strict=args.strict
            )
        command = STORE_COMMANDS[(args.command, args.action)]
        if command is _unbind:
            args.caller_id = _caller(args)  # refuse a raw key before touching the store
        return asyncio.run(_with_store(command, args, Settings.from_env()))
    except (ConfigError, UsageError) as exc:
        print(f"edgeproxy: {exc}", file=sys.stderr)
        return 2
    except EdgeproxyError as exc:
        print(f"edgeproxy: {exc.message or type(exc).__name__}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader left (`edgeproxy audit | head`): stop quietly, as other shell tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail
        return 141  # 128 + SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
