"""A DynamoDB capacity model: what each call costs and which partition throttles it.

Modelled from AWS's documentation (developer guide: "Partitions and data
distribution", "Burst and adaptive capacity", "Throughput capacity",
looked up 2026-12-01):

* a write costs one write unit per started KB of the larger of the item's
  sizes before and after it (a failed condition is charged the same); an
  eventually consistent read half a read unit per started 4 KB of each item,
  a key that finds nothing the minimum (0.5);
* each partition serves at most 1,000 write units and 3,000 read units per
  second (a token bucket per partition, refilled continuously, holding one
  second: ``burst_s``); a call beyond it is throttled and changes nothing;
* a new on-demand table serves 4,000 write and 12,000 read units at once:
  ``partitions=4``; an item's partition is its partition key's hash;
* adaptive capacity "isolates frequently accessed items": a partition that
  keeps throttling for ``split_after_s`` splits, its items shared out by their
  recent load over two partitions (AWS does not publish the delay: 15 s is an
  assumption); one item never splits, so one item's ceiling is one partition's;
* an item may not exceed 400 KB: a write that would is refused
  (``ItemTooLarge``), like DynamoDB's ValidationException.

Sizes follow DynamoDB's rule: an attribute is its name's UTF-8 length plus
its value's (a string: its UTF-8 length; a number: about one byte per two
significant digits, plus one).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from decimal import Decimal

Key = tuple[str, str]
Item = dict[str, float | str]

KB = 1024
ITEM_LIMIT = 400 * KB
WRITE_UNITS_PER_PARTITION = 1000.0
READ_UNITS_PER_PARTITION = 3000.0


class ItemTooLarge(Exception):
    """A write would make an item larger than 400 KB."""


def number_size(value: float | str) -> int:
    """Bytes of a number's value: one per two significant digits (leading and trailing
    zeroes trimmed, at most 38), plus one. ``value`` may be the wire form (``{"N": ...}``)."""
    digits = "".join(
        map(str, Decimal(value if isinstance(value, str) else repr(value)).as_tuple().digits)
    )
    significant = len(digits.strip("0")) or 1
    return math.ceil(min(significant, 38) / 2) + 1


def attribute_size(name: str, value: float | str) -> int:
    """Bytes of one attribute by DynamoDB's sizing rule."""
    if isinstance(value, str):
        return len(name.encode()) + len(value.encode())
    return len(name.encode()) + number_size(value)


def wire_item_size(item: dict[str, dict[str, str]]) -> int:
    """Bytes of a low-level (typed) item as the client returns it, keys included:
    ``{"pk": {"S": "dep#a"}, "requests": {"N": "12"}}``; strings and numbers only."""
    size = 0
    for name, typed in item.items():
        ((kind, value),) = typed.items()
        if kind == "S":
            size += attribute_size(name, value)
        elif kind == "N":
            size += len(name.encode()) + number_size(value)
        else:
            raise ValueError(f"no size rule here for {kind!r} ({name})")
    return size


def item_size(key: Key, item: Item) -> int:
    """Bytes of an item: its key attributes (``pk``, ``sk``) and every other attribute."""
    return (
        attribute_size("pk", key[0])
        + attribute_size("sk", key[1])
        + sum(attribute_size(n, v) for n, v in item.items())
    )


def write_units(before: int, after: int) -> float:
    """Write units of one write: per started KB of the larger size."""
    return float(max(1, math.ceil(max(before, after) / KB)))


def read_units(size: int) -> float:
    """Eventually consistent read units of one item (0: not found, charged 0.5)."""
    return 0.5 * max(1, math.ceil(size / (4 * KB)))


@dataclass
class _Bucket:
    rate: float
    depth: float
    tokens: float
    at: float = 0.0

    def take(self, units: float, now: float) -> bool:
        self.tokens = min(self.depth, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < units:
            return False
        self.tokens -= units
        return True


@dataclass
class Partition:
    """One partition: its items, its two token buckets, when it began throttling."""

    writes: _Bucket
    reads: _Bucket
    items: set[Key] = field(default_factory=set)
    hot_since: float | None = None
    last_throttle: float = -math.inf


@dataclass
class CapacityModel:
    """Partitions of one table, charging and throttling every call (time in seconds)."""

    partitions: int = 4
    burst_s: float = 1.0
    split_after_s: float = 15.0
    splits: int = 0
    _parts: list[Partition] = field(default_factory=list)
    _home: dict[Key, Partition] = field(default_factory=dict)
    _load: dict[Key, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._parts = [self._new() for _ in range(self.partitions)]

    def _new(self) -> Partition:
        w, r = WRITE_UNITS_PER_PARTITION, READ_UNITS_PER_PARTITION
        depth = self.burst_s
        return Partition(_Bucket(w, w * depth, w * depth), _Bucket(r, r * depth, r * depth))

    def partition_of(self, key: Key) -> Partition:
        """The partition serving ``key`` (its partition key's hash, until a split moves it)."""
        part = self._home.get(key)
        if part is None:
            part = self._parts[zlib.crc32(key[0].encode()) % len(self._parts)]
            part.items.add(key)
            self._home[key] = part
        return part

    def partition_count(self) -> int:
        """Partitions now (the initial ones plus one per split)."""
        return len(self._parts)

    def charge(self, key: Key, units: float, now: float, *, write: bool) -> bool:
        """Take ``units`` from ``key``'s partition; False: throttled (nothing was taken)."""
        part = self.partition_of(key)
        bucket = part.writes if write else part.reads
        if bucket.take(units, now):
            self._load[key] = self._load.get(key, 0.0) * 0.999 + units
            if now - part.last_throttle > 5.0:
                part.hot_since = None
            return True
        part.last_throttle = now
        if part.hot_since is None:
            part.hot_since = now
        elif now - part.hot_since >= self.split_after_s and len(part.items) > 1:
            self._split(part)
        return False

    def _split(self, part: Partition) -> None:
        """Share the partition's items over it and a new one, balancing their recent load."""
        ranked = sorted(part.items, key=lambda k: self._load.get(k, 0.0), reverse=True)
        other = self._new()
        loads = [0.0, 0.0]
        for key in ranked:
            side = 0 if loads[0] <= loads[1] else 1
            loads[side] += self._load.get(key, 0.0)
            if side == 1:
                part.items.discard(key)
                other.items.add(key)
                self._home[key] = other
        part.hot_since = None
        self._parts.append(other)
        self.splits += 1
