"""The request log and its hourly usage aggregates: records, item layout, store protocol.

One log record per request, and one ``ADD`` to the aggregate of its hour,
client key, public model and serving deployment; reports read only the
aggregates (``service/usage/report.py``), never the log.

==================  ======================  ==================================  ==================
item                pk                      sk                                  attributes
==================  ======================  ==================================  ==================
request log record  ``log#<hour>``          ``<epoch ms, 13 digits>#<request>`` the record's
                                                                                fields (below),
                                                                                expires_at
usage aggregate     ``usage#<day>``         ``<hour, 7 digits>#<key>#<model>#   requests,
                                            <deployment>[#<label>=<value>]...`` failures,
                                                                                prompt_tokens,
                                                                                completion_tokens,
                                                                                cost_usd,
                                                                                cache_hits,
                                                                                saved_usd,
                                                                                key_id, key_name,
                                                                                model, deployment,
                                                                                each set label,
                                                                                hour, expires_at
==================  ======================  ==================================  ==================

Labels (``LABELS``): record fields the aggregates keep as dimensions of
their own, so reports group and filter by them: the key's ``team`` and
``organization`` (ids, as they were when the request ran). A label that is
not set adds nothing to the sort key or the item, so a request of a key
without a team writes the same aggregate as before labels existed. A new
label is one more record field named in ``LABELS``; writers, readers and
reports take it from there.

``<hour>`` and ``<day>`` are whole hours and days since the epoch (UTC).
``<key>`` is the client key's public id (``-``: no table key, e.g. the
bootstrap admin key or authentication off); ``<deployment>`` is ``-`` for a
request no deployment served. ``#`` and ``%`` inside a name are written
``%23`` and ``%25`` so that the sort key stays unambiguous; readers take the
names from the attributes, never from the key. Both kinds carry the table's
TTL attribute (the log: ``request_log.retention_days``, the aggregates:
``request_log.report_days``); readers skip expired items themselves (TTL
deletion is lazy).

Partitions: each hour's log and each day's aggregates are spread over
``LOG_SHARDS`` partitions, so that no partition takes more than a
``1/LOG_SHARDS`` share of the writes (DynamoDB holds about 1,000 writes a
second per partition; ``bench/fleet/log_load.py`` holds 10,000 requests a
second, two log writes each, on a table of 64 partitions). Shard 0
is the unsharded name (``log#<hour>``, ``usage#<day>``: what was written
before the shards is read as shard 0); shard ``n`` > 0 is
``log#<hour>#<n>`` / ``usage#<day>#<n>``. A record's shard is a hash of its
request id; an aggregate increment goes to a random shard (ADD is
commutative, the way an outcome write goes to a random counter shard,
``state/counter_shards.py``), so one hot (hour, key, model, deployment)
is split too. Readers query every shard and sum (reports) or merge (the
newest records) what they find.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Protocol

HOUR_S = 3600
DAY_S = 86400
NO_KEY = "-"  # a request without a table key
NONE_SERVED = "-"  # a request no deployment served
LOG_SHARDS = 32  # partitions per hour of the log and per day of the aggregates
# Record fields the aggregates keep as dimensions (in sort-key order): see the module doc.
LABELS: tuple[str, ...] = ("team", "organization")
Labels = tuple[tuple[str, str], ...]  # (label, value) of each set label, in ``LABELS`` order


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the log keeps it (times in epoch seconds, durations in ms).

    ``tried``: every deployment attempted, in order; ``deployment``: the one
    that served (None: none did). ``cost_usd`` is the serving deployment's
    prices applied to the answer's tokens: the same figure the key's spend
    got. ``outcome``: ``success``, ``failed`` (every attempt failed),
    ``refused`` (no attempt was made: limits, open circuits, bad input),
    ``client_gone`` or ``stream_cut`` (an opened stream ended in an error).
    ``anomalies``: ``<deployment>:<anomaly>`` for every irregularity of a
    complete stream (000's anomalies: ``missing_finish_reason``, ``missing_done``,
    ``empty``, ``malformed_event``), in attempt order. ``notes``:
    ``<deployment>:<note>`` for what an attempt's call left out of the request
    (``cache_control_dropped``: a provider that cannot take prompt-cache marks).
    ``usage_estimated``: the tokens are the gateway's estimate (a stream whose
    upstream reported no usage), not the upstream's count.
    ``prompt``/``answer``: only for pools an operator opted in, redacted and
    cut at the configured size.
    """

    at: float
    request_id: str
    model: str
    operation: str
    stream: bool
    status: int
    outcome: str
    expires_at: float
    key_id: str | None = None
    key_name: str | None = None
    end_user: str | None = None  # the end user the request named (at most 256 characters)
    served_model: str | None = None
    deployment: str | None = None
    tried: tuple[str, ...] = ()
    failure_class: str | None = None
    attempts: int = 0
    continued: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Of prompt_tokens: read from / written to the provider's prompt cache, and the rest.
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    uncached_input_tokens: int = 0
    usage_estimated: bool = False
    cost_usd: float = 0.0
    latency_ms: int = 0
    upstream_ms: int = 0
    added_ms: int = 0
    ttft_ms: int | None = None
    anomalies: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    prompt: str | None = None
    answer: str | None = None
    # The key's team and that team's organization when the request ran (ids; ``LABELS``).
    team: str | None = None
    organization: str | None = None
    # The response cache: ``hit`` (served from it: no upstream call, ``cost_usd`` 0 and
    # ``saved_usd`` what the stored answer cost), ``miss``, ``bypass``; None: not cached.
    cache: str | None = None
    saved_usd: float = 0.0

    @property
    def hour(self) -> int:
        return int(self.at // HOUR_S)

    @property
    def labels(self) -> Labels:
        """The set ``LABELS`` of this record, in order."""
        return labels_of(getattr(self, name) for name in LABELS)


def labels_of(values: Iterable[str | None]) -> Labels:
    """``(label, value)`` of each value set, for values given in ``LABELS`` order."""
    return tuple((n, v) for n, v in zip(LABELS, values, strict=True) if v)


Bucket = tuple[int, str, str, str, Labels]  # hour, key, model, deployment, labels


@dataclass(frozen=True, slots=True)
class UsageRow:
    """The counters of one (hour, key, model, deployment, labels): an increment or a stored
    total.

    ``cost_usd`` is a ``Decimal`` (DynamoDB numbers are decimal): increments
    enter as the exact decimal of the float the key's spend got, so the
    stored sum is the same sum the key's spend holds.
    """

    hour: int
    key_id: str
    model: str
    deployment: str
    key_name: str = ""
    requests: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: Decimal = field(default_factory=Decimal)
    cache_read_tokens: int = 0  # of prompt_tokens
    cache_write_tokens: int = 0
    labels: Labels = ()  # the records' set ``LABELS``: part of the bucket
    cache_hits: int = 0  # requests answered by the response cache
    saved_usd: Decimal = field(default_factory=Decimal)  # what those answers had cost

    @property
    def bucket(self) -> Bucket:
        return (self.hour, self.key_id, self.model, self.deployment, self.labels)

    def label(self, name: str) -> str | None:
        """The value of label ``name`` (None: not set)."""
        return dict(self.labels).get(name)

    def plus(self, other: UsageRow) -> UsageRow:
        """The sum of two rows of one bucket (the later key name wins)."""
        return UsageRow(
            self.hour,
            self.key_id,
            self.model,
            self.deployment,
            other.key_name or self.key_name,
            self.requests + other.requests,
            self.failures + other.failures,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.labels,
            self.cache_hits + other.cache_hits,
            self.saved_usd + other.saved_usd,
        )


def _part(name: str) -> str:
    return name.replace("%", "%25").replace("#", "%23")


def _sharded(name: str, shard: int) -> str:
    return name if shard == 0 else f"{name}#{shard}"


def log_shard(request_id: str) -> int:
    """The log shard of a request (a stable hash of its id)."""
    return zlib.crc32(request_id.encode()) % LOG_SHARDS


def log_key(record: RequestRecord) -> tuple[str, str]:
    """The log record's ``(pk, sk)``."""
    pk = log_partition(record.hour, log_shard(record.request_id))
    return (pk, f"{int(record.at * 1000):013d}#{record.request_id}")


def log_partition(hour: int, shard: int = 0) -> str:
    """One shard of an hour's log."""
    return _sharded(f"log#{hour}", shard)


def usage_key(row: UsageRow, shard: int = 0) -> tuple[str, str]:
    """The ``(pk, sk)`` of the aggregate's item in ``shard``."""
    day = row.hour * HOUR_S // DAY_S
    parts = "#".join(_part(p) for p in (row.key_id, row.model, row.deployment))
    parts += "".join(f"#{name}={_part(value)}" for name, value in row.labels)
    return (usage_partition(day, shard), f"{row.hour:07d}#{parts}")


def usage_partition(day: int, shard: int = 0) -> str:
    """One shard of a day's aggregates."""
    return _sharded(f"usage#{day}", shard)


def hour_prefix(hour: int) -> str:
    """The sort-key prefix of one hour's aggregates."""
    return f"{hour:07d}#"


class UsageLogStore(Protocol):
    """Where the request log and its aggregates are written and read back."""

    async def put_requests(self, records: list[RequestRecord]) -> None:
        """Store log records (one PutItem, or BatchWriteItem for several)."""
        ...

    async def add_usage(self, row: UsageRow, expires_at: float) -> None:
        """ADD ``row``'s counters to its aggregate (commutative)."""
        ...

    async def read_usage_rows(self, first_hour: int, last_hour: int, now: float) -> list[UsageRow]:
        """Every aggregate of the hours ``[first_hour, last_hour]`` (every shard's, summed)."""
        ...

    async def read_requests(
        self,
        hour: int,
        limit: int,
        now: float,
        where: tuple[str, str] | None = None,
        end_user: str | None = None,
    ) -> list[RequestRecord]:
        """Up to ``limit`` log records of ``hour``, newest first (across every shard);
        ``where``: only records whose label (``LABELS``) has that value; ``end_user``: only
        the requests that named that end user."""
        ...
