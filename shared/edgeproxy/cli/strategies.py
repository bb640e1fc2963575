"""``edgeproxy strategies``: the ordering strategies and their parameters, from the registry.

Needs no gateway and no table: the registry is part of the package.
``--json`` prints what ``GET /admin/strategies`` lists (without a
configuration's settings); the default is the table in docs/configuration.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from edgeproxy.routing.ordering.catalogue import catalogue, markdown_table


def add_command(commands: Any) -> None:
    """Add ``strategies`` to the main parser's subcommands."""
    sub = commands.add_parser(
        "strategies", help="list the ordering strategies and their parameters"
    )
    sub.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """Print the catalogue; always succeeds."""
    if args.json:
        out.write(json.dumps({"strategies": catalogue()}, indent=2) + "\n")
    else:
        out.write("\n".join(markdown_table()) + "\n")
    return 0
