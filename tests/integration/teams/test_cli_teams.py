"""``edgeproxy teams`` against a running gateway (``--url``) and against its table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from edgeproxy.cli import main
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at
from tests.fixtures.cli import run_cli_json as run
from tests.fixtures.configs import config, deployment
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str, gateway_table: str) -> None:
    point_the_cli_at(monkeypatch, dynamo_endpoint, gateway_table, admin_key=ADMIN_KEY)


@pytest.fixture
def gateway(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> Any:
    cfg = config(deployment("a", upstream_a), deployment("o", upstream_a, model="other-chat"))
    return start_gateway(cfg, env=ENV)


@pytest.mark.parametrize("where", ["url", "table"])
def test_teams_cli_creates_moves_and_shows_effective(
    gateway: Any, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    target = ["--url", gateway.base_url] if where == "url" else []
    org = run(capsys, "teams", "org-create", "acme", "--name", "Acme", "--tag", "cc=42", *target)
    assert org["tags"] == {"cc": "42"}
    team = run(
        capsys, "teams", "create", "search", "--org", "acme", "--name", "S",
        "--model", "fast-chat", *target,
    )  # fmt: skip
    assert team["organization_id"] == "acme"
    key = create_key(gateway.base_url, models=["fast-chat"])
    moved = run(capsys, "teams", "add-key", "search", key["id"], *target)
    assert moved["team_id"] == "search"
    effective = run(capsys, "teams", "effective", key["id"], *target)
    assert effective["models"]["levels"] == ["key", "team"]
    assert run(capsys, "teams", "list", *target)["data"][0]["keys"] == 1
    assert main(["teams", "delete", "search", *target]) != 0
    assert "still owns 1 keys" in capsys.readouterr().err
    run(capsys, "teams", "remove-key", key["id"], *target)
    assert run(capsys, "teams", "delete", "search", *target)["deleted"] is True
    assert run(capsys, "teams", "org-delete", "acme", *target)["deleted"] is True
    audit = httpx.get(gateway.base_url + "/admin/audit", headers=bearer(ADMIN_KEY), timeout=10)
    actions = [entry["action"] for entry in audit.json()["data"]]
    assert actions.count("key.move") == 2
