"""A failed attempt judged once: everything routing does with a fault follows from its verdict.

The router (try another or stop), the outcome writer (circuit, health
counters, binding) and the fallback chain (which reason) all read the same
``Verdict``; nobody classifies a fault a second time.

    >>> v = judge(Fault(FaultKind.HTTP, "slow down", 429))
    >>> v.cls, v.tries_another, v.clears_binding
    (<FailureClass.THROTTLE: 'throttle'>, True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from edgeproxy.config.models import FallbackReason
from edgeproxy.routing.failures import classify, context_shaped, fallback_reason
from edgeproxy.routing.faults import FailureClass, Fault, FaultKind
from edgeproxy.routing.snapshot import PoolSnapshot

_RULED_OUT = frozenset(
    {FailureClass.CONFIGURATION, FailureClass.INCOMPATIBLE, FailureClass.GATEWAY}
)
# A route that accepted the request and went silent: the mature behaviour is to
# fail over after the first expiry, not to wait it out again on the same route.
_SILENT = frozenset({FaultKind.TIMEOUT, FaultKind.IDLE})
_KEEPS_BINDING = frozenset({400, 404})  # 003: "A 400, 404 ... keeps it"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one fault means for routing.

    ``tries_another``: the request may move on to another candidate (request
    errors end it: every deployment would answer the same).
    ``rules_out``: this deployment is done for the rest of the request: a
    configuration fault or a request shape it cannot serve (retrying it cannot
    help), a silent route (response or idle deadline expired: retrying it
    would multiply the wait), or the gateway's own failure for it.
    ``lowers_health``: counts as a failure of the deployment (circuit, health counters).
    ``clears_binding``: drops a sticky binding to this deployment (003's rule).
    ``fallback``: the fallback chain the request may take once the pool is spent;
    None when a rejected request must end here.
    """

    fault: Fault
    cls: FailureClass
    tries_another: bool
    rules_out: bool
    lowers_health: bool
    clears_binding: bool
    fallback: FallbackReason | None


def judge(fault: Fault) -> Verdict:
    """The verdict on one attempt's fault."""
    cls = classify(fault)
    return Verdict(
        fault=fault,
        cls=cls,
        tries_another=cls is not FailureClass.REQUEST,
        rules_out=cls in _RULED_OUT or fault.kind in _SILENT,
        # Gateway failures (credential fetch, store, bugs) never touch a deployment's standing.
        lowers_health=cls in (FailureClass.TRANSIENT, FailureClass.CONFIGURATION),
        # Kept on 400/404-class request errors and on shapes the deployment cannot serve;
        # 003 keeps it on any 400 or 404, a "model missing" one (configuration) too.
        clears_binding=cls
        in (FailureClass.THROTTLE, FailureClass.TRANSIENT, FailureClass.CONFIGURATION)
        and not (fault.kind is FaultKind.HTTP and fault.status in _KEEPS_BINDING),
        fallback=fallback_reason(fault, cls),
    )


# A credential the gateway cannot fetch (SSM throttled, a missing variable) is
# the gateway's failure, not the provider's: health-neutral, the deployment is
# skipped for this request only, and the request may fail over.
CREDENTIAL_UNAVAILABLE = Fault(
    FaultKind.GATEWAY,
    "the gateway could not fetch its upstream credential for this deployment",
    code="credential_unavailable",
)


# Request-scoped failures (a refinement of 000's transient class): a failure that
# follows the request, not the deployment. 000 counts every transient failure
# toward the deployment's circuit at once; a request only the upstream's window
# or parser rejects (an over-long prompt answered with a 500, a reset or an empty
# stream) then cools every deployment it tries, for every caller.

EVIDENCE_WINDOW_S = 30.0
"""How recent another request's success on a deployment must be to say it is serving."""

# What a request alone can cause: an answer, or a connection the upstream dropped
# once it read the body. Not a refused connection (nothing was read) and not a
# silent route (a deadline: the deployment is slow for everyone, or down).
_REQUEST_SHAPED = frozenset(
    {FaultKind.HTTP, FaultKind.RESET, FaultKind.TRUNCATED, FaultKind.MALFORMED, FaultKind.OVERSIZE}
)


@dataclass(frozen=True, slots=True)
class Failed:
    """One failed attempt of a request, as the request-scope rule reads it.

    ``served_at``: when the request's view of the pool last saw the deployment
    answer another request (None: not in the last two minutes). ``deferred``:
    its circuit count waits for the request's end (``defers``).
    """

    deployment_id: str
    verdict: Verdict
    at: float
    started_at: float
    served_at: float | None = None
    deferred: bool = False


@dataclass(frozen=True, slots=True)
class Scope:
    """A request that failed the same way on every deployment it tried while they served
    others: ``fault`` is what its client is told, ``verdict`` what routing does with it."""

    fault: Fault
    verdict: Verdict
    deployments: frozenset[str]


def _serving(served_at: float | None, now: float) -> bool:
    return served_at is not None and now - served_at <= EVIDENCE_WINDOW_S


def request_shaped(verdict: Verdict, *, probe: bool) -> bool:
    """Whether a failure is one a request alone can cause: transient, an answer or a dropped
    connection, and not a probe's (the probe is the deployment's test, not the request's)."""
    return (
        not probe
        and verdict.cls is FailureClass.TRANSIENT
        and verdict.fault.kind in _REQUEST_SHAPED
    )


def defers(verdict: Verdict, served_at: float | None, now: float, *, probe: bool) -> bool:
    """Whether a failure at ``now`` waits for the request's end before its circuit counts it.

    Only a ``request_shaped`` failure on a deployment that answered another
    request within ``EVIDENCE_WINDOW_S``. A deployment nobody has been served
    by lately counts at once: a pool that is down for everyone opens.
    """
    return request_shaped(verdict, probe=probe) and _serving(served_at, now)


def attempt_failed(
    snapshot: PoolSnapshot,
    deployment_id: str,
    verdict: Verdict,
    now: float,
    started_at: float,
    probe: bool,
) -> Failed:
    """A failed attempt as the request's log keeps it, its circuit count deferred or not
    (``snapshot``: the request's view of the pool, which says who it served lately)."""
    served_at = snapshot.last_success_at(deployment_id)
    deferred = defers(verdict, served_at, now, probe=probe)
    return Failed(deployment_id, verdict, now, started_at, served_at, deferred)


def request_scope(failures: Sequence[Failed], now: float) -> Scope | None:
    """The request-scoped verdict on a request's failures so far, or None (000's rule holds).

    Request-scoped: every failure that would lower a deployment's health was
    deferred, all have one shape (kind and status), they span two or more
    deployments, and each of those still served others within
    ``EVIDENCE_WINDOW_S`` of ``now``. The client gets 400 when every upstream
    message names the prompt's length (the ``context_window`` chain may run),
    else 502; the request tries nothing more, and no circuit counts any of them.

        >>> request_scope([], now=0.0) is None
        True
    """
    counted = [f for f in failures if f.verdict.lowers_health]
    if not counted or not all(f.deferred and _serving(f.served_at, now) for f in counted):
        return None
    shapes = {(f.verdict.fault.kind, f.verdict.fault.status) for f in counted}
    deployments = frozenset(f.deployment_id for f in counted)
    if len(shapes) != 1 or len(deployments) < 2:
        return None
    if all(context_shaped(f.verdict.fault) for f in counted):
        fault = Fault(
            FaultKind.HTTP,
            "The prompt is longer than the context window of every deployment that was "
            "tried; shorten it or lower max_tokens.",
            400,
            type="invalid_request_error",
            code="context_length_exceeded",
        )
    else:
        kind, status = next(iter(shapes))
        how = f"HTTP {status}" if kind is FaultKind.HTTP else kind.value
        fault = Fault(
            FaultKind.HTTP,
            f"Every deployment tried failed this request the same way ({how}) while "
            "serving other requests; the request itself is the likely cause.",
            502,
            code="request_failed_on_every_deployment",
        )
    verdict = replace(judge(fault), tries_another=False, lowers_health=False, clears_binding=False)
    if verdict.fallback is not FallbackReason.CONTEXT_WINDOW:
        verdict = replace(verdict, fallback=None)  # another model would be sent the same body
    return Scope(fault, verdict, deployments)
