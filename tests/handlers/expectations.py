"""What each sample event in events/ must answer, whichever way its handler is run."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from typing import Any

from edgeproxy_dev.dynamo_server import DUMMY_CREDENTIALS
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment

# The key every sample event sends (Authorization: Bearer sk-event-client).
EVENT_KEY_SHA256 = hashlib.sha256(b"sk-event-client").hexdigest()
# The bootstrap admin key the admin_* events send (behind EDGEPROXY_ADMIN_KEY_REF).
EVENT_ADMIN_KEY = "ep-admin-events-5f1c9a7e2b4d"


def handler_environment(dynamo_endpoint: str, table: str) -> dict[str, str]:
    """The proxy function's Lambda environment against the embedded store (an env: admin key)."""
    return {
        "EDGEPROXY_DYNAMODB_ENDPOINT": dynamo_endpoint,
        "EDGEPROXY_TABLE": table,
        "EDGEPROXY_CRED_MOCK_KEY": "sk-mock",
        "EDGEPROXY_ADMIN_KEY_REF": "env:EDGEPROXY_EVENTS_ADMIN_KEY",
        "EDGEPROXY_EVENTS_ADMIN_KEY": EVENT_ADMIN_KEY,
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": DUMMY_CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": DUMMY_CREDENTIALS["aws_secret_access_key"],
        "POWERTOOLS_METRICS_NAMESPACE": "edgeproxy-test",
    }


def handler_config(upstream: MockUpstream) -> dict[str, Any]:
    """The configuration every handler test stores: chat, embeddings and one quota source."""
    return config(
        deployment("a", upstream),
        deployment("emb", upstream, model="text-embed", operations=["embeddings"]),
        quota_sources=[
            {
                "name": "mock",
                "fetcher": "json",
                "credential": "env:EDGEPROXY_CRED_MOCK_KEY",
                "params": {"url": upstream.base_url + "/quota", "remaining": "data.remaining"},
            }
        ],
        # The events' key: a deployed gateway refuses every request without one.
        gateway={"api_keys": [{"name": "events", "sha256": EVENT_KEY_SHA256}]},
    )


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


def check_quota_refresh(response: dict[str, Any]) -> None:
    # The handler tests' configuration has one source, on the mock upstream's quota endpoint.
    assert response == {"refreshed": 1, "failed": []}


def check_admin_page(response: dict[str, Any]) -> None:
    # The status page ships in the layer and is served under the stage, without a key.
    assert response["statusCode"] == 200
    headers = {k.lower(): v for k, v in response["headers"].items()}
    assert headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in headers["content-security-policy"]
    assert 'src="assets/app.js"' in body_of(response)


def check_admin_script(response: dict[str, Any]) -> None:
    assert response["statusCode"] == 200
    headers = {k.lower(): v for k, v in response["headers"].items()}
    assert headers["content-type"].startswith("text/javascript")
    assert "edgeproxy.adminKey" in body_of(response)


def check_admin_deployments(response: dict[str, Any]) -> None:
    assert response["statusCode"] == 200
    deployments = json.loads(body_of(response))["deployments"]
    assert sorted(d["id"] for d in deployments) == ["a", "emb"]


def check_admin_key_create(response: dict[str, Any]) -> None:
    # Shown once, in the answer to its creation.
    assert response["statusCode"] == 201
    created = json.loads(body_of(response))
    assert (created["name"], created["role"]) == ("events", "free")
    assert created["key"].startswith("ep-")


def check_admin_keys(response: dict[str, Any]) -> None:
    # After the key creation event: the key it made is listed, by prefix, never in full.
    assert response["statusCode"] == 200
    keys = json.loads(body_of(response))["data"]
    assert [k["name"] for k in keys] == ["events"]
    assert "key" not in keys[0]


def check_admin_unbind(response: dict[str, Any]) -> None:
    # The chat events before it bound the events' key to deployment a.
    assert response["statusCode"] == 200
    answer = json.loads(body_of(response))
    assert answer["pool"] == "fast-chat"
    assert answer["removed"] == [{"protocol": "openai.chat", "deployment": "a"}]


def check_admin_deployment_patch(response: dict[str, Any]) -> None:
    # Based on the stored configuration's first version (If-Match: "1"); the edit and its
    # audit entry are one transaction.
    assert response["statusCode"] == 200
    answer = json.loads(body_of(response))
    assert (answer["id"], answer["weight"], answer["version"]) == ("emb", 2, 2)


EXPECTED: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "chat.json": ("proxy", check_chat),
    "chat_named_stage.json": ("proxy", check_chat),  # /dev/v1/...: the stage is stripped
    "chat_stream.json": ("proxy", check_chat_stream),
    "embeddings.json": ("proxy", check_embeddings),
    "models.json": ("proxy", check_models),
    "models_named_stage.json": ("proxy", check_models),
    "chat_unknown_model.json": ("proxy", check_unknown_model),
    "admin_page_named_stage.json": ("proxy", check_admin_page),  # /prod/admin/
    "admin_script_named_stage.json": ("proxy", check_admin_script),
    # With the bootstrap admin key (EVENT_ADMIN_KEY); after the chats, which bind the key.
    "admin_deployments_named_stage.json": ("proxy", check_admin_deployments),
    "admin_key_create_named_stage.json": ("proxy", check_admin_key_create),
    "admin_keys_named_stage.json": ("proxy", check_admin_keys),
    "admin_unbind_named_stage.json": ("proxy", check_admin_unbind),
    "admin_deployment_patch_named_stage.json": ("proxy", check_admin_deployment_patch),
    "health_job.json": ("health_job", check_health_job),
    "quota_refresh.json": ("quota_refresh", check_quota_refresh),
}
