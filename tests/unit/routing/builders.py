"""Small builders for routing tests: deployments and snapshots with just the fields a test needs."""

from __future__ import annotations

from typing import Any

from edgeproxy.config.deployment import Deployment, ProviderKind


def dep(id: str, **fields: Any) -> Deployment:
    """A deployment of pool ``gpt`` with defaults for everything ``fields`` leaves out."""
    values: dict[str, Any] = {
        "id": id,
        "model": "gpt",
        "provider": ProviderKind.OPENAI,
        "base_url": "https://api.example.test/v1",
        "upstream_model": "gpt-4o",
    }
    values.update(fields)
    return Deployment(**values)
