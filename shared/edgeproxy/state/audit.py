"""Audit entries: who changed what through the admin plane, and when.

One item per change (layout in ``state/keys.py``), written in the same
transaction as the change itself where the change is one conditional write
(the configuration document, a circuit), so a change is never stored
without its entry. ``actor`` names the admin key (its name, or ``key:`` and
the first 12 hex digits of its SHA-256), never the key itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from edgeproxy.state.items import Item, get_float, get_int, get_text, number, text


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One recorded change.

    ``action``: what was done (``router-settings.update``, ``deployment.create``,
    ``circuit.force-open``...). ``target``: the resource (an id, a pool).
    ``changes``: the compact diff, ``[{"path", "old", "new"}]`` for document
    edits, or the operation's parameters. ``version``: the configuration
    version (or circuit version) the change produced, when it has one.
    """

    id: str
    at: float
    actor: str
    action: str
    target: str
    changes: list[dict[str, Any]] = field(default_factory=list)
    version: int | None = None

    def as_json(self) -> dict[str, Any]:
        """The entry as the admin API shows it."""
        return {
            "id": self.id,
            "at": self.at,
            "actor": self.actor,
            "action": self.action,
            "target": self.target,
            "version": self.version,
            "changes": self.changes,
        }


def audit_item(entry: AuditEntry) -> Item:
    """The attributes of an audit item (keys added by the store)."""
    item: Item = {
        "id": text(entry.id),
        "at": number(entry.at),
        "actor": text(entry.actor),
        "action": text(entry.action),
        "target": text(entry.target),
        "changes": text(json.dumps(entry.changes, separators=(",", ":"), default=str)),
    }
    if entry.version is not None:
        item["version"] = number(entry.version)
    return item


def audit_from(item: Item) -> AuditEntry:
    """An audit entry from a stored item."""
    version = get_int(item, "version", -1)
    return AuditEntry(
        id=get_text(item, "id") or "",
        at=get_float(item, "at"),
        actor=get_text(item, "actor") or "",
        action=get_text(item, "action") or "",
        target=get_text(item, "target") or "",
        changes=json.loads(get_text(item, "changes") or "[]"),
        version=None if version < 0 else version,
    )
