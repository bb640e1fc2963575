"""Every pool of every converted LiteLLM example answers a call through the loopback mocks.

Each file of tests/fixtures/litellm is converted as ``import-litellm`` does,
its base URLs pointed at a mock of the same protocol (openai, anthropic,
azure, bedrock) on loopback, which the configuration then allows, a credential given where the importer
warned there was none (what its warning tells the user to do), and loaded
into a gateway; then each pool is called once on the operation it serves.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from edgeproxy.config.litellm_import.router import convert
from edgeproxy.config.loader import TABLE_SECTIONS
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import MOCK_KEY

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "litellm"
FILES = sorted(p.name for p in CORPUS.glob("*.yaml"))
# The os.environ/ values the examples read at import time (base URLs, not secrets).
IMPORT_ENV = {"LLAMA_API_BASE": "http://10.0.0.13:8000/v1"}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockUpstream]:
    with MockUpstream("litellm", api_key=MOCK_KEY) as upstream:
        yield upstream


def pointed_at(document: dict[str, Any], mock: MockUpstream) -> tuple[dict[str, Any], set[str]]:
    """The document with every deployment on ``mock``; the env: variables it references."""
    variables: set[str] = set()
    for dep in document["deployments"]:
        dep["base_url"] = mock.url if dep["provider"] in ("azure", "bedrock") else mock.base_url
        if dep["provider"] != "bedrock":
            dep.setdefault("credential", "env:EDGEPROXY_CRED_MOCK_KEY")
            variables.add(dep["credential"].removeprefix("env:"))
    return document, variables


def call(http: httpx.Client, pool: str, operations: set[str]) -> httpx.Response:
    if "chat" in operations:
        body = {"model": pool, "messages": [{"role": "user", "content": "ping"}]}
        return http.post("/v1/chat/completions", json=body)
    if "embeddings" in operations:
        return http.post("/v1/embeddings", json={"model": pool, "input": "ping"})
    return http.post("/v1/completions", json={"model": pool, "prompt": "ping"})


@pytest.mark.parametrize("name", FILES)
def test_each_pool_answers(name: str, start_gateway, mock: MockUpstream) -> None:
    converted = convert(yaml.safe_load((CORPUS / name).read_text()), IMPORT_ENV)
    # Organizations and teams are table items (config load writes them), not routing.
    routing = {k: v for k, v in converted.document.items() if k not in TABLE_SECTIONS}
    document, variables = pointed_at(routing, mock)
    # The mock is on loopback: allowed the way a local configuration allows it.
    # The owner lists the loopback mock as a Bedrock endpoint: SigV4 is computed for no other.
    egress = {"allow": ["127.0.0.0/8"], "bedrock_endpoints": [mock.url]}
    document.setdefault("gateway", {})["egress"] = egress
    gateway = start_gateway(document, env=dict.fromkeys(variables, MOCK_KEY))
    pools: dict[str, set[str]] = {}
    for dep in document["deployments"]:
        pools.setdefault(dep["model"], set()).update(dep.get("operations", ["chat"]))
    assert pools
    with httpx.Client(base_url=gateway.base_url, timeout=60) as http:
        for pool, operations in sorted(pools.items()):
            answer = call(http, pool, operations)
            assert answer.status_code == 200, (name, pool, answer.text)
            served = answer.json()
            assert served.get("choices") or served.get("data"), (pool, served)
