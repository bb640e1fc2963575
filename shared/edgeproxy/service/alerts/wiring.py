"""Budget alerts wired to a process: the gateway's watcher and the scheduled job's sweep."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from edgeproxy.config.alerts import AlertSettings
from edgeproxy.config.egress import EgressSettings
from edgeproxy.config.loader import from_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import CredentialError
from edgeproxy.service.alerts.notifier import AlertNotifier
from edgeproxy.service.alerts.topic import AlertTopic
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.state.dynamodb.dynamo import DynamoStore

LOG = logging.getLogger(__name__)


def alert_notifier(
    store: DynamoStore,
    credentials: CredentialResolver,
    config: Callable[[], GatewayConfig | None],
    clock: Callable[[], float],
    topic: AlertTopic | None = None,
) -> AlertNotifier:
    """A notifier reading the configuration in force (``config``) at each crossing;
    ``topic``: the SNS topic alerts are also published to."""

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

    return AlertNotifier(store, settings, secret, clock, topic)


def alert_topic(
    arn: str | None, session: Any, stack: contextlib.AsyncExitStack
) -> AlertTopic | None:
    """The SNS topic of ``EDGEPROXY_ALERT_TOPIC_ARN`` on ``session``'s credentials (None: no
    topic), closed with ``stack``."""
    if arn is None:
        return None
    topic = AlertTopic(arn, lambda region: session.client("sns", region_name=region))
    stack.push_async_callback(topic.aclose)
    return topic


async def sweep_alerts(
    store: DynamoStore,
    credentials: CredentialResolver,
    clock: Callable[[], float],
    topic: AlertTopic | None = None,
) -> int:
    """The scheduled job's retry of undelivered alerts; how many were delivered now."""
    stored = await store.load_config()
    config = None if stored is None else from_document(stored.document)
    notifier = alert_notifier(store, credentials, lambda: config, clock, topic)
    delivered = await notifier.sweep()
    if delivered:
        LOG.info("budget alerts delivered by the sweep: %d", delivered)
    return delivered
