"""Budget alerts in the state table: the settled spend, who sends, and what is still owed.

Every ADD to a key's spend item (a reservation, a settlement) returns the
item as it left it (``ReturnValues=ALL_NEW``) to the ``SpendWatcher``, so a
crossing costs no extra read.
``claim_alert`` is the fleet-wide decision: a put conditional on the alert
item being absent, in the level's partition, with a TTL past the period;
the one process whose put lands sends. A pointer in ``alerts#pending`` (the
same transaction) lets the sweep find what is not delivered yet without a
scan; delivery marks it never due (it lapses a day later, by TTL), a failure moves
its ``next_at``. Both items record the destinations that took the alert
(``sent``, a string set ADDed as each does), so a retry skips them; the
undelivered ones are the pointers not marked delivered (``undelivered_alerts``).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from edgeproxy.routing.alerts import NEVER, Alert, PendingAlert
from edgeproxy.routing.judge.levels import LevelCharge
from edgeproxy.state import keys
from edgeproxy.state.dynamodb import conditions as cond
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import get_float, get_int, get_text, number, text

# How long a delivered alert's pointer stays (read by the sweep, never due) before its TTL.
POINTER_LAPSE_S = 86_400.0


class SpendWatcher(Protocol):
    """Told of each ADD to a key's spend item, with the item as the ADD left it."""

    async def spend_moved(self, account: str, added_usd: float, item: dict[str, Any]) -> None:
        """``item``: the spend item after adding ``added_usd`` (``spend_usd``, ``budget_usd``)."""
        ...


class LevelWatcher(Protocol):
    """Told of a team's, an organization's or an end user's spend as the store sees it."""

    async def level_spend(self, charge: LevelCharge, spend_usd: float) -> None:
        """The level's spend after a settlement's ADD (``ReturnValues=ALL_NEW``)."""
        ...

    async def level_budget_refused(self, charge: LevelCharge, spend_usd: float) -> None:
        """The level's budget refused a reservation; ``spend_usd``: what its condition saw."""
        ...


class DynamoAlerts:
    """The alert calls of ``DynamoStore``."""

    _table: Table
    _schema: TableSchema

    async def claim_alert(self, alert: Alert, expires_at: float) -> bool:
        """Write ``alert`` if no process has (True: this one sends it)."""
        body = json.dumps(alert.body(), separators=(",", ":"), sort_keys=True)
        state = {
            "delivered": {"BOOL": False},
            "attempts": number(0),
            "next_at": number(alert.at),
            "body": text(body),
            self._schema.ttl: number(expires_at),
        }
        pointer = {
            "level": text(alert.level),
            "level_id": text(alert.level_id),
            "name": text(alert.name),
            **state,
        }
        pk = self._schema.pk
        return await self._table.transact_if(
            [
                (
                    "Put",
                    {
                        "Item": {**self._table.key(self._alert(alert)), **state},
                        "ConditionExpression": cond.ITEM_ABSENT,
                        "ExpressionAttributeNames": {"#pk": pk},
                    },
                ),
                (
                    "Put",
                    {"Item": {**self._table.key(self._pointer(alert)), **pointer}},
                ),
            ]
        )

    async def pending_alerts(self, now: float) -> list[PendingAlert]:
        """Alerts not delivered whose next attempt is due at ``now``."""
        out: list[PendingAlert] = []
        request: dict[str, Any] = {
            "KeyConditionExpression": "#pk = :pk",
            "FilterExpression": "#next <= :now",
            "ExpressionAttributeNames": {"#pk": self._schema.pk, "#next": "next_at"},
            "ExpressionAttributeValues": {
                ":pk": text(keys.ALERTS_PENDING_PK),
                ":now": number(now),
            },
            "ConsistentRead": True,
        }
        while True:
            page = await self._table.call("query", **request)
            out += [_pending(item) for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                return out
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    async def undelivered_alerts(self) -> list[PendingAlert]:
        """Every alert not delivered: pending (due again at ``next_at``) or given up."""
        out: list[PendingAlert] = []
        request: dict[str, Any] = {
            "KeyConditionExpression": "#pk = :pk",
            "FilterExpression": "#delivered = :f",
            "ExpressionAttributeNames": {"#pk": self._schema.pk, "#delivered": "delivered"},
            "ExpressionAttributeValues": {
                ":pk": text(keys.ALERTS_PENDING_PK),
                ":f": {"BOOL": False},
            },
            "ConsistentRead": True,
        }
        while True:
            page = await self._table.call("query", **request)
            out += [_pending(item) for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                return out
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    async def alert_delivered(
        self, alert: PendingAlert, now: float, sent: frozenset[str] = frozenset()
    ) -> None:
        """Mark ``alert`` delivered (``sent``: the destinations that took it on this attempt);
        its pointer is never due again and lapses a day later (its table TTL): the
        scheduled job's role needs no DeleteItem for it."""
        values: dict[str, Any] = {
            ":t": {"BOOL": True},
            ":now": number(now),
            ":never": number(NEVER),
        }
        add = ""
        if sent:
            values[":sent"] = {"SS": sorted(sent)}
            add = " ADD sent :sent"
        done = {
            "UpdateExpression": "SET delivered = :t, delivered_at = :now, next_at = :never" + add,
            "ExpressionAttributeValues": values,
        }
        lapse = {
            "UpdateExpression": (
                "SET delivered = :t, delivered_at = :now, next_at = :never, #ttl = :lapse" + add
            ),
            "ExpressionAttributeNames": {"#ttl": self._schema.ttl},
            "ExpressionAttributeValues": {**values, ":lapse": number(now + POINTER_LAPSE_S)},
        }
        await self._table.transact_if(
            [
                ("Update", {"Key": self._table.key(keys.alert_key(*_id(alert))), **done}),
                ("Update", {"Key": self._table.key(keys.pending_alert_key(*_id(alert))), **lapse}),
            ]
        )

    async def alert_failed(
        self, alert: PendingAlert, next_at: float | None, sent: frozenset[str] = frozenset()
    ) -> None:
        """Count a failed attempt; retry at ``next_at`` (None: given up, listed, never due).
        ``sent``: the destinations that took it on this attempt (not sent to again)."""
        due = number(next_at if next_at is not None else NEVER)
        values: dict[str, Any] = {":n": number(alert.attempts + 1), ":due": due}
        expression = "SET attempts = :n, next_at = :due"
        if sent:
            values[":sent"] = {"SS": sorted(sent)}
            expression += " ADD sent :sent"
        update = {"UpdateExpression": expression, "ExpressionAttributeValues": values}
        await self._table.transact_if(
            [
                ("Update", {"Key": self._table.key(keys.alert_key(*_id(alert))), **update}),
                ("Update", {"Key": self._table.key(keys.pending_alert_key(*_id(alert))), **update}),
            ]
        )

    @staticmethod
    def _alert(alert: Alert) -> keys.Key:
        return keys.alert_key(alert.level, alert.level_id, alert.name)

    @staticmethod
    def _pointer(alert: Alert) -> keys.Key:
        return keys.pending_alert_key(alert.level, alert.level_id, alert.name)


def _id(alert: PendingAlert) -> tuple[str, str, str]:
    return alert.level, alert.level_id, alert.name


def _pending(item: dict[str, Any]) -> PendingAlert:
    return PendingAlert(
        level=get_text(item, "level") or "",
        level_id=get_text(item, "level_id") or "",
        name=get_text(item, "name") or "",
        body=get_text(item, "body") or "{}",
        attempts=get_int(item, "attempts"),
        next_at=get_float(item, "next_at"),
        sent=frozenset(str(v) for v in item.get("sent", {}).get("SS", ())),
        delivered=bool(item.get("delivered", {}).get("BOOL", False)),
    )
