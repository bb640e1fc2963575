"""Every sample event in events/ through its Lambda handler (functions/*/app.py).

The handlers run as Lambda runs them: imported once, invoked from one thread
that owns the event loop (an "execution environment"), against the embedded
DynamoDB and a loopback mock upstream.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.gateway import store
from tests.fixtures.otlp import Collector
from tests.fixtures.table import TableView
from tests.handlers.expectations import (
    EXPECTED,
    body_of,
    handler_config,
    handler_environment,
)

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"


@dataclass
class Context:
    """The parts of a Lambda context object Powertools reads."""

    function_name: str = "edgeproxy-test"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:edgeproxy-test"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"


def load(function: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "functions" / function / "app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def environment(
    monkeypatch: pytest.MonkeyPatch,
    dynamo_endpoint: str,
    gateway_table: str,
    upstream_a: MockUpstream,
) -> Iterator[ThreadPoolExecutor]:
    """Lambda's environment variables, a stored configuration, and one invoking thread."""
    store(
        dynamo_endpoint,
        gateway_table,
        handler_config(upstream_a),
    )
    for name, value in handler_environment(dynamo_endpoint, gateway_table).items():
        monkeypatch.setenv(name, value)
    with ThreadPoolExecutor(1, initializer=_new_loop) as pool:
        yield pool
        pool.submit(_close_loop).result()


def _new_loop() -> None:
    asyncio.set_event_loop(asyncio.new_event_loop())


def _close_loop() -> None:
    asyncio.get_event_loop().close()


def test_every_event_has_an_expectation() -> None:
    assert sorted(p.name for p in EVENTS.glob("*.json")) == sorted(EXPECTED)


def test_events_through_their_handlers(
    environment: ThreadPoolExecutor, capsys: pytest.CaptureFixture[str]
) -> None:
    handlers: dict[str, Any] = {}
    try:
        for name, (function, check) in EXPECTED.items():
            if function not in handlers:
                module = environment.submit(load, function, f"lambda_{function}").result()
                handlers[function] = module.handler
            event = json.loads((EVENTS / name).read_text())
            response = environment.submit(handlers[function], event, Context()).result()
            check(response)
    finally:
        for handler in handlers.values():
            environment.submit(handler.close).result()
    # Each invocation flushed its metrics as CloudWatch EMF documents on stdout,
    # one per dimension set.
    metrics: set[tuple[str, tuple[str, ...], str]] = set()
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            document = json.loads(line)
            for directive in document["_aws"]["CloudWatchMetrics"]:
                (dimensions,) = directive["Dimensions"]
                for metric in directive["Metrics"]:
                    where = document.get("deployment", "")
                    metrics.add((metric["Name"], tuple(sorted(dimensions)), where))
    assert ("Invocations", ("service",), "") in metrics
    assert ("Requests", ("service",), "") in metrics
    assert ("Attempts", ("deployment", "model", "outcome", "service"), "a") in metrics
    assert ("Attempts", ("deployment", "model", "outcome", "service"), "emb") in metrics


def test_the_platform_ceiling_ends_a_stalled_call_with_the_gateways_own_504(
    environment: ThreadPoolExecutor,
    monkeypatch: pytest.MonkeyPatch,
    upstream_a: MockUpstream,
    table: TableView,
) -> None:
    # The configured deadlines allow minutes; behind API Gateway the template caps them.
    monkeypatch.setenv("EDGEPROXY_MAX_TOTAL_MS", "1500")
    upstream_a.set_faults([{"stall": True}] * 5)
    module = environment.submit(load, "proxy", "lambda_proxy_capped").result()
    try:
        event = json.loads((EVENTS / "chat.json").read_text())
        started = time.monotonic()
        response = environment.submit(module.handler, event, Context()).result(timeout=20)
        elapsed = time.monotonic() - started
    finally:
        environment.submit(module.handler.close).result()
    assert response["statusCode"] == 504
    assert json.loads(body_of(response))["error"]["code"] == "timeout"
    assert elapsed < 10
    # Its outcome was recorded inside the invocation: the attempt is no longer in flight.
    assert table.inflight("a") == 0


def test_the_proxy_handler_leaves_no_counter_for_later(
    environment: ThreadPoolExecutor, monkeypatch: pytest.MonkeyPatch, table: TableView
) -> None:
    # Lambda freezes the process when the invocation returns: whatever the setting says,
    # the Mangum handler writes its counters inside the invocation (none is buffered).
    monkeypatch.setenv("EDGEPROXY_COALESCE_MS", "600000")
    module = environment.submit(load, "proxy", "lambda_proxy_uncoalesced").result()
    try:
        event = json.loads((EVENTS / "chat.json").read_text())
        for _ in range(3):
            response = environment.submit(module.handler, event, Context()).result(timeout=20)
            assert response["statusCode"] == 200
        # Read at once, no polling: the last invocation returned after its writes.
        counts = [table.usage_total("a", c) for c in ("requests", "successes", "inflight")]
    finally:
        environment.submit(module.handler.close).result()
    assert counts == [3, 3, 0]


def test_the_proxy_handler_sends_its_spans_before_the_invocation_returns(
    environment: ThreadPoolExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lambda may freeze the process once the invocation returns: the spans are flushed
    # inside it. The batch delay is ten minutes here, so only that flush can deliver them.
    collector = Collector().start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
        module = environment.submit(load, "proxy", "lambda_proxy_traced").result()
        try:
            event = json.loads((EVENTS / "chat.json").read_text())
            response = environment.submit(module.handler, event, Context()).result(timeout=20)
            spans = collector.spans()  # at once, no polling
        finally:
            environment.submit(module.handler.close).result()
    finally:
        collector.stop()
    assert response["statusCode"] == 200
    assert sorted(s.kind for s in spans) == ["CLIENT", "SERVER"]
    [request] = [s for s in spans if s.kind == "SERVER"]
    assert request.attributes["edgeproxy.deployment.id"] == "a"
