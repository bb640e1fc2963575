"""Whether a cut stream is continued, and why not: decided from values, with now=."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.config.policies import Operation
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.stream.completeness import StreamTracker
from edgeproxy.routing.stream.continuation import (
    MAX_CONTINUATIONS,
    Cut,
    Reason,
    continuable,
    decide,
)

NOW = 1_000.0
BUDGET = Budget(started_at=NOW - 5, total_ms=30_000, max_attempts=3)
CUT = Cut(Operation.CHAT, pinned=False, by_deadline=False, continuations=0)


def _tracker(*deltas: dict[str, Any]) -> StreamTracker:
    tracker = StreamTracker()
    for i, delta in enumerate(deltas):
        tracker.feed({"id": "x", "choices": [{"index": i, "delta": delta}]})
    return tracker


def test_plain_text_with_targets_and_time_left_is_continued() -> None:
    decision = decide(CUT, _tracker({"content": "Hi"}), "Hi", ["m"], BUDGET, now=NOW)
    assert (decision.go, decision.reason) == (True, Reason.CONTINUE)


@pytest.mark.parametrize(
    ("cut", "targets", "reason"),
    [
        (Cut(Operation.CHAT, True, False, 0), ["m"], Reason.PINNED),
        (Cut(Operation.EMBEDDINGS, False, False, 0), ["m"], Reason.NOT_CHAT),
        (Cut(Operation.CHAT, False, True, 0), ["m"], Reason.DEADLINE),
        (CUT, [], Reason.NO_TARGETS),
        (Cut(Operation.CHAT, False, False, MAX_CONTINUATIONS), ["m"], Reason.TOO_MANY_CUTS),
    ],
)
def test_what_the_request_rules_out(cut: Cut, targets: list[str], reason: Reason) -> None:
    decision = decide(cut, _tracker({"content": "Hi"}), "Hi", targets, BUDGET, now=NOW)
    assert (decision.go, decision.reason) == (False, reason)


def test_only_plain_text_of_one_choice_can_be_continued() -> None:
    assert continuable(_tracker({"content": "Hi"}), "Hi") is None
    assert continuable(_tracker({"content": "Hi"}), "  ") is Reason.NO_TEXT
    tools = _tracker({"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]})
    assert continuable(tools, "Hi") is Reason.TOOL_CALLS
    two = _tracker({"content": "a"}, {"content": "b"})
    assert continuable(two, "a") is Reason.SEVERAL_CHOICES
    decision = decide(CUT, two, "a", ["m"], BUDGET, now=NOW)
    assert (decision.go, decision.reason) == (False, Reason.SEVERAL_CHOICES)


def test_a_spent_budget_ends_the_answer() -> None:
    tracker = _tracker({"content": "Hi"})
    assert decide(CUT, tracker, "Hi", ["m"], BUDGET, now=BUDGET.deadline_at - 0.001).go
    late = decide(CUT, tracker, "Hi", ["m"], BUDGET, now=BUDGET.deadline_at)
    assert (late.go, late.reason) == (False, Reason.BUDGET_SPENT)


def test_a_cut_with_the_clients_output_limit_used_up_ends_by_length() -> None:
    cut = Cut(Operation.CHAT, pinned=False, by_deadline=False, continuations=0, output_spent=True)
    decision = decide(cut, _tracker({"content": "Hi"}), "Hi", ["m"], BUDGET, now=NOW)
    assert (decision.go, decision.reason) == (False, Reason.LENGTH)
