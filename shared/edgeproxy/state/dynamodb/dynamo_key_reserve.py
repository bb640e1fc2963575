"""A client key's token and spend reservations: conditional ADDs before the call.

The key's minute bucket (``tokens``) and its spend item (``spend_usd``,
``tokens``) are the ones answers are counted in (``record_key_usage``);
a reservation ADDs the request's estimate to them only while the result
stays within the limit, so concurrent requests on any number of processes
cannot all pass a check that each made alone. The estimate is taken back,
and the actual usage added, when the answer is counted. An estimate larger
than the whole limit is admitted only into an empty bucket (the first
request of a minute, or of a budget), so a limit below one request's
estimate still serves one request.
"""

from __future__ import annotations

from typing import Any

from edgeproxy.state import keys
from edgeproxy.state.dynamodb.dynamo_alerts import SpendWatcher
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import number

# The ADD lands only while the minute's tokens leave room for this estimate (room = limit -
# estimate): concurrent callers of one key must not all see room and add past tpm_limit.
TOKENS_ROOM = "attribute_not_exists(#tokens) OR #tokens <= :room"
# The ADD lands only while the spend is under the budget and leaves room for this
# estimate: concurrent callers must not overspend budget_usd together.
SPEND_ROOM = "attribute_not_exists(#spend) OR (#spend < :budget AND #spend <= :room)"


class DynamoKeyReserve:
    """The reservation calls of ``DynamoStore``."""

    _table: Table
    _schema: TableSchema
    spend_watcher: SpendWatcher | None

    async def reserve_key_tokens(
        self, key_id: str, minute: int, tokens: int, tpm_limit: int, expires_at: float
    ) -> bool:
        """ADD ``tokens`` to the key's bucket ``minute`` if it stays within ``tpm_limit``."""
        won, _ = await self._table.write_if(
            "update_item",
            Key=self._table.key(keys.key_usage_key(key_id, minute)),
            UpdateExpression="ADD #tokens :tokens SET #ttl = :ttl",
            ConditionExpression=TOKENS_ROOM,
            ExpressionAttributeNames={"#tokens": "tokens", "#ttl": self._schema.ttl},
            ExpressionAttributeValues={
                ":tokens": number(tokens),
                ":room": number(max(0, tpm_limit - tokens)),
                ":ttl": number(expires_at),
            },
        )
        return won

    async def reserve_key_spend(
        self, key_id: str, tokens: int, spend_usd: float, budget_usd: float | None
    ) -> bool:
        """ADD ``spend_usd`` and ``tokens`` to the key's spend, within ``budget_usd`` if set."""
        request: dict[str, Any] = {
            "Key": self._table.key(keys.key_spend_key(key_id)),
            "UpdateExpression": "ADD #spend :spend, #total :tokens",
            "ExpressionAttributeNames": {"#spend": "spend_usd", "#total": "tokens"},
            "ExpressionAttributeValues": {":spend": number(spend_usd), ":tokens": number(tokens)},
        }
        if budget_usd is None:
            # A budget removed since: the settlements that follow must not alert against it.
            request["UpdateExpression"] += " REMOVE #budget"
            request["ExpressionAttributeNames"] = {
                **request["ExpressionAttributeNames"],
                "#budget": "budget_usd",
            }
            await self._table.call("update_item", **request)
            return True
        request["ConditionExpression"] = SPEND_ROOM
        # The budget rides on the spend item, so a settlement's returned item tells the
        # alert watcher what the spend is measured against, with no read of the key.
        request["UpdateExpression"] += " SET #budget = :budget"
        request["ExpressionAttributeNames"] = {
            **request["ExpressionAttributeNames"],
            "#budget": "budget_usd",
        }
        request["ExpressionAttributeValues"] = {
            **request["ExpressionAttributeValues"],
            ":budget": number(budget_usd),
            ":room": number(max(0.0, budget_usd - spend_usd)),
        }
        request["ReturnValues"] = "ALL_NEW"
        won, response = await self._table.write_if("update_item", **request)
        if won and self.spend_watcher is not None:
            await self.spend_watcher.spend_moved(key_id, spend_usd, response.get("Attributes", {}))
        return won
