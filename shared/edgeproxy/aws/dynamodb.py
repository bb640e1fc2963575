"""``DynamoClient``: the store's DynamoDB client, AWS's JSON protocol (``aws/client.py``).

The store's one client, request path and cold paths alike. It answers the
low-level calls ``Table`` makes (``client.batch_get_item(**request)``, ...)
with the same parsed JSON, and fails with the same botocore exceptions
(``ClientError`` carrying the error code and the rest of the error body, such
as the ``Item`` of a failed condition; ``EndpointConnectionError``,
``ReadTimeoutError``...), so ``table.translated_errors`` stays the one place
they become ``StoreError``. DynamoDB's wire format is already the shape the
store builds (typed attribute values, numbers as strings), so a request is
``json.dumps`` of the call's arguments.

What is DynamoDB's here: its target prefix and JSON 1.0 content type, the
error codes worth a retry (throttles, transaction conflicts), and the
endpoint's default (``default_endpoint``; ``clients.store_endpoint`` passes
``EDGEPROXY_DYNAMODB_ENDPOINT`` instead when set). Retries: the options'
``max_attempts``, after a short jittered backoff; ``BoundedClient`` still caps
each call as a whole.

    >>> client = await DynamoClient.open(session, "eu-west-1", url, options, rng.random)  # doctest: +SKIP
    >>> await client.get_item(TableName="t", Key={...})  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edgeproxy.aws.client import JsonClient, Protocol
from edgeproxy.aws.wire import ClientOptions

TARGET_PREFIX = "DynamoDB_20120810."
CONTENT_TYPE = "application/x-amz-json-1.0"
RETRY_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "ThrottlingException",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
    }
)
DYNAMODB = Protocol("dynamodb", TARGET_PREFIX, CONTENT_TYPE, "DYNAMODB", RETRY_CODES)


class DynamoClient(JsonClient):
    """DynamoDB calls as ``await client.<snake_case_operation>(**request) -> dict``."""

    @classmethod
    async def open(
        cls,
        session: Any,
        region: str,
        endpoint: str,
        options: ClientOptions,
        jitter: Callable[[], float],
    ) -> DynamoClient:
        """A client on ``endpoint``, signed with ``session``'s credentials.

        ``session``: an aioboto3 session or a ``DeferredSession`` (its credential chain is
        botocore's); ``options`` and ``jitter``: ``JsonClient.open_for``'s.
        """
        return await cls.open_for(DYNAMODB, session, region, endpoint, options, jitter)
