"""The in-process configuration cache: one read per TTL, stale-but-serving on store errors."""

from __future__ import annotations

import asyncio

import pytest

from edgeproxy.config.loader import to_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import StoreUnavailable
from edgeproxy.service.config_cache import (
    MAX_STALE_S,
    REFRESH_WAIT_S,
    RETRY_AFTER_FAILURE_S,
    ConfigCache,
)
from edgeproxy.state.store import StoredConfig


def config(model: str) -> GatewayConfig:
    return GatewayConfig.model_validate(
        {
            "deployments": [
                {
                    "id": "a",
                    "model": model,
                    "provider": "openai",
                    "base_url": "https://api.example.com/v1",
                    "upstream_model": "u",
                }
            ]
        }
    )


class ConfigItem:
    """Just the configuration part of a store: the one item the cache reads."""

    def __init__(self) -> None:
        self.stored: StoredConfig | None = None
        self.reads = 0
        self.down = False

    async def load_config(self) -> StoredConfig | None:
        self.reads += 1
        if self.down:
            raise StoreUnavailable("store down")
        return self.stored


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_reads_once_per_ttl_and_picks_up_new_versions() -> None:
    item, clock = ConfigItem(), Clock()
    item.stored = StoredConfig(to_document(config("one")), 1)
    cache = ConfigCache(item, ttl_seconds=10, clock=clock)  # type: ignore[arg-type]
    assert (await cache.get()).public_models() == ["one"]
    item.stored = StoredConfig(to_document(config("two")), 2)
    clock.now += 9.9
    assert (await cache.get()).public_models() == ["one"]  # still within the TTL
    assert item.reads == 1
    clock.now += 0.2
    assert (await cache.get()).public_models() == ["two"]
    assert item.reads == 2


async def test_a_store_outage_keeps_the_last_good_configuration() -> None:
    item, clock = ConfigItem(), Clock()
    item.stored = StoredConfig(to_document(config("one")), 1)
    cache = ConfigCache(item, ttl_seconds=1, clock=clock)  # type: ignore[arg-type]
    await cache.get()
    item.down = True
    clock.now += 5
    assert (await cache.get()).public_models() == ["one"]


async def test_nothing_stored_means_no_models() -> None:
    cache = ConfigCache(ConfigItem(), ttl_seconds=1, clock=Clock())  # type: ignore[arg-type]
    assert (await cache.get()).public_models() == []


class SlowItem(ConfigItem):
    """A store whose reads hang until released (a black-holed store)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.hang = False

    async def load_config(self) -> StoredConfig | None:
        if self.hang:
            self.reads += 1
            await self.release.wait()
            raise StoreUnavailable("no answer")
        return await super().load_config()


async def test_a_hanging_refresh_never_blocks_readers_of_the_cached_copy() -> None:
    item, clock = SlowItem(), Clock()
    item.stored = StoredConfig(to_document(config("one")), 1)
    cache = ConfigCache(item, ttl_seconds=1, clock=clock)  # type: ignore[arg-type]
    await cache.get()
    item.hang = True
    before = item.reads
    clock.now += 5
    loop = asyncio.get_running_loop()
    started = loop.time()
    # The first reader waits at most REFRESH_WAIT_S; the others not at all.
    results = await asyncio.gather(*(cache.get() for _ in range(20)))
    assert loop.time() - started < REFRESH_WAIT_S + 0.2
    assert {tuple(c.public_models()) for c in results} == {("one",)}
    assert item.reads == before + 1  # one refresh in flight, not one per reader
    item.release.set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    # Failed: retried only after RETRY_AFTER_FAILURE_S, stale copy meanwhile.
    assert (await cache.get()).public_models() == ["one"]
    assert item.reads == before + 1
    item.hang = False
    item.stored = StoredConfig(to_document(config("two")), 2)
    clock.now += RETRY_AFTER_FAILURE_S
    assert (await cache.get()).public_models() == ["two"]  # recovered, no restart


async def test_past_the_staleness_bound_the_cache_fails_closed() -> None:
    item, clock = ConfigItem(), Clock()
    item.stored = StoredConfig(to_document(config("one")), 1)
    cache = ConfigCache(item, ttl_seconds=1, clock=clock)  # type: ignore[arg-type]
    await cache.get()
    item.down = True
    clock.now += 1 + MAX_STALE_S - 1
    assert (await cache.get()).public_models() == ["one"]
    clock.now += 2
    with pytest.raises(StoreUnavailable):
        await cache.get()
    item.down = False
    assert (await cache.get()).public_models() == ["one"]


async def test_a_cold_start_during_an_outage_raises_the_store_error() -> None:
    item = ConfigItem()
    item.down = True
    cache = ConfigCache(item, ttl_seconds=1, clock=Clock())  # type: ignore[arg-type]
    with pytest.raises(StoreUnavailable):
        await cache.get()
