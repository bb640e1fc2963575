"""OTLP export of the metrics: a gateway pushes what ``/metrics`` serves to a receiver on loopback.

The receiver (tests/fixtures/otlp_metrics.py) decodes the exporter's protobuf
bodies; its points must carry the conventions' dotted names and the request
log's counts, and agree with the gateway's own scrape.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.gateway import GatewayServer
from tests.fixtures.otlp_metrics import MetricsReceiver
from tests.integration.usage.helpers import chat, gateway_config, new_key, priced, records
from tests.integration.usage.test_metrics import METRICS_ENV, scrape, total


@pytest.fixture
def receiver() -> Iterator[MetricsReceiver]:
    running = MetricsReceiver().start()
    yield running
    running.stop()


def _sum(receiver: MetricsReceiver, name: str, **attributes: str) -> float:
    points = receiver.points(name)
    return sum(
        p.value for p in points if all(p.attributes.get(k) == v for k, v in attributes.items())
    )


def test_the_receiver_gets_requests_and_token_usage_under_genai_names(
    start_gateway: Callable[..., GatewayServer],
    clock: FleetClock,
    receiver: MetricsReceiver,
    upstream_a: MockUpstream,
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env={**METRICS_ENV, **receiver.env})
    key = new_key(gw.base_url)["key"]
    statuses = [chat(gw.base_url, key).status_code for _ in range(2)]
    upstream_a.set_faults([{"finish_reason": None}])  # a stream that ends without one
    statuses.append(chat(gw.base_url, key, stream=True).status_code)
    statuses.append(chat(gw.base_url, key, model="no-such-model").status_code)  # refused
    assert statuses == [200, 200, 200, 404]
    logged = records(gw.base_url, clock.now(), len(statuses))
    served = [r for r in logged if r["outcome"] == "success"]
    tokens = {"input": sum(r["prompt_tokens"] for r in served)}
    tokens["output"] = sum(r["completion_tokens"] for r in served)
    assert len(served) == 3
    assert tokens["input"] > 0
    assert tokens["output"] > 0

    def arrived(got: MetricsReceiver) -> bool:
        return (
            _sum(got, "edgeproxy.requests") == len(logged)
            and _sum(got, "edgeproxy.stream.anomalies") == 1
            and all(
                _sum(got, "gen_ai.client.token.usage", **{"gen_ai.token.type": kind}) == n
                for kind, n in tokens.items()
            )
        )

    receiver.wait_for(arrived)  # pushed every 100 ms: polled, not slept for
    assert receiver.services == {"edgeproxy"}
    [usage] = {p.unit for p in receiver.points("gen_ai.client.token.usage")}
    assert usage == "{token}"
    for point in receiver.points("gen_ai.client.token.usage"):
        assert point.attributes["gen_ai.provider.name"] == "openai"
        assert point.attributes["gen_ai.request.model"] == "fast-chat"
        assert point.attributes["edgeproxy.deployment"] == "a"
    assert _sum(receiver, "edgeproxy.requests", outcome="refused") == 1
    assert receiver.points("gen_ai.server.request.duration")
    assert [p.count for p in receiver.points("gen_ai.server.time_to_first_token")] == [1]
    [anomaly] = receiver.points("edgeproxy.stream.anomalies")
    assert anomaly.attributes == {
        "edgeproxy.deployment": "a",
        "anomaly": "missing_finish_reason",
    }

    # The same counts as the scrape, which the other tests tie to the request log.
    samples = scrape(gw.base_url)
    assert total(samples, "edgeproxy_requests_total") == len(logged)
    for kind, n in tokens.items():
        assert total(samples, "gen_ai_client_token_usage_sum", gen_ai_token_type=kind) == n


_IMPORTS = """
import json, sys
from edgeproxy.service.metrics import metrics_for
from edgeproxy.settings import Settings

metrics = metrics_for(Settings.from_env({"EDGEPROXY_METRICS": "on", **json.loads(sys.argv[1])}))
assert metrics is not None
print(json.dumps([m for m in sys.modules if m.startswith("opentelemetry")]))
"""


def _imported(env: dict[str, str]) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", _IMPORTS, json.dumps(env)],
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    imported: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return imported


def test_without_an_endpoint_metrics_import_no_opentelemetry() -> None:
    assert _imported({}) == []
    assert (
        _imported(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_METRICS_EXPORTER": "none"}
        )
        == []
    )
    with_endpoint = _imported({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert "opentelemetry.sdk.metrics" in with_endpoint
