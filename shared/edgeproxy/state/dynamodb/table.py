"""``Table``: the three kinds of request the store sends, and their error translation.

This is the one place where DynamoDB's botocore errors enter the project's
exception tree (``translated_errors``; SSM's and Secrets Manager's: ``secrets.py``).
A failed condition is not an error: ``write_if`` returns it as an outcome
together with the item that blocked the write.

Calls are bounded where the client is built (``runtime.open_store``): short
socket timeouts and a small retry budget, and ``BoundedClient`` caps each
call, retries included (``EDGEPROXY_STORE_TIMEOUT_SECONDS``, 2 s), so a
black-holed store costs a request at most that long before it is answered
503 with ``Retry-After: STORE_RETRY_AFTER_S``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from edgeproxy.errors import StoreError, StoreUnavailable
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.items import Item, text
from edgeproxy.state.keys import Key

CONDITION_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"
# Cancellation reasons that mean "another writer got there first", not a bad request.
LOST_RACE_REASONS = frozenset({"ConditionalCheckFailed", "TransactionConflict"})
# Error codes that mean "try again later", not "this request is wrong".
UNAVAILABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "ThrottlingException",
        "InternalServerError",
        "ServiceUnavailable",
    }
)
BATCH_LIMIT = 100  # keys per BatchGetItem request
BATCH_ATTEMPTS = 5  # UnprocessedKeys rounds before giving up
BATCH_BACKOFF_S = 0.05
STORE_RETRY_AFTER_S = 1.0


CallTimer = Callable[[str, float, bool], None]


class BoundedClient:
    """A low-level client whose every call is cut after ``budget_s`` (``TimeoutError``).

    botocore's own timeouts bound each socket read; this bounds the call as a
    whole, retries and backoff included.
    """

    def __init__(
        self,
        client: Any,
        budget_s: float,
        timed: CallTimer | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """``timed(operation, seconds, failed)``: told each call's duration (metrics), read
        on ``clock`` (the composition root's ``time.perf_counter``), which it needs."""
        if timed is not None and clock is None:
            raise ValueError("a timed client needs the clock it measures on")
        self._client = client
        self._budget = budget_s
        self._timed = timed
        self._clock = clock

    def __getattr__(self, operation: str) -> Callable[..., Awaitable[Any]]:
        call = getattr(self._client, operation)
        timed, clock = self._timed, self._clock

        async def bounded(**kwargs: Any) -> Any:
            async with asyncio.timeout(self._budget):
                return await call(**kwargs)

        if timed is None or clock is None:
            return bounded

        async def measured(**kwargs: Any) -> Any:
            started = clock()
            failed = True
            try:
                answer = await bounded(**kwargs)
                failed = False
                return answer
            finally:
                timed(operation, clock() - started, failed)

        return measured


@asynccontextmanager
async def translated_errors(operation: str) -> AsyncIterator[None]:
    """Translate botocore errors into ``StoreError``/``StoreUnavailable``, most specific first."""
    retry = STORE_RETRY_AFTER_S
    try:
        yield
    except TimeoutError as exc:  # BoundedClient's budget
        raise StoreUnavailable(f"DynamoDB {operation}: no answer", retry_after=retry) from exc
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", "Unknown"))
        if code in UNAVAILABLE_CODES:
            raise StoreUnavailable(f"DynamoDB {operation}: {code}", retry_after=retry) from exc
        raise StoreError(f"DynamoDB {operation}: {code}") from exc
    except (BotoConnectionError, HTTPClientError) as exc:
        name = type(exc).__name__
        raise StoreUnavailable(f"DynamoDB {operation}: {name}", retry_after=retry) from exc
    except BotoCoreError as exc:
        raise StoreError(f"DynamoDB {operation}: {type(exc).__name__}") from exc


class Table:
    """One DynamoDB table behind an injected low-level (aiobotocore) client."""

    def __init__(self, client: Any, name: str, schema: TableSchema) -> None:
        self._client = client
        self._name = name
        self._schema = schema

    def key(self, key: Key) -> Item:
        """The typed primary key of ``(pk, sk)``."""
        return {self._schema.pk: text(key[0]), self._schema.sk: text(key[1])}

    async def call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        """Send one single-table request (``get_item``, ``query``, ...)."""
        async with translated_errors(operation):
            response: dict[str, Any] = await getattr(self._client, operation)(
                TableName=self._name, **kwargs
            )
            return response

    async def write_if(self, operation: str, **kwargs: Any) -> tuple[bool, dict[str, Any]]:
        """Send one conditional write: ``(True, response)`` or ``(False, stored item)``.

        The stored item is empty when no item exists, or when the request did
        not ask for ``ReturnValuesOnConditionCheckFailure=ALL_OLD``.
        """
        async with translated_errors(operation):
            try:
                response: dict[str, Any] = await getattr(self._client, operation)(
                    TableName=self._name, **kwargs
                )
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != CONDITION_FAILED:
                    raise
                stored: Item = exc.response.get("Item") or {}
                return False, stored
            return True, response

    async def transact_if(self, writes: Sequence[tuple[str, dict[str, Any]]]) -> bool:
        """Send ``(kind, request)`` writes (``Put``, ``Update``...) as one TransactWriteItems.

        True if all committed; False if a condition failed or a concurrent
        transaction on the same item won (nothing was written).
        """
        transaction = [{kind: {"TableName": self._name, **body}} for kind, body in writes]
        async with translated_errors("TransactWriteItems"):
            try:
                await self._client.transact_write_items(TransactItems=transaction)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != TRANSACTION_CANCELED:
                    raise
                reasons = {r.get("Code") for r in exc.response.get("CancellationReasons", [])}
                if not reasons & LOST_RACE_REASONS:
                    raise
                return False
            return True

    async def transact_reasons(
        self, writes: Sequence[tuple[str, dict[str, Any]]]
    ) -> list[tuple[str, Item]] | None:
        """``transact_if`` that says why: None if all committed, else each write's
        cancellation reason (``"None"``: not the cause) and the item its failed condition
        saw (when it asked for ``ReturnValuesOnConditionCheckFailure``)."""
        transaction = [{kind: {"TableName": self._name, **body}} for kind, body in writes]
        async with translated_errors("TransactWriteItems"):
            try:
                await self._client.transact_write_items(TransactItems=transaction)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != TRANSACTION_CANCELED:
                    raise
                given = exc.response.get("CancellationReasons", [])
                if not {r.get("Code") for r in given} & LOST_RACE_REASONS:
                    raise
                reasons = [(str(r.get("Code", "None")), r.get("Item") or {}) for r in given]
                return reasons + [("None", {})] * (len(writes) - len(reasons))
            return None

    async def batch_get(self, wanted: Iterable[Key], *, consistent: bool = True) -> dict[Key, Item]:
        """Every stored item of ``wanted``: one BatchGetItem per 100 keys, in parallel.

        ``consistent=False``: eventually consistent (half the read units; may
        miss a write of the last second or so).
        """
        unique = list(dict.fromkeys(wanted))  # BatchGetItem rejects duplicate keys
        chunks = [unique[i : i + BATCH_LIMIT] for i in range(0, len(unique), BATCH_LIMIT)]
        found: dict[Key, Item] = {}
        if len(chunks) == 1:  # the usual case: no task to schedule
            return await self._batch_get_chunk(chunks[0], consistent)
        for part in await asyncio.gather(*(self._batch_get_chunk(c, consistent) for c in chunks)):
            found.update(part)
        return found

    async def _batch_get_chunk(self, chunk: Sequence[Key], consistent: bool) -> dict[Key, Item]:
        pending: dict[str, Any] = {
            self._name: {"Keys": [self.key(k) for k in chunk], "ConsistentRead": consistent}
        }
        found: dict[Key, Item] = {}
        for attempt in range(BATCH_ATTEMPTS):
            async with translated_errors("BatchGetItem"):
                response = await self._client.batch_get_item(RequestItems=pending)
            for item in response.get("Responses", {}).get(self._name, []):
                found[(item[self._schema.pk]["S"], item[self._schema.sk]["S"])] = item
            pending = response.get("UnprocessedKeys") or {}
            if not pending:
                return found
            # DynamoDB leaves keys unprocessed when it is throttling: back off.
            await asyncio.sleep(BATCH_BACKOFF_S * 2**attempt)
        raise StoreUnavailable(
            "DynamoDB BatchGetItem: keys still unprocessed after retries",
            retry_after=STORE_RETRY_AFTER_S,
        )
