"""Rate-limit headers renamed for the client's surface (pure: ``now`` is given)."""

from __future__ import annotations

from edgeproxy.api.rate_headers import ANTHROPIC_RATES, OPENAI_RATES, for_surface

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def test_anthropic_names_become_openai_ones() -> None:
    passed = {
        "anthropic-ratelimit-requests-limit": "4000",
        "anthropic-ratelimit-requests-remaining": "3999",
        "anthropic-ratelimit-requests-reset": "2023-11-14T22:13:21.500Z",
        "anthropic-ratelimit-tokens-reset": "2023-11-14T22:13:20.020Z",
        "anthropic-ratelimit-input-tokens-limit": "100",
    }
    out = for_surface(passed, OPENAI_RATES, now=NOW)
    assert out["x-ratelimit-limit-requests"] == "4000"
    assert out["x-ratelimit-remaining-requests"] == "3999"
    assert out["x-ratelimit-reset-requests"] == "1.5s"
    assert out["x-ratelimit-reset-tokens"] == "20ms"
    assert out["anthropic-ratelimit-input-tokens-limit"] == "100"  # no OpenAI name: as it is
    assert "x-ratelimit-limit-input-tokens" not in out


def test_openai_names_become_anthropic_ones() -> None:
    passed = {
        "x-ratelimit-limit-tokens": "2000000",
        "x-ratelimit-remaining-tokens": "1999000",
        "x-ratelimit-reset-tokens": "6m0s",
        "x-ratelimit-reset-requests": "20ms",
        "openai-processing-ms": "12",
    }
    out = for_surface(passed, ANTHROPIC_RATES, now=NOW)
    assert out["anthropic-ratelimit-tokens-limit"] == "2000000"
    assert out["anthropic-ratelimit-tokens-remaining"] == "1999000"
    assert out["anthropic-ratelimit-tokens-reset"] == "2023-11-14T22:19:20Z"
    assert out["anthropic-ratelimit-requests-reset"] == "2023-11-14T22:13:21Z"  # rounded up
    assert out["openai-processing-ms"] == "12"


def test_the_surfaces_own_names_win_and_odd_values_are_left_alone() -> None:
    passed = {
        "x-ratelimit-limit-requests": "5",
        "anthropic-ratelimit-requests-limit": "9",
        "anthropic-ratelimit-tokens-reset": "soon",
    }
    out = for_surface(passed, OPENAI_RATES, now=NOW)
    assert out["x-ratelimit-limit-requests"] == "5"
    assert "x-ratelimit-reset-tokens" not in out
    assert for_surface({}, ANTHROPIC_RATES, now=NOW) == {}
