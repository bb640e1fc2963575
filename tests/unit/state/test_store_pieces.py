"""The store's pieces follow its protocols: each protocol's calls are implemented in one
class of ``state/dynamodb/``, and no call in two.

Read by introspection: the protocols are the ``Protocol`` classes ``state/store.py``
names (its own and the request path's it re-exports), the implementations the
classes the modules of ``state/dynamodb/`` define.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

from edgeproxy.state import store
from edgeproxy.state.dynamodb import dynamo

DYNAMODB = "edgeproxy.state.dynamodb"


def _protocols() -> dict[str, type]:
    return {
        name: value
        for name, value in vars(store).items()
        if inspect.isclass(value)
        and getattr(value, "_is_protocol", False)
        and value.__module__.startswith("edgeproxy.state.")
    }


def _declared(protocol: type) -> set[str]:
    """The calls ``protocol`` declares itself (not those of the protocols it composes)."""
    return {
        name
        for name, member in vars(protocol).items()
        if inspect.isfunction(member) and not name.startswith("_")
    }


def _calls(protocol: type) -> set[str]:
    """Every call of ``protocol``, its composed protocols' included."""
    return set().union(
        *(_declared(base) for base in protocol.__mro__ if base in _protocols().values())
    )


def _classes() -> list[type]:
    package = importlib.import_module(DYNAMODB)
    found: list[type] = []
    for module in pkgutil.iter_modules(package.__path__):
        loaded = importlib.import_module(f"{DYNAMODB}.{module.name}")
        found.extend(
            value
            for value in vars(loaded).values()
            if inspect.isclass(value) and value.__module__ == loaded.__name__
        )
    return found


def _implementers(call: str) -> set[str]:
    return {cls.__name__ for cls in _classes() if call in vars(cls)}


@pytest.mark.parametrize("name", sorted(_protocols()))
def test_each_call_of_each_protocol_is_implemented_in_exactly_one_class(name: str) -> None:
    for call in sorted(_calls(_protocols()[name])):
        assert len(_implementers(call)) == 1, f"{name}.{call}: {sorted(_implementers(call))}"


@pytest.mark.parametrize("name", sorted(_protocols()))
def test_each_protocol_is_implemented_in_one_place(name: str) -> None:
    # A reader who looks a protocol up finds its calls together, in one class.
    declared = _declared(_protocols()[name])
    places = set().union(*(_implementers(call) for call in declared)) if declared else set()
    assert len(places) <= 1, f"{name}'s calls are spread over {sorted(places)}"


def test_each_protocol_call_is_declared_once() -> None:
    # A call declared by two protocols would be two places to look its contract up in.
    owners: dict[str, list[str]] = {}
    for name, protocol in _protocols().items():
        for call in _declared(protocol):
            owners.setdefault(call, []).append(name)
    assert {call: names for call, names in owners.items() if len(names) > 1} == {}


def _state_protocols() -> dict[str, type]:
    """Every store protocol drawn in a module of ``state/`` (``store.py``'s and the others',
    such as ``usage_log.UsageLogStore``, which ``DynamoUsageLog`` implements apart)."""
    package = importlib.import_module("edgeproxy.state")
    found: dict[str, type] = {}
    for module in pkgutil.iter_modules(package.__path__):
        if module.ispkg:
            continue
        loaded = importlib.import_module(f"edgeproxy.state.{module.name}")
        found.update(
            (name, value)
            for name, value in vars(loaded).items()
            if inspect.isclass(value)
            and getattr(value, "_is_protocol", False)
            and value.__module__ == loaded.__name__
        )
    return found


@pytest.mark.parametrize("name", sorted(_state_protocols()))
def test_each_call_of_every_state_protocol_has_one_implementation(name: str) -> None:
    # Not only the protocols ``Store`` composes: a store of its own (the request log's)
    # follows the same rule, one class of ``state/dynamodb/`` per call.
    protocol = _state_protocols()[name]
    for call in sorted(_declared(protocol)):
        assert len(_implementers(call)) == 1, f"{name}.{call}: {sorted(_implementers(call))}"


def test_every_state_protocol_call_is_declared_once() -> None:
    owners: dict[str, list[str]] = {}
    for name, protocol in _state_protocols().items():
        for call in _declared(protocol):
            owners.setdefault(call, []).append(name)
    assert {call: names for call, names in owners.items() if len(names) > 1} == {}


def test_the_store_composes_every_piece() -> None:
    assert _calls(store.Store) <= set(dir(dynamo.DynamoStore))
    pieces = {base.__name__ for base in dynamo.DynamoStore.__bases__}
    implementing = set().union(*(_implementers(call) for call in _calls(store.Store)))
    assert implementing == pieces


def _table() -> dict[str, tuple[set[str], str]]:
    """``DynamoStore``'s docstring table: each piece, the protocols it implements, its module."""
    rows = re.findall(r"^ +(Dynamo\w+) +([\w, ]+?) +(\w+)$", dynamo.DynamoStore.__doc__ or "", re.M)
    return {piece: (set(protocols.split(", ")), module) for piece, protocols, module in rows}


def test_the_store_docstring_says_where_each_protocol_is() -> None:
    table, pieces = _table(), {base.__name__: base for base in dynamo.DynamoStore.__bases__}
    assert set(table) == set(pieces)
    named = [protocol for protocols, _ in table.values() for protocol in protocols]
    declaring = {name for name, protocol in _protocols().items() if _declared(protocol)}
    assert sorted(named) == sorted(declaring)  # each protocol in one row, every one in a row
    for piece, (protocols, module) in table.items():
        assert pieces[piece].__module__ == f"{DYNAMODB}.{module}"
        calls = set().union(*(_declared(_protocols()[name]) for name in protocols))
        implemented = {call for call in _calls(store.Store) if call in vars(pieces[piece])}
        assert implemented == calls, piece


def test_the_check_sees_the_protocols_and_the_pieces() -> None:
    # A renamed module would make the checks above pass on nothing.
    assert {"RouterStore", "CounterStore", "OutcomeStore", "AdminStore", "Store"} <= set(
        _protocols()
    )
    assert len(_calls(store.Store)) >= 35
    assert _declared(store.CounterStore) == set()
    assert _calls(store.CounterStore) == {"record", "record_key_usage"}
    assert {"UsageLogStore", "LeaseStore", "AnswerStore", "PoolSource"} <= set(_state_protocols())
    assert set(_protocols()) <= set(_state_protocols()) | {"Store"}
