"""Anthropic ``cache_control`` marks through the gateway, sent with the stock anthropic SDK: an
Anthropic deployment gets them as marks, a Bedrock one as Converse ``cachePoint`` blocks, an
OpenAI-compatible one gets none, and the request log notes that they were dropped."""

from __future__ import annotations

import time
from typing import Any

import anthropic

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import LOOPBACK, MOCK_KEY, config
from tests.integration.usage.helpers import ENV, new_key, records

MARK: Any = {"type": "ephemeral"}
BEDROCK_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


def _deployments(ant: MockUpstream, br: MockUpstream, oa: MockUpstream) -> list[dict[str, Any]]:
    return [
        {
            "id": "ant",
            "model": "claude-direct",
            "provider": "anthropic",
            "base_url": ant.base_url,
            "upstream_model": "claude-sonnet-4",
            "credential": "env:EDGEPROXY_CRED_MOCK_KEY",
        },
        {
            "id": "br",
            "model": "claude-bedrock",
            "provider": "bedrock",
            "region": "us-east-1",
            "base_url": br.url,
            "upstream_model": BEDROCK_MODEL,
        },
        {
            "id": "oa",
            "model": "claude-compat",
            "provider": "openai_compat",
            "base_url": oa.base_url,
            "upstream_model": "mock-small",
            "credential": "env:EDGEPROXY_CRED_MOCK_KEY",
        },
    ]


def _ask(client: anthropic.Anthropic, model: str) -> str:
    answer = client.messages.create(
        model=model,
        max_tokens=30,
        system=[
            {"type": "text", "text": "Be brief."},
            {"type": "text", "text": "A long shared document.", "cache_control": MARK},
        ],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "Hello!", "cache_control": MARK}]}
        ],
    )
    return "".join(b.text for b in answer.content if b.type == "text")


def test_marks_reach_anthropic_and_bedrock_and_are_dropped_with_a_note_elsewhere(
    start_gateway: Any, make_upstream: Any
) -> None:
    ant, br, oa = (make_upstream(name, api_key=MOCK_KEY) for name in ("ant", "br", "oa"))
    egress = {"allow": LOOPBACK, "bedrock_endpoints": [br.url]}
    gw = start_gateway(config(*_deployments(ant, br, oa), gateway={"egress": egress}), env=ENV)
    key = new_key(gw.base_url, name="marks")
    started = time.time()
    with anthropic.Anthropic(base_url=gw.base_url, api_key=key["key"], max_retries=0) as client:
        for model in ("claude-direct", "claude-bedrock", "claude-compat"):
            assert _ask(client, model)

    [sent] = ant.requests()
    assert sent["body"]["system"] == [
        {"type": "text", "text": "Be brief."},
        {"type": "text", "text": "A long shared document.", "cache_control": MARK},
    ]
    assert sent["body"]["messages"][0]["content"] == [
        {"type": "text", "text": "Hello!", "cache_control": MARK}
    ]

    [converse] = br.requests()
    point = {"cachePoint": {"type": "default"}}
    assert converse["body"]["system"] == [
        {"text": "Be brief."},
        {"text": "A long shared document."},
        point,
    ]
    assert converse["body"]["messages"][0]["content"] == [{"text": "Hello!"}, point]

    [chat] = oa.requests()
    assert "cache_control" not in repr(chat["body"])
    assert chat["body"]["messages"][0]["role"] == "system"

    logged = {r["deployment"]: r for r in records(gw.base_url, started, 3)}
    assert logged["oa"]["notes"] == ["oa:cache_control_dropped"]
    assert logged["ant"]["notes"] == []
    assert logged["br"]["notes"] == []
