"""End-user limits as the stock SDKs name an end user: the openai SDK's ``user=`` and the
anthropic SDK's ``metadata={"user_id": ...}`` are one end user of the key's team.

The team grants each end user 2 requests a minute. An end user named through either SDK
is counted on the same counters (scoped to the team), its third request is refused with
the SDK's own rate-limit error naming no one but "this end user", and another end user
of the same key is not held by it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.keys.helpers import ADMIN_KEY, ENV, HELLO, bearer, create_key


@pytest.fixture
def member(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> tuple[str, str]:
    """A gateway and a key in a team whose end users get 2 requests a minute."""
    gw = start_gateway(config(deployment("a", upstream_a)), env=ENV)
    for path, body in (
        ("/admin/organizations", {"id": "acme", "name": "Acme"}),
        (
            "/admin/teams",
            {
                "id": "apps",
                "name": "Apps",
                "organization_id": "acme",
                "end_user_limits": {"rpm_limit": 2},
            },
        ),
    ):
        answer = httpx.post(gw.base_url + path, json=body, headers=bearer(ADMIN_KEY), timeout=10)
        assert answer.status_code == 201, answer.text
    key = create_key(gw.base_url, name="app", team_id="apps")
    return gw.base_url, key["key"]


def test_the_openai_and_anthropic_sdks_name_one_end_user_held_to_its_limit(
    member: tuple[str, str], upstream_a: MockUpstream
) -> None:
    base_url, key = member
    chat = openai.OpenAI(base_url=base_url + "/v1", api_key=key, max_retries=0)
    messages = anthropic.Anthropic(base_url=base_url, api_key=key, max_retries=0)

    for _ in range(2):
        answer = chat.chat.completions.create(
            model="fast-chat", messages=HELLO, max_tokens=20, user="dana"
        )
        assert answer.choices[0].message.content
    calls = len(upstream_a.requests())
    with pytest.raises(anthropic.RateLimitError) as held:
        messages.messages.create(
            model="fast-chat", messages=HELLO, max_tokens=20, metadata={"user_id": "dana"}
        )
    assert "this end user (level end_user, requests per minute)" in str(held.value)
    assert "dana" not in str(held.value)
    assert len(upstream_a.requests()) == calls  # refused before any upstream call

    # Another end user of the same key, through the anthropic SDK: its own two requests.
    for _ in range(2):
        reply = messages.messages.create(
            model="fast-chat", messages=HELLO, max_tokens=20, metadata={"user_id": "eli"}
        )
        assert reply.content
    with pytest.raises(openai.RateLimitError) as again:
        chat.chat.completions.create(model="fast-chat", messages=HELLO, max_tokens=20, user="eli")
    assert again.value.status_code == 429
    assert "this end user" in again.value.message
