"""The importer's checks on what it converted, named by the LiteLLM entries they came from.

Each converted deployment is validated on its own with the project's model,
so a bad value fails that entry (an error naming it as the user wrote it),
not the whole file; a pool none of whose deployments can authenticate is
a warning (it would load, show "available" and answer every request with
the upstream's 401); an error the whole document still raises names the
entries behind its ``deployments[i]`` paths.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.litellm_warnings import Warnings
from edgeproxy.config.loader import location

# Provider kinds whose upstream refuses a request without a key.
_KEYED = frozenset({"openai", "anthropic", "azure"})
_INDEX = re.compile(r"deployments\[(\d+)\]")


def valid(deployments: list[dict[str, Any]], w: Warnings) -> list[dict[str, Any]]:
    """The deployments that validate; each other one is an error naming its entry."""
    out = []
    for dep in deployments:
        try:
            Deployment.model_validate({k: v for k, v in dep.items() if not k.startswith("_")})
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_input=False)
            text = "; ".join(f"{location(e['loc'])}: {e['msg']}" for e in errors)
            w.skip(dep["_entry"], f"converts to an invalid deployment ({text})")
            continue
        out.append(dep)
    return out


def cannot_authenticate(deployments: list[dict[str, Any]], w: Warnings) -> None:
    """A warning per pool whose every deployment needs a key and has none."""
    pools: dict[str, list[dict[str, Any]]] = {}
    for dep in deployments:
        pools.setdefault(dep["model"], []).append(dep)
    for pool, members in pools.items():
        if all(d["provider"] in _KEYED and "credential" not in d for d in members):
            w.add(
                f"pool {pool}",
                f"none of its {len(members)} deployments has a credential: it would show "
                "available and answer every request with the upstream's 401",
            )


def name_entries(message: str, origins: Sequence[str]) -> str:
    """``message`` with each ``deployments[i]`` followed by the LiteLLM entry it came from."""

    def named(match: re.Match[str]) -> str:
        index = int(match.group(1))
        origin = origins[index] if index < len(origins) else None
        return f"{match.group(0)} (from {origin})" if origin else match.group(0)

    return _INDEX.sub(named, message)
