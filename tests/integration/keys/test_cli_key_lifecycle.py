"""``edgeproxy keys update|rotate|list`` against a running gateway (``--url``) and its table."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
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
    point_the_cli_at(monkeypatch, dynamo_endpoint, gateway_table, admin_key=ADMIN_KEY)


@pytest.fixture
def gateway(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> Any:
    cfg = config(deployment("a", upstream_a), deployment("o", upstream_a, model="other-chat"))
    return start_gateway(cfg, env=ENV)


def _secret(out: str) -> str:
    return remember(re.search(r"^key: (ep-\S+)$", out, re.M).group(1))  # type: ignore[union-attr]


def test_update_rotate_and_list_through_the_admin_api(
    gateway: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    url = gateway.base_url
    status, out, _ = run(capsys, "keys", "create", "--url", url, "--name", "app", "--rpm", "5")
    key_id, key = out.split()[0], _secret(out)

    status, out, _ = run(
        capsys, "keys", "update", "--url", url, key_id, "--rpm", "120", "--tpm", "9000",
        "--budget", "25", "--period", "weekly", "--role", "pro", "--model", "fast-chat",
    )  # fmt: skip
    assert status == 0
    # id, prefix, role, status, rpm, tpm, budget, expiry, name
    assert out.split()[2:9] == ["pro", "active", "120", "9000", "25/weekly", "-", "app"]
    assert chat(url, key, "other-chat").status_code == 404

    status, out, _ = run(capsys, "keys", "update", "--url", url, key_id, "--no-rpm", "--json")
    shown = json.loads(out)
    assert (shown["rpm_limit"], shown["tpm_limit"], shown["version"]) == (None, 9000, 2)

    status, _, err = run(capsys, "keys", "update", "--url", url, key_id, "--model", "gpt-7")
    assert status == 1
    assert "400" in err
    assert "gpt-7" in err
    status, _, err = run(capsys, "keys", "update", "--url", url, key_id)
    assert status == 2
    assert "nothing to change" in err

    status, out, _ = run(capsys, "keys", "rotate", "--url", url, key_id, "--grace", "60")
    assert status == 0
    new = _secret(out)
    assert "previous secret accepted until:" in out
    assert out.split()[:4] == [key_id, new[:11] + "...", "pro", "rotating"]
    assert chat(url, new).status_code == 200
    assert chat(url, key).status_code == 200  # within its grace

    status, out, _ = run(capsys, "keys", "list", "--url", url)
    header, *rows = out.splitlines()
    assert header.split()[:7] == ["id", "prefix", "role", "status", "rpm", "tpm", "budget"]
    [row] = [r for r in rows if r.startswith(key_id)]
    assert row.split()[3:6] == ["rotating", "-", "9000"]
    assert re.fullmatch(r"\d+\.\d\d/25/weekly", row.split()[6])
    assert key not in out
    assert new not in out
    status, out, _ = run(capsys, "keys", "list", "--url", url, "--json")
    [listed] = [k for k in json.loads(out)["data"] if k["id"] == key_id]
    assert (listed["status"], listed["budget_period"], listed["tpm_limit"]) == (
        "rotating",
        "weekly",
        9000,
    )
    assert "spend_usd" in listed


def test_update_and_rotate_on_the_table_check_the_stored_configuration(
    gateway: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "keys", "create", "--name", "batch", "--model", "fast-chat")
    key_id, key = out.split()[0], _secret(out)
    status, _, err = run(capsys, "keys", "update", key_id, "--model", "gpt-7")
    assert status == 1
    assert "gpt-7" in err
    status, out, _ = run(capsys, "keys", "update", key_id, "--model", "other-chat", "--json")
    assert status == 0
    assert json.loads(out)["models"] == ["other-chat"]
    status, out, _ = run(capsys, "keys", "rotate", key_id, "--grace", "0")
    assert status == 0
    new = _secret(out)
    assert chat(gateway.base_url, new, "other-chat").status_code == 200
    assert chat(gateway.base_url, key, "other-chat").status_code == 401


def test_the_parallel_cap_is_set_changed_and_removed_from_the_cli(
    gateway: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    url = gateway.base_url
    status, out, _ = run(capsys, "keys", "create", "--url", url, "--name", "p", "--parallel", "3")
    assert status == 0
    key_id = out.split()[0]
    _secret(out)
    status, out, _ = run(capsys, "keys", "show", "--url", url, key_id, "--json")
    assert json.loads(out)["max_parallel_requests"] == 3
    status, out, _ = run(
        capsys, "keys", "update", "--url", url, key_id, "--parallel", "5", "--json"
    )
    assert json.loads(out)["max_parallel_requests"] == 5
    status, out, _ = run(capsys, "keys", "update", "--url", url, key_id, "--no-parallel", "--json")
    assert json.loads(out)["max_parallel_requests"] is None
    status, _, err = run(capsys, "keys", "update", "--url", url, key_id, "--parallel", "65")
    assert status == 2
    assert "max_parallel_requests" in err
