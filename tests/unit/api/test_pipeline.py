"""The edge's one request pipeline, over a stand-in gateway (no store, no upstream)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from edgeproxy.api.app import create_app
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import ModelOverloaded
from edgeproxy.service.gateway import JsonAnswer, StreamAnswer
from edgeproxy.service.keys import KeyRing
from edgeproxy.service.limits.reserve import Admission
from edgeproxy.service.limits.slots import KeySlots
from edgeproxy.service.request import ProxyRequest
from edgeproxy.service.stream.events import Chunk, Closing, StreamItem
from edgeproxy.upstream.call import Usage

KEY = "sk-pipeline-caller"
HELLO = [{"role": "user", "content": "Hello"}]
ANSWER = {
    "id": "c-1",
    "object": "chat.completion",
    "model": "up",
    "choices": [{"index": 0, "message": {"content": "Hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 2, "completion_tokens": 1},
}


def settings() -> GatewayConfig:
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    return GatewayConfig.model_validate(
        {"deployments": [], "gateway": {"api_keys": [{"name": "caller", "sha256": digest}]}}
    )


class NoTableKeys:
    """A ``KeyStore`` with no keys: the caller's key is a YAML one."""

    async def get_client_key(self, digest: str) -> None:
        return None

    async def admit_key(self, *args: object) -> bool:
        return True

    async def record_key_usage(self, *args: object) -> None:
        return None

    async def touch_client_key(self, *args: object) -> None:
        return None


class StandIn:
    """The parts of ``Gateway`` the edge calls; every config() is a new version."""

    trust_forwarded_for = False

    def __init__(self) -> None:
        self.keys = KeyRing(NoTableKeys(), time.time)
        self.key_slots = KeySlots()
        self.configs: list[GatewayConfig] = []
        self.calls: list[tuple[ProxyRequest, GatewayConfig]] = []
        self.error: Exception | None = None

    def now(self) -> float:
        return time.time()

    async def config(self) -> GatewayConfig:
        self.configs.append(settings())
        return self.configs[-1]

    async def admit(self, req: ProxyRequest, config: GatewayConfig) -> Admission:
        assert req.key is None  # a YAML key: no verdict's writes, no fleet slot
        return Admission(None, None, time.time())

    async def complete(
        self, req: ProxyRequest, config: GatewayConfig, admission: Admission
    ) -> JsonAnswer:
        self.calls.append((req, config))
        if self.error is not None:
            raise self.error
        return JsonAnswer(ANSWER, {"x-edgeproxy-deployment": "a"})

    async def open_stream(
        self, req: ProxyRequest, config: GatewayConfig, admission: Admission
    ) -> StreamAnswer:
        self.calls.append((req, config))

        async def events() -> AsyncIterator[StreamItem]:
            yield Chunk({"id": "c-1", "model": "up", "choices": [{"index": 0, "delta": {}}]})
            yield Chunk({"id": "c-1", "choices": [{"index": 0, "delta": {"content": "Hi"}}]})
            yield Closing(finish_reasons={0: "stop"}, usage=Usage(2, 1))

        return StreamAnswer(events())

    async def aclose(self) -> None:
        pass


@pytest.fixture
def gateway() -> StandIn:
    return StandIn()


@pytest.fixture
def client(gateway: StandIn) -> TestClient:
    async def factory() -> Any:
        return gateway

    return TestClient(create_app(factory), headers={"authorization": f"Bearer {KEY}"})


def test_config_is_read_once_and_passed_down_with_only_the_key_digest(
    client: TestClient, gateway: StandIn
) -> None:
    answer = client.post("/v1/chat/completions", json={"model": "m", "messages": HELLO})
    assert answer.json() == ANSWER
    assert answer.headers["x-edgeproxy-deployment"] == "a"
    [(req, config)] = gateway.calls
    assert gateway.configs == [config]
    assert config is gateway.configs[0]
    assert req.caller == "key:" + hashlib.sha256(KEY.encode()).hexdigest()
    assert KEY not in repr(req)
    assert answer.headers["x-request-id"] == req.request_id


def test_messages_answer_and_stream_in_anthropic_shapes(
    client: TestClient, gateway: StandIn
) -> None:
    body = {"model": "m", "max_tokens": 5, "messages": HELLO}
    message = client.post("/v1/messages", json=body, headers={"x-request-id": "r-9"})
    assert message.json()["content"] == [{"type": "text", "text": "Hi"}]
    assert (message.headers["request-id"], message.headers["x-request-id"]) == ("r-9", "r-9")
    stream = client.post("/v1/messages", json={**body, "stream": True})
    kinds = [line[7:] for line in stream.text.splitlines() if line.startswith("event: ")]
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert '"usage":{"input_tokens":2,"output_tokens":1}' in stream.text
    assert [req.surface for req, _ in gateway.calls] == ["anthropic.messages"] * 2
    assert len(gateway.configs) == 2  # once per request


def test_each_surface_answers_errors_in_its_own_shape(client: TestClient, gateway: StandIn) -> None:
    gateway.error = ModelOverloaded("Every deployment is cooling down.", retry_after=1.5)
    openai = client.post("/v1/chat/completions", json={"model": "m", "messages": HELLO})
    assert openai.status_code == 503
    assert openai.headers["retry-after"] == "2"
    assert openai.json()["error"]["code"] == "model_overloaded"
    anthropic = client.post(
        "/v1/messages",
        json={"model": "m", "max_tokens": 5, "messages": HELLO},
        headers={"x-request-id": "r-1"},
    )
    assert anthropic.status_code == 503
    assert anthropic.headers["request-id"] == "r-1"
    assert anthropic.json()["error"]["type"] == "overloaded_error"


def test_unexpected_errors_are_a_generic_500_in_either_shape(
    client: TestClient, gateway: StandIn
) -> None:
    gateway.error = RuntimeError("secret detail sk-123")
    openai = client.post("/v1/chat/completions", json={"model": "m", "messages": HELLO})
    assert openai.status_code == 500
    assert "secret" not in openai.text
    anthropic = client.post("/v1/messages", json={"model": "m", "max_tokens": 5, "messages": HELLO})
    assert (anthropic.status_code, anthropic.json()["type"]) == (500, "error")
    assert "secret" not in anthropic.text
