"""What the benchmark sends: the gateway's configuration and the request bodies.

The same request goes "direct" (to a mock port, with the mock's key and the
upstream model name) and "through edgeproxy" (public model name, a client
key the gateway checks), so the two differ only by the gateway in between.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

from edgeproxy_dev.runner import MOCK_KEY

CLIENT_KEY = "sk-bench-client"
# The deployed proxy's admin key reference (template.yaml's default, an SSM SecureString),
# served by the bench store's SSM (bench/store_server.py); the value is the bench's own.
ADMIN_KEY_REF = "ssm:/edgeproxy/admin-key"
ADMIN_KEY = "sk-bench-admin"
PROMPT = "Write a short poem about a gateway that adds almost nothing to every request it serves."
CHAT_MODEL = "fast-chat"
# A pool whose binding lives 1 s: a request more than half of that after the last
# write rewrites it, so sequential requests so spaced each pay a binding write.
REBINDING_MODEL = "fast-chat-rebinding"
REBIND_GAP_S = 0.6
EMBED_MODEL = "text-embed"
# A pool with the response cache on, shared gateway-wide (``bench/cache_hits.py``).
CACHED_MODEL = "fast-chat-cached"
UPSTREAM_MODEL = "mock-small"


def gateway_config(ports: tuple[int, int], request_log: bool | None = None) -> dict[str, Any]:
    """A pool of two chat deployments (one per mock port) and one embeddings deployment.

    Router settings are the defaults (sticky bindings on), as a user gets them.
    ``request_log``: on or off (default: on unless ``EDGEPROXY_BENCH_REQUEST_LOG=off``).
    """
    if request_log is None:
        request_log = os.environ.get("EDGEPROXY_BENCH_REQUEST_LOG") != "off"

    def deployment(dep_id: str, port: int, model: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": dep_id,
            "model": model,
            "provider": "openai_compat",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "upstream_model": UPSTREAM_MODEL,
            "credential": "env:EDGEPROXY_CRED_MOCK_KEY",
            **fields,
        }

    return {
        "gateway": {
            "api_keys": [
                {"name": "bench", "sha256": hashlib.sha256(CLIENT_KEY.encode()).hexdigest()}
            ],
            "egress": {"allow": ["127.0.0.0/8"]},  # the mocks listen on loopback
            # EDGEPROXY_BENCH_REQUEST_LOG=off: the same run without the request log (its cost).
            "request_log": {"enabled": request_log},
        },
        "deployments": [
            deployment("mock-a", ports[0], CHAT_MODEL),
            deployment("mock-b", ports[1], CHAT_MODEL),
            deployment("embed-a", ports[0], EMBED_MODEL, operations=["embeddings"]),
            deployment("rebind-a", ports[0], REBINDING_MODEL),
            deployment("rebind-b", ports[1], REBINDING_MODEL),
            deployment("cached-a", ports[0], CACHED_MODEL),
        ],
        "pools": {REBINDING_MODEL: {"sticky": {"idle_ttl_seconds": 1}}},
        "cache": {"pools": {CACHED_MODEL: {"scope": "gateway"}}},
    }


@dataclass(frozen=True, slots=True)
class Call:
    """One HTTP request the load generators repeat."""

    path: str
    body: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        """The request headers (besides Host and Content-Length)."""
        return {"Content-Type": "application/json", "Authorization": f"Bearer {self.key}"}


def chat(direct: bool, stream: bool = False, model: str = CHAT_MODEL) -> Call:
    """A chat completion, to the mock (``direct``) or through the gateway (to ``model``)."""
    body: dict[str, Any] = {
        "model": UPSTREAM_MODEL if direct else model,
        "messages": [{"role": "user", "content": PROMPT}],
    }
    if stream:
        body["stream"] = True
    return Call("/v1/chat/completions", json.dumps(body), MOCK_KEY if direct else CLIENT_KEY)


def embeddings(direct: bool) -> Call:
    """An embeddings request of two short inputs."""
    body = {"model": UPSTREAM_MODEL if direct else EMBED_MODEL, "input": ["hello", "world"]}
    return Call("/v1/embeddings", json.dumps(body), MOCK_KEY if direct else CLIENT_KEY)
