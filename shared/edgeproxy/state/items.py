"""Conversion between the core's value types and DynamoDB typed attribute maps.

The store talks to the low-level client, whose items look like
``{"score": {"N": "0.5"}, "state": {"S": "open"}}``. Only the attributes are
converted here; keys and the TTL attribute are added by the store, which knows
their names. Optional fields that are ``None`` are left out of the item.
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal
from typing import Any

from edgeproxy.routing.snapshot import (
    SECONDS_PER_BUCKET,
    Binding,
    BindingKey,
    Capacity,
    Circuit,
    CircuitState,
    Health,
    OpenCause,
    Quota,
    QuotaStatus,
    Second,
    Usage,
)

AttributeValue = dict[str, Any]
Item = dict[str, AttributeValue]

# Derived from ``Usage`` (its fields after the bucket's key), so a new counter is one edit there.
_USAGE_FIELDS = tuple(
    f for f in dataclasses.fields(Usage) if f.name not in ("deployment_id", "minute", "seconds")
)
USAGE_COUNTERS: tuple[str, ...] = tuple(f.name for f in _USAGE_FIELDS)
# ``Usage.seconds``: four counters per second of the minute, ``s<ss><part>`` (short: a
# busy bucket holds all 60 seconds), e.g. ``s07n`` answers finished in second 7.
_SECOND_PARTS = (("n", "successes"), ("l", "latency_ms"), ("r", "rated"), ("t", "tokens_per_s"))


def text(value: str) -> AttributeValue:
    """A string attribute value."""
    return {"S": value}


def number(value: float) -> AttributeValue:
    """A number attribute value; DynamoDB has no NaN or infinity."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"DynamoDB cannot store {value!r}")
    return {"N": repr(value)}


def get_text(item: Item, name: str) -> str | None:
    """A string attribute, or None when absent."""
    value = item.get(name)
    return None if value is None else str(value["S"])


def get_int(item: Item, name: str, default: int = 0) -> int:
    """An integer attribute (counters, versions), or ``default`` when absent."""
    value = item.get(name)
    return default if value is None else int(Decimal(value["N"]))


def get_float(item: Item, name: str, default: float = 0.0) -> float:
    """A float attribute (times, sums, scores), or ``default`` when absent."""
    value = item.get(name)
    return default if value is None else float(value["N"])


def get_optional_float(item: Item, name: str) -> float | None:
    """A float attribute, or None when absent."""
    value = item.get(name)
    return None if value is None else float(value["N"])


def circuit_item(circuit: Circuit) -> Item:
    """The attributes of a circuit item (PutItem replaces the whole item)."""
    item: Item = {
        "state": text(circuit.state.value),
        "failures": number(circuit.failures),
        "window_start": number(circuit.window_start),
        "open_until": number(circuit.open_until),
        "level": number(circuit.level),
        "probe_until": number(circuit.probe_until),
        "version": number(circuit.version),
        "opened_at": number(circuit.opened_at),
    }
    if circuit.probe_owner is not None:
        item["probe_owner"] = text(circuit.probe_owner)
    if circuit.cause is not None:
        item["cause"] = text(circuit.cause.value)
    if circuit.reason is not None:
        item["reason"] = text(circuit.reason)
    return item


def circuit_from(deployment_id: str, item: Item) -> Circuit:
    """A circuit from a stored item; an empty item is the never-written circuit."""
    if not item:
        return Circuit(deployment_id)
    cause = get_text(item, "cause")
    return Circuit(
        deployment_id=deployment_id,
        state=CircuitState(get_text(item, "state") or CircuitState.CLOSED.value),
        failures=get_int(item, "failures"),
        window_start=get_float(item, "window_start"),
        open_until=get_float(item, "open_until"),
        level=get_int(item, "level"),
        probe_owner=get_text(item, "probe_owner"),
        probe_until=get_float(item, "probe_until"),
        cause=None if cause is None else OpenCause(cause),
        version=get_int(item, "version"),
        opened_at=get_float(item, "opened_at"),
        reason=get_text(item, "reason"),
    )


def usage_counters(delta: Usage) -> dict[str, float]:
    """The non-zero counters of ``delta`` by attribute name: what an ``ADD`` applies."""
    counters: dict[str, float] = {
        name: value for name in USAGE_COUNTERS if (value := getattr(delta, name))
    }
    for second, sums in delta.seconds.items():
        for part, name in _SECOND_PARTS:
            if value := getattr(sums, name):
                counters[f"s{second:02d}{part}"] = value
    return counters


def usage_from(deployment_id: str, minute: int, item: Item) -> Usage:
    """One usage bucket from a stored item (absent counters are 0)."""
    counters: dict[str, Any] = {
        f.name: get_float(item, f.name) if isinstance(f.default, float) else get_int(item, f.name)
        for f in _USAGE_FIELDS
    }
    seconds = {
        second: Second(
            get_int(item, f"s{second:02d}n"),
            get_int(item, f"s{second:02d}l"),
            get_int(item, f"s{second:02d}r"),
            get_float(item, f"s{second:02d}t"),
        )
        for second in range(SECONDS_PER_BUCKET)
        if f"s{second:02d}n" in item or f"s{second:02d}r" in item
    }
    return Usage(deployment_id, minute, **counters, seconds=seconds)


def health_item(health: Health) -> Item:
    """The attributes of a health item the health job sets (not the rejection counter)."""
    item: Item = {
        "score": number(health.score),
        "updated_at": number(health.updated_at),
        "samples": number(health.samples),
        "minute": number(health.minute),
    }
    if health.ewma_latency_ms is not None:
        item["ewma_latency_ms"] = number(health.ewma_latency_ms)
    if health.ewma_tokens_per_s is not None:
        item["ewma_tokens_per_s"] = number(health.ewma_tokens_per_s)
    return item


def health_from(deployment_id: str, item: Item) -> Health:
    """Health scores from a stored item."""
    return Health(
        deployment_id=deployment_id,
        score=get_float(item, "score", 0.5),
        ewma_latency_ms=get_optional_float(item, "ewma_latency_ms"),
        ewma_tokens_per_s=get_optional_float(item, "ewma_tokens_per_s"),
        updated_at=get_float(item, "updated_at"),
        samples=get_int(item, "samples"),
        minute=get_int(item, "minute"),
        credential_rejections=get_int(item, "credential_rejections"),
    )


def capacity_from(domain: str, item: Item) -> Capacity:
    """A failure domain's capacity circuit from a stored item (empty: not throttled)."""
    return Capacity(
        domain=domain,
        throttled_until=get_float(item, "throttled_until"),
        version=get_int(item, "version"),
    )


def binding_item(binding: Binding, version: int) -> Item:
    """The attributes of a binding item, except the TTL attribute (the store adds it)."""
    return {
        "deployment_id": text(binding.deployment_id),
        "generation": number(binding.generation),
        "version": number(version),
    }


def binding_from(key: BindingKey, item: Item, ttl_name: str) -> Binding:
    """A binding from a stored item; ``expires_at`` lives in the TTL attribute."""
    return Binding(
        key=key,
        deployment_id=get_text(item, "deployment_id") or "",
        expires_at=get_float(item, ttl_name),
        generation=get_int(item, "generation"),
        version=get_int(item, "version"),
    )


QUOTA_UNITS = ("requests", "tokens", "usd")


def quota_attributes(quota: Quota) -> Item:
    """The attributes one unit's reading sets on its credential's quota item."""
    unit = quota.unit
    item: Item = {
        f"{unit}_source": text(quota.source),
        f"{unit}_fetched_at": number(quota.fetched_at),
    }
    for name, value in (
        ("remaining", quota.remaining),
        ("limit", quota.limit),
        ("reset_at", quota.reset_at),
    ):
        if value is not None:
            item[f"{unit}_{name}"] = number(value)
    return item


def quota_status_from(credential: str, item: Item) -> QuotaStatus:
    """Every unit's last reading and the last refresh failure of one credential."""
    quotas = tuple(
        Quota(
            credential=credential,
            unit=unit,
            remaining=get_optional_float(item, f"{unit}_remaining"),
            limit=get_optional_float(item, f"{unit}_limit"),
            reset_at=get_optional_float(item, f"{unit}_reset_at"),
            source=get_text(item, f"{unit}_source") or "",
            fetched_at=get_float(item, f"{unit}_fetched_at"),
        )
        for unit in QUOTA_UNITS
        if f"{unit}_fetched_at" in item
    )
    return QuotaStatus(
        credential, quotas, error=get_text(item, "error"), error_at=get_float(item, "error_at")
    )
