"""``config export`` / ``diff`` / ``load``: the stored configuration as a file and back.

An export is YAML with its secrets redacted (``config_secrets``) and the
version it was read at in its first lines (``# edgeproxy-base-version: 7``,
a comment, so the file still checks and loads like any other). A load is
refused while the stored configuration holds admin changes the file has
not seen: changes after the file's base version, or, for a file without
one, after the last ``config load``. ``force`` overwrites them; ``dry_run``
writes nothing. Either way the answer lists what the load changes (the
compact diff, secrets hidden) and the admin changes it would overwrite.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from edgeproxy.config.loader import from_document, parse_config, to_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import ConfigError, VersionConflict
from edgeproxy.routing.hierarchy import Level
from edgeproxy.service.admin import audit, cache_owners, config_teams
from edgeproxy.service.admin.config_edit import as_document
from edgeproxy.service.admin.config_secrets import Document, changes, redact, restore
from edgeproxy.service.admin.config_teams import RoundTripStore
from edgeproxy.service.admin.owner_guard import owner_checked
from edgeproxy.state.audit import AuditEntry
from edgeproxy.state.store import AdminStore

BASE_MARK = "edgeproxy-base-version:"
_BASE = re.compile(r"^#\s*" + re.escape(BASE_MARK) + r"\s*(\d+)\s*$", re.M)
# Audit actions that are not edits of the configuration document.
_NOT_CONFIG = ("circuit.", "binding.", "key.", "response.")
_AUDIT_PAGES, _AUDIT_PAGE = 20, 100


def export_document(config: GatewayConfig) -> Document:
    """The configuration as a file states it: fields left at their defaults omitted, secrets
    redacted. The whole document when the short form would not read back the same."""
    short = config.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    for dep in short.get("deployments", []):
        for name in ("modalities", "operations"):
            if name in dep:
                dep[name] = sorted(dep[name])
    try:
        same = parse_config(short, "export") == config
    except ConfigError:
        same = False
    return redact(short if same else as_document(config))


def export_text(document: Document, version: int, source: str) -> str:
    """The YAML file of an export (``export_document``'s), its base version in its header."""
    header = (
        f"# edgeproxy configuration exported from {source}\n"
        f"# {BASE_MARK} {version}\n"
        "# Secrets are redacted as [redacted]: loading this file keeps the stored values.\n"
    )
    import yaml  # the admin export only: a cold start does not pay for it

    return header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def base_version(text: str) -> int | None:
    """The base version a file was exported at, if it says."""
    found = _BASE.search(text)
    return int(found.group(1)) if found else None


@dataclass(frozen=True, slots=True)
class LoadResult:
    """``version``: stored now (new if ``stored``); ``changes``: what the load changes (or
    would); ``overwritten``: the admin changes since the base that it replaces (or would)."""

    version: int
    stored: bool
    changes: list[dict[str, Any]]
    overwritten: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "stored": self.stored,
            "changes": self.changes,
            "overwritten": self.overwritten,
        }


async def admin_changes_since(
    store: AdminStore, base: int | None, current: int
) -> list[AuditEntry]:
    """Configuration edits newer than ``base`` (None: newer than the last ``config.load``),
    newest first."""
    found: list[AuditEntry] = []
    cursor: str | None = None
    for _ in range(_AUDIT_PAGES):
        entries, cursor = await store.read_audit(_AUDIT_PAGE, cursor)
        for entry in entries:
            if entry.version is None or entry.action.startswith(_NOT_CONFIG):
                continue
            if (base is not None and entry.version <= base) or (
                base is None and entry.action == "config.load"
            ):
                return found
            if entry.version <= current:
                found.append(entry)
        if cursor is None:
            break
    return found


def _view(entry: AuditEntry) -> dict[str, Any]:
    return {
        "version": entry.version,
        "actor": entry.actor,
        "action": entry.action,
        "target": entry.target,
        "at": entry.at,
    }


def _refusal(base: int | None, current: int, since: list[AuditEntry]) -> VersionConflict:
    basis = f"version {base}" if base is not None else "the last `config load`"
    listed = "; ".join(
        f"v{e.version} {e.action} {e.target} by {e.actor}" for e in reversed(since[:5])
    )
    more = f" (+{len(since) - 5} more)" if len(since) > 5 else ""
    return VersionConflict(
        f"The stored configuration (version {current}) has {len(since)} admin change(s) since "
        f"{basis} that this file would overwrite: {listed}{more}. Export it again "
        "(edgeproxy config export), or load with --force to overwrite them.",
        param="base_version",
    )


async def load(
    store: RoundTripStore,
    clock: Callable[[], float],
    document: Document,
    *,
    base: int | None,
    force: bool,
    dry_run: bool,
    actor: str,
    source: str,
    owner: bool = False,
) -> LoadResult:
    """Store ``document`` (a file's, ``[redacted]`` values kept from the stored one).

    ``owner``: the loader is the gateway's owner, who alone may change the owner's
    sections (``owner_guard``: a 403 otherwise, ``force`` or not, dry run or not).
    """
    document, declared = config_teams.split(document)
    stored = await store.load_config()
    current = stored.version if stored is not None else 0
    old = from_document(stored.document) if stored is not None else None
    before = as_document(old) if old is not None else None
    config = parse_config(restore(document, before or {}, source), source)
    config = await owner_checked(
        store, clock, old, config, owner=owner, actor=actor, store_keys=not dry_run
    )
    declared_teams = declared.get(Level.TEAM)
    await cache_owners.check_added(
        store,
        old.cache if old is not None else None,
        config.cache,
        None if declared_teams is None else _ids_of(declared_teams),
    )
    after = as_document(config)
    diff = changes(before, after) if before is not None else [{"path": "", "new": "(all)"}]
    if base is not None and base > current:
        raise VersionConflict(
            f"{source} says it is based on version {base}, but the stored configuration is at "
            f"version {current}: it was exported from another table.",
            param="base_version",
        )
    since = await admin_changes_since(store, base, current) if current else []
    overwritten = [_view(e) for e in since] if diff else []
    steps = await config_teams.plan(store, declared, config) if declared else []
    listed = diff + config_teams.changes(steps)
    if dry_run or not listed:
        return LoadResult(current, False, listed, overwritten)
    if since and diff and not force:
        raise _refusal(base, current, since)
    await config_teams.apply(store, steps, actor, clock)
    if not diff:
        return LoadResult(current, True, listed, overwritten)
    record = audit.entry(actor, "config.load", source, diff, clock())
    version = await store.save_config(to_document(config), current, record)
    if version is None:
        raise VersionConflict("The configuration changed while it was being loaded; retry.")
    return LoadResult(version, True, listed, overwritten)


def _ids_of(entries: object) -> list[str]:
    """The ``id`` of each entry of a declared ``teams:`` section (``plan`` checks the rest)."""
    if not isinstance(entries, list):
        return []
    return [str(e["id"]) for e in entries if isinstance(e, dict) and "id" in e]
