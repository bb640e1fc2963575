"""The request log: one record per request, for every way a request ends.

Each test drives a real gateway (uvicorn, the moto server, mock upstreams)
and reads the log back the way an operator does (``/admin/usage/requests``).
"""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.sse import sse_events, stream_text
from tests.fixtures.table import TableView, wait_for
from tests.fixtures.upstream import CANON
from tests.integration.resilience.helpers import (
    router,
)
from tests.integration.usage.helpers import (
    ENV,
    PRICES,
    admin_get,
    chat,
    gateway_config,
    new_key,
    one_record,
    priced,
    records,
)

PATIENT = {"response_ms": 30_000, "idle_ms": 30_000, "total_ms": 60_000}


def cost(prompt: int, completion: int, prices: dict[str, float] = PRICES) -> float:
    return (
        prompt * prices["input_price_per_mtok"] + completion * prices["output_price_per_mtok"]
    ) / 1_000_000


@pytest.mark.parametrize("coalesce_ms", ["25", "0"], ids=["buffered", "direct"])
def test_a_success_is_one_record_with_its_tokens_and_cost(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, coalesce_ms: str
) -> None:
    gw = start_gateway(
        gateway_config(priced("a", upstream_a)), env={**ENV, "EDGEPROXY_COALESCE_MS": coalesce_ms}
    )
    key = new_key(gw.base_url)
    answer = chat(gw.base_url, key["key"])
    assert answer.status_code == 200
    usage = answer.json()["usage"]
    record = one_record(gw.base_url, clock.now())
    assert record["request_id"] == answer.headers["x-request-id"]
    assert (record["key_id"], record["key_name"]) == (key["id"], "billing-app")
    assert (record["model"], record["served_model"], record["deployment"]) == (
        "fast-chat",
        "fast-chat",
        "a",
    )
    assert record["tried"] == ["a"]
    assert (record["operation"], record["stream"], record["status"]) == ("chat", False, 200)
    assert (record["outcome"], record["failure_class"], record["attempts"]) == ("success", None, 1)
    assert (record["prompt_tokens"], record["completion_tokens"]) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    assert record["cost_usd"] == pytest.approx(
        cost(usage["prompt_tokens"], usage["completion_tokens"])
    )
    assert record["ttft_ms"] is None  # a JSON answer has no first token of its own
    assert record["latency_ms"] >= record["upstream_ms"] >= 0
    assert record["added_ms"] >= 0
    assert record["prompt"] is None
    assert record["answer"] is None
    # Kept for the configured days (30 by default) by the table's TTL attribute.
    assert record["expires_at"] == pytest.approx(record["at"] + 30 * 86400)


def test_a_failover_names_every_deployment_tried_and_the_one_that_served(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    cheap = {"input_price_per_mtok": 10.0, "output_price_per_mtok": 20.0}
    gw = start_gateway(
        gateway_config(priced("a", upstream_a, priority=1), priced("b", upstream_b, **cheap)),
        env=ENV,
    )
    upstream_a.set_faults([], persistent={"status": 503})
    key = new_key(gw.base_url)
    answer = chat(gw.base_url, key["key"])
    assert answer.status_code == 200
    usage = answer.json()["usage"]
    record = one_record(gw.base_url, clock.now())
    assert record["tried"] == ["a", "b"]
    assert (record["deployment"], record["attempts"], record["outcome"]) == ("b", 2, "success")
    # Priced at the deployment that served, not at the first one tried.
    assert record["cost_usd"] == pytest.approx(
        cost(usage["prompt_tokens"], usage["completion_tokens"], cheap)
    )


def test_a_request_every_deployment_failed_is_a_failed_record(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    upstream_a.set_faults([], persistent={"status": 503})
    key = new_key(gw.base_url)
    answer = chat(gw.base_url, key["key"])
    assert answer.status_code == 503
    record = one_record(gw.base_url, clock.now())
    assert (record["outcome"], record["status"], record["deployment"]) == ("failed", 503, None)
    assert record["failure_class"] == "transient"
    assert record["attempts"] >= 1
    assert set(record["tried"]) == {"a"}
    assert (record["completion_tokens"], record["cost_usd"]) == (0, 0.0)


def test_a_refused_request_is_logged_with_its_reason(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    key = new_key(gw.base_url, budget_usd=0.000001)
    assert chat(gw.base_url, key["key"]).status_code == 200
    wait_for(lambda: len(records(gw.base_url, clock.now(), 1)), bool, "the first record")
    refused = chat(gw.base_url, key["key"])
    assert refused.status_code == 429
    newest, _ = records(gw.base_url, clock.now(), 2)
    assert newest["request_id"] == refused.headers["x-request-id"]
    assert (newest["outcome"], newest["status"]) == ("refused", 429)
    assert newest["failure_class"] == "insufficient_quota"
    assert (newest["attempts"], newest["tried"], newest["deployment"]) == (0, [], None)


def test_a_key_s_rpm_refusal_leaves_no_record_and_its_tpm_refusal_does(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    # The key's verdict is one, but its rpm count is made before the request's record opens
    # (refused before routing starts, as the README's log section says), its reservations after.
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    by_rpm, by_tpm = new_key(gw.base_url, rpm_limit=1), new_key(gw.base_url, tpm_limit=1)
    assert chat(gw.base_url, by_rpm["key"]).status_code == 200
    over_rpm = chat(gw.base_url, by_rpm["key"])
    assert over_rpm.status_code == 429
    assert "requests per minute" in over_rpm.json()["error"]["message"]
    assert chat(gw.base_url, by_tpm["key"]).status_code == 200  # into an empty minute
    over_tpm = chat(gw.base_url, by_tpm["key"])
    assert over_tpm.status_code == 429
    assert "tokens per minute" in over_tpm.json()["error"]["message"]
    last = over_tpm.headers["x-request-id"]  # the rpm refusal's record would not come later

    def logged() -> list[dict[str, Any]]:
        return records(gw.base_url, clock.now(), 3)

    found = wait_for(logged, lambda rs: last in [r["request_id"] for r in rs], "its record")
    assert over_rpm.headers["x-request-id"] not in [r["request_id"] for r in found]
    assert [r["outcome"] for r in found].count("refused") == 1


@pytest.mark.parametrize("coalesce_ms", ["25", "0"], ids=["buffered", "direct"])
def test_a_stream_records_its_time_to_first_token_and_usage(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, coalesce_ms: str
) -> None:
    gw = start_gateway(
        gateway_config(priced("a", upstream_a)), env={**ENV, "EDGEPROXY_COALESCE_MS": coalesce_ms}
    )
    key = new_key(gw.base_url)
    answer = chat(gw.base_url, key["key"], stream=True, stream_options={"include_usage": True})
    [usage] = [e["usage"] for e in sse_events(answer) if isinstance(e, dict) and e.get("usage")]
    record = one_record(gw.base_url, clock.now())
    assert (record["stream"], record["outcome"], record["deployment"]) == (True, "success", "a")
    assert (record["prompt_tokens"], record["completion_tokens"]) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    assert record["ttft_ms"] is not None
    assert record["ttft_ms"] <= record["latency_ms"]


def _continuing(start_gateway: Any, a: MockUpstream, b: MockUpstream, **b_fields: Any) -> Any:
    return start_gateway(
        gateway_config(
            priced("a", a, priority=1, supports_prefill=True),
            priced("b", b, **b_fields),
            pools={"fast-chat": {"continuation": "prefill"}},
            router=router(stream={"idle_ms": 500}),
        ),
        env=ENV,
    )


def test_a_stream_cut_and_continued_is_one_success_served_by_the_continuation(
    start_gateway, clock: FleetClock, canonical_pair: tuple[MockUpstream, MockUpstream]
) -> None:
    a, b = canonical_pair
    gw = _continuing(start_gateway, a, b, supports_prefill=True)
    a.set_faults([{"cut_after_chunks": 5}])
    key = new_key(gw.base_url)
    answer = chat(gw.base_url, key["key"], stream=True, stream_options={"include_usage": True})
    assert stream_text(sse_events(answer)) == CANON
    record = one_record(gw.base_url, clock.now())
    assert (record["outcome"], record["continued"]) == ("success", True)
    assert (record["tried"], record["deployment"], record["attempts"]) == (["a", "b"], "b", 2)
    assert record["completion_tokens"] > 0  # what the continuation reported (a was cut first)


def test_a_stream_cut_for_good_is_a_stream_cut_record(
    start_gateway, clock: FleetClock, canonical_pair: tuple[MockUpstream, MockUpstream]
) -> None:
    a, b = canonical_pair
    gw = _continuing(start_gateway, a, b)  # b cannot continue
    a.set_faults([{"cut_after_chunks": 5}])
    b.set_faults([], persistent={"reject_prefill": True})
    key = new_key(gw.base_url)
    events = sse_events(chat(gw.base_url, key["key"], stream=True))
    assert events[-1]["error"]["code"] == "upstream_stream_truncated"
    record = one_record(gw.base_url, clock.now())
    assert (record["outcome"], record["status"], record["deployment"]) == ("stream_cut", 200, "a")
    assert record["failure_class"] == "transient"
    assert (record["completion_tokens"], record["cost_usd"]) == (0, 0.0)


def _patient(start_gateway: Any, upstream: MockUpstream) -> Any:
    return start_gateway(
        gateway_config(
            priced("a", upstream), router=router(json=PATIENT | {"idle_ms": None}, stream=PATIENT)
        ),
        env=ENV,
    )


def test_a_client_that_leaves_a_json_call_is_a_client_gone_record(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, table: TableView
) -> None:
    gw = _patient(start_gateway, upstream_a)
    key = new_key(gw.base_url)
    upstream_a.set_faults([{"stall": True}])
    body = json.dumps({"model": "fast-chat", "messages": [{"role": "user", "content": "Hi"}]})
    url = httpx.URL(gw.base_url)
    assert url.host
    assert url.port
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
        f"Authorization: Bearer {key['key']}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((url.host, url.port)) as sock:
        sock.sendall(head + body.encode())
        wait_for(lambda: len(upstream_a.requests()), lambda n: n > 0, "the upstream call")
    record = one_record(gw.base_url, clock.now())
    assert (record["outcome"], record["status"], record["failure_class"]) == (
        "client_gone",
        499,
        "client_gone",
    )
    assert record["tried"] == ["a"]
    assert record["cost_usd"] == 0.0


def test_a_client_that_leaves_mid_stream_is_a_client_gone_record(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = _patient(start_gateway, upstream_a)
    key = new_key(gw.base_url)
    words = " ".join(f"word{i}" for i in range(200))
    upstream_a.set_faults([{"content": words, "chunk_delay_ms": 100}])
    payload = {
        "model": "fast-chat",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
    }
    with httpx.Client(timeout=30) as client:
        request = client.build_request(
            "POST",
            gw.base_url + "/v1/chat/completions",
            json=payload,
            headers={"authorization": f"Bearer {key['key']}"},
        )
        response = client.send(request, stream=True)
        for line in response.iter_lines():
            if '"content":"word' in line:
                break
        response.close()
    record = one_record(gw.base_url, clock.now())
    assert (record["outcome"], record["status"], record["stream"]) == ("client_gone", 499, True)
    assert record["ttft_ms"] is not None  # it did see a first token
    assert record["deployment"] is None
    assert record["cost_usd"] == 0.0


def test_prompts_and_answers_are_kept_only_for_opted_in_pools_redacted_and_bounded(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    secret = "sk-proj-" + "A1b2C3d4" * 4
    gw = start_gateway(
        gateway_config(
            priced("a", upstream_a),
            priced("b", upstream_b, model="other-chat"),
            gateway={"request_log": {"bodies": ["fast-chat"], "body_bytes": 300}},
        ),
        env=ENV,
    )
    key = new_key(gw.base_url)
    long = f"my key is {secret} and password: hunter2hunter2 " + "x" * 1000
    messages = [{"role": "user", "content": long}]
    assert chat(gw.base_url, key["key"], messages=messages).status_code == 200
    kept = one_record(gw.base_url, clock.now())
    assert kept["prompt"] is not None
    assert kept["answer"] is not None
    assert secret not in kept["prompt"]
    assert "hunter2" not in kept["prompt"]
    assert "[redacted]" in kept["prompt"]
    assert len(kept["prompt"].encode()) <= 300
    assert kept["prompt"].endswith("...[truncated]")
    assert "Hello from a!" in kept["answer"]
    answer = httpx.post(
        gw.base_url + "/v1/chat/completions",
        json={"model": "other-chat", "messages": messages},
        headers={"authorization": f"Bearer {key['key']}"},
        timeout=30,
    )
    assert answer.status_code == 200
    newest, _ = records(gw.base_url, clock.now(), 2)
    assert newest["model"] == "other-chat"
    assert newest["prompt"] is None
    assert newest["answer"] is None


HOSTILE_MODELS: list[Any] = ["m" * 5000, "fast\x00chat", ["fast-chat"], "fast-chat\n", "x\u2028y"]


@pytest.mark.parametrize("coalesce_ms", ["25", "0"], ids=["buffered", "direct"])
def test_a_hostile_model_is_a_clean_400_and_never_an_unwritable_record(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, coalesce_ms: str
) -> None:
    # The probe: a 5,000-character model (past DynamoDB's 1,024-byte sort key of its
    # aggregate), one holding NUL, or a list, left a record that could not be written and
    # took the aggregates of its whole batch down with it after 2 minutes of retries.
    gw = start_gateway(
        gateway_config(priced("a", upstream_a)), env={**ENV, "EDGEPROXY_COALESCE_MS": coalesce_ms}
    )
    key = new_key(gw.base_url)
    for model in HOSTILE_MODELS:
        answer = chat(gw.base_url, key["key"], model=model)
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert (error["type"], error["param"]) == ("invalid_request_error", "model")
        assert "\x00" not in answer.text
        assert "m" * 300 not in answer.text  # the message does not repeat the whole name
    served = chat(gw.base_url, key["key"])  # in the same window as the refusals
    assert served.status_code == 200
    found = records(gw.base_url, clock.now(), 1)
    assert [r["request_id"] for r in found if r["status"] == 200] == [
        served.headers["x-request-id"]
    ]
    assert all(len(r["model"]) <= 256 for r in found)

    # Its aggregate was written too: the report (aggregates only) counts it.
    def report() -> dict[str, Any]:
        answer = admin_get(gw.base_url, "/admin/usage", group_by="model")
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    settled = wait_for(report, lambda r: r["totals"]["requests"] >= 1, "the served aggregate")
    assert [row["model"] for row in settled["rows"]] == ["fast-chat"]
