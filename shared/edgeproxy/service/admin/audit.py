"""Audit entries for admin changes, and the compact diff they record.

The diff walks two configuration documents (plain JSON values) and lists
the leaves that differ, with dotted paths; list entries that carry an
``id`` (deployments) or a ``model`` and ``reason`` (fallback chains) are
matched by it, so removing one deployment is one change, not a shifted list.
"""

from __future__ import annotations

import uuid
from typing import Any

from edgeproxy.state.audit import AuditEntry

MAX_CHANGES = 50  # beyond this an entry says how many more changed (an item is at most 400 KB)
_ABSENT = object()


def _keyed(values: list[Any]) -> dict[str, Any] | None:
    """``values`` by identity, if every entry has one (else None: compare the list whole)."""
    out: dict[str, Any] = {}
    for value in values:
        if not isinstance(value, dict):
            return None
        if "id" in value:
            name = str(value["id"])
        elif "model" in value and "reason" in value:
            name = f"{value['model']}/{value['reason']}"
        else:
            return None
        if name in out:
            return None
        out[name] = value
    return out


def _walk(old: Any, new: Any, path: str, out: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for name in sorted(set(old) | set(new), key=str):
            _walk(old.get(name, _ABSENT), new.get(name, _ABSENT), f"{path}.{name}", out)
        return
    if isinstance(old, list) and isinstance(new, list) and old != new:
        before, after = _keyed(old), _keyed(new)
        if before is not None and after is not None:
            for name in sorted(set(before) | set(after)):
                _walk(before.get(name, _ABSENT), after.get(name, _ABSENT), f"{path}[{name}]", out)
            return
    if old != new:
        change: dict[str, Any] = {"path": path.lstrip(".")}
        if old is not _ABSENT:
            change["old"] = old
        if new is not _ABSENT:
            change["new"] = new
        out.append(change)


def diff(old: Any, new: Any) -> list[dict[str, Any]]:
    """The leaves that differ between two JSON documents (at most ``MAX_CHANGES``).

    >>> diff({"router": {"strategy": "a"}}, {"router": {"strategy": "b"}})
    [{'path': 'router.strategy', 'old': 'a', 'new': 'b'}]
    """
    out: list[dict[str, Any]] = []
    _walk(old, new, "", out)
    if len(out) > MAX_CHANGES:
        return [*out[:MAX_CHANGES], {"truncated": len(out) - MAX_CHANGES}]
    return out


def entry(
    actor: str, action: str, target: str, changes: list[dict[str, Any]], now: float
) -> AuditEntry:
    """A new audit entry at ``now`` with a fresh id."""
    return AuditEntry(
        id=uuid.uuid4().hex[:16], at=now, actor=actor, action=action, target=target, changes=changes
    )
