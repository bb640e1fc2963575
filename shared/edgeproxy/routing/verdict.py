"""A failed attempt judged once: everything routing does with a fault follows from its verdict.

The router (try another or stop), the outcome writer (circuit, health
counters, binding) and the fallback chain (which reason) all read the same
``Verdict``; nobody classifies a fault a second time.

    >>> v = judge(Fault(FaultKind.HTTP, "slow down", 429))
    >>> v.cls, v.tries_another, v.clears_binding
    (<FailureClass.THROTTLE: 'throttle'>, True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from edgeproxy.config.models import FallbackReason
from edgeproxy.routing.failures import classify, fallback_reason
from edgeproxy.routing.faults import FailureClass, Fault, FaultKind

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
