"""The cost rule with prompt-cache tokens (README "Prompt-cache pricing")."""

from __future__ import annotations

import pytest

from edgeproxy.routing.access import cost_usd

from .builders import dep

SONNET = {
    "input_price_per_mtok": 3.0,
    "output_price_per_mtok": 15.0,
    "cache_read_price_per_mtok": 0.3,
    "cache_write_price_per_mtok": 3.75,
}


def test_readmes_worked_example() -> None:
    # 1,000 uncached, 200,000 read, 100,000 written, 500 output: $0.4455 (README).
    priced = dep("claude", **SONNET)
    prompt = 1_000 + 200_000 + 100_000  # prompt_tokens count every input token
    assert cost_usd(priced, prompt, 500, 200_000, 100_000) == pytest.approx(0.4455, abs=1e-12)


def test_cache_tokens_are_priced_apart_from_the_uncached_input() -> None:
    priced = dep("claude", **SONNET)
    assert cost_usd(priced, 1_000_000, 0, 1_000_000, 0) == pytest.approx(0.3)
    assert cost_usd(priced, 1_000_000, 0, 0, 1_000_000) == pytest.approx(3.75)
    assert cost_usd(priced, 1_000_000, 0) == pytest.approx(3.0)


def test_unset_cache_prices_are_the_input_price() -> None:
    plain = dep("p", input_price_per_mtok=2.0, output_price_per_mtok=10.0)
    assert cost_usd(plain, 300_000, 0, 200_000, 100_000) == pytest.approx(0.6)


def test_a_free_cache_read_price_is_kept_not_taken_for_unset() -> None:
    priced = dep("p", input_price_per_mtok=2.0, cache_read_price_per_mtok=0.0)
    assert cost_usd(priced, 1_000_000, 0, 1_000_000, 0) == 0.0


def test_cache_counts_over_the_prompt_never_make_a_negative_uncached_part() -> None:
    priced = dep("claude", **SONNET)
    assert cost_usd(priced, 10, 0, 1_000_000, 0) == pytest.approx(0.3)
