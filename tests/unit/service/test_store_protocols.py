"""Each request-path caller asks for the store calls it makes, and the sharing wrapper
offers only the calls it shares."""

from __future__ import annotations

import inspect

from edgeproxy.service.admission import InFlight
from edgeproxy.service.outcomes import Outcomes
from edgeproxy.service.pool import open_pool
from edgeproxy.service.router import Router
from edgeproxy.service.sharing.coalescing import CoalescingStore, SharedCalls
from edgeproxy.service.sharing.counter_buffer import CounterBuffer


def _calls(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }


def test_the_sharing_wrapper_implements_only_what_it_shares() -> None:
    assert _calls(CoalescingStore) - {"aclose"} == {
        "read_pool",
        "admit",
        "take_slot",
        "release_slot",
        "read_usage",  # passed through: the router's usage read after a failure
        "record",
        "record_key_usage",
    }
    # What it wraps is no wider than what it shares (plus the batch read its reads share).
    assert _calls(SharedCalls) == {
        "read_pool",
        "read_pools",
        "admit",
        "take_slot",
        "release_slot",
        "read_usage",
        "record",
        "record_key_usage",
    }


def test_each_caller_names_its_narrow_protocol() -> None:
    def store_type(fn: object) -> str:
        return str(inspect.signature(fn).parameters["store"].annotation)  # type: ignore[arg-type]

    assert store_type(Router.__init__) == "RouterStore"
    assert store_type(Outcomes.__init__) == "OutcomeStore"
    assert store_type(open_pool) == "PoolSource"
    assert store_type(InFlight.__init__) == "CounterSink"
    assert store_type(CounterBuffer.__init__) == "CounterStore"
