"""001's prefill rule in the service: each attempt's lease, and the process's prompt-size hints.

The lease (``routing.prefill.choice.lease_of``) rides the attempt's start
count; at the first token it is released (a stream's by a write of its own,
off the critical path; a whole answer's with its outcome write) and the
prompt's size is remembered as the caller's hint on that deployment.

Hints are kept per process, as 001 keeps them (a hint only lowers an
estimate: an instance without one counts the whole prompt as uncached, the
cautious side). Bounded: past ``MAX_CALLERS`` the oldest callers are forgotten.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Mapping

from edgeproxy.config.deployment import Deployment
from edgeproxy.routing.estimates.tokens import prompt_tokens
from edgeproxy.routing.prefill.choice import lease_of
from edgeproxy.routing.prefill.hints import Hint
from edgeproxy.service.admission import Attempt
from edgeproxy.service.pool import PoolContext, prefill_rule
from edgeproxy.service.run import Run

MAX_CALLERS = 10_000


class HintBook:
    """Each caller's hints by deployment id, most recently used callers kept."""

    def __init__(self, max_callers: int = MAX_CALLERS) -> None:
        self._book: OrderedDict[str, dict[str, Hint]] = OrderedDict()
        self._max = max_callers

    def of(self, caller: str) -> Mapping[str, Hint]:
        """``caller``'s hints (expiry is the core's: ``hints.fresh``)."""
        return dict(self._book.get(caller, {}))

    def remember(self, caller: str, deployment_id: str, prompt_tokens: int, now: float) -> None:
        """Record the prompt size of ``caller``'s request that ``deployment_id`` just answered."""
        hints = self._book.pop(caller, {})
        hints[deployment_id] = Hint(prompt_tokens, now)
        self._book[caller] = hints
        while len(self._book) > self._max:
            self._book.popitem(last=False)


class Prefill:
    """The prefill rule's service half for one process: leases taken and released, hints."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._hints = HintBook()
        self._releases: set[asyncio.Future[None]] = set()  # streams' releases in flight

    def hints(self, caller: str) -> Mapping[str, Hint]:
        """``caller``'s hints, for its ``RouteRequest``."""
        return self._hints.of(caller)

    def lease(self, run: Run, ctx: PoolContext, dep: Deployment) -> tuple[int, int]:
        """The lease an attempt on ``dep`` takes with its start count ((0, 0): the rule is off)."""
        params = prefill_rule(run, ctx, dep)
        if params is None:
            return 0, 0
        hints = self._hints.of(run.req.caller)
        return lease_of(params, dep.id, prompt_tokens(run.req.body), hints, self._clock())

    def answered(self, run: Run, ctx: PoolContext, attempt: Attempt) -> None:
        """An answer arrived (a stream: its first token): the lease ends, the hint is kept."""
        if prefill_rule(run, ctx, attempt.deployment) is None:
            return
        # The deployment now holds this prompt in its cache: the next turn's hint.
        prompt = prompt_tokens(run.req.body)
        self._hints.remember(run.req.caller, attempt.deployment.id, prompt, self._clock())
        inflight = attempt.inflight
        if run.req.stream and inflight is not None and inflight.prefill != (0, 0):
            # Decode is no prefill pressure: release it now, not when the stream ends.
            task = asyncio.ensure_future(inflight.release_prefill(attempt.admission))
            self._releases.add(task)
            task.add_done_callback(self._releases.discard)
