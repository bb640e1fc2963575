"""Secret values never leave through the admin plane: reads, write answers and audit diffs.

A deployment's ``headers`` and ``query`` values count as secrets (an
``x-org-token``, a ``key=`` parameter), and so does a legacy key's
``sha256`` (a digest of a client key). Admin answers show them as
``REDACTED``; the audit log records that they changed, never what from or
to. Credential references (``ssm:/edgeproxy/openai``) are names, not
values, and are shown. A write may send ``REDACTED`` back for a value it
read: the stored value is kept (``service.redirect`` refuses that when the
write also moves ``base_url``).
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[redacted]"
SECRET_MAPS = frozenset({"headers", "query"})
SECRET_LEAVES = frozenset({"sha256"})
# A diff path that ends inside a secret map or at a secret leaf (``deployments[a].headers.x``).
_INSIDE = re.compile(r"(?:^|\.)(?:headers|query)\.[^.]+$|(?:^|[.\]])sha256$")


def scrub(value: Any) -> Any:
    """``value`` (any JSON) with every secret value replaced by ``REDACTED``."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for name, item in value.items():
            if name in SECRET_MAPS and isinstance(item, dict):
                out[name] = dict.fromkeys(item, REDACTED)
            elif name in SECRET_LEAVES and item is not None:
                out[name] = REDACTED
            else:
                out[name] = scrub(item)
        return out
    if isinstance(value, list):
        return [scrub(item) for item in value]
    return value


def _secret_map_path(path: str) -> bool:
    return path.rsplit(".", 1)[-1] in SECRET_MAPS


def redact_changes(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Audit diff entries with secret values replaced (a change still shows as one)."""
    out: list[dict[str, Any]] = []
    for change in changes:
        path = str(change.get("path", ""))
        entry = dict(change)
        for side in ("old", "new"):
            if side not in entry:
                continue
            if _INSIDE.search(path):
                entry[side] = REDACTED
            elif _secret_map_path(path) and isinstance(entry[side], dict):
                entry[side] = dict.fromkeys(entry[side], REDACTED)
            else:
                entry[side] = scrub(entry[side])
        out.append(entry)
    return out


def redact_caller(caller: str) -> str:
    """A caller id fit for the audit log: a key's digest (``key:<sha256>``) is not kept."""
    return f"key:{REDACTED}" if caller.startswith("key:") else caller
