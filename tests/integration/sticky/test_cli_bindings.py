"""The ``edgeproxy`` command against the table of running gateways."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import point_the_cli_at
from tests.fixtures.cli import run_cli as run
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView
from tests.fixtures.upstream import MakeUpstream
from tests.integration.sticky.helpers import (
    ALICE,
    ALICE_KEY,
    attempts,
    chat,
    served_by,
)

CONFIG_REFRESH_S = 0.3  # the test gateways cache configuration for 0.2 s


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str, gateway_table: str) -> None:
    """Point the CLI at this test's table with dummy credentials."""
    point_the_cli_at(monkeypatch, dynamo_endpoint, gateway_table)
    monkeypatch.setenv("ALICE_KEY", ALICE_KEY)


def test_config_load_reaches_running_gateways(
    start_gateway: Any,
    make_upstream: MakeUpstream,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    clock: FleetClock,
) -> None:
    a, b = make_upstream("a"), make_upstream("b")
    gateway = start_gateway(config(deployment("a", a)))
    assert served_by(chat(gateway)) == "a"

    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config(deployment("b", b))))  # JSON is YAML too
    status, out, _ = run(capsys, "config", "load", str(path))
    assert (status, out.splitlines()[0]) == (0, "stored configuration version 2 (2 changes):")
    assert "  deployments[b]: (none) -> " in out  # what the load changed
    clock.advance(CONFIG_REFRESH_S)  # past the gateway's configuration cache
    assert served_by(chat(gateway)) == "b"

    path.write_text("deployments: [{id: c}]\n")
    status, _, err = run(capsys, "config", "load", str(path))
    assert status == 2
    assert "deployments[0].model" in err
    assert served_by(chat(gateway)) == "b"  # nothing was stored


def test_share_unbind_and_invalidate(
    start_gateway: Any,
    make_upstream: MakeUpstream,
    table: TableView,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = make_upstream("a"), make_upstream("b")
    gateway = start_gateway(config(deployment("a", a, priority=1), deployment("b", b)))
    assert served_by(chat(gateway)) == "a"
    table.wait_binding(ALICE, "a")  # written after the answer: the next three find it
    for _ in range(3):
        assert served_by(chat(gateway)) == "a"
    table.wait_successes(4, "a")

    status, out, _ = run(capsys, "bindings", "share", "--pool", "fast-chat", "--json")
    assert status == 0
    report = json.loads(out)
    assert (report["requests"], report["sticky_fraction"], report["moved"]) == (4, 0.75, 0.5)
    by_id = {d["deployment_id"]: d for d in report["deployments"]}
    assert (
        by_id["a"] | {"weight_share": 0.5, "traffic_share": 1.0, "sticky_share": 1.0} == by_id["a"]
    )
    assert (by_id["a"]["requests"], by_id["a"]["sticky_hits"]) == (4, 3)
    assert by_id["b"]["traffic_share"] == 0.0
    status, out, _ = run(capsys, "bindings", "share", "--pool", "fast-chat", "--minutes", "5")
    assert status == 0
    assert "75% of successes routed by a binding" in out
    assert out.splitlines()[2].split() == ["a", "50.0%", "100.0%", "100.0%", "4", "3"]

    status, out, _ = run(
        capsys, "bindings", "unbind", "--pool", "fast-chat", "--api-key-env", "ALICE_KEY"
    )
    assert status == 0
    assert out.strip() == f"unbound {ALICE} from a (fast-chat, openai.chat)"
    assert table.binding(ALICE) is None
    assert ALICE_KEY not in out
    status, out, _ = run(capsys, "bindings", "unbind", "--pool", "fast-chat", "--caller", ALICE)
    assert (status, out.strip()) == (0, f"no binding for {ALICE} in fast-chat")

    assert attempts(chat(gateway)) == [("a", False)]  # routed by the strategy, then bound again
    table.wait_binding(ALICE, "a")
    status, out, _ = run(capsys, "bindings", "invalidate", "--pool", "fast-chat")
    assert (status, out.strip()) == (0, "invalidated every binding of fast-chat (generation 1)")
    assert attempts(chat(gateway)) == [("a", False)]  # the stored binding is of generation 0

    status, _, err = run(capsys, "bindings", "share", "--pool", "no-such-model")
    assert status == 1
    assert "no-such-model" in err
