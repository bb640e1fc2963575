"""The in-process configuration cache: one read per TTL, stale-but-serving on store errors."""

from __future__ import annotations

from edgeproxy.config.loader import to_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import StoreUnavailable
from edgeproxy.service.config_cache import ConfigCache
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
