"""The admin plane's document edits and audit diffs (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.errors import AlreadyExists, NotFound, RequestError
from edgeproxy.service.admin import config_changes as changes
from edgeproxy.service.admin.audit import MAX_CHANGES, diff
from edgeproxy.service.admin.config_edit import by_id


def _doc() -> dict[str, Any]:
    return {
        "router": {
            "strategy": "simple-shuffle",
            "circuit": {"allowed_fails": 3, "cooldown_seconds": 5},
            "execution_policies": {"chat": {"json": 1}, "images": {"json": 2}},
        },
        "deployments": [{"id": "a", "model": "m", "weight": 1.0}, {"id": "b", "model": "m"}],
        "pools": {},
        "fallbacks": [{"model": "m", "reason": "general", "to": ["n"]}],
    }


def test_router_settings_merge_deeply_except_the_execution_policies() -> None:
    doc = _doc()
    changes.router_settings({"circuit": {"cooldown_seconds": 9}})(doc)
    assert doc["router"]["circuit"] == {"allowed_fails": 3, "cooldown_seconds": 9}
    assert doc["router"]["strategy"] == "simple-shuffle"

    merged = changes.merged(doc["router"], {"execution_policies": {"chat": {"json": 3}}})
    assert merged["execution_policies"] == {"chat": {"json": 3}}  # replaced whole


def test_router_settings_patches_are_validated_by_the_yaml_model() -> None:
    with pytest.raises(RequestError) as bad:
        changes.router_settings({"circuit": {"allowed_fails": "many"}})
    assert bad.value.param == "circuit.allowed_fails"


def test_deployment_edits_name_unknown_and_taken_ids() -> None:
    doc = _doc()
    with pytest.raises(AlreadyExists):
        changes.create_deployment({"id": "a"})(doc)
    with pytest.raises(NotFound):
        changes.delete_deployment("zzz")(doc)
    with pytest.raises(RequestError, match="ids cannot change"):
        changes.replace_deployment("a", {"id": "b"}, partial=True)

    changes.replace_deployment("a", {"weight": 0}, partial=True)(doc)
    assert doc["deployments"][0] == {"id": "a", "model": "m", "weight": 0}
    changes.replace_deployment("b", {"model": "x"}, partial=False)(doc)
    assert doc["deployments"][1] == {"id": "b", "model": "x"}


def test_pools_and_fallbacks_need_a_known_pool_or_chain() -> None:
    doc = _doc()
    with pytest.raises(NotFound):
        changes.put_pool("other", {})(doc)
    with pytest.raises(NotFound):
        changes.delete_pool("m")(doc)
    with pytest.raises(NotFound):
        changes.delete_fallback("context_window", "m")(doc)
    changes.put_fallback("general", "m", ["o"])(doc)
    assert doc["fallbacks"] == [{"model": "m", "reason": "general", "to": ["o"]}]


def test_the_diff_matches_deployments_by_id_and_chains_by_model_and_reason() -> None:
    old = _doc()
    new = _doc()
    del new["deployments"][0]
    new["deployments"][0]["weight"] = 2
    new["fallbacks"][0]["to"] = ["p"]

    assert diff(old, new) == [
        {"path": "deployments[a]", "old": {"id": "a", "model": "m", "weight": 1.0}},
        {"path": "deployments[b].weight", "new": 2},
        {"path": "fallbacks[m/general].to", "old": ["n"], "new": ["p"]},
    ]
    assert diff(old, old) == []


def test_a_huge_diff_is_truncated() -> None:
    old = {f"k{i}": i for i in range(MAX_CHANGES + 5)}
    out = diff(old, {k: v + 1 for k, v in old.items()})
    assert len(out) == MAX_CHANGES + 1
    assert out[-1] == {"truncated": 5}


def test_documents_list_set_fields_in_sorted_order() -> None:
    from edgeproxy.config.loader import parse_config
    from edgeproxy.service.admin.config_edit import as_document

    dep = {
        "id": "a",
        "model": "m",
        "provider": "openai",
        "base_url": "http://x/v1",
        "upstream_model": "u",
        "operations": ["embeddings", "chat", "images"],
        "modalities": ["text", "image"],
    }
    doc = as_document(parse_config({"deployments": [dep]}, "t"))

    assert doc["deployments"][0]["operations"] == ["chat", "embeddings", "images"]
    assert doc["deployments"][0]["modalities"] == ["image", "text"]


def test_messages_name_deployments_by_id_where_the_id_is_a_plain_one() -> None:
    text = "configuration: deployments[1].wieght: extra; deployments[0].base_url: refused"
    assert by_id(text, ["a", "mock-b"]) == (
        "configuration: deployments[id=mock-b].wieght: extra; deployments[id=a].base_url: refused"
    )
    # An id the model refuses (the error may be its own), a missing one, or none: the position.
    assert by_id("deployments[0].id: bad; deployments[2].x", ["a b]", "c"]) == (
        "deployments[0].id: bad; deployments[2].x"
    )
    assert by_id("deployments[0].id", [None]) == "deployments[0].id"
