"""The next turn sees the binding: a conversation driven by the stock openai SDK.

One caller sends 50 turns, each the instant the previous answer arrived
(its JSON body, or its stream's ``[DONE]``), alternating over two gateway
processes that share only the table. Now and then the bound deployment
starts answering 503: that turn fails over, and the very next one, on the
other process, must already be routed by the binding the failover earned.
Every turn's first attempt is the bound deployment, routed by the binding
(``sticky``), never by the strategy; no sleep, no polling between turns.

The store's binding writes go over a slow link (``BIND_WRITE_S`` more than
any other call): a write that lands after the answer is then certainly
late for the next turn (on loopback it usually wins the race, and loses it
in production one turn in eight).

Then the binding write's failure mode: with the store gone under a
request, the upstream's answer still reaches the client, and the failed
write is logged and counted (the answer waits for the write, so this is
the new risk; the old code, which wrote after the answer, had it too).
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import openai
import pytest

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.router import CircuitSettings, StickySettings
from edgeproxy.routing.snapshot import BindingKey
from edgeproxy.service.admission import Attempt
from edgeproxy.service.outcomes import Outcomes
from edgeproxy.service.pool import PoolContext
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.store import SnapshotRequest
from edgeproxy_dev.dynamo_server import client_kwargs
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.buffering import BufferingProxy
from tests.fixtures.configs import config, deployment
from tests.fixtures.gateway import GatewayProcess, GatewayServer
from tests.fixtures.table import wait_for
from tests.fixtures.upstream import MakeUpstream
from tests.integration.service.test_outcomes import Recorded
from tests.integration.sticky.helpers import ALICE, ALICE_KEY, DEPLOYMENT

TURNS = 50
BIND_WRITE_S = 0.3
# The turns at which the bound deployment answers 503: each side of the fleet fails over twice.
FAILOVERS = frozenset({9, 20, 31, 42})
ROUTING = {"x-unified-routing-metadata": "true"}
MESSAGES: list[Any] = [{"role": "user", "content": "Hello!"}]


# Every BatchGetItem the gateways sent through the link: the pool reads.
POOL_READS: list[dict[str, Any]] = []


def _slow_binding_writes(headers: Mapping[str, str], body: bytes) -> float:
    target = next((v for k, v in headers.items() if k.lower() == "x-amz-target"), "")
    if target.endswith(".BatchGetItem"):
        POOL_READS.append(json.loads(body))
    return BIND_WRITE_S if target.endswith(".PutItem") and b'"bind#' in body else 0.0


@pytest.fixture
def dynamo_endpoint(dynamo_endpoint: str) -> Iterator[str]:
    """This module's gateways reach the embedded DynamoDB over a link slow for binding writes."""
    with BufferingProxy(dynamo_endpoint, hold=_slow_binding_writes) as link:
        yield link.base_url


@pytest.fixture
def clients(
    start_gateway: Any, spawn_gateway: Any, make_upstream: MakeUpstream
) -> Iterator[tuple[list[openai.OpenAI], dict[str, MockUpstream]]]:
    """SDK clients of two gateway processes on one table, and the pool's two upstreams."""
    mocks = {name: make_upstream(name) for name in ("a", "b")}
    # Same tier, same weight: without the binding, either may be picked. The circuits
    # stay closed through the run's few 503s (no failover is the circuit's doing).
    cfg = config(
        *(deployment(n, m) for n, m in mocks.items()),
        router={"circuit": {"allowed_fails": 100}},
    )
    gateways: list[GatewayServer | GatewayProcess] = [start_gateway(cfg), spawn_gateway(None)]
    sdks = [
        openai.OpenAI(base_url=g.base_url + "/v1", api_key=ALICE_KEY, max_retries=0)
        for g in gateways
    ]
    yield sdks, mocks
    for sdk in sdks:
        sdk.close()


def _json_turn(sdk: openai.OpenAI) -> tuple[str, list[tuple[str, bool]]]:
    raw = sdk.chat.completions.with_raw_response.create(
        model="fast-chat", messages=MESSAGES, extra_headers=ROUTING
    )
    answer = raw.parse()
    assert answer.choices[0].message.content
    routing = (answer.model_extra or {})["unified_routing"]
    assert raw.headers[DEPLOYMENT] == routing["deployment"]
    return _served(routing)


def _stream_turn(sdk: openai.OpenAI) -> tuple[str, list[tuple[str, bool]]]:
    stream = sdk.chat.completions.create(
        model="fast-chat", messages=MESSAGES, stream=True, extra_headers=ROUTING
    )
    routing: dict[str, Any] | None = None
    text = ""
    for chunk in stream:  # returns once [DONE] arrived: the client has the whole answer
        text += "".join(c.delta.content or "" for c in chunk.choices)
        routing = (chunk.model_extra or {}).get("unified_routing", routing)
    assert text
    assert routing is not None
    return _served(routing)


def _served(routing: dict[str, Any]) -> tuple[str, list[tuple[str, bool]]]:
    """Who served the turn, and (deployment, routed by the binding) of each of its attempts."""
    return routing["deployment"], [(a["deployment"], a["sticky"]) for a in routing["attempts"]]


TURN = {"json": _json_turn, "stream": _stream_turn}


def test_a_pool_read_that_carries_a_binding_is_strongly_consistent(
    clients: tuple[list[openai.OpenAI], dict[str, MockUpstream]],
) -> None:
    """On DynamoDB an eventually consistent read may miss a write of the last second: the
    binding written before the last answer must be read back consistently on the next turn
    (moto has no replicas, so what is checked is the read the gateways ask for)."""
    sdks, _ = clients
    POOL_READS.clear()
    for turn in range(4):
        _json_turn(sdks[turn % 2])
    sticky = [
        part
        for read in POOL_READS
        for part in read["RequestItems"].values()
        if any("bind#" in json.dumps(k) for k in part["Keys"])
    ]
    assert len(sticky) >= 4  # every turn read its binding, on both processes
    assert all(part["ConsistentRead"] is True for part in sticky)


@pytest.mark.parametrize("kind", TURN.keys())
def test_every_turn_sent_at_once_lands_on_the_bound_deployment_across_two_processes(
    kind: str, clients: tuple[list[openai.OpenAI], dict[str, MockUpstream]]
) -> None:
    sdks, mocks = clients
    turn = TURN[kind]
    bound, attempts = turn(sdks[0])
    assert attempts == [(bound, False)]  # the first turn: the strategy's pick, now bound
    for n in range(1, TURNS):
        other = "b" if bound == "a" else "a"
        if n in FAILOVERS:
            mocks[bound].set_faults([], persistent={"status": 503})
        served, attempts = turn(sdks[n % 2])
        if n in FAILOVERS:
            mocks[bound].set_faults([])  # recovered, but the caller has moved on
            expected = [(bound, True), (other, False)]
            bound = other
        else:
            expected = [(bound, True)]
        assert (n, served, attempts) == (n, bound, expected)
    assert sum(len(m.requests()) for m in mocks.values()) == TURNS + len(FAILOVERS)


def test_a_stream_and_a_json_turn_share_the_binding(
    clients: tuple[list[openai.OpenAI], dict[str, MockUpstream]],
) -> None:
    """A failover in a stream moves the binding that the next (JSON) turn, elsewhere, reads."""
    sdks, mocks = clients
    bound, _ = _json_turn(sdks[0])
    other = "b" if bound == "a" else "a"
    mocks[bound].set_faults([], persistent={"status": 503})
    served, attempts = _stream_turn(sdks[1])
    mocks[bound].set_faults([])
    assert (served, attempts) == (other, [(bound, True), (other, False)])
    assert _json_turn(sdks[0]) == (other, [(other, True)])


def test_an_answer_reaches_the_client_when_its_binding_write_fails(
    start_gateway: Any,
    make_upstream: MakeUpstream,
    dynamo_endpoint: str,
    gateway_table: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The store goes away while the upstream answers: the answer is still a 200, never a 500."""
    slow = make_upstream("a")
    gateway = start_gateway(config(deployment("a", slow)))
    with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=ALICE_KEY, max_retries=0) as sdk:
        sdk.models.list()  # the configuration is cached: the request needs the store no more
        slow.set_faults([], persistent={"latency_ms": 2000})
        caplog.set_level(logging.WARNING, logger="edgeproxy")
        with ThreadPoolExecutor(1) as pool:
            sent = pool.submit(
                sdk.chat.completions.with_raw_response.create, model="fast-chat", messages=MESSAGES
            )
            # Once the upstream has the call, the state read was made: drop the table under it.
            wait_for(slow.requests, bool, "the upstream call")
            _drop_table(dynamo_endpoint, gateway_table)
            answer = sent.result()
    assert answer.status_code == 200
    assert answer.parse().choices[0].message.content == "Hello from a! You said: Hello!"
    assert any("could not record a success's binding" in r.message for r in caplog.records)


def _drop_table(endpoint: str, table: str) -> None:
    client = boto3.client("dynamodb", **client_kwargs(endpoint))
    try:
        client.delete_table(TableName=table)
    finally:
        client.close()


NOW = 1_000_000.0
DEP = Deployment(
    id="a",
    model="fast-chat",
    provider="openai_compat",
    base_url="http://127.0.0.1:9/v1",
    upstream_model="x",
)


async def test_a_failed_binding_write_is_counted_and_never_raised(
    store: DynamoStore, dynamo_client: Any, table_schema: TableSchema
) -> None:
    """Against a table that is not there (a real store error), ``bound()`` returns all the same."""
    key = BindingKey(ALICE, "fast-chat", "openai.chat")
    snapshot = await store.read_pool(
        SnapshotRequest("fast-chat", ["a"], [DEP.domain], int(NOW // 60), key)
    )
    ctx = PoolContext("fast-chat", [DEP], snapshot, key, StickySettings(), CircuitSettings())
    telemetry = Recorded()
    gone = DynamoStore(dynamo_client, "edgeproxy-no-such-table", table_schema, random.Random(0))
    outcomes = Outcomes(gone, lambda: NOW, random.Random(1), telemetry)
    attempt = Attempt(DEP, int(NOW // 60), NOW - 1, False, False, "req-1")

    success = outcomes.success(ctx, attempt, prompt_tokens=1, completion_tokens=1, latency_s=1)
    await success.bound()
    assert telemetry.times("OutcomeWriteFailures", write="binding") == 1
    await success.written()  # the counters failed too: counted, not raised
    assert telemetry.times("OutcomeWriteFailures", write="outcome") == 1
