"""Publishing one alert to the deployed stack's SNS topic (template parameter ``AlertTopicArn``).

The function's environment names the topic (``EDGEPROXY_ALERT_TOPIC_ARN``,
empty: none) and its role may ``sns:Publish`` to exactly that ARN. The
message is the alert's JSON body, the same bytes the webhook gets (SNS signs
its own deliveries, so no HMAC here); the subject names the level and the
threshold. The client is botocore's (``aioboto3``), opened on the first
alert a process publishes and closed with the process: alerts are rare, so
a cold start never pays for it. Its endpoint is botocore's resolution
(``AWS_ENDPOINT_URL_SNS``, as the tests' moto server uses), its region the
topic's own (an ARN names it).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

LOG = logging.getLogger(__name__)
SUBJECT_MAX = 100  # SNS's limit on a subject
# Opens an SNS client for a region (``session.client("sns", region_name=...)``).
ClientOpener = Callable[[str], AbstractAsyncContextManager[Any]]


def topic_region(arn: str) -> str | None:
    """The region an SNS topic ARN names, or None when it is not one.

    >>> topic_region("arn:aws:sns:eu-west-1:123456789012:edgeproxy-alerts")
    'eu-west-1'
    """
    parts = arn.split(":")
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "sns" or not parts[3]:
        return None
    return parts[3]


def subject(body: str) -> str:
    """``edgeproxy budget alert: team search at 80%`` (printable ASCII, at most 100)."""
    try:
        alert = json.loads(body)
        text = (
            f"edgeproxy budget alert: {alert['level']} {alert['id']} at "
            f"{float(alert['threshold']) * 100:g}%"
        )
    except (ValueError, KeyError, TypeError):
        text = "edgeproxy budget alert"
    return "".join(c if " " <= c <= "~" else "?" for c in text)[:SUBJECT_MAX]


class AlertTopic:
    """Publishes alert bodies to one SNS topic; ``publish`` answers whether SNS took it."""

    def __init__(self, arn: str, open_client: ClientOpener) -> None:
        region = topic_region(arn)
        if region is None:
            raise ValueError("EDGEPROXY_ALERT_TOPIC_ARN is not an SNS topic ARN")
        self.arn = arn
        self._region = region
        self._open = open_client
        self._stack = contextlib.AsyncExitStack()
        self._client: Any | None = None

    async def publish(self, body: str) -> bool:
        """Publish ``body``; False when SNS refused it or could not be reached (retried)."""
        try:
            client: Any = self._client
            if client is None:
                client = await self._stack.enter_async_context(self._open(self._region))
                self._client = client
            await client.publish(TopicArn=self.arn, Message=body, Subject=subject(body))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "Unknown")
            LOG.warning("budget alert not published to the SNS topic: %s", code)
            return False
        except (BotoCoreError, OSError) as exc:
            LOG.warning("budget alert not published to the SNS topic: %s", type(exc).__name__)
            return False
        return True

    async def aclose(self) -> None:
        """Close the client (if one was opened)."""
        self._client = None
        await self._stack.aclose()
