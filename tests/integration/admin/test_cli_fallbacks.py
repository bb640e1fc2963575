"""``edgeproxy fallbacks`` against a running local gateway: what the console's fallback-chain
panel does, from the command line; a replaced chain keeps its ``continuation``."""

from __future__ import annotations

import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at
from tests.fixtures.cli import run_cli as run
from tests.fixtures.configs import config, deployment
from tests.integration.admin.helpers import ADMIN_KEY, admin, keys, ok


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str, gateway_table: str) -> None:
    point_the_cli_at(monkeypatch, dynamo_endpoint, gateway_table, admin_key=ADMIN_KEY)


def _chains(url: str) -> list[dict[str, object]]:
    return list(ok(admin(url, "GET", "/admin/fallbacks"))["fallbacks"])


def test_a_chain_is_set_shown_replaced_with_its_continuation_kept_and_removed(
    start_gateway, capsys, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            deployment("b", upstream_b, model="other-chat"),
            gateway=keys(),
        )
    )
    url = ["--url", gw.base_url]
    status, out, err = run(capsys, "fallbacks", "show", *url)
    assert (status, out.strip()) == (0, "no fallback chains"), err

    status, out, err = run(
        capsys, "fallbacks", "set", "fast-chat", "other-chat", "--continuation", "prefill", *url
    )
    assert status == 0, err
    assert "fast-chat (general) -> other-chat continuation=prefill" in out
    assert _chains(gw.base_url) == [
        {"model": "fast-chat", "reason": "general", "to": ["other-chat"], "continuation": "prefill"}
    ]
    # Replaced without naming it (as the console's form does): the continuation stays.
    status, _, err = run(capsys, "fallbacks", "set", "fast-chat", "other-chat", "fast-chat", *url)
    assert status == 0, err
    [chain] = _chains(gw.base_url)
    assert (chain["to"], chain["continuation"]) == (["other-chat", "fast-chat"], "prefill")
    # Named "router": the router's setting again.
    run(capsys, "fallbacks", "set", "fast-chat", "other-chat", "--continuation", "router", *url)
    [chain] = _chains(gw.base_url)
    assert (chain["to"], chain.get("continuation")) == (["other-chat"], None)

    status, out, err = run(capsys, "fallbacks", "show", "--json", *url)
    assert status == 0, err
    status, _, err = run(capsys, "fallbacks", "delete", "fast-chat", *url)
    assert status == 0, err
    assert _chains(gw.base_url) == []
    # A model or reason the configuration cannot take is the API's 400, said in one line.
    status, _, err = run(capsys, "fallbacks", "set", "fast-chat", "no-such-model", *url)
    assert status == 1
    assert "400" in err
    assert _chains(gw.base_url) == []


def test_without_a_gateway_it_says_how_to_name_one(capsys) -> None:
    status, _, err = run(capsys, "fallbacks", "show")
    assert status == 2
    assert "--url" in err
