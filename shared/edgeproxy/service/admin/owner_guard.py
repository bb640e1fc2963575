"""The owner's sections of a configuration write (``config.roles``): refused or imported.

Every write of the configuration document passes here before it is stored
(an admin edit, ``PUT /admin/config`` with or without ``force``, a load on the
table): a caller that is not the owner and changes ``gateway.egress``,
``gateway.alerts`` (the alert webhook: a destination beside the upstreams, and the
credential its signature is keyed by) or the admin entries of ``gateway.api_keys`` is refused with 403 naming the
section, and the refusal is audited (``config.refused``; nothing else is
written). The owner's admin entries are imported into the table as admin
keys (``key.import``, listed and revocable like any other; a revoked one
stays revoked); every admin entry is dropped from the stored document, so no
admin key lives outside the table.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from edgeproxy.config.loader import parse_config
from edgeproxy.config.models import ApiKey, GatewayConfig
from edgeproxy.config.roles import ADMIN_KEYS, ALERTS, EGRESS, Role
from edgeproxy.errors import PermissionDenied
from edgeproxy.routing.access import key_id_of
from edgeproxy.service.admin import audit
from edgeproxy.service.keys import imported_key
from edgeproxy.state.store import AdminStore

logger = logging.getLogger(__name__)


def admin_entries(config: GatewayConfig) -> list[ApiKey]:
    """The ``gateway.api_keys`` entries that would grant the admin role."""
    return [key for key in config.gateway.api_keys if key.effective_role is Role.ADMIN]


def owner_sections(
    before: GatewayConfig, after: GatewayConfig, imported: frozenset[str] = frozenset()
) -> list[str]:
    """The owner's sections that ``after`` changes against ``before`` (the stored one).

    ``imported``: digests that already are admin keys of the table. An admin
    entry is a change unless it is one of those or already in ``before``, so
    re-sending the file that seeded the gateway is not one (its entries grant
    nothing that is not listed and revocable already).
    """
    out: list[str] = []
    if before.gateway.egress != after.gateway.egress:
        out.append(EGRESS)
    if before.gateway.alerts != after.gateway.alerts:
        out.append(ALERTS)
    known = imported | {key.sha256 for key in admin_entries(before)}
    if any(key.sha256 not in known for key in admin_entries(after)):
        out.append(ADMIN_KEYS)
    return out


async def owner_checked(
    store: AdminStore,
    clock: Callable[[], float],
    before: GatewayConfig | None,
    after: GatewayConfig,
    *,
    owner: bool,
    actor: str,
    store_keys: bool = True,
) -> GatewayConfig:
    """``after`` as this caller may store it: 403 (audited) for a non-owner changing an owner's
    section; for the owner, its admin entries imported as table keys and removed.

    ``store_keys`` False (a dry run): the owner's entries are removed but not imported.
    """
    planted = admin_entries(after)
    imported = frozenset() if owner else await _imported(store, planted)
    sections = owner_sections(before or GatewayConfig(), after, imported)
    if sections and not owner:
        changes = [{"path": section, "refused": "owner only"} for section in sections]
        await store.record_audit(
            audit.entry(actor, "config.refused", sections[0], changes, clock())
        )
        logger.warning("refused a configuration write by %s: %s", actor, ", ".join(sections))
        raise PermissionDenied(
            f"`{sections[0]}` is set by the gateway's owner (the deployment's configuration or "
            "the bootstrap admin key), not by an admin key; nothing was changed.",
            param=sections[0],
        )
    if not planted:
        return after
    if store_keys and owner:
        for legacy in planted:
            key = imported_key(legacy, clock())
            if await store.put_client_key(key):
                view = {"name": key.name, "role": key.role.value, "id": key.id}
                entry = audit.entry(actor, "key.import", f"key:{key.id}", [{"new": view}], clock())
                await store.record_audit(entry)
    document = after.model_dump(mode="json", by_alias=True)
    document["gateway"]["api_keys"] = [
        key.model_dump(mode="json") for key in after.gateway.api_keys if key not in planted
    ]
    return parse_config(document, "configuration", entry=False)


async def _imported(store: AdminStore, entries: list[ApiKey]) -> frozenset[str]:
    """The digests of ``entries`` that already are admin keys of the table."""
    found: set[str] = set()
    for entry in entries:
        key = await store.find_client_key(key_id_of(entry.sha256))
        if key is not None and key.digest == entry.sha256 and key.role is Role.ADMIN:
            found.add(entry.sha256)
    return frozenset(found)
