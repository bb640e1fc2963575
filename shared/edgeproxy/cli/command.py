"""The ``edgeproxy`` command: configuration, client keys, bindings, status, scheduled jobs.

    edgeproxy --version
    edgeproxy config check config.yaml          # validate only, touches nothing
    edgeproxy config export > live.yaml         # the stored configuration (cli_config)
    edgeproxy config diff live.yaml             # what loading it would change
    edgeproxy config load config.yaml [--dry-run] [--force]
    edgeproxy config import-litellm litellm.yaml > edgeproxy.yaml  # convert (cli_litellm)
    edgeproxy bindings unbind|invalidate|share  # sticky bindings (cli_bindings)
    printf %s "$KEY" | edgeproxy hash-key      # the sha256 for gateway.api_keys
    edgeproxy status | settings get|set | audit  # see cli_admin
    edgeproxy strategies [--json]                # the strategy registry and its parameters
    edgeproxy pools effective POOL | aliases list|set|delete  # levels, aliases (cli_models)
    edgeproxy route explain --model M --key-id ID  # which deployment, and why (cli/route.py)
    edgeproxy keys create|list|show|revoke|import   # client keys (cli_keys)
    edgeproxy usage [--from --to --group-by --format] # spend and tokens (cli_usage)
    edgeproxy job health|quota-refresh           # one pass of a scheduled job (cli_jobs)

Every admin command acts through a running gateway (``--url`` or
``EDGEPROXY_URL``; the admin key from ``$EDGEPROXY_ADMIN_KEY``) or on a state
table named explicitly (``--table`` or ``EDGEPROXY_TABLE``; the endpoint,
region and AWS credentials from the environment, ``edgeproxy.settings``);
with neither it fails at once saying what to pass (``cli_target``). A client
key is never taken as a command-line argument (it would show in the process
list and shell history): ``hash-key`` reads it from standard input,
``unbind`` from the environment variable named by ``--api-key-env``.

Exit status: 0 done, 1 the operation failed (store, gateway, unknown pool,
a refused load), 2 bad usage or an invalid configuration file. Errors are
one line on standard error, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import TextIO

from edgeproxy.cli import admin as cli_admin
from edgeproxy.cli import bindings as cli_bindings
from edgeproxy.cli import config as cli_config
from edgeproxy.cli import jobs as cli_jobs
from edgeproxy.cli import keys as cli_keys
from edgeproxy.cli import litellm as cli_litellm
from edgeproxy.cli import models as cli_models
from edgeproxy.cli import route as cli_route
from edgeproxy.cli import strategies as cli_strategies
from edgeproxy.cli import target as cli_target
from edgeproxy.cli import usage as cli_usage
from edgeproxy.cli.errors import one_line
from edgeproxy.config.loader import load_config_file
from edgeproxy.errors import ConfigError, EdgeproxyError, StoreError, UsageError
from edgeproxy.routing.affinity import key_digest


def version() -> str:
    """The installed package's version."""
    try:
        return metadata.version("edgeproxy")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgeproxy", description="Operate an edgeproxy deployment."
    )
    parser.add_argument("--version", action="version", version=f"edgeproxy {version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    config = commands.add_parser("config", help="check, export, diff, load or convert")
    config_cmds = config.add_subparsers(dest="action", required=True)
    check = config_cmds.add_parser("check", help="validate only")
    check.add_argument("file", help="the YAML configuration file")
    cli_config.add_commands(config_cmds)  # export, diff, load
    convert = config_cmds.add_parser(
        "import-litellm", help="convert a LiteLLM config.yaml (YAML to stdout, warnings to stderr)"
    )
    convert.add_argument("file", help="the LiteLLM proxy config.yaml (model_list, router_settings)")
    convert.add_argument(
        "--strict", action="store_true", help="exit 1, writing nothing, on any warning or error"
    )

    cli_bindings.add_commands(commands)
    commands.add_parser("hash-key", help="print the sha256 of a key read from standard input")
    cli_admin.add_commands(commands)  # status, settings, audit
    cli_strategies.add_command(commands)
    cli_models.add_commands(commands)  # pools effective, aliases
    cli_route.add_commands(commands)  # route explain
    cli_jobs.add_commands(commands)  # job
    cli_keys.register(commands)
    cli_usage.add_command(commands)
    return parser


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


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "hash-key":
        return _hash_key(sys.stdin)
    if args.command == "job":
        return cli_jobs.run(args)
    if args.command == "keys":
        return cli_keys.run(args)
    if args.command == "bindings":
        return asyncio.run(cli_bindings.run(args))
    if args.command == "route":
        return asyncio.run(cli_route.run(args))
    if args.command == "usage":
        return asyncio.run(cli_usage.run(args))
    if args.command == "strategies":
        return cli_strategies.run(args)
    if args.command in cli_models.COMMANDS:
        return asyncio.run(cli_models.run(args))
    if args.command in cli_admin.COMMANDS:
        return asyncio.run(cli_admin.run(args))
    if args.action == "check":
        return _check(args.file)
    if args.action == "import-litellm":
        return cli_litellm.import_litellm(
            args.file, sys.stdout, sys.stderr, os.environ, strict=args.strict
        )
    return asyncio.run(cli_config.run(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (the console script exits with it)."""
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except (ConfigError, UsageError) as exc:
        print(f"edgeproxy: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:  # the table: say which, and why in words when known
        where = cli_target.describe(args)
        cause = exc.__cause__
        message = (one_line(cause, where) if cause else None) or f"{where}: {exc.message}"
        print(f"edgeproxy: {message}", file=sys.stderr)
        return 1
    except EdgeproxyError as exc:
        print(f"edgeproxy: {exc.message or type(exc).__name__}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader left (`edgeproxy audit | head`): stop quietly, as other shell tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail
        return 141  # 128 + SIGPIPE
    except Exception as exc:  # a store or network failure: one line, not a traceback
        line = one_line(exc, cli_target.describe(args))
        if line is None:
            raise
        print(f"edgeproxy: {line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
