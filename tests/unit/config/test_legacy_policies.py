"""Deadline policies saved by older releases (000): replaced by the defaults when read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgeproxy.config.loader import from_document, load_config_file, to_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation, default_execution_policies
from edgeproxy.errors import ConfigError

DEPLOYMENT = {
    "id": "a",
    "model": "fast-chat",
    "provider": "openai_compat",
    "base_url": "http://127.0.0.1:9/v1",
    "upstream_model": "m",
}


def stored_by_an_older_release() -> dict[str, object]:
    doc = json.loads(to_document(GatewayConfig.model_validate({"deployments": [DEPLOYMENT]})))
    matrix = doc["router"]["execution_policies"]
    # A first-output deadline on chat streams, a reasoning-only one on chat JSON.
    matrix["chat"]["stream"] = {"first_output_ms": 30_000, "total_ms": 900_000, "max_attempts": 2}
    matrix["chat"]["json"] = {**matrix["chat"]["json"], "reasoningOnlyMs": 60_000}
    matrix["embeddings"]["json"]["max_attempts"] = 1  # an operator's own value: kept
    doc["deployments"][0]["execution_policy_overrides"] = {
        "chat": {"stream": {"pre_commit_ms": 5_000}, "json": {"total_ms": 60_000}}
    }
    return doc


def test_a_stored_legacy_policy_is_replaced_by_the_default() -> None:
    config = from_document(json.dumps(stored_by_an_older_release()))
    defaults = default_execution_policies()
    policies = config.router.execution_policies
    assert policies[Operation.CHAT] == defaults[Operation.CHAT]
    assert policies[Operation.EMBEDDINGS].json_.max_attempts == 1
    [dep] = config.deployments
    override = dep.execution_policy_overrides[Operation.CHAT]
    assert override.stream is None  # the legacy override is dropped: the default applies
    assert override.json_ is not None
    assert override.json_.total_ms == 60_000


def test_a_file_with_a_legacy_deadline_is_still_refused(tmp_path: Path) -> None:
    doc = stored_by_an_older_release()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"router": doc["router"]}))
    with pytest.raises(ConfigError, match="first_output_ms"):
        load_config_file(path)
