"""The response cache's rules: the rule a request is under, its key, its controls, its config."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.config.cache import CacheRule, CacheScope, CacheSettings
from edgeproxy.config.loader import parse_config
from edgeproxy.errors import ConfigError, RequestError
from edgeproxy.routing.cache import Controls, cache_digest, controls, rule_for, scope_id

BODY = {"model": "chat", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.5}


def test_the_digest_ignores_key_order_caller_fields_and_integral_float_spelling() -> None:
    base = cache_digest("key:k1", "openai.chat", "chat", BODY)
    reordered = dict(reversed(list(BODY.items())))
    assert cache_digest("key:k1", "openai.chat", "chat", reordered) == base
    assert cache_digest("key:k1", "openai.chat", "chat", {**BODY, "user": "u-7"}) == base
    assert cache_digest("key:k1", "openai.chat", "chat", {**BODY, "model": "alias"}) == base
    whole = {**BODY, "max_tokens": 100}
    assert cache_digest("s", "openai.chat", "chat", whole) == cache_digest(
        "s", "openai.chat", "chat", {**BODY, "max_tokens": 100.0}
    )


@pytest.mark.parametrize(
    ("scope", "surface", "model", "body"),
    [
        ("key:k2", "openai.chat", "chat", BODY),  # another scope
        ("key:k1", "anthropic.messages", "chat", BODY),  # another surface
        ("key:k1", "openai.chat", "chat-2", BODY),  # another public model
        ("key:k1", "openai.chat", "chat", {**BODY, "temperature": 0.7}),
        ("key:k1", "openai.chat", "chat", {**BODY, "stream": True}),
        (
            "key:k1",
            "openai.chat",
            "chat",
            {**BODY, "stream": True, "stream_options": {"include_usage": True}},
        ),
    ],
)
def test_any_semantic_difference_is_another_key(
    scope: str, surface: str, model: str, body: dict[str, Any]
) -> None:
    assert cache_digest(scope, surface, model, body) != cache_digest(
        "key:k1", "openai.chat", "chat", BODY
    )


def test_the_most_specific_rule_wins_and_a_disabled_one_turns_the_cache_off() -> None:
    pool = CacheRule(scope=CacheScope.GATEWAY)
    team = CacheRule(scope=CacheScope.TEAM, ttl_seconds=60)
    off = CacheRule(enabled=False)
    settings = CacheSettings(
        pools={"chat": pool}, teams={"search": team}, keys={"0123456789abcdef": off}
    )
    assert rule_for(settings, "chat", None, "ffffffffffffffff") == pool
    assert rule_for(settings, "chat", "search", "ffffffffffffffff") == team
    assert rule_for(settings, "embed", "search", None) == team
    assert rule_for(settings, "chat", "search", "0123456789abcdef") is None
    assert rule_for(settings, "embed", None, None) is None
    assert rule_for(CacheSettings(), "chat", "search", "0123456789abcdef") is None
    assert not CacheSettings().any
    assert CacheSettings(pools={"chat": pool}).any


def test_scopes_partition_answers() -> None:
    assert scope_id(CacheScope.KEY, "k1", "search") == "key:k1"
    assert scope_id(CacheScope.TEAM, "k1", "search") == "team:search"
    assert scope_id(CacheScope.TEAM, "k1", None) == "key:k1"  # a key without a team: its own
    assert scope_id(CacheScope.GATEWAY, "k1", "search") == "gateway"


@pytest.mark.parametrize(
    ("cache_control", "ttl", "expected"),
    [
        (None, None, Controls()),
        ("no-cache", None, Controls(lookup=False)),
        ("No-Store", None, Controls(lookup=False, store=False)),
        ("max-age=0, no-cache", "120", Controls(lookup=False, ttl_s=120)),
        ("private", " 604800 ", Controls(ttl_s=604800)),
    ],
)
def test_controls(cache_control: str | None, ttl: str | None, expected: Controls) -> None:
    assert controls(cache_control, ttl) == expected


@pytest.mark.parametrize("ttl", ["0", "604801", "-1", "1.5", "", "ten"])
def test_a_ttl_out_of_range_is_a_400_naming_the_header(ttl: str) -> None:
    with pytest.raises(RequestError) as caught:
        controls(None, ttl)
    assert caught.value.param == "x-edgeproxy-cache-ttl"
    assert caught.value.status == 400


def _config(cache: dict[str, Any]) -> Any:
    deployment = {
        "id": "a",
        "model": "chat",
        "provider": "openai",
        "base_url": "https://x.test/v1",
        "upstream_model": "m",
    }
    return parse_config(
        {"deployments": [deployment], "aliases": {"old": {"model": "chat"}}, "cache": cache},
        "config.yaml",
    )


def test_cache_config_names_served_pools_and_bounds_its_numbers() -> None:
    assert _config({"pools": {"old": {"scope": "team"}}}).cache.pools["old"].scope == "team"
    with pytest.raises(ConfigError, match=r"no deployment serves.*ghost"):
        _config({"pools": {"ghost": {}}})
    for bad in ({"ttl_seconds": 0}, {"max_answer_bytes": 2_000_000}, {"scope": "org"}):
        with pytest.raises(ConfigError):
            _config({"pools": {"chat": bad}})
    with pytest.raises(ConfigError):
        _config({"keys": {"not-a-key-id": {}}})
