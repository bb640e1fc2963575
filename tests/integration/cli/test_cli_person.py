"""The CLI as a person meets it: installed, versioned, told where to act, failing in one line."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from edgeproxy.cli import main
from edgeproxy.cli.target import NO_TARGET
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.local_run import local_run as run_locally
from tests.integration.cli.helpers import REPO, SCRIPT, clean_env, edgeproxy
from tests.integration.keys.helpers import ADMIN_KEY, ENV

# Every admin command, as a person would first type it.
ADMIN_COMMANDS = [
    ["status"],
    ["settings", "get"],
    ["settings", "set", "strategy=least-busy"],
    ["audit"],
    ["keys", "list"],
    ["keys", "create", "--name", "app"],
    ["keys", "show", "0123456789abcdef"],
    ["keys", "revoke", "0123456789abcdef"],
    ["config", "export"],
    ["config", "diff", "infra/config.example.yaml"],
    ["config", "load", "infra/config.example.yaml"],
    ["bindings", "invalidate", "--pool", "fast-chat"],
    ["bindings", "share", "--pool", "fast-chat"],
    ["bindings", "unbind", "--pool", "fast-chat", "--caller", "ip:203.0.113.7"],
]
TABLE_ONLY = [["job", "health"], ["keys", "import", "infra/config.example.yaml"]]


@pytest.fixture
def gateway(start_gateway: Any, upstream_a: MockUpstream) -> Any:
    return start_gateway(config(deployment("a", upstream_a)), env=ENV)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_the_console_script_is_installed_and_has_a_version() -> None:
    assert SCRIPT.exists()  # .venv/bin/edgeproxy, as the README says
    ran = edgeproxy("--version", env=clean_env())
    assert (ran.status, ran.out.strip()) == (0, f"edgeproxy {metadata.version('edgeproxy')}")


@pytest.mark.parametrize("argv", ADMIN_COMMANDS, ids=" ".join)
def test_without_url_or_table_a_command_says_what_to_pass(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # In process (the console script's main), in a shell where nothing is set.
    for name in ("EDGEPROXY_URL", "EDGEPROXY_TABLE", "EDGEPROXY_DYNAMODB_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EDGEPROXY_ADMIN_KEY", "ep-x")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # were AWS tried: a closed port
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"edgeproxy: {NO_TARGET}"]
    assert "--url URL (or EDGEPROXY_URL)" in err
    assert "--table NAME (or EDGEPROXY_TABLE)" in err


@pytest.mark.parametrize("argv", [["status"], ["keys", "list"], ["config", "export"]], ids=" ".join)
def test_the_installed_command_says_it_in_one_line_too(argv: list[str]) -> None:
    ran = edgeproxy(*argv, env=clean_env(EDGEPROXY_ADMIN_KEY="ep-x"))
    assert ran.status == 2
    assert ran.one_line_error, ran.err
    assert NO_TARGET in ran.err


@pytest.mark.parametrize("argv", TABLE_ONLY, ids=" ".join)
def test_a_table_only_command_asks_for_the_table(argv: list[str]) -> None:
    ran = edgeproxy(*argv, env=clean_env())
    assert ran.status == 2
    assert ran.one_line_error, ran.err
    assert "--table NAME (or set EDGEPROXY_TABLE)" in ran.err


@pytest.mark.parametrize(
    "argv",
    [
        ["status"],
        ["audit"],
        ["keys", "list", "--json"],
        ["settings", "get"],
        ["config", "export"],
        ["bindings", "share", "--pool", "fast-chat"],
    ],
    ids=" ".join,
)
def test_every_admin_command_honours_edgeproxy_url(gateway: Any, argv: list[str]) -> None:
    env = clean_env(EDGEPROXY_URL=gateway.base_url, EDGEPROXY_ADMIN_KEY=ADMIN_KEY)
    ran = edgeproxy(*argv, env=env)
    assert (ran.status, ran.err) == (0, ""), ran.err
    assert ran.out


def test_an_unreachable_gateway_is_one_line() -> None:
    env = clean_env(EDGEPROXY_ADMIN_KEY="ep-x")
    for argv in (["status"], ["keys", "list"], ["config", "export"]):
        ran = edgeproxy(*argv, "--url", f"http://127.0.0.1:{free_port()}", env=env)
        assert ran.status == 1
        assert ran.one_line_error, ran.err
        assert "cannot reach" in ran.err


def test_an_unreachable_or_missing_table_is_one_line(dynamo_endpoint: str) -> None:
    local = {"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}
    closed = f"http://127.0.0.1:{free_port()}"
    ran = edgeproxy(
        "audit", "--table", "t", env=clean_env(EDGEPROXY_DYNAMODB_ENDPOINT=closed, **local)
    )
    assert ran.status == 1
    assert ran.one_line_error, ran.err
    # Refused at once, or (on a loaded machine) the store's budget ran out first: either way
    # one line naming where it looked.
    assert f"nothing answers at {closed}" in ran.err or f"'t' at {closed}" in ran.err
    env = clean_env(EDGEPROXY_DYNAMODB_ENDPOINT=dynamo_endpoint, **local)
    ran = edgeproxy("keys", "list", "--table", "no-such-table", env=env)
    assert ran.status == 1
    assert ran.one_line_error, ran.err
    assert "table 'no-such-table'" in ran.err
    assert "no such table" in ran.err


def test_a_busy_port_is_one_line_before_anything_starts() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        done = subprocess.run(  # noqa: S603 - our own runner
            [sys.executable, "infra/run_local.py", "--port", str(port)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1
    assert done.stdout == ""  # nothing started, nothing announced
    assert done.stderr.splitlines() == [
        f"edgeproxy: port {port} (the gateway) is already in use, perhaps by another "
        "`make run`: make run PORT=8081, or --port"
    ]


@pytest.fixture
def local_run() -> Iterator[list[str]]:
    """``make run``'s runner on free ports (its mocks too); yields its banner lines."""
    with run_locally() as run:
        yield run.lines


def _exports(line: str) -> dict[str, str]:
    assert line.strip().startswith("export ")
    return dict(pair.split("=", 1) for pair in line.split()[1:])


def test_a_local_run_says_where_its_table_is_and_how_to_point_the_cli(
    local_run: list[str],
) -> None:
    banner = "\n".join(local_run)
    found = re.search(r"State table: (\S+) on the embedded DynamoDB at (http://\S+)", banner)
    assert found, banner
    table, endpoint = found.groups()
    assert f"The CLI is {Path(SCRIPT).relative_to(REPO)}" in banner
    gateway_line = next(line for line in local_run if "EDGEPROXY_URL=" in line)
    table_line = local_run[-1]
    # The printed lines work as printed: through the gateway, and on the table itself.
    ran = edgeproxy("keys", "list", env=clean_env(**_exports(gateway_line)))
    assert ran.status == 0, ran.err
    assert "local-client" in ran.out
    on_table = _exports(table_line)
    assert (on_table["EDGEPROXY_TABLE"], on_table["EDGEPROXY_DYNAMODB_ENDPOINT"]) == (
        table,
        endpoint,
    )
    ran = edgeproxy("audit", "--limit", "1", env=clean_env(**on_table))
    assert ran.status == 0, ran.err
    assert "config.load" in ran.out
