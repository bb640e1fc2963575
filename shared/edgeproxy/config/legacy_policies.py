"""Deadline policies saved by older releases (000): replaced by the current defaults.

An older release of the primary spec's router kept first-output, pre-commit or
reasoning-only deadlines; the current matrix waits on the connection only
(``response_ms``, ``idle_ms``, ``total_ms``, ``max_attempts``). A stored
document whose policy entry (one operation, ``json`` or ``stream``) still
names such a deadline would fail validation and keep the gateway from
loading, so the entry is replaced by that operation's default, as 000 says
("policies saved by a release that still used first-output, pre-commit, or
reasoning-only deadlines are replaced by these defaults"). A deployment's
override entry of that shape is dropped: the default it would have tightened
applies. Files and admin writes are not migrated: they are refused, naming
the field.
"""

from __future__ import annotations

from typing import Any

from edgeproxy.config.policies import default_execution_policies

LEGACY_FIELDS = frozenset(
    {
        "first_output_ms",
        "firstOutputMs",
        "pre_commit_ms",
        "preCommitMs",
        "reasoning_ms",
        "reasoningMs",
        "reasoning_only_ms",
        "reasoningOnlyMs",
    }
)


def _legacy(entry: Any) -> bool:
    return isinstance(entry, dict) and not LEGACY_FIELDS.isdisjoint(entry)


def without_legacy_deadlines(data: Any) -> Any:
    """A stored document with every legacy deadline entry migrated (``data`` if none)."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    router = out.get("router")
    if isinstance(router, dict) and isinstance(router.get("execution_policies"), dict):
        out["router"] = {**router, "execution_policies": _matrix(router["execution_policies"])}
    deployments = out.get("deployments")
    if isinstance(deployments, list):
        out["deployments"] = [_deployment(d) for d in deployments]
    return out


def _matrix(matrix: dict[str, Any]) -> dict[str, Any]:
    defaults = {
        op.value: p.model_dump(by_alias=True) for op, p in default_execution_policies().items()
    }
    out: dict[str, Any] = {}
    for operation, modes in matrix.items():
        if isinstance(modes, dict) and operation in defaults:
            modes = {
                mode: defaults[operation].get(mode, entry) if _legacy(entry) else entry
                for mode, entry in modes.items()
            }
        out[operation] = modes
    return out


def _deployment(dep: Any) -> Any:
    overrides = dep.get("execution_policy_overrides") if isinstance(dep, dict) else None
    if not isinstance(overrides, dict):
        return dep
    kept = {
        operation: {m: e for m, e in modes.items() if not _legacy(e)}
        if isinstance(modes, dict)
        else modes
        for operation, modes in overrides.items()
    }
    return {**dep, "execution_policy_overrides": kept}
