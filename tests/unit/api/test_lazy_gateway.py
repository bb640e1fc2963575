"""``LazyGateway``: built once, and the heap its build leaves is frozen out of the collector."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import cast

import pytest

from edgeproxy.api.app import LazyGateway
from edgeproxy.service.gateway import Gateway


class Built:
    """Stands in for the gateway: holds a container the collector tracks."""

    def __init__(self) -> None:
        self.config: list[dict[str, int]] = [{"n": i} for i in range(3)]


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Give the frozen objects back to the collector after the test (freezing is process-wide)."""
    yield
    gc.unfreeze()


async def test_the_build_is_frozen_so_full_collections_do_not_walk_it(unfrozen: None) -> None:
    builds: list[Built] = []

    async def factory() -> Gateway:
        builds.append(Built())
        return cast("Gateway", builds[-1])

    lazy = LazyGateway(factory)
    before = gc.get_freeze_count()
    first = await lazy.get()
    assert await lazy.get() is first  # built once
    assert len(builds) == 1
    assert gc.get_freeze_count() > before
    tracked = {id(o) for o in gc.get_objects()}
    assert id(builds[0].config) not in tracked  # in the permanent generation: never scanned
    assert id(builds[0].config[0]) not in tracked


async def test_the_builds_garbage_is_collected_before_the_freeze(unfrozen: None) -> None:
    class Cycle:
        def __init__(self) -> None:
            self.me = self

    async def factory() -> Gateway:
        Cycle()  # unreachable at once; only the collector frees a cycle
        return cast("Gateway", Built())

    await LazyGateway(factory).get()
    gc.unfreeze()
    assert not any(isinstance(o, Cycle) for o in gc.get_objects())
