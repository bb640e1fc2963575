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
    edgeproxy deployments list|add|test|set|delete  # deployments (cli/deployments.py)
    edgeproxy routing pool|rules                 # a pool's strategy, a model's rules (same)
    edgeproxy pools effective POOL | aliases list|set|delete  # levels, aliases (cli_models)
    edgeproxy route explain --model M --key-id ID  # which deployment, and why (cli/route.py)
    edgeproxy keys create|list|show|revoke|import   # client keys (cli_keys)
    edgeproxy usage [--from --to --group-by --format] # spend and tokens (cli_usage)
    edgeproxy alerts                             # budget alerts not delivered (cli/alerts.py)
    edgeproxy cache show|set|delete              # the response cache's rules (cli/cache.py)
    edgeproxy fallbacks show|set|delete          # the fallback chains (cli/fallbacks.py)
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
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module, metadata
from typing import Any, NamedTuple, TextIO

from edgeproxy.cli import target as cli_target
from edgeproxy.errors import ConfigError, EdgeproxyError, StoreError, UsageError


class Group(NamedTuple):
    """A module that adds some subcommands and runs them, imported only when one of them runs
    (the modules pull in httpx, aiohttp, aioboto3 and pydantic: about a second of CPU that
    ``--version`` and ``--help`` must not pay)."""

    module: str
    add: str  # its function that adds its subcommands to the main parser's
    run: str = "run"  # takes the parsed arguments; returns the exit status or a coroutine of it


_LOCAL = Group(__name__, "_add_local")  # config and hash-key are added here
_ADMIN = Group("edgeproxy.cli.admin", "add_commands")
_MODELS = Group("edgeproxy.cli.models", "add_commands")

# Every subcommand in the order ``--help`` lists them, with the help line it shows there
# (a unit test holds each line to the one its module gives the real parser).
COMMANDS: dict[str, tuple[Group, str]] = {
    "config": (_LOCAL, "check, export, diff, load or convert"),
    "bindings": (
        Group("edgeproxy.cli.bindings", "add_commands"),
        "inspect and clear sticky bindings",
    ),
    "hash-key": (_LOCAL, "print the sha256 of a key read from standard input"),
    "status": (_ADMIN, "each pool's deployments: state, retry-after, health, rpm/tpm use"),
    "settings": (_ADMIN, "read or change the router settings"),
    "audit": (_ADMIN, "recent admin changes, newest first"),
    "drain": (_ADMIN, "disable one deployment (enabled: false)"),
    "undrain": (_ADMIN, "enable one deployment (enabled: true)"),
    "strategies": (
        Group("edgeproxy.cli.strategies", "add_command"),
        "list the ordering strategies and their parameters",
    ),
    "deployments": (
        Group("edgeproxy.cli.deployments", "add_commands"),
        "list, add (connection-tested), change and remove deployments",
    ),
    "routing": (
        Group("edgeproxy.cli.deployments", "add_commands"),
        "a pool's strategy and a model's rules",
    ),
    "pools": (_MODELS, "a pool's effective settings"),
    "aliases": (_MODELS, "model aliases"),
    "route": (Group("edgeproxy.cli.route", "add_commands"), "explain routing decisions"),
    "job": (Group("edgeproxy.cli.jobs", "add_commands"), "run one pass of a scheduled job"),
    "keys": (
        Group("edgeproxy.cli.keys", "register"),
        "create, list, show, update, rotate, revoke and import client keys",
    ),
    "teams": (
        Group("edgeproxy.cli.teams", "register"),
        "organizations and teams, and moving keys between teams",
    ),
    "usage": (
        Group("edgeproxy.cli.usage", "add_command"),
        "spend and tokens by key, model, deployment, team, organization (or the log)",
    ),
    "alerts": (
        Group("edgeproxy.cli.alerts", "add_command"),
        "budget alerts not delivered yet (pending or given up)",
    ),
    "cache": (
        Group("edgeproxy.cli.cache", "add_command"),
        "the response cache's rules per pool, team or key",
    ),
    "fallbacks": (
        Group("edgeproxy.cli.fallbacks", "add_command"),
        "the fallback chains: which models a request tries next, and why",
    ),
}


def version() -> str:
    """The installed package's version."""
    try:
        return metadata.version("edgeproxy")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def chosen(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names, or None (``--help``, ``--version``, a typo). The main
    parser's own options take no value, so the first word that is not an option is it."""
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    return word if word in COMMANDS else None


def _parser(command: str | None) -> argparse.ArgumentParser:
    """The parser with ``command``'s group added in full and every other subcommand as a
    name and a help line, so that the main ``--help`` lists them all without importing them."""
    parser = argparse.ArgumentParser(
        prog="edgeproxy", description="Operate an edgeproxy deployment."
    )
    parser.add_argument("--version", action="version", version=f"edgeproxy {version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    group = COMMANDS[command][0] if command else None
    added = False
    for name, (owner, line) in COMMANDS.items():
        if owner != group:
            commands.add_parser(name, help=line)
        elif owner is _LOCAL:
            _add_local(commands, name, line)
        elif not added:  # the group adds all its subcommands at the place of its first
            add: Callable[[Any], None] = getattr(import_module(owner.module), owner.add)
            add(commands)
            added = True
    return parser


def _add_local(commands: Any, name: str, line: str) -> None:
    if name == "hash-key":
        commands.add_parser(name, help=line)
        return
    from edgeproxy.cli import config as cli_config

    config = commands.add_parser("config", help=line)
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


def _check(path: str) -> int:
    from edgeproxy.config.loader import load_config_file

    config = load_config_file(path)
    models = ", ".join(config.public_models()) or "none"
    print(f"{path}: valid ({len(config.deployments)} deployments; models: {models})")
    return 0


def _hash_key(stdin: TextIO) -> int:
    import getpass

    from edgeproxy.routing.affinity import key_digest

    # A key typed at a terminal is not echoed; a piped one is read as is.
    key = getpass.getpass("API key: ") if stdin.isatty() else stdin.read()
    key = key.strip()
    if not key:
        raise UsageError("no key on standard input")
    print(key_digest(key))
    return 0


def _run_local(args: argparse.Namespace) -> Any:
    if args.command == "hash-key":
        return _hash_key(sys.stdin)
    if args.action == "check":
        return _check(args.file)
    if args.action == "import-litellm":
        from edgeproxy.cli import litellm as cli_litellm

        return cli_litellm.import_litellm(
            args.file, sys.stdout, sys.stderr, os.environ, strict=args.strict
        )
    from edgeproxy.cli import config as cli_config

    return cli_config.run(args)


def _dispatch(args: argparse.Namespace) -> int:
    group = COMMANDS[args.command][0]
    run: Callable[[argparse.Namespace], Any] = (
        _run_local if group is _LOCAL else getattr(import_module(group.module), group.run)
    )
    status = run(args)
    if not isinstance(status, int):  # an async command: its coroutine
        import asyncio

        status = asyncio.run(status)
    return int(status)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (the console script exits with it)."""
    words = sys.argv[1:] if argv is None else argv
    args = _parser(chosen(words)).parse_args(words)
    try:
        return _dispatch(args)
    except (ConfigError, UsageError) as exc:
        print(f"edgeproxy: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:  # the table: say which, and why in words when known
        from edgeproxy.cli.errors import one_line

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
        from edgeproxy.cli.errors import one_line

        line = one_line(exc, cli_target.describe(args))
        if line is None:
            raise
        print(f"edgeproxy: {line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
