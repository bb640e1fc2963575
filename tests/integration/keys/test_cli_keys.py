"""``edgeproxy keys`` against a running local gateway (``--url``) and against its table."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at
from tests.fixtures.cli import run_cli as run
from tests.fixtures.configs import config, deployment
from tests.fixtures.secrets import remember
from tests.integration.keys.helpers import ADMIN_KEY, ENV, chat


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str, gateway_table: str) -> None:
    """The CLI's table and the admin key it sends (from the environment, never an argument)."""
    point_the_cli_at(monkeypatch, dynamo_endpoint, gateway_table, admin_key=ADMIN_KEY)


@pytest.fixture
def gateway(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> Any:
    return start_gateway(config(deployment("a", upstream_a)), env=ENV)


def _created(out: str) -> tuple[str, str]:
    key = remember(re.search(r"^key: (ep-\S+)$", out, re.M).group(1))  # type: ignore[union-attr]
    key_id = out.split()[0]
    return key_id, key


def test_create_list_revoke_through_the_admin_api(
    gateway: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    url = gateway.base_url
    status, out, _ = run(capsys, "keys", "create", "--url", url, "--name", "app", "--role", "pro")
    assert status == 0
    key_id, key = _created(out)
    assert re.fullmatch(r"[0-9a-f]{16}", key_id)
    assert chat(url, key).status_code == 200

    status, out, _ = run(capsys, "keys", "list", "--url", url)
    assert status == 0
    [line] = [row for row in out.splitlines() if row.startswith(key_id)]
    # id, prefix, role, status, rpm, tpm, budget (spent/limit/period), expiry, name
    assert line.split() == [key_id, key[:11] + "...", "pro", "active", "-", "-", "-", "-", "app"]
    assert key not in out

    status, out, _ = run(capsys, "keys", "revoke", "--url", url, key_id)
    assert (status, out.split()[3]) == (0, "revoked")
    assert chat(url, key).status_code == 401
    status, _, err = run(capsys, "keys", "revoke", "--url", url, "0000000000000000")
    assert status == 1
    assert "404" in err


def test_create_in_the_table_with_limits_then_show(
    gateway: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(
        capsys, "keys", "create", "--name", "batch", "--model", "fast-chat", "--rpm", "3",
        "--budget", "5", "--expires", "2099-01-01T00:00:00Z",
    )  # fmt: skip
    assert status == 0
    key_id, key = _created(out)
    assert chat(gateway.base_url, key).status_code == 200  # the gateway reads the table
    assert chat(gateway.base_url, key, "other").status_code == 404
    status, out, _ = run(capsys, "keys", "show", "--json", key_id)
    shown = json.loads(out)
    assert (shown["models"], shown["rpm_limit"], shown["budget_usd"]) == (["fast-chat"], 3, 5.0)
    assert shown["expires_at"] == "2099-01-01T00:00:00Z"
    assert "key" not in shown


def test_admin_calls_without_an_admin_key_or_with_bad_input_fail_cleanly(
    gateway: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, _, err = run(capsys, "keys", "create", "--name", "x", "--role", "root")
    assert status == 2
    assert "role" in err
    monkeypatch.delenv("EDGEPROXY_ADMIN_KEY")
    status, _, err = run(capsys, "keys", "list", "--url", gateway.base_url)
    assert status == 2
    assert "EDGEPROXY_ADMIN_KEY" in err
    monkeypatch.setenv("NOT_ADMIN", remember("ep-not-an-admin-key"))
    status, _, err = run(
        capsys, "keys", "list", "--url", gateway.base_url, "--admin-key-env", "NOT_ADMIN"
    )
    assert status == 1
    assert "401" in err


def test_importing_a_file_without_keys_says_it_imported_none(
    tmp_path: Path, upstream_a: MockUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config(deployment("a", upstream_a))))
    status, out, err = run(capsys, "keys", "import", str(path))
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        f"imported 0 keys: {path} has no gateway.api_keys "
        "(new keys come from: edgeproxy keys create)"
    ]


def test_yaml_keys_import_into_the_table_and_keep_working(
    start_gateway: Callable[..., Any],
    upstream_a: MockUpstream,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    legacy = remember("sk-legacy-yaml-key")
    digest = hashlib.sha256(legacy.encode()).hexdigest()
    cfg = config(
        deployment("a", upstream_a),
        gateway={"api_keys": [{"name": "legacy", "sha256": digest, "role": "pro"}]},
    )
    gw = start_gateway(cfg, env=ENV)
    assert chat(gw.base_url, legacy).status_code == 200  # YAML keys still work
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(cfg))
    status, out, _ = run(capsys, "keys", "import", str(path))
    assert status == 0
    assert f"imported: {digest[:16]} legacy" in out
    assert "imported 1 of 1 keys (0 already there)" in out
    status, out, _ = run(capsys, "keys", "import", str(path))  # again: nothing new
    assert (status, out.splitlines()[-1].split(";")[0]) == (
        0,
        "imported 0 of 1 keys (1 already there)",
    )
    path.write_text(json.dumps(config(deployment("a", upstream_a))))  # keys gone from the YAML
    assert run(capsys, "config", "load", str(path))[0] == 0
    status, out, _ = run(capsys, "keys", "show", digest[:16])
    assert out.split()[2] == "pro"
    assert chat(gw.base_url, legacy).status_code == 200  # now a table key
