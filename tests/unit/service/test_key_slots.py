"""A key's share of a process's requests in progress (``service.limits.slots``)."""

from __future__ import annotations

import pytest

from edgeproxy.errors import RateLimited
from edgeproxy.service.limits.slots import KeySlots


def test_a_key_beyond_its_share_is_refused_and_other_keys_are_not() -> None:
    slots = KeySlots(limit=2)
    held = [slots.take("key:a"), slots.take("key:a")]
    with pytest.raises(RateLimited) as refused:
        slots.take("key:a")
    assert refused.value.status == 429
    assert refused.value.retry_after is not None
    slots.take("key:b")  # another key's share is its own
    held[0].release()
    held[0].release()  # once only: a second release frees nothing more
    assert slots.held("key:a") == 1
    slots.take("key:a")
    with pytest.raises(RateLimited):
        slots.take("key:a")


def test_callers_without_a_key_of_their_own_are_not_counted() -> None:
    slots = KeySlots(limit=1)
    for _ in range(5):
        slots.take(None)
    slots.take("key:a")
    assert slots.held("key:a") == 1
