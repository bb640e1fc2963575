"""Item keys: unambiguous, and usage sort keys ordered like the minutes they hold."""

from __future__ import annotations

import pytest

from edgeproxy.routing.snapshot import BindingKey
from edgeproxy.state import keys


def test_usage_sort_keys_order_like_minutes() -> None:
    minutes = [9, 10, 99, 100, 29_000_000, 29_000_001]
    assert sorted(minutes, key=keys.usage_sk) == minutes
    assert sorted(keys.usage_sk(m) for m in minutes) == [keys.usage_sk(m) for m in minutes]


@pytest.mark.parametrize("minute", [0, 1, 28_765_432])
def test_minute_of_inverts_usage_sk(minute: int) -> None:
    assert keys.minute_of(keys.usage_sk(minute)) == minute


def test_minute_of_rejects_other_sort_keys() -> None:
    with pytest.raises(ValueError, match="usage"):
        keys.minute_of(keys.CIRCUIT)


def test_binding_keys_with_separators_inside_do_not_collide() -> None:
    a = keys.binding_key(BindingKey(caller="a#b", pool="c", protocol="chat"))
    b = keys.binding_key(BindingKey(caller="a", pool="b#c", protocol="chat"))
    c = keys.binding_key(BindingKey(caller="a%23b", pool="c", protocol="chat"))
    assert len({a, b, c}) == 3


def test_items_of_one_deployment_share_a_partition() -> None:
    pks = {
        keys.circuit_key("d1")[0],
        keys.health_key("d1")[0],
        keys.usage_key("d1", 5)[0],
        keys.deployment_pk("d1"),
    }
    assert pks == {"dep#d1"}
    assert keys.circuit_key("d1") != keys.circuit_key("d2")
