"""Who sends a budget alert, and the sweep that retries what was not delivered.

``claim`` is called with a level's spend before and after a settlement
(the store's returned value, so no extra read): each threshold crossed is
claimed by a conditional write (one winner fleet-wide) and the winner posts
it once with ``deliver`` (``watcher.KeyBudgetAlerts``: off the request's
path). ``deliver`` and ``sweep`` send through one attempt (``_attempt``). A failed post, or a process that died between its claim and its
post, leaves the alert's pointer pending; ``sweep`` (the scheduled job, or
a background task) posts every due one again, with backoff, until
``routing.alerts.MAX_ATTEMPTS``. Levels are named by kind and id, so a
team's or an organization's budget settles through the same call.

Destinations: the webhook (``gateway.alerts``, when a URL and a secret are
set) and the SNS topic (``topic``: the deployed stack's ``AlertTopicArn``).
An attempt sends to each configured destination that has not taken the alert
yet; the ones that do are recorded (``PendingAlert.sent``), so a retry never
sends one twice; the alert is delivered once every configured one has.
With none configured it stays pending, uncounted, and is sent once one is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

from edgeproxy.config.alerts import AlertSettings
from edgeproxy.config.egress import EgressSettings
from edgeproxy.errors import CredentialError
from edgeproxy.routing.alerts import Alert, PendingAlert, crossed, retry_at
from edgeproxy.service.alerts import webhook
from edgeproxy.service.alerts.topic import AlertTopic
from edgeproxy.state.store import AlertStore

LOG = logging.getLogger(__name__)
TOTAL_PERIOD = "total"
PERIOD_TTL_S = 40 * 86400.0  # past the longest period (monthly) with room to retry
TOTAL_TTL_S = 3650 * 86400.0  # a budget without a period alerts once, for good
WEBHOOK, SNS = "webhook", "sns"  # the destinations, as ``PendingAlert.sent`` names them


# Resolves the webhook secret's credential reference (``service.credentials``).
SecretSource = Callable[[str], Awaitable[bytes]]


class AlertNotifier:
    """Claims crossed thresholds and delivers them; ``sweep`` retries."""

    def __init__(
        self,
        store: AlertStore,
        settings: Callable[[], tuple[AlertSettings, EgressSettings]],
        secret: SecretSource,
        clock: Callable[[], float],
        topic: AlertTopic | None = None,
    ) -> None:
        self._store = store
        self._settings = settings  # the current configuration's (read at a crossing only)
        self._secret = secret
        self._clock = clock
        self._topic = topic

    def settings(self) -> AlertSettings:
        """The alert settings in force now."""
        return self._settings()[0]

    async def claim(
        self,
        level: str,
        level_id: str,
        period: str | None,
        budget_usd: float | None,
        soft_ratio: float | None,
        before: float,
        after: float,
    ) -> list[Alert]:
        """Claim each threshold crossed (fleet-wide, once); the ones this process must send."""
        due = crossed(before, after, budget_usd, soft_ratio)
        if not due:
            return []
        assert budget_usd is not None  # crossed() is empty without a budget
        return await self.claim_thresholds(level, level_id, period, budget_usd, due, after)

    async def claim_thresholds(
        self,
        level: str,
        level_id: str,
        period: str | None,
        budget_usd: float,
        due: Sequence[float],
        after: float,
    ) -> list[Alert]:
        """Claim each of the thresholds ``due`` (fleet-wide, once); the ones this process
        must send (a team's or an organization's: ``watcher.LevelBudgetAlerts``)."""
        now = self._clock()
        won: list[Alert] = []
        for threshold in due:
            alert = Alert(
                level, level_id, period or TOTAL_PERIOD, threshold, budget_usd, after, now
            )
            ttl = now + (PERIOD_TTL_S if period else TOTAL_TTL_S)
            if await self._store.claim_alert(alert, ttl):
                won.append(alert)
        return won

    async def deliver(self, won: list[Alert]) -> None:
        """Post each claimed alert once (a failure is left to ``sweep``)."""
        for alert in won:
            body = json.dumps(alert.body(), separators=(",", ":"), sort_keys=True)
            pending = PendingAlert(alert.level, alert.level_id, alert.name, body, 0, alert.at)
            await self._attempt(pending, self._clock())

    async def sweep(self, now: float | None = None) -> int:
        """Post every undelivered alert due at ``now``; how many were delivered."""
        at = self._clock() if now is None else now
        delivered = 0
        for pending in await self._store.pending_alerts(at):
            delivered += await self._attempt(pending, at)
        return delivered

    async def _attempt(self, pending: PendingAlert, now: float) -> bool:
        alerts, egress = self._settings()
        url, ref = alerts.webhook_url, alerts.webhook_secret_ref
        senders: dict[str, Callable[[str], Awaitable[bool]]] = {}
        if url is not None and ref is not None:
            senders[WEBHOOK] = partial(self._post, url, ref, egress, now=now)
        if self._topic is not None:
            senders[SNS] = self._topic.publish
        configured = list(senders)
        if not configured:
            return False  # recorded, listed as undelivered; sent once a destination is set
        took = {
            d for d, send in senders.items() if d not in pending.sent and await send(pending.body)
        }
        sent = frozenset(took)
        if set(configured) <= pending.sent | sent:
            await self._store.alert_delivered(pending, now, sent)
            return True
        failed = sorted(set(configured) - pending.sent - sent)
        next_at = retry_at(pending.attempts + 1, now)
        # The level and threshold only: never the URL (its query may hold a token) or the secret.
        LOG.log(
            logging.WARNING if next_at is not None else logging.ERROR,
            "budget alert undelivered level=%s id=%s alert=%s to=%s attempts=%d %s",
            pending.level,
            pending.level_id,
            pending.name,
            ",".join(failed),
            pending.attempts + 1,
            f"next_at={next_at:.0f}" if next_at is not None else "given up",
        )
        await self._store.alert_failed(pending, next_at, sent)
        return False

    async def _post(
        self, url: str, ref: str, egress: EgressSettings, body: str, *, now: float
    ) -> bool:
        try:
            secret = await self._secret(ref)
        except CredentialError:
            return False  # counted as a failed attempt: an operator fixes the reference
        return await webhook.post(url, egress, secret, body.encode(), int(now))
