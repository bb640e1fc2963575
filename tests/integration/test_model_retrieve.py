"""``GET /v1/models/{model}`` through the stock openai SDK: found, unknown, not this key's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key

SLASHED = "meta/llama-3"


@pytest.fixture
def gateway(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> Any:
    return start_gateway(
        config(
            deployment("a", upstream_a),
            deployment("other", upstream_a, model="other-chat"),
            deployment("llama", upstream_a, model=SLASHED),
        ),
        env=ENV,
    )


def sdk(gateway: Any, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)


def test_retrieve_a_public_model(gateway: Any) -> None:
    key = create_key(gateway.base_url)["key"]
    model = sdk(gateway, key).models.retrieve("fast-chat")
    assert (model.id, model.object, model.owned_by) == ("fast-chat", "model", "edgeproxy")


def test_an_unknown_model_is_not_found(gateway: Any) -> None:
    key = create_key(gateway.base_url)["key"]
    with pytest.raises(openai.NotFoundError) as caught:
        sdk(gateway, key).models.retrieve("no-such-model")
    assert caught.value.code == "model_not_found"


def test_a_model_the_key_may_not_use_is_not_found(gateway: Any) -> None:
    key = create_key(gateway.base_url, models=["fast-chat"])["key"]
    client = sdk(gateway, key)
    assert client.models.retrieve("fast-chat").id == "fast-chat"
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("other-chat")
    assert caught.value.code == "model_not_found"  # as if it did not exist
    assert "other-chat" not in [m.id for m in client.models.list()]


def test_a_name_with_a_slash_escaped_or_not(gateway: Any) -> None:
    key = create_key(gateway.base_url)["key"]
    # This SDK escapes the slash (%2F); older ones send it as is: both name the model.
    assert sdk(gateway, key).models.retrieve(SLASHED).id == SLASHED
    raw = httpx.get(f"{gateway.base_url}/v1/models/{SLASHED}", headers=bearer(key))
    assert raw.status_code == 200
    assert raw.json()["id"] == SLASHED


def test_the_deployments_view_keeps_its_path(gateway: Any) -> None:
    view = httpx.get(
        f"{gateway.base_url}/v1/models/{SLASHED}/deployments", headers=bearer(ADMIN_KEY)
    )
    assert view.status_code == 200
    assert [d["id"] for d in view.json()["deployments"]] == ["llama"]
    key = create_key(gateway.base_url)["key"]
    refused = httpx.get(f"{gateway.base_url}/v1/models/fast-chat/deployments", headers=bearer(key))
    assert refused.status_code == 403


def test_a_missing_key_is_refused(gateway: Any) -> None:
    answer = httpx.get(gateway.base_url + "/v1/models/fast-chat")
    assert answer.status_code == 401
