"""The store side of sharded counters: which shard a write goes to, and summing what was read.

``routing.allowance`` splits a limit; this module keeps what the
store needs beyond that arithmetic: the shard count it last saw for each
deployment (``ShardCounts``: the configuration passes it on every admission
and read, and an outcome write, which carries only the bucket, goes to a
random shard below it), and the sum of a bucket's shard items, so every
reader above the store sees one bucket.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from decimal import Decimal

from edgeproxy.state.items import Item


class ShardCounts:
    """Each deployment's shard count as last passed in; 1 for one never seen."""

    def __init__(self, rng: random.Random) -> None:
        """``rng``: the process's generator (load spreading, not security), passed down."""
        self._counts: dict[str, int] = {}
        self._rng = rng

    def note(self, deployment_id: str, shards: int) -> int:
        """Remember ``shards`` for ``deployment_id``; returns it (at least 1)."""
        shards = max(1, shards)
        if shards == 1:
            self._counts.pop(deployment_id, None)
        else:
            self._counts[deployment_id] = shards
        return shards

    def of(self, deployment_id: str) -> int:
        """The shard count last noted for ``deployment_id``."""
        return self._counts.get(deployment_id, 1)

    def pick(self, deployment_id: str) -> int:
        """A random shard of ``deployment_id`` for a write that any shard may take."""
        return self.start(self.of(deployment_id))

    def start(self, shards: int) -> int:
        """A random shard below ``shards`` (where an admission starts probing)."""
        return self._rng.randrange(shards) if shards > 1 else 0


def summed(found: Iterable[Item], ttl: str = "") -> Item | None:
    """One item whose number attributes are the sums of ``found``'s (None: nothing found).

    The TTL attribute ``ttl`` keeps its latest value instead; other
    attributes (the keys) are the first item's. A number missing from an
    item counts as 0.
    """
    total: Item | None = None
    sums: dict[str, Decimal] = {}
    for item in found:
        if total is None:
            total = dict(item)
        for name, value in item.items():
            if name == ttl and "N" in value:
                latest = max(Decimal(value["N"]), sums.get(name, Decimal(value["N"])))
                sums[name] = latest
            elif "N" in value:
                sums[name] = sums.get(name, Decimal(0)) + Decimal(value["N"])
    if total is None:
        return None
    for name, sum_ in sums.items():
        total[name] = {"N": str(sum_)}
    return total
