"""Budget alerts to the deployed stack's SNS topic, on moto's SNS server over loopback.

The topic is subscribed by an SQS queue (raw delivery), so what SNS took is
read back as SNS would hand it on. Beside it, the loopback webhook of
``test_alerts.py``: each destination gets each alert exactly once, a retry
goes only to the one that did not take it, and what is still owed is listed
(the store's ``undelivered_alerts``, the admin route and the CLI).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aioboto3
import httpx
import pytest
from moto.server import ThreadedMotoServer

from edgeproxy.cli import main
from edgeproxy.config.alerts import AlertSettings
from edgeproxy.routing.alerts import MAX_ATTEMPTS, NEVER, RETRY_CAP_S, Alert
from edgeproxy.service.alerts.notifier import AlertNotifier
from edgeproxy.service.alerts.signature import verify
from edgeproxy.service.alerts.topic import AlertTopic, subject, topic_region
from edgeproxy.service.alerts.wiring import alert_topic
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy_dev.dynamo_server import client_kwargs
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.dynamo import open_client
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer
from tests.integration.service.test_alerts import LOOPBACK, SECRET, Receiver, receiver

__all__ = ["receiver"]  # the webhook fixture, shared with test_alerts.py

REGION = "us-east-1"
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture(scope="module")
def sns_url() -> Iterator[str]:
    """A moto server (SNS and SQS among its services) on loopback."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


class Topic:
    """A topic on the moto server and the queue subscribed to it (what SNS delivered)."""

    def __init__(self, sns: Any, sqs: Any, name: str) -> None:
        self._sns, self._sqs, self.name = sns, sqs, name
        self.arn = f"arn:aws:sns:{REGION}:123456789012:{name}"
        self.queue_url = ""

    async def create(self) -> None:
        made = await self._sns.create_topic(Name=self.name)
        assert made["TopicArn"] == self.arn
        self.queue_url = (await self._sqs.create_queue(QueueName=self.name))["QueueUrl"]
        attrs = await self._sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["QueueArn"]
        )
        await self._sns.subscribe(
            TopicArn=self.arn,
            Protocol="sqs",
            Endpoint=attrs["Attributes"]["QueueArn"],
            Attributes={"RawMessageDelivery": "true"},
        )

    async def delivered(self) -> list[str]:
        """Every message the queue holds now (each read once)."""
        got: list[str] = []
        while True:
            answer = await self._sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            )
            messages = answer.get("Messages", [])
            if not messages:
                return got
            for message in messages:
                got.append(message["Body"])
                await self._sqs.delete_message(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )


@pytest.fixture
async def aws(sns_url: str) -> AsyncIterator[dict[str, Any]]:
    session = aioboto3.Session(**KEYS)
    async with (
        session.client("sns", region_name=REGION, endpoint_url=sns_url) as sns,
        session.client("sqs", region_name=REGION, endpoint_url=sns_url) as sqs,
    ):
        yield {"session": session, "sns": sns, "sqs": sqs, "url": sns_url}


def _publisher(aws: dict[str, Any], arn: str) -> AlertTopic:
    session = aws["session"]
    return AlertTopic(
        arn, lambda region: session.client("sns", region_name=region, endpoint_url=aws["url"])
    )


def _notifier(
    store: DynamoStore, url: str | None, topic: AlertTopic | None, clock: list[float]
) -> AlertNotifier:
    async def secret(ref: str) -> bytes:
        return SECRET

    settings = AlertSettings(
        webhook_url=url, webhook_secret_ref="env:EDGEPROXY_CRED_HOOK" if url else None
    )
    return AlertNotifier(store, lambda: (settings, LOOPBACK), secret, lambda: clock[0], topic)


async def _settled(notifier: AlertNotifier, *crossing: Any) -> list[Alert]:
    """Claim what a settlement crossed and deliver it, as the watchers do (here awaited)."""
    won = await notifier.claim(*crossing)
    await notifier.deliver(won)
    return won


async def test_a_crossing_is_published_once_to_the_topic_and_posted_once_to_the_webhook(
    store: DynamoStore, receiver: Receiver, aws: dict[str, Any]
) -> None:
    topic = Topic(aws["sns"], aws["sqs"], "edgeproxy-alerts-a")
    await topic.create()
    publisher = _publisher(aws, topic.arn)
    notifier = _notifier(store, receiver.url, publisher, [1000.0])
    won = await _settled(notifier, "team", "search", "2026-12-01", 10.0, 0.8, 7.0, 8.5)
    assert [a.threshold for a in won] == [0.8]
    [message] = await topic.delivered()
    body = json.loads(message)
    assert (body["level"], body["id"], body["threshold"], body["period"]) == (
        "team", "search", 0.8, "2026-12-01"
    )  # fmt: skip
    [(posted, signature)] = receiver.got
    assert posted.decode() == message  # the same notification to both
    assert verify(SECRET, signature, posted)
    assert await store.undelivered_alerts() == []
    # Claimed once: the same threshold again sends nothing anywhere.
    assert await _settled(notifier, "team", "search", "2026-12-01", 10.0, 0.8, 8.5, 9.0) == []
    assert await notifier.sweep(1e12) == 0
    assert await topic.delivered() == []
    assert len(receiver.got) == 1
    await publisher.aclose()


async def test_a_retry_goes_only_to_the_destination_that_did_not_take_it(
    store: DynamoStore, receiver: Receiver, aws: dict[str, Any]
) -> None:
    topic = Topic(aws["sns"], aws["sqs"], "edgeproxy-alerts-b")  # not created yet: SNS refuses
    publisher = _publisher(aws, topic.arn)
    clock = [1000.0]
    notifier = _notifier(store, receiver.url, publisher, clock)
    await _settled(notifier, "key", "k1", None, 10.0, None, 9.0, 10.0)
    assert len(receiver.got) == 1  # the webhook took it
    [owed] = await store.undelivered_alerts()
    assert (owed.sent, owed.attempts, owed.delivered) == (frozenset({"webhook"}), 1, False)
    await topic.create()
    assert await notifier.sweep(1e12) == 1
    assert len(await topic.delivered()) == 1
    assert len(receiver.got) == 1  # not posted again
    assert await store.undelivered_alerts() == []
    await publisher.aclose()


async def test_given_up_alerts_stay_listed_and_are_never_sent_again(
    store: DynamoStore, aws: dict[str, Any]
) -> None:
    publisher = _publisher(aws, f"arn:aws:sns:{REGION}:123456789012:edgeproxy-never-made")
    clock = [1000.0]
    notifier = _notifier(store, None, publisher, clock)  # SNS only
    await _settled(notifier, "organization", "acme", None, 100.0, None, 99.0, 101.0)
    for _ in range(MAX_ATTEMPTS):
        clock[0] += RETRY_CAP_S
        await notifier.sweep()
    [owed] = await store.undelivered_alerts()
    assert (owed.attempts, owed.next_at, owed.sent) == (MAX_ATTEMPTS, NEVER, frozenset())
    assert await store.pending_alerts(1e17) == []  # never due again
    await publisher.aclose()


async def test_the_process_wiring_reaches_the_topic_by_botocores_endpoint_setting(
    store: DynamoStore, aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a function's environment reaches SNS: EDGEPROXY_ALERT_TOPIC_ARN, the role's keys,
    # botocore's endpoint resolution (here AWS_ENDPOINT_URL_SNS: the moto server).
    topic = Topic(aws["sns"], aws["sqs"], "edgeproxy-alerts-c")
    await topic.create()
    monkeypatch.setenv("AWS_ENDPOINT_URL_SNS", aws["url"])
    async with contextlib.AsyncExitStack() as stack:
        wired = alert_topic(topic.arn, aioboto3.Session(**KEYS), stack)
        assert wired is not None
        await _settled(_notifier(store, None, wired, [1000.0]), "key", "k9", None, 1.0, None, 0, 2)
    assert len(await topic.delivered()) == 1
    assert alert_topic(None, aioboto3.Session(), contextlib.AsyncExitStack()) is None


def test_topic_arns_and_subjects() -> None:
    assert topic_region(f"arn:aws:sns:{REGION}:123456789012:x") == REGION
    assert topic_region("arn:aws:sqs:us-east-1:123456789012:x") is None
    assert topic_region("not an arn") is None
    with pytest.raises(ValueError, match="not an SNS topic ARN"):
        AlertTopic("arn:aws:s3:::bucket", lambda region: contextlib.nullcontext())  # type: ignore[arg-type,return-value]
    body = json.dumps({"level": "team", "id": "search\r\nx", "threshold": 0.8})
    assert subject(body) == "edgeproxy budget alert: team search??x at 80%"
    assert subject("{") == "edgeproxy budget alert"
    assert len(subject(json.dumps({"level": "k", "id": "x" * 300, "threshold": 1}))) == 100


async def _owe(endpoint: str, table: str, schema: Any) -> None:
    """Leave one alert given up (a team's) and one pending (a key's) in ``table``."""
    options = client_kwargs(endpoint)
    session = aioboto3.Session(
        aws_access_key_id=options["aws_access_key_id"],
        aws_secret_access_key=options["aws_secret_access_key"],
    )
    client = await open_client(session, options["region_name"], endpoint)
    try:
        store = DynamoStore(client, table, schema, random.Random(0))
        clock = [1000.0]
        notifier = _notifier(store, "http://127.0.0.1:9/hook", None, clock)  # nothing listens
        await _settled(notifier, "team", "ads", None, 5.0, None, 4.0, 6.0)
        for _ in range(MAX_ATTEMPTS):
            clock[0] += RETRY_CAP_S
            await notifier.sweep()
        await _settled(notifier, "key", "k1", "2026-12-01", 10.0, 0.8, 7.0, 8.5)
    finally:
        await client.close()


def test_undelivered_alerts_through_the_admin_api_and_the_cli(
    start_gateway: Any,
    upstream_a: MockUpstream,
    gateway_table: str,
    table_schema: Any,
    dynamo_endpoint: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a)), env=ENV)
    asyncio.run(_owe(dynamo_endpoint, gateway_table, table_schema))
    answer = httpx.get(
        gw.base_url + "/admin/alerts/undelivered", headers=bearer(ADMIN_KEY), timeout=10
    )
    assert answer.status_code == 200, answer.text
    listed = answer.json()["data"]
    assert [(a["level"], a["id"], a["state"]) for a in listed] == [
        ("key", "k1", "pending"),
        ("team", "ads", "given_up"),
    ]
    assert listed[0]["next_at"] is not None
    assert (listed[0]["attempts"], listed[0]["sent"]) == (1, [])
    assert listed[0]["notification"]["threshold"] == 0.8
    assert (listed[1]["next_at"], listed[1]["attempts"]) == (None, MAX_ATTEMPTS)
    assert "9/hook" not in answer.text  # never the webhook's URL
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_PROFILE", "EDGEPROXY_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (
        ("EDGEPROXY_DYNAMODB_ENDPOINT", dynamo_endpoint),
        ("AWS_REGION", REGION),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("EDGEPROXY_ADMIN_KEY", ADMIN_KEY),
    ):
        monkeypatch.setenv(name, value)
    assert main(["alerts", "--url", gw.base_url]) == 0
    over_http = capsys.readouterr().out.splitlines()
    assert main(["alerts", "--table", gateway_table]) == 0
    on_table = capsys.readouterr().out.splitlines()
    assert over_http == on_table
    assert over_http[0].startswith("key k1  80% of 10.0 USD (2026-12-01)  pending, next ")
    assert over_http[1] == (
        f"team ads  100% of 5.0 USD (total)  given up  attempts={MAX_ATTEMPTS}  sent=-"
    )
    assert main(["alerts", "--url", gw.base_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == listed
    # Gateway-level: a team's admin may not list them (the matrix test covers every scope).
