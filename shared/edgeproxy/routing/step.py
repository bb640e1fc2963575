"""The next step of one request in one pool: try a deployment, wait, or stop.

The router keeps an immutable ``AttemptLog`` of what the request did in the
pool so far and asks ``next_step`` what to do after every event; it only
carries the answer out (take the probe lease, sleep, admit, call). Every
routing rule of a pool hop is decided here, from plain values:

- the budget: no attempt past ``max_attempts`` or the total deadline, and no
  backoff that would eat the rest of the deadline;
- a request that failed the same way on two or more deployments while they
  served others ends as request-scoped (``verdict.request_scope``);
- a request error (or our own) ends the request: no other deployment would
  answer it differently;
- a deployment ruled out (configuration fault, incompatible shape, lost
  probe race, rpm limit, a silent route: response or idle deadline expired,
  the gateway's own failure for it) is not tried again in this request;
- a deployment's own policy (``execution_policy_overrides``) bounds its
  attempts: no more than its ``max_attempts`` calls, none once its
  ``total_ms`` (counted from the request's start) has passed;
- reusing a deployment waits ``backoff.retry_delay``, counted from its
  failure (time already spent counts toward the wait);
- a capacity circuit this request's own 429 opened is waited out (its
  Retry-After, capped) when the budget allows, then selection runs again;
  a pool that stops on a 429 says when that circuit closes (``retry_at``),
  the wait its client is told;
- an admin pin bypasses selection and circuits, and stops once its
  deployment is ruled out.

    >>> log = AttemptLog()
    >>> step = next_step(pool, snapshot, route, log, settings, budget, now=t, rng=rng)
    >>> if isinstance(step, Try): ...  # log = log.started(step.pick.deployment.id)
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.policies import Deadline
from edgeproxy.config.router import CircuitSettings
from edgeproxy.routing.backoff import MAX_RETRY_AFTER_SECONDS, retry_delay
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.faults import FailureClass, Fault
from edgeproxy.routing.selection import Blocked, BlockReason, Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import PoolSnapshot
from edgeproxy.routing.verdict import Failed, Scope, Verdict, request_scope

CAPACITY_MARGIN_S = 0.01  # wake just after the capacity circuit ends, not just before


@dataclass(frozen=True, slots=True)
class PoolFailure:
    """Why a pool gave no answer: the last upstream fault, or what blocked it."""

    fault: Fault | None = None
    blocked: Blocked | None = None
    rate_limited: bool = False  # admission refused by rpm limits
    at_capacity: bool = False  # a capacity slot refused (every one held): wait, then 429
    verdict: Verdict | None = None  # the last fault's verdict
    deployment: str | None = None  # the deployment of the last fault
    attempts: int = 0  # upstream calls the request made in this pool
    retry_at: float | None = None  # a throttled last fault: when its capacity circuit closes
    scope: Scope | None = None  # the failures followed the request: no circuit counts them


@dataclass(frozen=True, slots=True)
class AttemptLog:
    """What one request did in one pool so far; every event returns a new log.

    ``tried``: attempts per deployment. ``skip``: deployments ruled out for
    the rest of the request. ``counted``: deployments whose failure already
    counted toward their circuit (at most one per request and deployment).
    ``retry_after``: the provider's last Retry-After per deployment.
    ``failed_at``: when each deployment last failed (the backoff runs from it).
    ``full``: deployments skipped because every capacity slot was held (a
    wait for a slot gives them back: ``reopened``).
    ``failures``: every failed attempt, in order (the request-scope rule reads them).
    """

    attempts: int = 0
    tried: Mapping[str, int] = field(default_factory=dict)
    skip: frozenset[str] = frozenset()
    counted: frozenset[str] = frozenset()
    retry_after: Mapping[str, float] = field(default_factory=dict)
    failed_at: Mapping[str, float] = field(default_factory=dict)
    last: Verdict | None = None
    last_deployment: str | None = None
    rate_limited: bool = False
    full: frozenset[str] = frozenset()
    failures: tuple[Failed, ...] = ()

    def started(self, deployment_id: str) -> AttemptLog:
        """An attempt on ``deployment_id`` was admitted and is about to call."""
        tried = {**self.tried, deployment_id: self.tried.get(deployment_id, 0) + 1}
        return replace(self, attempts=self.attempts + 1, tried=tried)

    def skipped(
        self, deployment_id: str, *, rate_limited: bool = False, full: bool = False
    ) -> AttemptLog:
        """``deployment_id`` is ruled out (lost the probe race; ``rate_limited``: rpm
        limit; ``full``: no capacity slot free)."""
        return replace(
            self,
            skip=self.skip | {deployment_id},
            rate_limited=self.rate_limited or rate_limited,
            full=self.full | {deployment_id} if full else self.full,
        )

    def reopened(self) -> AttemptLog:
        """After a wait for a capacity slot: the deployments that were full may be tried again."""
        return replace(self, skip=self.skip - self.full, full=frozenset())

    def counts_failure(self, deployment_id: str) -> bool:
        """Whether a failure of ``deployment_id`` now is the first this request counts."""
        return deployment_id not in self.counted

    def pending(self) -> tuple[Failed, ...]:
        """Deferred failures not yet counted: the first of each deployment, in order."""
        out: dict[str, Failed] = {}
        for one in self.failures:
            if one.deferred and one.deployment_id not in self.counted:
                out.setdefault(one.deployment_id, one)
        return tuple(out.values())

    def owes(self, deployment_id: str) -> bool:
        """Whether a failure of ``deployment_id`` counted, or will once the request ends."""
        return deployment_id in self.counted or any(
            f.deployment_id == deployment_id for f in self.pending()
        )

    def failed(self, deployment_id: str, verdict: Verdict, now: float) -> AttemptLog:
        """The attempt on ``deployment_id`` failed at ``now`` with ``verdict``."""
        return self.judged(Failed(deployment_id, verdict, now, now))

    def judged(self, failure: Failed) -> AttemptLog:
        """An attempt failed as ``failure`` says (a deferred one is not counted yet)."""
        deployment_id, verdict, now = failure.deployment_id, failure.verdict, failure.at
        retry_after = dict(self.retry_after)
        if verdict.fault.retry_after is not None:
            retry_after[deployment_id] = verdict.fault.retry_after
        counted = self.counted if failure.deferred else self.counted | {deployment_id}
        return replace(
            self,
            skip=self.skip | {deployment_id} if verdict.rules_out else self.skip,
            counted=counted,
            failures=(*self.failures, failure),
            retry_after=retry_after,
            failed_at={**self.failed_at, deployment_id: now},
            last=verdict,
            last_deployment=deployment_id,
        )

    def failure(
        self,
        blocked: Blocked | None = None,
        *,
        retry_at: float | None = None,
        scope: Scope | None = None,
    ) -> PoolFailure:
        """The pool's failure as it stands (``retry_at``, ``scope``: see ``PoolFailure``)."""
        last = self.last if scope is None else scope.verdict
        return PoolFailure(
            None if last is None else last.fault,
            blocked,
            self.rate_limited,
            bool(self.full),
            last,
            self.last_deployment,
            attempts=self.attempts,
            retry_at=retry_at,
            scope=scope,
        )

    def spent(
        self,
        deployments: Sequence[Deployment],
        limits: Mapping[str, Deadline],
        budget: Budget,
        now: float,
    ) -> frozenset[str]:
        """Deployments whose own policy allows no further attempt in this request."""
        out: set[str] = set()
        for dep in deployments:
            policy = limits.get(dep.id)
            if policy is None:
                continue
            if self.tried.get(dep.id, 0) >= policy.max_attempts or budget.tightened(policy).expired(
                now
            ):
                out.add(dep.id)
        return frozenset(out)


@dataclass(frozen=True, slots=True)
class Try:
    """Call ``pick.deployment`` after ``wait`` seconds (taking the probe lease first if ``pick.probe``)."""

    pick: Pick
    wait: float = 0.0


@dataclass(frozen=True, slots=True)
class Wait:
    """Sleep ``seconds``, then ask again (a capacity circuit is about to end)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Stop:
    """The pool is done; ``failure`` says why."""

    failure: PoolFailure


Step = Try | Wait | Stop


def next_step(
    deployments: Sequence[Deployment],
    snapshot: PoolSnapshot,
    route: RouteRequest,
    log: AttemptLog,
    settings: CircuitSettings,
    budget: Budget,
    *,
    now: float,
    rng: random.Random,
    pinned: bool = False,
    limits: Mapping[str, Deadline] | None = None,
) -> Step:
    """What the request does next in this pool.

    ``deployments``: the pool (with ``pinned``, only the pinned deployment).
    ``snapshot``: the pool's state with this request's own writes applied.
    ``limits``: each deployment's effective policy (its overrides applied).
    """
    scope = request_scope(log.failures, now) if log.last is not None else None
    if scope is not None:
        return Stop(log.failure(scope=scope))  # the request is the cause: nothing more to learn
    if log.last is not None and not log.last.tries_another:
        return _stop(log, deployments, snapshot)  # another deployment would reject it the same way
    if budget.expired(now) or log.attempts >= budget.max_attempts:
        return _stop(log, deployments, snapshot)
    skip = log.skip | log.spent(deployments, limits or {}, budget, now)
    pick = (
        _pinned(deployments[0], log, skip)
        if pinned
        else next_deployment(deployments, snapshot, route, now, rng, tried=log.tried, skip=skip)
    )
    if isinstance(pick, Blocked):
        hold = _throttle_wait(pick, log)
        if hold is not None and budget.allows_attempt(now, log.attempts, hold):
            return Wait(hold)
        return _stop(log, deployments, snapshot, pick)
    dep = pick.deployment
    wait = retry_delay(pick.tries, settings, rng, provider_retry_after=log.retry_after.get(dep.id))
    # The backoff runs from the failure: time already spent waiting counts toward it.
    wait = max(0.0, wait - (now - log.failed_at.get(dep.id, now)))
    if not budget.allows_attempt(now, log.attempts, wait):
        return _stop(log, deployments, snapshot)
    return Try(pick, wait)


def _stop(
    log: AttemptLog,
    deployments: Sequence[Deployment],
    snapshot: PoolSnapshot,
    blocked: Blocked | None = None,
) -> Stop:
    """The pool is done; a throttled last fault carries when its capacity circuit closes."""
    retry_at = None
    if log.last is not None and log.last.cls is FailureClass.THROTTLE:
        dep = next((d for d in deployments if d.id == log.last_deployment), None)
        if dep is not None:
            retry_at = snapshot.capacity(dep.domain).throttled_until
    return Stop(log.failure(blocked, retry_at=retry_at))


def _pinned(dep: Deployment, log: AttemptLog, skip: frozenset[str]) -> Pick | Blocked:
    """An admin pin bypasses selection and circuits (a debugging tool)."""
    if dep.id in skip:
        # Ruled out (configuration fault, incompatible, rpm limit): retrying cannot help.
        return Blocked(BlockReason.EXHAUSTED)
    return Pick(dep, dep.priority, None, tries=log.tried.get(dep.id, 0))


def _throttle_wait(blocked: Blocked, log: AttemptLog) -> float | None:
    """How long to wait out a capacity circuit this request's own 429 opened, if so."""
    if (
        blocked.reason is not BlockReason.RATE_LIMITED
        or blocked.retry_after is None
        or log.last is None
        or log.last.cls is not FailureClass.THROTTLE
    ):
        return None
    return min(blocked.retry_after, MAX_RETRY_AFTER_SECONDS) + CAPACITY_MARGIN_S
