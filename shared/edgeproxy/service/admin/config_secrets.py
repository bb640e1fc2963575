"""The secrets of a configuration document: redacted on the way out, kept on the way back.

Header and query values (``deployments[].headers``, ``deployments[].query``:
either may carry a tenant key) count as secrets, and so does a
``credential`` that is not a reference (``env:``, ``ssm:``,
``secretsmanager:``): ``redact`` replaces each with ``REDACTED``. A file
exported that way loads back as it is: ``restore`` puts the stored value back
wherever the file still says ``REDACTED`` (matched by deployment id, header
or parameter name, or quota source name), so an export, an edit and a load never turn a
header into the word ``[redacted]``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from edgeproxy.errors import ConfigError
from edgeproxy.service.admin import audit

# One marker on every way out of the admin plane (admin reads and exports alike).
from edgeproxy.service.admin.redaction import REDACTED as REDACTED

REFERENCE_SCHEMES = ("env:", "ssm:", "secretsmanager:")
Document = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Slot:
    """One secret-bearing field: ``where`` by index (errors), ``path`` by id (as audit.diff)."""

    where: str
    path: str
    holder: dict[str, Any]
    key: str


def _literal(credential: Any) -> bool:
    return isinstance(credential, str) and not credential.startswith(REFERENCE_SCHEMES)


def _slots(doc: Document) -> Iterator[Slot]:
    for section, name in (("deployments", "id"), ("quota_sources", "name")):
        for index, item in enumerate(doc.get(section) or []):
            if not isinstance(item, dict):
                continue
            path = f"{section}[{item.get(name)}]"
            if "credential" in item:
                yield Slot(
                    f"{section}[{index}].credential", f"{path}.credential", item, "credential"
                )
            if section == "deployments":
                yield from _map_slots(f"{section}[{index}]", path, item)


def _map_slots(where: str, path: str, deployment: dict[str, Any]) -> Iterator[Slot]:
    """A deployment's header and query values: either may carry a tenant's key."""
    for field in ("headers", "query"):
        values = deployment.get(field)
        if isinstance(values, dict):
            for key in values:
                yield Slot(f"{where}.{field}.{key}", f"{path}.{field}.{key}", values, key)


def _secret(slot: Slot) -> bool:
    return slot.key != "credential" or _literal(slot.holder[slot.key])


def redact(doc: Document) -> Document:
    """A copy of ``doc`` with every header and query value and literal credential replaced."""
    out = copy.deepcopy(doc)
    for slot in _slots(out):
        if _secret(slot):
            slot.holder[slot.key] = REDACTED
    return out


def restore(doc: Document, stored: Document, source: str) -> Document:
    """``doc`` with each ``REDACTED`` value taken from ``stored``; ``ConfigError`` if none."""
    out = copy.deepcopy(doc)
    values = {slot.path: slot.holder[slot.key] for slot in _slots(stored)}
    for slot in _slots(out):
        if slot.holder[slot.key] != REDACTED:
            continue
        if slot.path not in values:
            raise ConfigError(
                f"{source}: {slot.where}: says {REDACTED} but the stored configuration has no "
                "value to keep there; write the value (or its reference) in the file"
            )
        slot.holder[slot.key] = values[slot.path]
    return out


def changes(old: Document, new: Document) -> list[dict[str, Any]]:
    """``audit.diff`` of the two documents with no secret in it; a changed secret is listed
    by its path alone (``deployments[a].headers.x-key``: ``[redacted]`` -> ``[redacted]``)."""
    out = audit.diff(redact(old), redact(new))
    before = {slot.path: slot.holder[slot.key] for slot in _slots(old) if _secret(slot)}
    for slot in _slots(new):
        path = slot.path
        if _secret(slot) and path in before and before[path] != slot.holder[slot.key]:
            out.append({"path": path, "old": REDACTED, "new": REDACTED + " (changed)"})
    return out
