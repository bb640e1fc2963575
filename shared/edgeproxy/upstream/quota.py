"""Quota fetchers: read one credential's quota from its provider (the refresh job's I/O).

Each fetcher turns a source (``config.quota``) into readings, one per unit.
httpx errors, error statuses and answers of the wrong shape become a
``QuotaFetchError`` here, with a fixed text that names the source: never
the credential, never the provider's own message (it may echo the request).
A selector that matches nothing in an otherwise good answer is an error too,
so a misspelt path is reported instead of silently never resolving.

    readings = await fetch(source, credential, http, now=clock())
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import httpx

from edgeproxy.config.quota import JsonParams, OpenRouterKeyParams, ProbeParams, QuotaSource
from edgeproxy.errors import QuotaFetchError
from edgeproxy.routing.snapshot import Quota, credential_key
from edgeproxy.upstream.headers import RateLimitInfo

ANTHROPIC_VERSION = "2023-06-01"


async def fetch(
    source: QuotaSource, credential: str | None, http: httpx.AsyncClient, *, now: float
) -> list[Quota]:
    """The readings ``source`` reports now (``credential``: the resolved secret, if any)."""
    params = source.parsed()
    key = credential_key(source.credential)
    headers: dict[str, str]
    if isinstance(params, OpenRouterKeyParams):
        answer = await _get(source, http, f"{params.base_url.rstrip('/')}/key", _bearer(credential))
        return _openrouter(source, key, answer, now)
    if isinstance(params, JsonParams):
        headers = {}
        if credential:
            headers[params.auth_header] = f"{params.auth_scheme} {credential}".strip()
        answer = await _get(source, http, params.url, headers)
        return [_json_reading(source, params, key, answer, now)]
    if isinstance(params, ProbeParams):
        return await _probe(source, params, key, credential, http, now)
    raise QuotaFetchError(f"quota source {source.name!r}: fetcher {source.fetcher!r} has no reader")


def _bearer(credential: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {credential}"} if credential else {}


async def _get(
    source: QuotaSource, http: httpx.AsyncClient, url: str, headers: Mapping[str, str]
) -> Any:
    try:
        response = await http.get(url, headers=dict(headers), timeout=source.timeout_seconds)
    except httpx.TimeoutException:
        raise QuotaFetchError(f"quota source {source.name!r}: timed out") from None
    except httpx.HTTPError as exc:
        raise QuotaFetchError(f"quota source {source.name!r}: {type(exc).__name__}") from None
    if response.status_code != 200:
        raise QuotaFetchError(f"quota source {source.name!r}: HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise QuotaFetchError(f"quota source {source.name!r}: the answer is not JSON") from None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _openrouter(source: QuotaSource, key: str, answer: Any, now: float) -> list[Quota]:
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, dict):
        raise QuotaFetchError(f"quota source {source.name!r}: no 'data' object in the answer")
    limit = _number(data.get("limit"))
    remaining = _number(data.get("limit_remaining"))
    if remaining is None and limit is not None:
        used = _number(data.get("usage"))
        remaining = None if used is None else limit - used
    # A key without a credit limit has no quota to run out of: nothing to record but the fact.
    return [Quota(key, "usd", remaining, limit, None, source.name, now)]


def _path(answer: Any, path: str) -> Any:
    value = answer
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _reset(value: Any, fmt: str, now: float) -> float | None:
    if fmt == "iso":
        if not isinstance(value, str):
            return None
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return when.timestamp() if when.tzinfo else None
    number = _number(value)
    if number is None:
        return None
    return now + number if fmt == "seconds" else number


def _json_reading(
    source: QuotaSource, params: JsonParams, key: str, answer: Any, now: float
) -> Quota:
    picked: dict[str, float | None] = {}
    for name, path in (("remaining", params.remaining), ("limit", params.limit)):
        if path is None:
            picked[name] = None
            continue
        value = _number(_path(answer, path))
        if value is None:
            raise QuotaFetchError(
                f"quota source {source.name!r}: {name} path {path!r} matched no number"
            )
        picked[name] = value
    reset = None
    if params.reset is not None:
        reset = _reset(_path(answer, params.reset), params.reset_format, now)
        if reset is None:
            raise QuotaFetchError(
                f"quota source {source.name!r}: reset path {params.reset!r} matched no "
                f"{params.reset_format} time"
            )
    return Quota(key, params.unit, picked["remaining"], picked["limit"], reset, source.name, now)


async def _probe(
    source: QuotaSource,
    params: ProbeParams,
    key: str,
    credential: str | None,
    http: httpx.AsyncClient,
    now: float,
) -> list[Quota]:
    base = params.base_url.rstrip("/")
    body: dict[str, Any] = {
        "model": params.model,
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "."}],
    }
    if params.provider == "anthropic":
        url, headers = f"{base}/messages", {"anthropic-version": ANTHROPIC_VERSION}
        if credential:
            headers["x-api-key"] = credential
    else:
        url, headers = f"{base}/chat/completions", _bearer(credential)
    try:
        response = await http.post(url, json=body, headers=headers, timeout=source.timeout_seconds)
    except httpx.TimeoutException:
        raise QuotaFetchError(f"quota source {source.name!r}: timed out") from None
    except httpx.HTTPError as exc:
        raise QuotaFetchError(f"quota source {source.name!r}: {type(exc).__name__}") from None
    # A 429 is an answer too: its headers say how long the credential is spent.
    if response.status_code not in (200, 429):
        raise QuotaFetchError(f"quota source {source.name!r}: HTTP {response.status_code}")
    info = RateLimitInfo.from_headers(response.headers, now)
    if info is None:
        raise QuotaFetchError(f"quota source {source.name!r}: the answer had no rate-limit headers")
    return readings_from_headers(key, info, now, source.name)


def readings_from_headers(key: str, info: RateLimitInfo, now: float, source: str) -> list[Quota]:
    """One reading per unit a provider's rate-limit headers reported."""
    readings = []
    for unit, remaining, limit, reset in (
        ("requests", info.remaining_requests, info.limit_requests, info.reset_requests_s),
        ("tokens", info.remaining_tokens, info.limit_tokens, info.reset_tokens_s),
    ):
        if remaining is None and limit is None:
            continue
        readings.append(
            Quota(
                key,
                unit,
                None if remaining is None else float(remaining),
                None if limit is None else float(limit),
                None if reset is None else now + reset,
                source,
                now,
            )
        )
    return readings
