"""A client key's budget alerts, riding the spend ADDs the store already makes.

The store hands every ADD to a key's spend item over with the item as it
left it (``state.dynamodb.dynamo_alerts.SpendWatcher``): the spend, and the
budget the last reservation wrote beside it. Below a threshold this is a
pure comparison, no store call; a crossing makes one conditional write per
threshold (the claim), awaited, so a Lambda frozen after its answer still
leaves the alert for the sweep. The post itself runs in a background task.
"""

from __future__ import annotations

import asyncio
from typing import Any

from edgeproxy.routing.access import ACCOUNT_SEP
from edgeproxy.routing.alerts import crossed
from edgeproxy.service.alerts.notifier import AlertNotifier
from edgeproxy.state.items import get_float, get_optional_float


class KeyBudgetAlerts:
    """``SpendWatcher`` for client keys (level ``key``); deliveries off the caller's path."""

    def __init__(self, notifier: AlertNotifier) -> None:
        self._notifier = notifier
        self._posts: set[asyncio.Task[None]] = set()

    async def spend_moved(self, account: str, added_usd: float, item: dict[str, Any]) -> None:
        """Claim the thresholds this ADD crossed and post them in the background."""
        budget = get_optional_float(item, "budget_usd")
        after = get_float(item, "spend_usd")
        ratio = self._notifier.settings().key_soft_budget_ratio
        if not crossed(after - added_usd, after, budget, ratio):
            return
        key_id, _, period = account.partition(ACCOUNT_SEP)
        won = await self._notifier.claim(
            "key", key_id, period or None, budget, ratio, after - added_usd, after
        )
        if won:
            task = asyncio.create_task(self._notifier.deliver(won))
            self._posts.add(task)
            task.add_done_callback(self._posts.discard)

    async def aclose(self) -> None:
        """Wait for the posts under way (each is bounded by ``webhook.POST_TIMEOUT_S``)."""
        await asyncio.gather(*self._posts, return_exceptions=True)
