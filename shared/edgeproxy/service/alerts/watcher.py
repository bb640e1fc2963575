"""Budget alerts of client keys, teams and organizations, riding the spend ADDs the store makes.

The store hands every ADD to a key's spend item over with the item as it
left it (``state.dynamodb.dynamo_alerts.SpendWatcher``): the spend, and the
budget the last reservation wrote beside it. Below a threshold this is a
pure comparison, no store call; a crossing makes one conditional write per
threshold (the claim), awaited, so a Lambda frozen after its answer still
leaves the alert for the sweep. The post itself runs in a background task.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from edgeproxy.errors import StoreError
from edgeproxy.routing.access import ACCOUNT_SEP
from edgeproxy.routing.alerts import crossed, reached
from edgeproxy.routing.hierarchy import Level
from edgeproxy.routing.judge.levels import LevelCharge
from edgeproxy.service.alerts.notifier import AlertNotifier
from edgeproxy.state.items import get_float, get_optional_float

LOG = logging.getLogger(__name__)


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


class LevelBudgetAlerts:
    """``LevelWatcher`` for teams and organizations: their budgets alert at their
    ``soft_budget_ratio`` and at 100%, once per threshold per period fleet-wide.

    A level's reservation is a transaction (``state/dynamodb/dynamo_levels.py``),
    which returns no values, so a threshold is judged on what the store hands
    over: the spend after each settlement's ADD (estimates of requests still in
    flight included, so an alert may come early by those, never late), and a
    reservation its budget refused (100% then: the budget admits no more). Any
    process seeing a threshold reached claims it (the conditional write decides
    who sends); each process remembers what it claimed or lost, so it tries each
    threshold of each period once. End users' budgets do not alert (one per
    customer would flood a receiver); their refusals name them in the log.
    """

    REMEMBERED = 4096  # (account, threshold) pairs kept before the memory starts over

    def __init__(self, notifier: AlertNotifier) -> None:
        self._notifier = notifier
        self._posts: set[asyncio.Task[None]] = set()
        self._seen: set[tuple[str, float]] = set()

    async def level_spend(self, charge: LevelCharge, spend_usd: float) -> None:
        """The level's spend after a settlement's ADD."""
        await self._reached(charge, spend_usd, refused=False)

    async def level_budget_refused(self, charge: LevelCharge, spend_usd: float) -> None:
        """The level's budget refused a reservation at ``spend_usd``."""
        await self._reached(charge, spend_usd, refused=True)

    async def _reached(self, charge: LevelCharge, spend: float, refused: bool) -> None:
        limits = charge.limits
        budget = limits.budget_usd
        if limits.level is Level.END_USER or budget is None:
            return
        due = [
            t
            for t in reached(spend, budget, limits.soft_budget_ratio, refused)
            if (charge.account, t) not in self._seen
        ]
        if not due:
            return
        period = charge.account.partition(ACCOUNT_SEP)[2]
        try:
            won = await self._notifier.claim_thresholds(
                limits.level.value, limits.id, period or None, budget, due, spend
            )
        except StoreError as exc:  # tried again at the level's next settlement
            LOG.warning("could not claim a budget alert: %s", type(exc).__name__)
            return
        if len(self._seen) >= self.REMEMBERED:
            self._seen.clear()
        self._seen.update((charge.account, t) for t in due)
        if won:
            task = asyncio.create_task(self._notifier.deliver(won))
            self._posts.add(task)
            task.add_done_callback(self._posts.discard)

    async def aclose(self) -> None:
        """Wait for the posts under way."""
        await asyncio.gather(*self._posts, return_exceptions=True)
