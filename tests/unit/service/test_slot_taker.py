"""One slot taker for every partition of slot items (a deployment's, a client key's)."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

import pytest

from edgeproxy.errors import StoreError
from edgeproxy.service.slots import SlotTaker


class Partitions:
    """Slot items by partition: index -> holder (no expiry: these tests do not need it)."""

    def __init__(self) -> None:
        self.held: dict[str, dict[int, str]] = {}
        self.tried: list[list[int]] = []
        self.releases: list[tuple[str, int, str]] = []
        self.fail_release = False

    async def take(
        self, partition: str, order: Sequence[int], holder: str, until: float, now: float
    ) -> int | None:
        self.tried.append(list(order))
        slots = self.held.setdefault(partition, {})
        for index in order:
            if index not in slots:
                slots[index] = holder
                return index
        return None

    async def release(self, partition: str, index: int, holder: str) -> None:
        self.releases.append((partition, index, holder))
        if self.fail_release:
            raise StoreError("down")
        if self.held.get(partition, {}).get(index) == holder:
            del self.held[partition][index]


async def test_free_slots_are_tried_first_and_a_full_partition_gives_none() -> None:
    store = Partitions()
    taker = SlotTaker(store.take, store.release, "a slot of")
    rng = random.Random(1)
    first = await taker.take("k", [2], 3, "req-1", 10.0, 0.0, rng)
    assert first is not None
    assert first.index == 2
    assert store.tried[0] == [2, 0, 1]  # the free one, then the rest in index order
    assert store.held["k"][2].startswith("req-1:")
    rest = [await taker.take("k", [0, 1], 3, "r", 10.0, 0.0, rng) for _ in "ab"]
    assert sorted(s.index for s in rest if s is not None) == [0, 1]
    assert await taker.take("k", [], 3, "late", 10.0, 0.0, rng) is None
    assert await taker.take("other", [0], 1, "r", 10.0, 0.0, rng) is not None  # its own items


async def test_a_slot_is_released_once_and_a_failed_release_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Partitions()
    taker = SlotTaker(store.take, store.release, "a request slot of key")
    slot = await taker.take("k", [0], 1, "req", 10.0, 0.0, random.Random(0))
    assert slot is not None
    await slot.release()
    await slot.release()
    assert len(store.releases) == 1
    assert store.held["k"] == {}
    store.fail_release = True
    again = await taker.take("k", [0], 1, "req", 10.0, 0.0, random.Random(0))
    assert again is not None
    with caplog.at_level(logging.WARNING):
        await again.release()
    assert "could not release a request slot of key k" in caplog.text
