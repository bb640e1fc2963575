"""Model aliases: resolved to the canonical model, validated, and their deprecation headers."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.config.aliases import Deprecation
from edgeproxy.config.loader import parse_config
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import ConfigError


def dep(dep_id: str, model: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": dep_id,
        "model": model,
        "provider": "openai",
        "base_url": "https://x.test/v1",
        "upstream_model": "m",
        **fields,
    }


DEPLOYMENTS = [dep("a", "chat"), dep("b", "chat", group="beta"), dep("c", "embed")]


def config(aliases: dict[str, Any]) -> GatewayConfig:
    return parse_config({"deployments": DEPLOYMENTS, "aliases": aliases}, "config.yaml")


def test_an_alias_stands_for_its_model_and_keeps_the_route_group() -> None:
    cfg = config({"old-chat": {"model": "chat"}, "legacy": {"model": "chat"}})
    assert cfg.canonical("old-chat") == "chat"
    assert cfg.canonical("old-chat:beta") == "chat:beta"
    assert cfg.canonical("chat") == "chat"
    assert cfg.canonical("unknown") == "unknown"
    assert cfg.names_of("chat") == ["chat", "legacy", "old-chat"]
    assert cfg.names_of("chat:beta") == ["chat:beta", "legacy:beta", "old-chat:beta"]
    assert cfg.names_of("embed") == ["embed"]


@pytest.mark.parametrize(
    ("aliases", "message"),
    [
        ({"embed": {"model": "chat"}}, "aliases.embed: shadows the public model 'embed'"),
        ({"old": {"model": "gone"}}, "aliases.old: names unknown model 'gone'"),
        (
            {"a1": {"model": "chat"}, "a2": {"model": "a1"}},
            "aliases.a2: names the alias 'a1'; an alias must name a model",
        ),
        ({"bad:name": {"model": "chat"}}, "aliases"),
        ({"old": {"model": "chat", "deprecated": True}}, "aliases.old.deprecated"),
        (
            {"old": {"model": "chat", "deprecation": {"since": "2026-11-01T00:00:00"}}},
            "timezone",
        ),
        (
            {
                "old": {
                    "model": "chat",
                    "deprecation": {
                        "since": "2027-01-01T00:00:00Z",
                        "sunset": "2026-01-01T00:00:00Z",
                    },
                }
            },
            "sunset may not be earlier than since",
        ),
    ],
)
def test_a_bad_alias_is_refused_at_load(aliases: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(aliases)


def test_the_deprecation_notice_as_rfc_9745_and_8594_headers() -> None:
    notice = Deprecation.model_validate(
        {
            "since": "2026-11-01T00:00:00Z",
            "sunset": "2027-03-01T01:00:00+01:00",
            "link": "https://example.com/models",
        }
    )
    assert notice.headers() == {
        "deprecation": "@1793491200",
        "sunset": "Mon, 01 Mar 2027 00:00:00 GMT",
        "link": '<https://example.com/models>; rel="deprecation"',
    }
    only = Deprecation.model_validate({"since": "2026-11-01T00:00:00Z"})
    assert only.headers() == {"deprecation": "@1793491200"}


def test_aliases_round_trip_through_the_stored_document() -> None:
    from edgeproxy.config.loader import from_document, to_document

    cfg = config({"old": {"model": "chat", "deprecation": {"since": "2026-11-01T00:00:00Z"}}})
    again = from_document(to_document(cfg))
    assert again.aliases == cfg.aliases
    assert again.aliases["old"].deprecation is not None
