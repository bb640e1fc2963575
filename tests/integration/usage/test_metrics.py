"""``GET /metrics``: Prometheus text a scraper parses, whose counts are the request log's.

A real gateway (uvicorn, the moto server, mock upstreams) serves a mixed run
(answers, streams, a failover, refusals, failures); the scrape, parsed with
``prometheus_client``'s own parser, must count what the log recorded.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.table import wait_for
from tests.integration.resilience.helpers import router
from tests.integration.usage.helpers import (
    ENV,
    admin_get,
    chat,
    gateway_config,
    new_key,
    priced,
    records,
)

METRICS_ENV = {**ENV, "EDGEPROXY_METRICS": "on"}
Samples = list[tuple[str, dict[str, str], float]]


def scrape(base_url: str) -> Samples:
    answer = admin_get(base_url, "/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return [
        (sample.name, dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    ]


def total(samples: Samples, name: str, **labels: str) -> float:
    return sum(
        value
        for sample, found, value in samples
        if sample == name and all(found.get(k) == v for k, v in labels.items())
    )


def test_the_scrape_counts_what_the_request_log_recorded(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    cheap = {"input_price_per_mtok": 10.0, "output_price_per_mtok": 20.0}
    gw = start_gateway(
        gateway_config(priced("a", upstream_a, priority=1), priced("b", upstream_b, **cheap)),
        env=METRICS_ENV,
    )
    key = new_key(gw.base_url)["key"]
    statuses = [chat(gw.base_url, key).status_code for _ in range(3)]
    statuses += [chat(gw.base_url, key, stream=True).status_code for _ in range(2)]
    upstream_a.set_faults([], persistent={"status": 503})
    statuses.append(chat(gw.base_url, key).status_code)  # a fails over to b
    upstream_b.set_faults([], persistent={"status": 503})
    statuses.append(chat(gw.base_url, key).status_code)  # both fail
    statuses.append(chat(gw.base_url, key, model="no-such-model").status_code)  # refused
    assert statuses[:6] == [200] * 6
    assert statuses[6] >= 500
    assert statuses[7] == 404

    logged = records(gw.base_url, clock.now(), len(statuses))
    assert len(logged) == len(statuses)
    samples = scrape(gw.base_url)

    by_outcome = Counter((r["outcome"], r["failure_class"] or "") for r in logged)
    scraped = Counter(
        {
            (labels["outcome"], labels["error_type"]): int(value)
            for name, labels, value in samples
            if name == "edgeproxy_requests_total"
        }
    )
    assert scraped == by_outcome
    assert {outcome for outcome, _ in by_outcome} >= {"success", "failed", "refused"}

    for dep in ("a", "b"):
        served = [r for r in logged if r["deployment"] == dep and r["outcome"] == "success"]
        assert served, dep
        for kind, field in (("input", "prompt_tokens"), ("output", "completion_tokens")):
            tokens = total(
                samples,
                "gen_ai_client_token_usage_sum",
                edgeproxy_deployment=dep,
                gen_ai_token_type=kind,
                gen_ai_provider_name="openai",
                gen_ai_request_model="fast-chat",
            )
            assert tokens == sum(r[field] for r in served) > 0
        cost = total(samples, "edgeproxy_cost_usd_total", edgeproxy_deployment=dep)
        assert cost == pytest.approx(sum(r["cost_usd"] for r in served))

    # Every attempt the log names, timed once; the failed ones by their error class.
    attempts = total(samples, "gen_ai_client_operation_duration_seconds_count")
    assert attempts == sum(r["attempts"] for r in logged)
    assert total(
        samples, "gen_ai_client_operation_duration_seconds_count", error_type="transient"
    ) == attempts - sum(1 for r in logged if r["outcome"] == "success")
    assert total(samples, "gen_ai_server_request_duration_seconds_count") == len(logged)
    streamed = [r for r in logged if r["ttft_ms"] is not None]
    assert len(streamed) == 2
    assert total(samples, "gen_ai_server_time_to_first_token_seconds_count") == 2
    assert total(samples, "gen_ai_server_time_to_first_token_seconds_sum") == pytest.approx(
        sum(r["ttft_ms"] for r in streamed) / 1000
    )
    # The store's calls (the log's writes among them) are timed.
    assert total(samples, "edgeproxy_store_operation_duration_seconds_count", outcome="ok") > 0
    # No key, caller or request id in any label.
    values = {v for _, labels, _ in samples for v in labels.values()}
    private = {key} | {r["request_id"] for r in logged} | {r["key_id"] for r in logged}
    assert not values & private


def test_an_opened_circuit_shows_as_the_store_has_it(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        gateway_config(
            priced("a", upstream_a, priority=1),
            priced("b", upstream_b),
            router=router(circuit={"allowed_fails": 0}),
        ),
        env=METRICS_ENV,
    )
    key = new_key(gw.base_url)["key"]
    upstream_a.set_faults([], persistent={"status": 503})
    assert chat(gw.base_url, key).status_code == 200  # a fails, b serves
    stored = admin_get(gw.base_url, "/admin/circuits/a")
    assert stored.status_code == 200, stored.text
    state = stored.json()["state"]
    assert state == "open"
    samples = scrape(gw.base_url)
    assert total(samples, "edgeproxy_circuit_state", edgeproxy_deployment="a", state="open") == 1
    assert total(samples, "edgeproxy_circuit_state", edgeproxy_deployment="a", state="closed") == 0
    assert total(samples, "edgeproxy_circuit_transitions_total", state="open") == 1


def test_metrics_are_off_by_default_and_admin_only_when_on(
    start_gateway, upstream_a: MockUpstream
) -> None:
    off = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    answer = admin_get(off.base_url, "/metrics")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "not_found"
    on = start_gateway(gateway_config(priced("a", upstream_a)), env=METRICS_ENV)
    client = new_key(on.base_url)["key"]
    headers: dict[str, Any] = {"authorization": f"Bearer {client}"}
    assert httpx.get(on.base_url + "/metrics", timeout=30).status_code == 401
    assert httpx.get(on.base_url + "/metrics", headers=headers, timeout=30).status_code == 403


def test_the_scrape_counts_requests_when_the_request_log_is_off(
    start_gateway, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        gateway_config(priced("a", upstream_a), gateway={"request_log": {"enabled": False}}),
        env=METRICS_ENV,
    )
    key = new_key(gw.base_url)["key"]
    assert chat(gw.base_url, key).status_code == 200
    assert chat(gw.base_url, key, stream=True).status_code == 200

    def counted() -> float:
        return total(scrape(gw.base_url), "edgeproxy_requests_total", outcome="success")

    assert wait_for(counted, lambda n: n == 2, "two counted requests") == 2
