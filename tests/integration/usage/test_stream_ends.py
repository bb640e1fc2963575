"""Stream ends a server cannot be trusted on: recorded as anomalies, or treated as cuts.

The mock upstream ends its stream with ``[DONE]`` and no finish chunk, as
llama.cpp's server does when it drops a running stream. By default (000's
completeness rule) that is a complete answer, and the request log says it was
irregular; with ``trust_stream_end: false`` it is a cut stream: failover
before the first token, continuation or an honest in-band error after it.
"""

from __future__ import annotations

from typing import Any

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.sse import sse_events, stream_text
from tests.fixtures.upstream import CANON, MakeUpstream
from tests.integration.resilience.helpers import (
    router,
)
from tests.integration.usage.helpers import ENV, chat, gateway_config, new_key, one_record, priced
from tests.integration.usage.test_metrics import METRICS_ENV, scrape, total

NO_FINISH = {"finish_reason": None}


def _finish_reasons(events: list[Any]) -> list[str]:
    return [
        c["finish_reason"]
        for e in events
        if isinstance(e, dict)
        for c in e.get("choices", [])
        if c.get("finish_reason")
    ]


def test_a_trusted_end_without_a_finish_reason_is_an_anomaly_in_the_request_log(
    start_gateway: Any, clock: FleetClock, make_upstream: MakeUpstream
) -> None:
    a = make_upstream("a", default_content=CANON)
    gw = start_gateway(gateway_config(priced("a", a)), env=METRICS_ENV)
    a.set_faults([NO_FINISH])
    key = new_key(gw.base_url)
    events = sse_events(chat(gw.base_url, key["key"], stream=True))
    assert stream_text(events) == CANON
    record = one_record(gw.base_url, clock.now())
    assert record["outcome"] == "success"
    assert record["anomalies"] == ["a:missing_finish_reason"]
    # And in the metrics an operator scrapes.
    samples = scrape(gw.base_url)
    anomalies = "edgeproxy_stream_anomalies_total"
    assert total(samples, anomalies, edgeproxy_deployment="a") == 1
    assert total(samples, anomalies, anomaly="missing_finish_reason") == 1


def test_an_untrusted_end_after_the_first_token_is_continued_elsewhere(
    start_gateway: Any, clock: FleetClock, canonical_pair: tuple[MockUpstream, MockUpstream]
) -> None:
    a, b = canonical_pair
    gw = start_gateway(
        gateway_config(
            priced("a", a, priority=1, supports_prefill=True, trust_stream_end=False),
            priced("b", b, supports_prefill=True, trust_stream_end=False),
            pools={"fast-chat": {"continuation": "prefill"}},
            router=router(),
        ),
        env=ENV,
    )
    a.set_faults([{**NO_FINISH, "cut_after_chunks": None, "content": "The quick brown fox"}])
    key = new_key(gw.base_url)
    events = sse_events(chat(gw.base_url, key["key"], stream=True))
    assert stream_text(events).startswith("The quick brown fox")
    assert len(stream_text(events)) > len("The quick brown fox")  # the rest came from b
    assert _finish_reasons(events) == ["stop"]
    record = one_record(gw.base_url, clock.now())
    assert (record["outcome"], record["tried"], record["continued"]) == (
        "success",
        ["a", "b"],
        True,
    )


def test_an_untrusted_end_without_continuation_is_an_honest_error_not_an_answer(
    start_gateway: Any, clock: FleetClock, make_upstream: MakeUpstream
) -> None:
    a = make_upstream("a", default_content=CANON)
    gw = start_gateway(gateway_config(priced("a", a, trust_stream_end=False)), env=ENV)
    a.set_faults([NO_FINISH])
    key = new_key(gw.base_url)
    events = sse_events(chat(gw.base_url, key["key"], stream=True))
    assert _finish_reasons(events) == []  # never called complete
    assert events[-1]["error"]["code"] == "upstream_stream_truncated"
    record = one_record(gw.base_url, clock.now())
    assert (record["outcome"], record["failure_class"]) == ("stream_cut", "transient")


def test_an_untrusted_empty_end_fails_over_before_anything_is_shown(
    start_gateway: Any, clock: FleetClock, canonical_pair: tuple[MockUpstream, MockUpstream]
) -> None:
    a, b = canonical_pair
    gw = start_gateway(
        gateway_config(
            priced("a", a, priority=1, trust_stream_end=False),
            priced("b", b, trust_stream_end=False),
        ),
        env=ENV,
    )
    a.set_faults([{**NO_FINISH, "content": ""}])
    key = new_key(gw.base_url)
    events = sse_events(chat(gw.base_url, key["key"], stream=True))
    assert stream_text(events) == CANON
    assert _finish_reasons(events) == ["stop"]
    record = one_record(gw.base_url, clock.now())
    assert (record["tried"], record["deployment"]) == (["a", "b"], "b")
