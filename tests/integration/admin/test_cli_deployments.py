"""``edgeproxy deployments`` and ``edgeproxy routing`` against a running local gateway: what
the console's deployments and routing view does, from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at
from tests.fixtures.cli import run_cli as run
from tests.fixtures.configs import deployment
from tests.integration.admin.helpers import ADMIN_KEY, admin, ok, two_deployments


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str, gateway_table: str) -> None:
    point_the_cli_at(monkeypatch, dynamo_endpoint, gateway_table, admin_key=ADMIN_KEY)


def _calls(upstream: MockUpstream) -> int:
    return sum(1 for r in upstream.requests() if r["path"].endswith("/chat/completions"))


def test_a_deployment_is_tested_added_changed_and_removed(
    start_gateway,
    make_upstream,
    capsys,
    tmp_path: Path,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    url = ["--url", gw.base_url]
    c = make_upstream("c")
    good = tmp_path / "c.json"
    good.write_text(json.dumps(deployment("c", c, model="other-chat")))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(deployment("c", c, credential="env:EDGEPROXY_CRED_NOT_SET")))

    status, out, err = run(capsys, "deployments", "test", str(good), *url)
    assert status == 0, err
    assert out.startswith("c: connection test passed, HTTP 200")
    status, out, _ = run(capsys, "deployments", "add", str(bad), *url)
    assert status == 1
    assert "connection test failed (credential)" in out
    assert admin(gw.base_url, "GET", "/admin/deployments/c").status_code == 404  # not saved
    status, out, err = run(capsys, "deployments", "add", str(good), *url)
    assert status == 0, err
    assert "c: added" in out
    assert _calls(c) == 2  # the two passing tests; the failed one sent nothing

    status, out, err = run(capsys, "deployments", "set", "a", "weight=2.5", "enabled=false", *url)
    assert status == 0, err
    shown = ok(admin(gw.base_url, "GET", "/admin/deployments/a"))
    assert (shown["weight"], shown["enabled"]) == (2.5, False)
    status, out, _ = run(capsys, "deployments", "list", *url)
    assert "a  fast-chat  openai_compat  disabled  weight 2.5" in out
    status, out, err = run(capsys, "deployments", "delete", "c", *url)
    assert status == 0, err
    assert admin(gw.base_url, "GET", "/admin/deployments/c").status_code == 404


def test_a_pool_s_strategy_and_a_model_s_rules_are_set(
    start_gateway, capsys, tmp_path: Path, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    url = ["--url", gw.base_url]
    status, out, err = run(capsys, "routing", "pool", "fast-chat", "--strategy", "least-busy", *url)
    assert status == 0, err
    assert "least-busy" in out
    assert ok(admin(gw.base_url, "GET", "/admin/pools/fast-chat"))["settings"]["strategy"] == (
        "least-busy"
    )
    rules = tmp_path / "rules.yaml"
    rules.write_text("strategy: latency-based\n")
    status, _, err = run(capsys, "routing", "rules", "fast-chat", str(rules), *url)
    assert status == 0, err
    models = ok(admin(gw.base_url, "GET", "/admin/model-rules"))["models"]
    assert models["fast-chat"]["strategy"] == "latency-based"
    status, _, err = run(capsys, "routing", "rules", "fast-chat", "--delete", *url)
    assert status == 0, err
    assert "fast-chat" not in ok(admin(gw.base_url, "GET", "/admin/model-rules"))["models"]
    status, _, err = run(capsys, "routing", "pool", "fast-chat", "--inherit")  # no --url
    assert status == 2
    assert "acts through a gateway" in err
