"""Retry-After and provider rate-limit headers."""

from __future__ import annotations

from email.utils import formatdate

import httpx
import pytest

from edgeproxy.upstream.headers import (
    RateLimitInfo,
    parse_duration,
    parse_retry_after,
    passthrough,
)

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": " 1.5 "}, 1.5),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": formatdate(NOW + 30, usegmt=True)}, 30.0),
        ({"retry-after": formatdate(NOW - 30, usegmt=True)}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "x", "retry-after": "9"}, 9.0),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(httpx.Headers(headers), now=NOW) == expected


def test_retry_after_names_are_case_insensitive() -> None:
    assert parse_retry_after(httpx.Headers({"Retry-After": "4"}), now=NOW) == 4.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("2.5", 2.5),
        ("1x", None),
        ("s", None),
        (None, None),
    ],
)
def test_parse_duration(value: str | None, expected: float | None) -> None:
    result = parse_duration(value)
    if expected is None:
        assert result is None
    else:
        assert result == pytest.approx(expected)


def test_openai_rate_limit_headers() -> None:
    headers = httpx.Headers(
        {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "499",
            "x-ratelimit-reset-requests": "120ms",
            "x-ratelimit-limit-tokens": "30000",
            "x-ratelimit-remaining-tokens": "29000",
            "x-ratelimit-reset-tokens": "2s",
        }
    )
    assert RateLimitInfo.from_headers(headers, NOW) == RateLimitInfo(
        limit_requests=500,
        remaining_requests=499,
        reset_requests_s=0.12,
        limit_tokens=30000,
        remaining_tokens=29000,
        reset_tokens_s=2.0,
    )


def test_anthropic_rate_limit_headers_reset_relative_to_now() -> None:
    headers = httpx.Headers(
        {
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "49",
            "anthropic-ratelimit-requests-reset": "2023-11-14T22:13:40Z",  # NOW + 20 s
            "anthropic-ratelimit-tokens-remaining": "1000",
            "anthropic-ratelimit-tokens-reset": "not a time",
        }
    )
    info = RateLimitInfo.from_headers(headers, NOW)
    assert info == RateLimitInfo(
        limit_requests=50,
        remaining_requests=49,
        reset_requests_s=20.0,
        remaining_tokens=1000,
    )


def test_no_rate_limit_headers_is_none() -> None:
    assert RateLimitInfo.from_headers(httpx.Headers({"content-type": "x"}), NOW) is None


def test_passthrough_keeps_only_rate_limits_and_timing_without_secrets() -> None:
    headers = {
        "X-RateLimit-Remaining-Requests": "9",
        "anthropic-ratelimit-tokens-reset": "2025-01-01T00:00:00Z",
        "openai-processing-ms": "120",
        "x-ratelimit-echo": "Bearer sk-secret-123",
        "x-ratelimit-long": "9" * 65,
        "x-ratelimit-newline": "1\r\nset-cookie: a",
        "set-cookie": "a=b",
        "openai-organization": "org-1",
        "x-request-id": "req_1",
    }
    assert passthrough(headers, ("sk-secret-123", None)) == {
        "x-ratelimit-remaining-requests": "9",
        "anthropic-ratelimit-tokens-reset": "2025-01-01T00:00:00Z",
        "openai-processing-ms": "120",
    }
