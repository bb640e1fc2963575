"""``make run`` beside a real local server: loopback allowed in the runner's process, no mocks.

A user's own configuration, with no ``gateway.egress`` section, points a
deployment at a server already running on this machine: the local runner
serves it (no mock in its place: mocks are the example configuration's, or
asked for with ``--mocks``), its banner says loopback is allowed and its
examples name the configuration's model; the same document is refused
where a deployed gateway (or any process the runner did not start) loads it.
"""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest
import yaml

from edgeproxy.config.loader import parse_config
from edgeproxy.errors import EntryRefused
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.runner import MOCK_KEY, NO_MOCKS
from tests.fixtures.local_run import local_run

LINE = "Loopback upstreams (a server on this machine: Ollama, vLLM, llama.cpp) are allowed in"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _users_config(port: int | None = None) -> dict[str, object]:
    return {
        "deployments": [
            {
                "id": "mine",
                "model": "my-model",
                "provider": "openai_compat",
                "base_url": f"http://127.0.0.1:{port or _free_port()}/v1",
                "upstream_model": "mock-small",
                "credential": "env:EDGEPROXY_CRED_MOCK_KEY",
            }
        ]
    }


def test_the_local_runner_serves_a_real_loopback_server_and_says_so(tmp_path: Path) -> None:
    own = MockUpstream("users-server", api_key=MOCK_KEY, default_content="from my own server")
    own.start()
    try:
        path = tmp_path / "mine.yaml"
        path.write_text(yaml.safe_dump(_users_config(own.port)))
        with local_run(path) as run:
            assert LINE in run.lines
            assert NO_MOCKS in run.lines
            curls = [line for line in run.lines if "curl -s" in line]
            assert curls
            assert all('"model": "my-model"' in line for line in curls)
            assert not any("demo-failover" in line for line in run.lines)
            answer = httpx.post(
                run.base_url + "/v1/chat/completions",
                json={"model": "my-model", "messages": [{"role": "user", "content": "hi"}]},
                headers={"authorization": f"Bearer {run.value('client key:')}"},
                timeout=30,
            )
            assert answer.status_code == 200, answer.text
            assert answer.headers["x-edgeproxy-deployment"] == "mine"
            # The user's server answered, not a mock the runner put in its place.
            content = answer.json()["choices"][0]["message"]["content"]
            assert content == "from my own server"
    finally:
        own.stop()


def test_the_same_document_is_refused_outside_the_local_runner() -> None:
    with pytest.raises(EntryRefused, match="loopback"):
        parse_config(_users_config(), "a deployed gateway's document", entry=True)


def test_a_document_cannot_turn_loopback_on() -> None:
    document = _users_config()
    document["gateway"] = {"egress": {"allow": [], "loopback": True}}
    with pytest.raises(Exception, match="loopback"):
        parse_config(document, "a document that tries", entry=True)
