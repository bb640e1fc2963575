"""Each candidate's place in one routing decision, and why: the selection's own account.

``selection.next_deployment`` builds these from what it decided on (the role
filter, each deployment's ``Eligibility``, the request's skips and tries, the
binding, and the ``Notes`` its strategies left) and returns them on its
``Pick`` or ``Blocked``. One ``Reason`` per deployment of the pool:

    outcome   cause       meaning
    chosen    sticky      the caller's valid binding names it
    chosen    only        the pool has this one deployment (no strategy runs)
    chosen    strategy    ranked first by its tier's strategy (``rank`` 1)
    ranked    strategy    ranked ``rank``-th by the same ordering
    ranked    sticky      eligible, but the binding goes first
    ranked    tier        eligible, in a lower tier or reserved group: not reached
                          (a binding there yields to the higher tier)
    ranked    tried       already tried by this request: reused after untried ones
    excluded  role        reserved (``min_role``) above the caller's role
    excluded  disabled    drained by its operator (``enabled: false``)
    excluded  operation   does not serve the operation
    excluded  native      the request needs the operation natively
    excluded  modality    does not take an input modality of the request
    excluded  feature     its provider kind cannot carry a feature of the request (n > 1...)
    excluded  circuit     its circuit is open, or half-open with the probe taken
    excluded  capacity    its failure domain is throttled
    excluded  quota       the provider reported its credential's quota spent
    excluded  rpm / tpm   its per-minute limit is reached
    excluded  ruled_out   this request ruled it out (lost probe race, refused...)
    excluded  weight      weight 0: the strategy never picks it

``compact`` renders them as one log field.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.routing.eligibility import Eligibility, Limit, Status
from edgeproxy.routing.explain.notes import Group, Notes


class Outcome(StrEnum):
    CHOSEN = "chosen"
    RANKED = "ranked"
    EXCLUDED = "excluded"


class Cause(StrEnum):
    STICKY = "sticky"
    ONLY = "only"
    STRATEGY = "strategy"
    TIER = "tier"
    TRIED = "tried"
    ROLE = "role"
    DISABLED = "disabled"
    OPERATION = "operation"
    NATIVE = "native"
    MODALITY = "modality"
    FEATURE = "feature"
    CIRCUIT = "circuit"
    CAPACITY = "capacity"
    QUOTA = "quota"
    RPM = "rpm"
    TPM = "tpm"
    PARALLEL = "parallel"  # every capacity slot held (max_parallel_requests)
    RULED_OUT = "ruled_out"
    WEIGHT = "weight"


_LIMITS = {
    Limit.CAPACITY: Cause.CAPACITY,
    Limit.QUOTA: Cause.QUOTA,
    Limit.RPM: Cause.RPM,
    Limit.TPM: Cause.TPM,
    Limit.PARALLEL: Cause.PARALLEL,
}


@dataclass(frozen=True, slots=True)
class Reason:
    """One deployment's place in a decision. ``rank``: 1-based within its strategy's order.

    ``score``: the number its strategy ordered it by (lower first), when the
    strategy has one. ``retry_after``: seconds until an exclusion lifts.
    ``bound``: the caller's valid binding names this deployment.
    """

    deployment_id: str
    outcome: Outcome
    cause: Cause
    tier: int
    rank: int | None = None
    strategy: str | None = None
    score: float | None = None
    retry_after: float = 0.0
    detail: str = ""
    bound: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "deployment": self.deployment_id,
            "outcome": self.outcome.value,
            "cause": self.cause.value,
            "tier": self.tier,
            "rank": self.rank,
            "strategy": self.strategy,
            "score": self.score,
            "retry_after_ms": int(self.retry_after * 1000),
            "detail": self.detail,
            "bound": self.bound,
        }


def _excluded(dep: Deployment, status: Eligibility) -> Reason:
    if status.status is Status.DISABLED:
        detail = "disabled by its operator (enabled: false)"
        return Reason(dep.id, Outcome.EXCLUDED, Cause.DISABLED, dep.priority, detail=detail)
    if status.status is Status.INCOMPATIBLE:
        kind, _, what = status.detail.partition(":")
        named = (Cause.NATIVE, Cause.MODALITY, Cause.FEATURE)
        cause = Cause(kind) if kind in named else Cause.OPERATION
        return Reason(dep.id, Outcome.EXCLUDED, cause, dep.priority, detail=what)
    if status.limit is not None:
        cause, detail = _LIMITS[status.limit], f"{status.limit.value} limit reached"
    elif status.status is Status.HALF_OPEN:
        cause, detail = Cause.CIRCUIT, "half-open: another request holds the probe"
    else:
        why = status.cause.value if status.cause else "failures"
        cause, detail = Cause.CIRCUIT, f"circuit open ({why})"
    return Reason(
        dep.id, Outcome.EXCLUDED, cause, dep.priority, retry_after=status.retry_after, detail=detail
    )


def _ranked(dep: Deployment, group: Group, chosen: str | None, notes: Notes, probe: str) -> Reason:
    if dep.id not in group.ordered:
        return Reason(
            dep.id,
            Outcome.EXCLUDED,
            Cause.WEIGHT,
            dep.priority,
            strategy=group.strategy,
            detail="weight 0: never picked",
        )
    return Reason(
        dep.id,
        Outcome.CHOSEN if dep.id == chosen else Outcome.RANKED,
        Cause.STRATEGY,
        dep.priority,
        rank=group.ordered.index(dep.id) + 1,
        strategy=group.strategy,
        score=notes.scores.get(dep.id),
        detail="; ".join(t for t in (notes.remarks.get(dep.id, ""), probe) if t),
    )


def _reason(
    dep: Deployment,
    statuses: Mapping[str, Eligibility],
    skip: Collection[str],
    counts: Mapping[str, int],
    chosen: str | None,
    how: Cause | None,
    notes: Notes,
) -> Reason:
    status = statuses.get(dep.id)
    if status is None:
        detail = f"reserved for {dep.reserved_for.value} and above"
        if dep.reserved_for is not dep.min_role:
            detail += " (the strictest min_role of the deployments sharing its credential)"
        return Reason(dep.id, Outcome.EXCLUDED, Cause.ROLE, dep.priority, detail=detail)
    if not status.eligible:
        return _excluded(dep, status)
    if dep.id in skip:
        return Reason(dep.id, Outcome.EXCLUDED, Cause.RULED_OUT, dep.priority)
    probe = "half-open: would take the probe lease" if status.probe else ""
    if dep.id == chosen and how in (Cause.STICKY, Cause.ONLY):
        return Reason(dep.id, Outcome.CHOSEN, how, dep.priority, detail=probe)
    group = next((g for g in notes.groups if dep.id in g.members), None)
    if group is not None:
        return _ranked(dep, group, chosen, notes, probe)
    if how is Cause.STICKY:
        return Reason(dep.id, Outcome.RANKED, Cause.STICKY, dep.priority, detail="binding first")
    tries = counts.get(dep.id, 0)
    if tries:
        return Reason(dep.id, Outcome.RANKED, Cause.TRIED, dep.priority, detail=f"tried {tries}")
    return Reason(dep.id, Outcome.RANKED, Cause.TIER, dep.priority, detail="not reached")


def account(
    deployments: Sequence[Deployment],
    statuses: Mapping[str, Eligibility],
    notes: Notes,
    *,
    skip: Collection[str] = frozenset(),
    counts: Mapping[str, int] | None = None,
    chosen: str | None = None,
    how: Cause | None = None,
    bound: str | None = None,
) -> tuple[Reason, ...]:
    """Every deployment's reason. ``statuses``: the visible ones' (absent: hidden by role).

    ``chosen``: the deployment picked (None: blocked); ``how``: ``STICKY``,
    ``ONLY`` or ``STRATEGY``. ``bound``: the valid binding's deployment.
    """
    out = []
    for dep in deployments:
        reason = _reason(dep, statuses, skip, counts or {}, chosen, how, notes)
        if dep.id == bound:
            reason = replace(reason, bound=True)
        out.append(reason)
    return tuple(out)


def compact(reasons: Sequence[Reason]) -> str:
    """One log field: ``*a:strategy#1=3 b:strategy#2=5 c:circuit(12s) d:role``.

    ``*`` marks the chosen one, ``#n`` a rank, ``=x`` a score, ``(ns)`` a retry-after,
    ``^`` the bound deployment.
    """
    parts = []
    for r in reasons:
        text = ("*" if r.outcome is Outcome.CHOSEN else "") + f"{r.deployment_id}:{r.cause.value}"
        if r.rank is not None:
            text += f"#{r.rank}"
        if r.score is not None:
            text += f"={r.score:g}"
        if r.retry_after > 0:
            text += f"({r.retry_after:.0f}s)"
        parts.append(text + ("^" if r.bound else ""))
    return " ".join(parts)
