"""The ``edgeproxy`` commands that need no table: config check, hash-key, argument checks."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from edgeproxy.cli import main

VALID = """
deployments:
  - id: a
    model: fast-chat
    provider: openai
    base_url: https://api.openai.com/v1
    upstream_model: gpt-4o-mini
"""


@pytest.fixture(autouse=True)
def no_table(monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing listens here: a command that touched the store would fail loudly.
    monkeypatch.setenv("EDGEPROXY_DYNAMODB_ENDPOINT", "http://127.0.0.1:9")


def test_config_check_accepts_a_valid_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(VALID)
    assert main(["config", "check", str(path)]) == 0
    assert "valid (1 deployments; models: fast-chat)" in capsys.readouterr().out


def test_config_check_names_the_bad_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(VALID + "    wieght: 2\n")
    assert main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "deployments[0].wieght" in err
    assert str(path) in err


def test_config_check_of_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", str(tmp_path / "absent.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_hash_key_reads_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-client-123\n"))
    assert main(["hash-key"]) == 0
    assert capsys.readouterr().out.strip() == hashlib.sha256(b"sk-client-123").hexdigest()


def test_hash_key_refuses_an_empty_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    assert main(["hash-key"]) == 2
    assert "no key" in capsys.readouterr().err


def test_hash_key_takes_no_key_argument(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["hash-key", "sk-client-123"])
    assert exited.value.code == 2


def test_unbind_refuses_a_raw_key_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bindings", "unbind", "--pool", "p", "--caller", "sk-client-123"]) == 2
    assert "--api-key-env" in capsys.readouterr().err


def test_unbind_needs_the_key_variable_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    assert main(["bindings", "unbind", "--pool", "p", "--api-key-env", "NO_SUCH_KEY_VAR"]) == 2
    assert "NO_SUCH_KEY_VAR" in capsys.readouterr().err


def test_unbind_needs_exactly_one_caller(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bindings", "unbind", "--pool", "p"])


@pytest.mark.parametrize("action", ["create", "list", "show", "revoke", "import"])
def test_every_keys_command_has_help_with_an_example(
    action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["keys", action, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "edgeproxy keys create --url http://127.0.0.1:8080 --name billing-app" in out


def test_keys_over_http_need_an_admin_key_in_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("EDGEPROXY_ADMIN_KEY", raising=False)
    assert main(["keys", "list", "--url", "http://127.0.0.1:9"]) == 2
    assert "EDGEPROXY_ADMIN_KEY" in capsys.readouterr().err
    # No argument takes a key: argparse refuses one before anything runs.
    with pytest.raises(SystemExit):
        main(["keys", "list", "--admin-key", "ep-secret"])


def test_a_bad_key_body_is_refused_before_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "create", "--name", "x", "--rpm", "0"]) == 2
    assert "rpm_limit" in capsys.readouterr().err


def test_a_reader_that_leaves_early_ends_the_command_quietly() -> None:
    # `edgeproxy audit | head`: the pipe closes while the command still prints.
    script = (
        "import sys\n"
        "from edgeproxy.cli import command as cli\n"
        "def endless(path):\n"
        "    while True:\n"
        "        print('x' * 1000)\n"
        "cli._check = endless\n"
        "sys.exit(cli.main(['config', 'check', 'any.yaml']))\n"
    )
    process = subprocess.Popen(  # noqa: S603 - fixed arguments
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    process.stdout.read(10)
    process.stdout.close()
    _, err = process.communicate(timeout=30)
    assert process.returncode == 141
    assert b"Traceback" not in err
