"""Budget alerts wired to a process: the gateway's watcher and the scheduled job's sweep."""

from __future__ import annotations

import logging
from collections.abc import Callable

from edgeproxy.config.alerts import AlertSettings
from edgeproxy.config.egress import EgressSettings
from edgeproxy.config.loader import from_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import CredentialError
from edgeproxy.service.alerts.notifier import AlertNotifier
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.state.dynamodb.dynamo import DynamoStore

LOG = logging.getLogger(__name__)


def alert_notifier(
    store: DynamoStore,
    credentials: CredentialResolver,
    config: Callable[[], GatewayConfig | None],
    clock: Callable[[], float],
) -> AlertNotifier:
    """A notifier reading the configuration in force (``config``) at each crossing."""

    def settings() -> tuple[AlertSettings, EgressSettings]:
        current = config()
        if current is None:
            return AlertSettings(), EgressSettings()
        return current.gateway.alerts, current.gateway.egress

    async def secret(reference: str) -> bytes:
        resolved = await credentials.resolve(reference)
        if resolved is None:
            raise CredentialError("the webhook secret reference resolved to nothing")
        return resolved.get_secret_value().encode()

    return AlertNotifier(store, settings, secret, clock)


async def sweep_alerts(
    store: DynamoStore, credentials: CredentialResolver, clock: Callable[[], float]
) -> int:
    """The scheduled job's retry of undelivered alerts; how many were delivered now."""
    stored = await store.load_config()
    config = None if stored is None else from_document(stored.document)
    delivered = await alert_notifier(store, credentials, lambda: config, clock).sweep()
    if delivered:
        LOG.info("budget alerts delivered by the sweep: %d", delivered)
    return delivered
