"""The simulated table: items in memory, every call charged and throttled by ``CapacityModel``.

The calls the gateway makes on the request path, with DynamoDB's semantics
for them: a BatchGetItem whose throttled keys come back unprocessed, an
UpdateItem that ADDs numbers (optionally under an upper-bound condition on
one attribute; a failed condition is charged and changes nothing), and
DynamoDB's 400 KB item limit. Each call happens at one instant of virtual
time, so concurrent instances' conditional writes serialise as DynamoDB's do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.fleet.capacity import (
    ITEM_LIMIT,
    CapacityModel,
    Item,
    ItemTooLarge,
    Key,
    attribute_size,
    item_size,
    read_units,
    write_units,
)


class Throttled(Exception):
    """The partition had no units left for this call (nothing was applied)."""


@dataclass
class Counts:
    """What the table served: calls, throttles, failed conditions, units."""

    calls: int = 0
    throttles: int = 0
    condition_failures: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    too_large: int = 0


@dataclass
class SimTable:
    """Items and their sizes, on a capacity model."""

    model: CapacityModel
    counts: Counts = field(default_factory=Counts)
    _items: dict[Key, Item] = field(default_factory=dict)
    _sizes: dict[Key, int] = field(default_factory=dict)

    def item(self, key: Key) -> Item | None:
        """The stored item (for the report's checks; not a charged read)."""
        return self._items.get(key)

    def size(self, key: Key) -> int:
        """The stored item's size in bytes (0: absent)."""
        return self._sizes.get(key, 0)

    def batch_get(self, keys: list[Key], now: float) -> tuple[dict[Key, Item], list[Key]]:
        """Eventually consistent BatchGetItem: (found items, keys left unprocessed)."""
        self.counts.calls += 1
        found: dict[Key, Item] = {}
        unprocessed: list[Key] = []
        for key in keys:
            units = read_units(self._sizes.get(key, 0))
            if not self.model.charge(key, units, now, write=False):
                unprocessed.append(key)
                continue
            self.counts.read_units += units
            if key in self._items:
                found[key] = dict(self._items[key])
        if unprocessed and len(unprocessed) == len(keys):
            self.counts.throttles += 1
            raise Throttled(f"BatchGetItem: all {len(keys)} keys throttled")
        if unprocessed:
            self.counts.throttles += 1
        return found, unprocessed

    def add(
        self,
        key: Key,
        counters: dict[str, float],
        now: float,
        below: tuple[str, float] | None = None,
        *,
        transactional: bool = False,
    ) -> bool:
        """UpdateItem ``ADD counters`` if ``below`` (attribute, bound) holds: attribute < bound.

        ``transactional``: the write is one of a TransactWriteItems (twice the units).
        Returns False on a failed condition; raises ``Throttled`` or ``ItemTooLarge``.
        """
        self.counts.calls += 1
        old = self._items.get(key, {})
        before = self._sizes.get(key, 0)
        after = before or item_size(key, {})
        for name, value in counters.items():
            current = old.get(name)
            if current is not None:
                after -= attribute_size(name, current)
            after += attribute_size(name, float(current or 0) + value)
        units = write_units(before, after) * (2 if transactional else 1)
        if not self.model.charge(key, units, now, write=True):
            self.counts.throttles += 1
            raise Throttled(f"UpdateItem {key}")
        self.counts.write_units += units
        if below is not None and float(old.get(below[0], 0)) >= below[1]:
            self.counts.condition_failures += 1
            return False
        if after > ITEM_LIMIT:
            self.counts.too_large += 1
            raise ItemTooLarge(f"{key}: {after} bytes")
        item = self._items.setdefault(key, {})
        for name, value in counters.items():
            item[name] = float(item.get(name, 0)) + value
        self._sizes[key] = after
        return True
