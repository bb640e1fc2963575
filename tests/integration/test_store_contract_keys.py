"""The ``Store`` contract for client keys (the rest is in ``test_store_contract.py``).

Same implementations (``IMPLEMENTATIONS``); kept apart only to keep modules small.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from edgeproxy.config.roles import Role
from edgeproxy.routing.access import ClientKey
from edgeproxy.state.store import Store
from tests.integration.test_store_contract import MINUTE, NOW, any_store

__all__ = ["any_store"]  # the parametrized fixture, shared with the main contract suite


def _key(char: str, **fields: Any) -> ClientKey:
    values: dict[str, Any] = {"prefix": "ep-abc...", "created_at": NOW, **fields}
    return ClientKey(char * 64, f"key-{char}", **values)


async def test_a_key_round_trips_and_is_found_by_digest_and_id(any_store: Store) -> None:
    key = _key(
        "a",
        role=Role.PRO,
        models=frozenset({"gpt-4o", "fast-chat"}),
        rpm_limit=5,
        tpm_limit=1000,
        budget_usd=2.5,
        expires_at=NOW + 60,
    )
    assert await any_store.put_client_key(key) is True
    assert await any_store.get_client_key(key.digest) == key
    assert await any_store.find_client_key(key.id) == key
    assert await any_store.get_client_key("f" * 64) is None
    assert await any_store.find_client_key("f" * 16) is None
    assert await any_store.find_client_key(key.id[:8]) is None  # ids match whole, not by prefix
    # No model list means every model; an empty list means none.
    bare = _key("b", models=frozenset())
    await any_store.put_client_key(bare)
    assert (await any_store.get_client_key(bare.digest)) == bare


async def test_creating_an_existing_digest_changes_nothing(any_store: Store) -> None:
    key = _key("c")
    assert await any_store.put_client_key(key) is True
    assert await any_store.put_client_key(_key("c", role=Role.ADMIN)) is False
    assert (await any_store.get_client_key(key.digest)) == key


async def test_listing_shows_every_key_oldest_first_revoked_ones_too(any_store: Store) -> None:
    first, second = _key("d"), _key("e", created_at=NOW + 1)
    await any_store.put_client_key(second)
    await any_store.put_client_key(first)
    assert await any_store.list_client_keys() == [first, second]
    revoked = dataclasses.replace(first, revoked=True, version=first.version + 1)
    assert await any_store.update_client_key(revoked, first.version)  # how a key is revoked
    assert (await any_store.get_client_key(first.digest)) == revoked
    assert [k.revoked for k in await any_store.list_client_keys()] == [True, False]


async def test_touch_sets_last_used_but_never_creates_a_key(any_store: Store) -> None:
    key = _key("f")
    await any_store.put_client_key(key)
    await any_store.touch_client_key(key.digest, NOW + 5)
    stored = await any_store.get_client_key(key.digest)
    assert stored is not None
    assert stored.last_used_at == NOW + 5
    await any_store.touch_client_key("9" * 64, NOW)
    assert await any_store.get_client_key("9" * 64) is None


async def test_key_admission_holds_its_limit_exactly_under_concurrency(any_store: Store) -> None:
    results = await asyncio.gather(
        *(any_store.admit_key("kid", MINUTE, 7, NOW + 3600) for _ in range(20))
    )
    assert sum(results) == 7
    assert await any_store.admit_key("kid", MINUTE + 1, 7, NOW + 3600) is True  # a new minute
    assert await any_store.admit_key("kid", MINUTE, 0, NOW + 3600) is False


async def test_key_usage_and_spend_add_up(any_store: Store) -> None:
    await asyncio.gather(
        any_store.record_key_usage("kid", MINUTE, 100, 0.25, NOW + 3600),
        any_store.record_key_usage("kid", MINUTE, 50, 0.5, NOW + 3600),
        any_store.record_key_usage("kid", None, 30, 0.25, NOW + 3600),  # spend only
    )
    usage = await any_store.read_key_usage("kid", MINUTE)
    assert (usage.minute, usage.tokens, usage.spend_usd) == (MINUTE, 150, 1.0)
    fresh = await any_store.read_key_usage("other", MINUTE)
    assert (fresh.tokens, fresh.spend_usd) == (0, 0.0)
