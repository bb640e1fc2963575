"""failoverbench S15 with the defaults: a binding made during a failover yields to the recovered primary.

The primary tier fails, callers fail over to the lower tier and bind there;
the primary recovers (its cooldown passes and the half-open probe succeeds);
from then on the bound callers' requests go to the primary again, and their
bindings follow them there. Real mock upstreams, the default router settings.
"""

from __future__ import annotations

from typing import Any

from edgeproxy.routing.affinity import caller_id, key_digest
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView
from tests.fixtures.upstream import MakeUpstream
from tests.integration.sticky.helpers import ALICE, ALICE_KEY, attempts, chat

BOB_KEY = "sk-bob-0123456789abcdef"
BOB = caller_id(key_digest(BOB_KEY), None, None)
MAX_CALLS = 12  # enough failures for the default allowed_fails (3) to open the circuit


def _bound_below(gateway: Any, table: TableView, key: str, caller: str) -> None:
    """Chat as ``key`` until the primary is not even tried and the caller is bound to ``b``."""
    for _ in range(MAX_CALLS):
        answer = chat(gateway, key)
        assert answer.status_code == 200, answer.text
        if attempts(answer) == [("b", True)]:
            return
        table.wait_binding(caller, "b")
    raise AssertionError(f"{caller} never settled on b with the primary's circuit open")


def test_bound_callers_return_to_the_recovered_primary_with_the_defaults(
    start_gateway: Any, make_upstream: MakeUpstream, table: TableView, clock: FleetClock
) -> None:
    a, b = make_upstream("a"), make_upstream("b")
    gateway = start_gateway(config(deployment("a", a, priority=1), deployment("b", b, priority=0)))
    assert attempts(chat(gateway, ALICE_KEY)) == [("a", False)]
    table.wait_binding(ALICE, "a")

    a.set_faults([], persistent={"status": 500})  # the primary fails
    _bound_below(gateway, table, ALICE_KEY, ALICE)
    _bound_below(gateway, table, BOB_KEY, BOB)

    served_by_b = len(b.requests())
    a.clear()  # the primary recovers; its cooldown passes
    clock.advance(400)  # past max_cooldown_seconds (300), whatever level it reached
    first = chat(gateway, ALICE_KEY)
    assert attempts(first) == [("a", False)]  # the probe, though Alice is bound to b
    table.wait_binding(ALICE, "a")
    # Bob, still bound to b, goes to the primary too; then both stay there on their bindings.
    assert attempts(chat(gateway, BOB_KEY)) == [("a", False)]
    table.wait_binding(BOB, "a")
    for key in (ALICE_KEY, BOB_KEY, ALICE_KEY):
        assert attempts(chat(gateway, key)) == [("a", True)]
    assert len(b.requests()) == served_by_b  # nothing went to the lower tier after recovery
