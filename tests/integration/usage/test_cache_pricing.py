"""Prompt-cache tokens priced at their own rates: the key's spend, the log record and the
usage report all equal README's formula ("Prompt-cache pricing") to the cent.

The mock reports cache reads and writes the provider's way (``cache_read_tokens`` /
``cache_write_tokens`` faults): Anthropic apart from ``input_tokens``, OpenAI's reads
inside ``prompt_tokens``. The stock SDKs read what the gateway answers.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.table import wait_for
from tests.integration.usage.helpers import (
    ENV,
    admin_get,
    gateway_config,
    key_spend,
    new_key,
    one_record,
    priced,
)

# Claude Sonnet's published prices per million tokens (reads 0.1x input, writes 1.25x).
PRICES = {
    "input_price_per_mtok": 3.0,
    "output_price_per_mtok": 15.0,
    "cache_read_price_per_mtok": 0.3,
    "cache_write_price_per_mtok": 3.75,
}
READ, WRITE = 200_000, 100_000
HELLO = [{"role": "user", "content": "Hello!"}]


def formula(uncached: int, read: int, write: int, output: int) -> float:
    """README's rule, written out here independently of the gateway's code."""
    return (uncached * 3.0 + read * 0.3 + write * 3.75 + output * 15.0) / 1_000_000


def _gateway(start_gateway: Any, upstream: MockUpstream, **fields: Any) -> Any:
    dep = priced("a", upstream, **{**PRICES, **fields})
    return start_gateway(gateway_config(dep), env=ENV)


def _settled(gw: Any, key: dict[str, Any], clock: FleetClock, expected: float) -> None:
    """The key's spend, the request's log record and the usage report: ``expected``."""
    record = one_record(gw.base_url, clock.now())
    assert record["cost_usd"] == pytest.approx(expected, abs=1e-9)
    spent = wait_for(lambda: key_spend(gw.base_url, key["id"]), bool, "spend")
    assert spent == pytest.approx(expected, abs=1e-9)

    def report() -> dict[str, Any]:
        answer = admin_get(gw.base_url, "/admin/usage", group_by="key")
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    found = wait_for(report, lambda r: r["totals"]["requests"] >= 1, "the report")
    [row] = [r for r in found["rows"] if r["key_id"] == key["id"]]
    assert row["cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert round(row["cost_usd"], 2) == round(spent, 2) == round(record["cost_usd"], 2)
    assert (row["cache_read_tokens"], row["cache_write_tokens"]) == (
        record["cache_read_tokens"],
        record["cache_write_tokens"],
    )
    assert row["uncached_prompt_tokens"] == record["uncached_input_tokens"]


def _anthropic_usage_matches(gw: Any, key: dict[str, Any], clock: FleetClock, usage: Any) -> None:
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (READ, WRITE)
    assert 0 < usage.input_tokens < READ  # Anthropic's input_tokens leave the cache out
    record = one_record(gw.base_url, clock.now())
    assert record["cache_read_tokens"] == READ
    assert record["cache_write_tokens"] == WRITE
    assert record["uncached_input_tokens"] == usage.input_tokens
    assert record["prompt_tokens"] == usage.input_tokens + READ + WRITE
    expected = formula(usage.input_tokens, READ, WRITE, usage.output_tokens)
    _settled(gw, key, clock, expected)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_an_anthropic_answer_with_cache_reads_and_writes_costs_the_formula(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream, stream: bool
) -> None:
    gw = _gateway(start_gateway, upstream_a, provider="anthropic")
    key = new_key(gw.base_url, budget_usd=50)  # a budget: the reservation settles at this cost
    upstream_a.set_faults([], persistent={"cache_read_tokens": READ, "cache_write_tokens": WRITE})
    with anthropic.Anthropic(base_url=gw.base_url, api_key=key["key"], max_retries=0) as client:
        if stream:
            with client.messages.stream(model="fast-chat", max_tokens=64, messages=HELLO) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(model="fast-chat", max_tokens=64, messages=HELLO)
    _anthropic_usage_matches(gw, key, clock, message.usage)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_an_openai_answer_with_cached_tokens_prices_them_inside_its_prompt(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream, stream: bool
) -> None:
    gw = _gateway(start_gateway, upstream_a, stream_usage=True)
    key = new_key(gw.base_url, budget_usd=50)
    upstream_a.set_faults([], persistent={"cache_read_tokens": READ})
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key["key"], max_retries=0) as client:
        if stream:
            chunks = client.chat.completions.create(
                model="fast-chat",
                messages=HELLO,  # type: ignore[arg-type]
                stream=True,
                stream_options={"include_usage": True},
            )
            [usage] = [c.usage for c in chunks if c.usage is not None]
        else:
            answer = client.chat.completions.create(model="fast-chat", messages=HELLO)  # type: ignore[arg-type]
            assert answer.usage is not None
            usage = answer.usage
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == READ
    uncached = usage.prompt_tokens - READ  # OpenAI's prompt_tokens include the cached ones
    assert 0 < uncached < READ
    record = one_record(gw.base_url, clock.now())
    assert (record["cache_read_tokens"], record["cache_write_tokens"]) == (READ, 0)
    assert record["uncached_input_tokens"] == uncached
    _settled(gw, key, clock, formula(uncached, READ, 0, usage.completion_tokens))


def test_an_anthropic_client_on_an_openai_deployment_sees_the_cached_reads_apart(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = new_key(gw.base_url)
    upstream_a.set_faults([], persistent={"cache_read_tokens": READ})
    with anthropic.Anthropic(base_url=gw.base_url, api_key=key["key"], max_retries=0) as client:
        message = client.messages.create(model="fast-chat", max_tokens=64, messages=HELLO)
    usage = message.usage
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (READ, 0)
    assert 0 < usage.input_tokens < READ
    _settled(gw, key, clock, formula(usage.input_tokens, READ, 0, usage.output_tokens))


def test_an_openai_client_on_an_anthropic_deployment_sees_the_cache_inside_its_prompt(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a, provider="anthropic")
    key = new_key(gw.base_url)
    upstream_a.set_faults([], persistent={"cache_read_tokens": READ, "cache_write_tokens": WRITE})
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key["key"], max_retries=0) as client:
        answer = client.chat.completions.create(model="fast-chat", messages=HELLO)  # type: ignore[arg-type]
    usage = answer.usage
    assert usage is not None
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == READ
    assert usage.prompt_tokens_details.cache_write_tokens == WRITE  # the SDK knows the field
    uncached = usage.prompt_tokens - READ - WRITE
    assert 0 < uncached < READ
    _settled(gw, key, clock, formula(uncached, READ, WRITE, usage.completion_tokens))
