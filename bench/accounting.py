"""DynamoDB calls per request, on and off the critical path, and the store's own latency.

Critical path: the store logs the moment each call arrives; the client logs
when it sent each request and when the answer ended. Requests go one at a
time with a gap, so every call falls into exactly one request's window: a
call that arrives between "sent" and "answer ended" delayed the answer; one
that arrives after the end (a starlette ``BackgroundTask``) did not. For
streams the window is split again at the first token.

Store RTT: the store keeps one real body per operation the gateway sent; the
same request is replayed through ``DynamoClient`` (the gateway's client) so the
baseline pays the same client stack and the same embedded server.
"""

from __future__ import annotations

import contextlib
import json
import random
import statistics
import time
from collections import Counter
from typing import Any

from botocore.exceptions import ClientError

from bench.client import Sample
from edgeproxy.aws.dynamodb import DynamoClient
from edgeproxy.clients import store_options
from edgeproxy.settings import Settings
from edgeproxy_dev.aws import REGION
from edgeproxy_dev.runner import local_session

# A key no request routes on, for replaying writes without touching real counters.
RTT_KEY = "bench#rtt"
_CLIENT_METHODS = {"BatchGetItem": "batch_get_item", "UpdateItem": "update_item"}


def classify(samples: list[Sample], calls: list[list[Any]]) -> dict[str, Any]:
    """Per request: calls the first token waited for, the end waited for, and the rest.

    A call counts for a moment only if the store had answered it before that
    moment: an answer cannot have waited for a result that came later. (Going
    by arrival alone is racy: the after-response write can reach the store a
    few microseconds before the client has read the last byte.)
    """
    phases: dict[str, Counter[str]] = {
        "before_first_token": Counter(),
        "before_end": Counter(),
        "after_end": Counter(),
    }
    margins = {"critical": float("-inf"), "after": float("inf")}
    for operation, arrived, finished in calls:
        owner = next((s for s in reversed(samples) if s.sent <= arrived), None)
        if owner is None:
            continue  # before the first request: not one of ours
        if finished > owner.end:
            phases["after_end"][operation] += 1
            margins["after"] = min(margins["after"], finished - owner.end)
            continue
        margins["critical"] = max(margins["critical"], finished - owner.end)
        if owner.first is not None and finished <= owner.first:
            phases["before_first_token"][operation] += 1
        else:
            phases["before_end"][operation] += 1
    count = len(samples) or 1
    out: dict[str, Any] = {
        name: {op: n / count for op, n in sorted(ops.items())} for name, ops in phases.items()
    }
    critical = sum(phases["before_end"].values()) + sum(phases["before_first_token"].values())
    out["critical_per_request"] = critical / count
    out["after_per_request"] = sum(phases["after_end"].values()) / count
    # How close the classification came to the line, both ways (ms from the answer's end).
    out["closest_critical_ms"] = _ms(margins["critical"])
    out["closest_after_ms"] = _ms(margins["after"])
    out["requests"] = len(samples)
    return out


def _ms(seconds: float) -> float | None:
    return None if seconds in (float("inf"), float("-inf")) else 1000 * seconds


def per_request(calls: list[list[Any]], requests: int) -> dict[str, float]:
    """All calls of a load phase per completed request, by operation (and ``total``)."""
    ops = Counter(operation for operation, _a, _f in calls)
    out = {op: n / requests for op, n in sorted(ops.items())}
    out["total"] = sum(ops.values()) / requests
    return out


def server_ms(calls: list[list[Any]]) -> dict[str, float]:
    """Median time moto itself spent per call, by operation (arrival to finish)."""
    spans: dict[str, list[float]] = {}
    for operation, arrived, finished in calls:
        spans.setdefault(operation, []).append(1000 * (finished - arrived))
    return {op: statistics.median(v) for op, v in sorted(spans.items())}


async def store_rtt(endpoint: str, samples: dict[str, str], count: int) -> dict[str, float]:
    """p50 round trip (ms) of the gateway's own BatchGetItem and UpdateItem, replayed."""
    out: dict[str, float] = {}
    async with contextlib.AsyncExitStack() as stack:
        options = store_options(Settings(region=REGION))
        jitter = random.Random(0).random
        client = await DynamoClient.open(local_session(), REGION, endpoint, options, jitter)
        stack.push_async_callback(client.close)
        for operation, method in _CLIENT_METHODS.items():
            if operation not in samples:
                continue
            params = json.loads(samples[operation])
            if operation == "UpdateItem":
                params["Key"] = {**params["Key"], "pk": {"S": RTT_KEY}}
            call = _replay(getattr(client, method))
            await call(**params)  # warm: credentials, endpoint, first connection
            times = []
            for _ in range(count):
                started = time.perf_counter()
                await call(**params)
                times.append(1000 * (time.perf_counter() - started))
            out[operation] = statistics.median(times)
    return out


def _replay(call: Any) -> Any:
    """``call``, where a failed condition is an answer like any other (the sample kept may
    be a conditional write: with counters coalesced, most UpdateItems are)."""

    async def replayed(**params: Any) -> None:
        try:
            await call(**params)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    return replayed
