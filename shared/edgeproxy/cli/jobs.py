"""``edgeproxy job health|quota-refresh``: one pass of a scheduled job, from a shell.

Runs the same handler the scheduled Lambda function runs, against the table
named by ``EDGEPROXY_TABLE`` (and ``EDGEPROXY_DYNAMODB_ENDPOINT`` / the AWS
environment), and prints what it did as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

from edgeproxy.cli import target as cli_target
from edgeproxy.entrypoint import Entrypoint
from edgeproxy.errors import QuotaRefreshFailed
from edgeproxy.jobs.entry import build_health_handler, build_quota_handler

JOBS: dict[str, Callable[[], Entrypoint]] = {
    "health": build_health_handler,
    "quota-refresh": build_quota_handler,
}

EXAMPLE = """examples:
  EDGEPROXY_TABLE=<StateTableName> AWS_REGION=eu-west-1 edgeproxy job quota-refresh
  edgeproxy job health --table edgeproxy-local"""


class _Context:
    function_name = "edgeproxy-cli"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:edgeproxy-cli"
    aws_request_id = "cli"


def add_commands(commands: Any) -> None:
    """Register ``job`` on the main parser's subcommands."""
    job = commands.add_parser(
        "job",
        help="run one pass of a scheduled job",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    job.add_argument("name", choices=sorted(JOBS), help="which job")
    cli_target.add_options(job, url=False)


def run(args: argparse.Namespace) -> int:
    """Run the job once on the table named by ``--table`` or ``EDGEPROXY_TABLE``."""
    settings = cli_target.table_settings(args, url_form=False)
    os.environ[cli_target.TABLE_ENV] = settings.table  # the handler reads its own settings
    handler = JOBS[args.name]()
    try:
        result: dict[str, Any] = handler({"source": "edgeproxy.cli"}, _Context())
    except QuotaRefreshFailed as exc:  # the other sources were stored: say what happened
        result = exc.result
    finally:
        handler.close()
    print(json.dumps(result, sort_keys=True))
    return 1 if result.get("failed") else 0
