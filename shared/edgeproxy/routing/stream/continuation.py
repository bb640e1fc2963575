"""Whether a stream cut after its commit point is continued on another deployment, and why.

The relay (``service/stream/relay.py``) asks once per cut, and carries the
answer out: a prefill continuation on one of ``targets``, or the original
failure as the stream's in-band error.

    decision = decide(cut, tracker, "Hello, wor", targets, budget, now=now)
    decision.go, decision.reason        # (True, Reason.CONTINUE)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from edgeproxy.config.policies import Operation
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.stream.completeness import StreamTracker

MAX_CONTINUATIONS = 2  # a third cut in one answer ends it: the route is not worth more time


class Reason(StrEnum):
    CONTINUE = "continue"
    PINNED = "pinned"  # a pinned request never leaves its deployment
    NOT_CHAT = "not_chat"  # a prefill continues chat only
    DEADLINE = "deadline"  # the request's total deadline cut the stream
    NO_TARGETS = "no_targets"  # neither the pool nor its chain opted in
    TOO_MANY_CUTS = "too_many_cuts"  # MAX_CONTINUATIONS were made already
    TOOL_CALLS = "tool_calls"  # arguments cut mid-JSON cannot be continued as text
    SEVERAL_CHOICES = "several_choices"  # a prefill continues one choice
    NO_TEXT = "no_text"  # nothing shown to continue from (reasoning alone)
    BUDGET_SPENT = "budget_spent"  # no time left for another attempt
    LENGTH = "length"  # the client's max_tokens is used up: the answer ends as the model's would


@dataclass(frozen=True, slots=True)
class Cut:
    """One stream cut after its commit point."""

    operation: Operation
    pinned: bool  # the request named its deployment
    by_deadline: bool  # the request's total deadline ended it (not the upstream)
    continuations: int  # continuations of this answer started before this cut
    output_spent: bool = False  # nothing is left of the client's output limit (remainder.spent)


@dataclass(frozen=True, slots=True)
class Decision:
    go: bool
    reason: Reason


def continuable(tracker: StreamTracker, text: str) -> Reason | None:
    """Why a stream cut in this state cannot be continued by prefill; None if it can."""
    if tracker.tool_calls:
        return Reason.TOOL_CALLS
    if len(tracker.choices) > 1:
        return Reason.SEVERAL_CHOICES
    if not text.strip():
        return Reason.NO_TEXT
    return None


def decide(
    cut: Cut,
    tracker: StreamTracker,
    text: str,
    targets: Sequence[str],
    budget: Budget,
    *,
    now: float,
) -> Decision:
    """Continue the cut stream or not; ``text``: choice 0's content the client was shown."""
    reason = _refusal(cut, targets) or continuable(tracker, text)
    if reason is None and cut.output_spent:
        reason = Reason.LENGTH  # not a failure: the caller ends it with finish_reason length
    if reason is None and budget.expired(now):
        reason = Reason.BUDGET_SPENT
    return Decision(reason is None, reason or Reason.CONTINUE)


def _refusal(cut: Cut, targets: Sequence[str]) -> Reason | None:
    if cut.pinned:
        return Reason.PINNED
    if cut.operation is not Operation.CHAT:
        return Reason.NOT_CHAT
    if cut.by_deadline:
        return Reason.DEADLINE
    if not targets:
        return Reason.NO_TARGETS
    if cut.continuations >= MAX_CONTINUATIONS:
        return Reason.TOO_MANY_CUTS
    return None
