"""``edgeproxy --version`` and ``--help`` load no command module: each subcommand's module
(and httpx, aiohttp, aioboto3, pydantic behind it) is imported only when it runs."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from edgeproxy.cli import command

HEAVY = ("aiohttp", "aioboto3", "boto3", "botocore", "httpx", "pydantic", "starlette", "yaml")
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _entry_point() -> tuple[str, str]:
    # The console script as installed, so the test follows it if it moves.
    scripts = tomllib.loads(PYPROJECT.read_text())["project"]["scripts"]
    module, _, name = scripts["edgeproxy"].partition(":")
    return module, name


def _run_entry(argv: list[str]) -> tuple[int, str, list[str]]:
    module, name = _entry_point()
    script = (
        "import json, sys\n"
        f"from {module} import {name} as entry\n"
        "try:\n"
        f"    status = entry({argv!r})\n"
        "except SystemExit as done:\n"
        "    status = done.code\n"
        f"print(json.dumps([status, sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    done = subprocess.run(  # noqa: S603 - fixed arguments
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    *printed, last = done.stdout.splitlines()
    status, loaded = json.loads(last)
    return status, "\n".join(printed), loaded


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_import_nothing_heavy(argv: list[str]) -> None:
    status, out, loaded = _run_entry(argv)
    assert status == 0
    assert out.startswith("edgeproxy " if argv == ["--version"] else "usage: edgeproxy")
    assert loaded == []


def test_help_lists_every_subcommand_with_its_line() -> None:
    status, out, _ = _run_entry(["--help"])
    assert status == 0
    assert "{" + ",".join(command.COMMANDS) + "}" in out
    for name in command.COMMANDS:
        assert f"\n    {name} " in out


@pytest.mark.parametrize("name", list(command.COMMANDS))
def test_each_modules_own_help_line_matches_the_table(name: str) -> None:
    # With ``name`` chosen its module adds the real subcommands (all of its group, in its
    # order); the main help must read the same as from the table alone, so a module that
    # adds, renames or rewords a subcommand fails here until the table follows.
    assert command._parser(name).format_help() == command._parser(None).format_help()


def test_the_chosen_subcommand_is_parsed_in_full() -> None:
    args = command._parser("keys").parse_args(["keys", "show", "k1"])
    assert (args.command, args.action, args.id) == ("keys", "show", "k1")


def test_the_subcommand_is_the_first_word_not_an_option() -> None:
    assert command.chosen(["--version"]) is None
    assert command.chosen(["-h", "usage", "--format", "csv"]) == "usage"
    assert command.chosen(["nonsense", "keys"]) is None
