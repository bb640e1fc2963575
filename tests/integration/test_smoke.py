"""The post-deploy smoke check, against a local gateway the way a user runs it after deploy."""

from __future__ import annotations

import pytest

from edgeproxy_dev import smoke
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment


def gateway_config(upstream: MockUpstream) -> dict[str, object]:
    return config(
        deployment("a", upstream),
        deployment("emb", upstream, model="text-embed", operations=["embeddings"]),
    )


def test_every_call_passes_against_a_working_gateway(
    start_gateway, upstream_a: MockUpstream, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    gw = start_gateway(gateway_config(upstream_a))
    monkeypatch.setenv("SMOKE_KEY", "sk-smoke")
    assert smoke.main(["--url", gw.base_url, "--key-env", "SMOKE_KEY"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[:2] for line in out.splitlines()[:-1]] == [
        ["PASS", "models"],
        ["PASS", "chat"],
        ["PASS", "stream"],
        ["PASS", "embeddings"],
    ]
    assert "sk-smoke" not in out
    assert out.splitlines()[-1] == "smoke: 4 of 4 calls passed"


def test_a_failing_call_is_reported_and_fails_the_run(
    start_gateway, upstream_a: MockUpstream, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    gw = start_gateway(gateway_config(upstream_a))
    monkeypatch.setenv("SMOKE_KEY", "sk-smoke")
    rc = smoke.main(["--url", gw.base_url, "--key-env", "SMOKE_KEY", "--model", "no-such-model"])
    out = capsys.readouterr().out
    assert rc == 1
    assert out.splitlines()[0].startswith("FAIL  models")
    assert out.splitlines()[1].startswith("FAIL  chat")


def test_the_key_comes_from_the_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SMOKE_KEY", raising=False)
    with pytest.raises(SystemExit):
        smoke.main(["--url", "http://127.0.0.1:9", "--key-env", "SMOKE_KEY"])
