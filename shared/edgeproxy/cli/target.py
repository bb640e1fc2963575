"""Where an admin command acts: a running gateway (``--url``) or a state table (``--table``).

Every admin command takes ``--url`` (or ``EDGEPROXY_URL``): the gateway's
admin API, with the admin key from ``$EDGEPROXY_ADMIN_KEY`` (or the variable
``--admin-key-env`` names). Without a URL it works on a state table, but
only one named explicitly (``--table`` or ``EDGEPROXY_TABLE``): a bare
command never turns to the AWS account of whoever runs it. The table is
reached as every process reaches it (``EDGEPROXY_DYNAMODB_ENDPOINT``,
``AWS_REGION``, the AWS credential chain).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from edgeproxy.errors import UsageError
from edgeproxy.settings import Settings

URL_ENV = "EDGEPROXY_URL"
TABLE_ENV = "EDGEPROXY_TABLE"
ADMIN_KEY_ENV = "EDGEPROXY_ADMIN_KEY"
NO_TARGET = (
    f"say where to act: --url URL (or {URL_ENV}) for a running gateway, with its admin key "
    f"in ${ADMIN_KEY_ENV}; or --table NAME (or {TABLE_ENV}) for a state table"
)


def add_gateway_options(parser: argparse.ArgumentParser) -> None:
    """``--url`` and ``--admin-key-env``: a command that acts through a gateway's admin API."""
    parser.add_argument("--url", help=f"a running gateway's base URL (or {URL_ENV})")
    parser.add_argument(
        "--admin-key-env",
        default=ADMIN_KEY_ENV,
        metavar="VAR",
        help=f"environment variable holding the admin key (default {ADMIN_KEY_ENV})",
    )


def add_options(parser: argparse.ArgumentParser, *, url: bool = True) -> None:
    """``--url`` / ``--admin-key-env`` (when the command has an admin API form) and ``--table``."""
    if url:
        add_gateway_options(parser)
    parser.add_argument("--table", help=f"work on this state table directly (or {TABLE_ENV})")


def url_of(args: argparse.Namespace) -> str | None:
    """The gateway to talk to: ``--url``, else ``EDGEPROXY_URL``; None without either (or
    with ``--table`` given, which picks the table)."""
    if getattr(args, "url", None):
        return str(args.url)
    if getattr(args, "table", None):
        return None
    return os.environ.get(URL_ENV) or None


def admin_key(args: argparse.Namespace) -> str:
    """The admin key, from the environment variable the command names."""
    name = getattr(args, "admin_key_env", ADMIN_KEY_ENV)
    key = os.environ.get(name, "").strip()
    if not key:
        raise UsageError(f"--url needs the admin key in ${name} (never an argument)")
    return key


def table_settings(args: argparse.Namespace, *, url_form: bool = True) -> Settings:
    """Settings for the table named by ``--table`` or ``EDGEPROXY_TABLE``; else a UsageError."""
    table = getattr(args, "table", None) or os.environ.get(TABLE_ENV)
    if not table:
        if url_form:
            raise UsageError(NO_TARGET)
        raise UsageError(
            f"this command works on a state table: pass --table NAME (or set {TABLE_ENV})"
        )
    environ: dict[str, Any] = {**os.environ, TABLE_ENV: table}
    return Settings.from_env(environ)


def describe(args: argparse.Namespace) -> str:
    """The table a command works on, for its error lines: ``table 'x' at <endpoint>``."""
    table = getattr(args, "table", None) or os.environ.get(TABLE_ENV) or "(none)"
    endpoint = os.environ.get("EDGEPROXY_DYNAMODB_ENDPOINT") or "AWS"
    return f"table {table!r} at {endpoint}"
