"""Every sample event in events/ through its Lambda handler (functions/*/app.py).

The handlers run as Lambda runs them: imported once, invoked from one thread
that owns the event loop (an "execution environment"), against the embedded
DynamoDB and a loopback mock upstream.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import importlib.util
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from edgeproxy_dev.dynamo_server import DUMMY_CREDENTIALS
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.gateway import store

ROOT = Path(__file__).resolve().parents[2]
EVENT_KEY_SHA256 = hashlib.sha256(b"sk-event-client").hexdigest()
EVENTS = ROOT / "events"


@dataclass
class Context:
    """The parts of a Lambda context object Powertools reads."""

    function_name: str = "edgeproxy-test"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:edgeproxy-test"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"


def load(function: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "functions" / function / "app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def environment(
    monkeypatch: pytest.MonkeyPatch,
    dynamo_endpoint: str,
    gateway_table: str,
    upstream_a: MockUpstream,
) -> Iterator[ThreadPoolExecutor]:
    """Lambda's environment variables, a stored configuration, and one invoking thread."""
    store(
        dynamo_endpoint,
        gateway_table,
        config(
            deployment("a", upstream_a),
            deployment("emb", upstream_a, model="text-embed", operations=["embeddings"]),
            # The events' client key (every request needs one).
            gateway={"api_keys": [{"name": "events", "sha256": EVENT_KEY_SHA256}]},
        ),
    )
    for name, value in {
        "EDGEPROXY_DYNAMODB_ENDPOINT": dynamo_endpoint,
        "EDGEPROXY_TABLE": gateway_table,
        "EDGEPROXY_MOCK_KEY": "sk-mock",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": DUMMY_CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": DUMMY_CREDENTIALS["aws_secret_access_key"],
        "POWERTOOLS_METRICS_NAMESPACE": "edgeproxy-test",
    }.items():
        monkeypatch.setenv(name, value)
    with ThreadPoolExecutor(1, initializer=_new_loop) as pool:
        yield pool
        pool.submit(_close_loop).result()


def _new_loop() -> None:
    asyncio.set_event_loop(asyncio.new_event_loop())


def _close_loop() -> None:
    asyncio.get_event_loop().close()


def body_of(response: dict[str, Any]) -> str:
    raw = response.get("body") or ""
    return base64.b64decode(raw).decode() if response.get("isBase64Encoded") else raw


def check_chat(response: dict[str, Any]) -> None:
    assert response["statusCode"] == 200
    answer = json.loads(body_of(response))
    assert (
        answer["choices"][0]["message"]["content"] == "Hello from a! You said: Hello from Lambda!"
    )


def check_chat_stream(response: dict[str, Any]) -> None:
    assert response["statusCode"] == 200
    assert response["headers"]["content-type"].startswith("text/event-stream")
    lines = [line for line in body_of(response).splitlines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    text = "".join(
        json.loads(line[6:])["choices"][0]["delta"].get("content") or "" for line in lines[:-1]
    )
    assert text == "Hello from a! You said: Hello from Lambda!"


def check_embeddings(response: dict[str, Any]) -> None:
    assert response["statusCode"] == 200
    assert len(json.loads(body_of(response))["data"]) == 2


def check_models(response: dict[str, Any]) -> None:
    assert response["statusCode"] == 200
    ids = sorted(m["id"] for m in json.loads(body_of(response))["data"])
    assert ids == ["fast-chat", "text-embed"]


def check_unknown_model(response: dict[str, Any]) -> None:
    assert response["statusCode"] == 404
    assert json.loads(body_of(response))["error"]["code"] == "model_not_found"


def check_health_job(response: dict[str, Any]) -> None:
    assert response == {"scored": 2}


EXPECTED: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "chat.json": ("proxy", check_chat),
    "chat_stream.json": ("proxy", check_chat_stream),
    "embeddings.json": ("proxy", check_embeddings),
    "models.json": ("proxy", check_models),
    "chat_unknown_model.json": ("proxy", check_unknown_model),
    "health_job.json": ("health_job", check_health_job),
}


def test_every_event_has_an_expectation() -> None:
    assert sorted(p.name for p in EVENTS.glob("*.json")) == sorted(EXPECTED)


def test_events_through_their_handlers(
    environment: ThreadPoolExecutor, capsys: pytest.CaptureFixture[str]
) -> None:
    handlers: dict[str, Any] = {}
    try:
        for name, (function, check) in EXPECTED.items():
            if function not in handlers:
                module = environment.submit(load, function, f"lambda_{function}").result()
                handlers[function] = module.handler
            event = json.loads((EVENTS / name).read_text())
            response = environment.submit(handlers[function], event, Context()).result()
            check(response)
    finally:
        for handler in handlers.values():
            environment.submit(handler.close).result()
    # Each invocation flushed its metrics as CloudWatch EMF documents on stdout.
    metrics = set()
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            for directive in json.loads(line)["_aws"]["CloudWatchMetrics"]:
                metrics.update(m["Name"] for m in directive["Metrics"])
    assert {"Invocations", "Requests", "Attempts.success"} <= metrics
