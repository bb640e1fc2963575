"""The post-deploy smoke check, against a local gateway the way a user runs it after deploy."""

from __future__ import annotations

import re

import pytest

from edgeproxy_dev import smoke
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.buffering import BufferingProxy
from tests.fixtures.configs import config, deployment

# The mock upstream's stream pacing: its answer's chunks come this far apart.
CHUNK_DELAY_MS = 40


def gateway_config(upstream: MockUpstream) -> dict[str, object]:
    return config(
        deployment("a", upstream),
        deployment("emb", upstream, model="text-embed", operations=["embeddings"]),
    )


def test_every_call_passes_against_a_working_gateway(
    start_gateway, upstream_a: MockUpstream, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    upstream_a.set_faults([], persistent={"chunk_delay_ms": CHUNK_DELAY_MS})
    gw = start_gateway(gateway_config(upstream_a))
    monkeypatch.setenv("SMOKE_KEY", "sk-smoke")
    args = ["--url", gw.base_url, "--stream-url", gw.base_url, "--key-env", "SMOKE_KEY"]
    assert smoke.main(args) == 0
    out = capsys.readouterr().out
    assert [line.split()[:2] for line in out.splitlines()[:-1]] == [
        ["PASS", "models"],
        ["PASS", "chat"],
        ["PASS", "stream"],
        ["PASS", "embeddings"],
    ]
    assert "sk-smoke" not in out
    assert out.splitlines()[-1] == "smoke: 4 of 4 calls passed"
    # The streamed chunks came as the upstream paced them: "<n> chunks over <ms> ms".
    found = re.search(r"(\d+) chunks over (\d+) ms", out.splitlines()[2])
    assert found, out
    chunks, spread_ms = int(found.group(1)), int(found.group(2))
    assert chunks >= 4
    assert spread_ms >= 0.5 * (chunks - 2) * CHUNK_DELAY_MS


def test_a_stream_whose_chunks_arrive_together_fails(
    start_gateway, upstream_a: MockUpstream, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    # The same paced stream, through an endpoint that buffers answers (as the HTTP API does).
    upstream_a.set_faults([], persistent={"chunk_delay_ms": CHUNK_DELAY_MS})
    gw = start_gateway(gateway_config(upstream_a))
    monkeypatch.setenv("SMOKE_KEY", "sk-smoke")
    with BufferingProxy(gw.base_url) as buffered:
        args = ["--url", buffered.base_url, "--stream-url", buffered.base_url]
        rc = smoke.main([*args, "--key-env", "SMOKE_KEY"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 1
    assert [line.split()[:2] for line in out[:-1]] == [
        ["PASS", "models"],
        ["PASS", "chat"],
        ["FAIL", "stream"],
        ["PASS", "embeddings"],
    ]
    assert "arrived together" in out[2]
    assert out[-1] == "smoke: 3 of 4 calls passed"


def test_the_stream_url_is_required(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    # No default to the buffered URL: there, every stream would arrive in one piece.
    monkeypatch.setenv("SMOKE_KEY", "sk-smoke")
    with pytest.raises(SystemExit) as stopped:
        smoke.main(["--url", "http://127.0.0.1:9", "--key-env", "SMOKE_KEY"])
    assert stopped.value.code == 2
    assert "--stream-url" in capsys.readouterr().err


def test_a_failing_call_is_reported_and_fails_the_run(
    start_gateway, upstream_a: MockUpstream, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    gw = start_gateway(gateway_config(upstream_a))
    monkeypatch.setenv("SMOKE_KEY", "sk-smoke")
    urls = ["--url", gw.base_url, "--stream-url", gw.base_url]
    rc = smoke.main([*urls, "--key-env", "SMOKE_KEY", "--model", "no-such-model"])
    out = capsys.readouterr().out
    assert rc == 1
    assert out.splitlines()[0].startswith("FAIL  models")
    assert out.splitlines()[1].startswith("FAIL  chat")


def test_the_key_comes_from_the_environment_only(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.delenv("SMOKE_KEY", raising=False)
    urls = ["--url", "http://127.0.0.1:9", "--stream-url", "http://127.0.0.1:9"]
    with pytest.raises(SystemExit):
        smoke.main([*urls, "--key-env", "SMOKE_KEY"])
    assert "SMOKE_KEY is not set" in capsys.readouterr().err
