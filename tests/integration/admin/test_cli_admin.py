"""``edgeproxy status``, ``settings get|set`` and ``audit`` against a running local gateway."""

from __future__ import annotations

import json

import pytest

from edgeproxy.cli import main
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at
from tests.fixtures.cli import run_cli as run
from tests.integration.admin.helpers import ADMIN_ACTOR, ADMIN_KEY, admin, chat, ok, two_deployments


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str, gateway_table: str) -> None:
    """The admin key in the environment; the table of this test's gateways for table mode."""
    point_the_cli_at(monkeypatch, dynamo_endpoint, gateway_table, admin_key=ADMIN_KEY)


def test_status_prints_a_table_per_pool(
    start_gateway, capsys, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    )
    assert chat(gw.base_url).status_code == 200
    ok(
        admin(
            gw.base_url,
            "POST",
            "/admin/circuits/b/open",
            json={"version": 0, "reason": "upgrade", "seconds": 90},
        )
    )

    for argv in (["status", "--url", gw.base_url], ["status"]):  # admin API, then the table
        status, out, err = run(capsys, *argv)
        assert status == 0, err
        lines = out.splitlines()
        assert lines[0].startswith("edgeproxy: degraded (configuration version")
        assert "fast-chat" in lines
        header = next(line for line in lines if "deployment" in line).split()
        assert header == [
            "deployment",
            "state",
            "retry-after",
            "health",
            "rpm",
            "tpm",
            "rejections",
        ]
        a = next(line for line in lines if line.strip().startswith("a ")).split()
        assert a[:2] == ["a", "available"]
        assert a[3:5] == ["0.50", "1/100"]
        b = next(line for line in lines if line.strip().startswith("b ")).split()
        assert b[1:4] == ["cooldown", "(maintenance:", "upgrade)"]
        assert b[4].endswith("s")
        assert 85 <= float(b[4][:-1]) <= 90


def test_settings_get_and_set_over_http_and_on_the_table(
    start_gateway, capsys, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    status, out, _ = run(capsys, "settings", "get", "--url", gw.base_url)
    assert status == 0
    before = json.loads(out)

    status, out, _ = run(
        capsys,
        "settings",
        "set",
        "--url",
        gw.base_url,
        "strategy=least-busy",
        "circuit.cooldown_seconds=12",
    )
    assert (status, out.strip()) == (
        0,
        f"router settings stored as configuration version {before['version'] + 1}",
    )
    status, out, _ = run(capsys, "settings", "set", "sticky.enabled=false")  # on the table
    assert status == 0

    after = ok(admin(gw.base_url, "GET", "/admin/router-settings"))
    assert (
        after["strategy"],
        after["circuit"]["cooldown_seconds"],
        after["sticky"]["enabled"],
    ) == ("least-busy", 12, False)
    assert after["circuit"]["allowed_fails"] == before["circuit"]["allowed_fails"]

    status, _, err = run(
        capsys, "settings", "set", "--url", gw.base_url, "--version", "1", "strategy=price-based"
    )
    assert status == 1
    assert "409" in err
    assert "stale" in err
    status, _, err = run(
        capsys, "settings", "set", "--url", gw.base_url, "circuit.allowed_fails=-1"
    )
    assert status == 1
    assert "allowed_fails" in err
    assert run(capsys, "settings", "set", "--url", gw.base_url)[0] == 2  # nothing to change


def test_audit_lists_changes_newest_first(
    start_gateway, capsys, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    run(capsys, "settings", "set", "--url", gw.base_url, "max_fallback_depth=2")

    for argv in (["audit", "--url", gw.base_url, "--limit", "1"], ["audit", "--limit", "1"]):
        status, out, _ = run(capsys, *argv)
        assert status == 0
        first, change = out.splitlines()
        # The YAML admin entry was imported as a table key: the actor is named by name and id.
        assert first.split()[2:] == [*ADMIN_ACTOR.split(), "router-settings.update", "router", "v2"]
        assert change.strip() == "router.max_fallback_depth: 3 -> 2"
    status, out, _ = run(capsys, "audit", "--url", gw.base_url, "--json")
    actions = [e["action"] for e in json.loads(out)]
    assert actions == ["router-settings.update", "config.load", "key.import"]


def test_the_admin_key_comes_only_from_the_environment(
    start_gateway,
    capsys,
    monkeypatch: pytest.MonkeyPatch,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    monkeypatch.delenv("EDGEPROXY_ADMIN_KEY")
    status, _, err = run(capsys, "status", "--url", gw.base_url)
    assert (status, "EDGEPROXY_ADMIN_KEY" in err) == (2, True)
    monkeypatch.setenv("OTHER_VAR", "sk-client-plain")
    status, _, err = run(capsys, "status", "--url", gw.base_url, "--admin-key-env", "OTHER_VAR")
    assert status == 1
    assert "403" in err


@pytest.mark.parametrize("argv", [["status"], ["settings", "set"], ["audit"]])
def test_each_command_has_help_with_an_example(capsys, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "example" in out
    assert "EDGEPROXY_ADMIN_KEY" in out
