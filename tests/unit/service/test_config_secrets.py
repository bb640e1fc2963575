"""Secrets of a configuration document: redacted for export and diffs, kept on load."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.errors import ConfigError
from edgeproxy.service.admin.config_roundtrip import base_version, export_text
from edgeproxy.service.admin.config_secrets import REDACTED, changes, redact, restore


def doc(**dep: Any) -> dict[str, Any]:
    base = {"id": "a", "model": "m", "credential": "env:KEY", "headers": {"x-k": "s3cret"}}
    return {
        "deployments": [{**base, **dep}],
        "quota_sources": [{"name": "q", "credential": "sk-literal-quota"}],
    }


def test_header_values_and_literal_credentials_are_redacted_references_kept() -> None:
    out = redact(doc(credential="sk-literal-key"))
    assert out["deployments"][0]["headers"] == {"x-k": REDACTED}
    assert out["deployments"][0]["credential"] == REDACTED
    assert out["quota_sources"][0]["credential"] == REDACTED
    kept = redact(doc())
    assert kept["deployments"][0]["credential"] == "env:KEY"  # a reference is no secret
    for reference in ("ssm:/edgeproxy/a", "secretsmanager:edgeproxy/a"):
        assert redact(doc(credential=reference))["deployments"][0]["credential"] == reference


def test_query_values_are_redacted_like_headers_and_restored() -> None:
    stored = doc(query={"sig": "qs-s3cret"})
    out = redact(stored)
    assert out["deployments"][0]["query"] == {"sig": REDACTED}
    assert restore(out, stored, "f.yaml") == stored
    changed = changes(stored, doc(query={"sig": "qs-n3w"}))
    assert "qs-s3cret" not in str(changed)
    assert "qs-n3w" not in str(changed)


def test_restore_takes_the_stored_value_by_deployment_id() -> None:
    stored = doc(credential="sk-literal-key")
    back = restore(redact(stored), stored, "f.yaml")
    assert back == stored
    with pytest.raises(ConfigError, match=r"deployments\[0\]\.headers\.x-k: says \[redacted\]"):
        restore(redact(doc(id="b")), stored, "f.yaml")


def test_changes_never_carry_a_secret() -> None:
    old, new = doc(), doc(headers={"x-k": "n3w-secret"}, weight=2)
    found = changes(old, new)
    assert {"path": "deployments[a].weight", "new": 2} in found
    assert {
        "path": "deployments[a].headers.x-k",
        "old": REDACTED,
        "new": REDACTED + " (changed)",
    } in found
    added = changes({"deployments": []}, new)
    assert "s3cret" not in str(added)
    assert "n3w-secret" not in str(added)
    assert "sk-literal-quota" not in str(changes({}, new))


def test_an_export_says_its_base_version() -> None:
    text = export_text({"deployments": []}, 7, "a table")
    assert base_version(text) == 7
    assert base_version("deployments: []\n") is None
