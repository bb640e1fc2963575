"""The next deployment to try for one request, given what it already tried.

Order of preference for each attempt:

1. the caller's valid sticky binding, if its deployment is eligible and untried;
2. untried eligible deployments, priority tiers high to low, each tier
   ordered by its strategy (a pool of exactly one deployment skips the
   strategy);
3. only when every eligible deployment was tried: reuse, least-tried first
   (the caller waits ``backoff.retry_delay(pick.tries, ...)`` before it).

When nothing is eligible the answer is a ``Blocked`` saying why, so the
service can answer 503 ``model_overloaded`` (every circuit open, with
Retry-After), 503 ``model_unavailable`` (every circuit opened by
misconfiguration, or nothing routable by weight) or 429
``rate_limit_exceeded`` (capacity or rpm/tpm limits are the blocker, or
every deployment is reserved for roles above the caller's: ``min_role``).
Reserved deployments are filtered out before anything else, so a lower
caller's request never counts against their health or circuits.

Usage::

    pick = next_deployment(pool, snapshot, RouteRequest(caller=cid), now, rng, tried=tried)
    if isinstance(pick, Blocked): ...
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from enum import StrEnum

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.policies import Operation
from edgeproxy.config.roles import Role
from edgeproxy.config.strategies import Strategy, StrategyParams
from edgeproxy.routing.access import reachable
from edgeproxy.routing.affinity import binding_valid
from edgeproxy.routing.eligibility import DEFAULT_QUOTA_MAX_AGE, Eligibility, Status, assess
from edgeproxy.routing.explain.notes import Group, Notes
from edgeproxy.routing.explain.reasons import Cause, Reason, account
from edgeproxy.routing.health import with_usable_health
from edgeproxy.routing.ordering.strategies import StrategyInputs, order
from edgeproxy.routing.prefill.choice import binding_kept, prefill_params
from edgeproxy.routing.prefill.hints import Hint
from edgeproxy.routing.snapshot import OpenCause, PoolSnapshot

StrategyChoice = Strategy | Mapping[int, Strategy] | Callable[[int], Strategy]
# (tier, strategy) -> its parameters; pass ``functools.partial(config.params_for, pool_key)``.
ParamsChoice = Callable[[int, Strategy], StrategyParams]


@dataclass(frozen=True, slots=True)
class RouteRequest:
    """What the request needs; ``strategy`` is one strategy, per-tier map, or tier -> strategy.

    Pass ``functools.partial(config.strategy_for, pool_key)`` to honour the
    tier -> pool -> global inheritance chain. ``role``: the caller's role;
    deployments reserved above it (``min_role``) are invisible to it (the
    default, ``admin``, sees every deployment). ``native``: the request has
    no translation to another operation (a Responses request with
    ``previous_response_id``, say): deployments that would need one are
    incompatible, so no attempt is spent on them. ``prompt_tokens`` and
    ``hints``: what 001's prefill rule (``simple-shuffle``'s ``prefill``)
    estimates the request's uncached prompt tokens from.
    """

    operation: Operation = Operation.CHAT
    modalities: frozenset[str] = frozenset()
    caller: str = ""
    strategy: StrategyChoice = Strategy.SIMPLE_SHUFFLE
    sticky: bool = True
    quota_max_age: float = DEFAULT_QUOTA_MAX_AGE  # seconds a quota reading counts
    role: Role = Role.ADMIN
    native: bool = False
    params: ParamsChoice | None = None  # None: every strategy's defaults
    protocol: str = ""  # the inbound protocol (``ProxyRequest.protocol``), for hash_affinity
    prompt_tokens: int = 0  # the prompt's estimate, for 001's prefill rule
    hints: Mapping[str, Hint] = field(default_factory=dict)  # the caller's, by deployment id

    def strategy_for(self, tier: int) -> Strategy:
        """The strategy of priority tier ``tier``."""
        if isinstance(self.strategy, Strategy):
            return self.strategy
        if isinstance(self.strategy, Mapping):
            return self.strategy.get(tier, Strategy.SIMPLE_SHUFFLE)
        return self.strategy(tier)

    def params_for(self, tier: int, strategy: Strategy) -> StrategyParams | None:
        """The parameters ``strategy`` runs with in ``tier`` (None: its defaults)."""
        return None if self.params is None else self.params(tier, strategy)


@dataclass(frozen=True, slots=True)
class Pick:
    """The deployment to try next and why.

    ``strategy`` is None when no strategy ran (sticky binding, one-deployment
    pool). ``probe``: take the circuit's probe lease before calling.
    ``tries``: how often this request already tried it (> 0: back off first).
    ``ranked``: the strategy's order of the tier's candidates, for logs.
    ``reasons``: every deployment's place in this decision (``routing.explain``).
    """

    deployment: Deployment
    tier: int
    strategy: Strategy | None
    probe: bool = False
    sticky: bool = False
    tries: int = 0
    ranked: tuple[str, ...] = ()
    reasons: tuple[Reason, ...] = ()


class BlockReason(StrEnum):
    OVERLOADED = "overloaded"  # every circuit open: 503 model_overloaded + Retry-After
    UNAVAILABLE = "unavailable"  # misconfiguration / weight 0 everywhere: 503 model_unavailable
    RATE_LIMITED = "rate_limited"  # capacity or rpm/tpm limits: 429 rate_limit_exceeded
    INCOMPATIBLE = "incompatible"  # no deployment serves this operation/modality
    EXHAUSTED = "exhausted"  # the caller ruled out every eligible one: answer the last error
    RESERVED = "reserved"  # every deployment is reserved for higher roles: 429, as if absent


@dataclass(frozen=True, slots=True)
class Blocked:
    """Nothing can be tried now; ``retry_after`` seconds until something frees up (if known)."""

    reason: BlockReason
    retry_after: float | None = None
    statuses: tuple[Eligibility, ...] = field(default=())
    reasons: tuple[Reason, ...] = ()  # every deployment's exclusion (``routing.explain``)


def next_deployment(
    deployments: Sequence[Deployment],
    snapshot: PoolSnapshot,
    request: RouteRequest,
    now: float,
    rng: random.Random,
    *,
    tried: Mapping[str, int] | Set[str] = frozenset(),
    skip: Collection[str] = frozenset(),
    minute: int | None = None,
) -> Pick | Blocked:
    """Choose the deployment for the next attempt of one request.

    ``tried``: deployment id -> attempts so far in this request (a set means
    once each). ``skip``: ids the caller rules out for the rest of this
    request (lost the probe race, admission refused, answered incompatible).
    ``minute``: the current usage bucket, ``now // 60`` by default.
    """
    bucket = int(now // 60) if minute is None else minute
    pool, notes = deployments, Notes()
    # Reserved capacity is absent for lower roles: never assessed, tried or counted.
    visible = [d for d in deployments if reachable(d, request.role)]
    if not visible:
        return Blocked(BlockReason.RESERVED, reasons=account(pool, {}, notes))
    deployments = visible
    counts = tried if isinstance(tried, Mapping) else dict.fromkeys(tried, 1)
    statuses = {
        d.id: assess(
            d,
            snapshot,
            now,
            bucket,
            operation=request.operation,
            modalities=request.modalities,
            quota_max_age=request.quota_max_age,
            native=request.native,
        )
        for d in deployments
    }
    usable = [d for d in deployments if statuses[d.id].eligible and d.id not in skip]
    # Metric strategies rank only by recent health with data behind it.
    inputs = StrategyInputs(
        with_usable_health(snapshot, now),
        bucket,
        request.caller,
        notes=notes,
        protocol=request.protocol,
        prompt_tokens=request.prompt_tokens,
        hints=request.hints,
        now=now,
    )

    def reasons(chosen: str | None = None, how: Cause | None = None) -> tuple[Reason, ...]:
        return account(
            pool, statuses, notes, skip=skip, counts=counts, chosen=chosen, how=how, bound=bound_id
        )

    binding, bound_id = snapshot.binding, None
    if request.sticky and binding_valid(binding, now, snapshot.pool_generation):
        assert binding is not None
        bound_id = binding.deployment_id
        bound = next((d for d in usable if d.id == binding.deployment_id), None)
        # Weight 0 drains a deployment: a binding must not keep traffic flowing to it.
        if bound is not None and bound.weight > 0 and counts.get(bound.id, 0) == 0:
            if _within_ceiling(bound, snapshot, request):
                probe = statuses[bound.id].probe
                why = reasons(bound.id, Cause.STICKY)
                return Pick(bound, bound.priority, None, probe, sticky=True, reasons=why)
            # 001: a backlog above the affinity ceiling gives the binding up for this
            # request and excludes its deployment from the draw (unless nothing else is left).
            notes.remark(bound.id, "prefill: binding given up above the affinity ceiling")
            others = [d for d in usable if d.id != bound.id]
            if any(d.weight > 0 for d in others):  # one some strategy will draw
                usable = others

    by_tries: dict[int, list[Deployment]] = {}
    for dep in usable:
        by_tries.setdefault(counts.get(dep.id, 0), []).append(dep)
    for tries in sorted(by_tries):
        pick = _pick_in_tiers(by_tries[tries], len(deployments), request, inputs, rng)
        if pick is not None:
            dep = pick.deployment
            why = reasons(dep.id, Cause.STRATEGY if pick.strategy else Cause.ONLY)
            probe = statuses[dep.id].probe
            return Pick(dep, pick.tier, pick.strategy, probe, False, tries, pick.ranked, why)
    blocked = _blocked(deployments, statuses, skip, weight_excluded=bool(usable))
    return replace(blocked, reasons=reasons())


def _within_ceiling(bound: Deployment, snapshot: PoolSnapshot, request: RouteRequest) -> bool:
    """Whether the binding holds under the bound tier's prefill rule (no rule: it holds)."""
    params = prefill_params(
        request.params_for(bound.priority, request.strategy_for(bound.priority))
    )
    return params is None or binding_kept(snapshot, bound.id, params)


def _pick_in_tiers(
    candidates: list[Deployment],
    pool_size: int,
    request: RouteRequest,
    inputs: StrategyInputs,
    rng: random.Random,
) -> Pick | None:
    if pool_size == 1:
        only = candidates[0]
        return Pick(only, only.priority, None, ranked=(only.id,))
    # Within a priority tier, capacity reserved for higher roles goes first, so an
    # entitled caller spends what was kept for it before the shared capacity.
    for tier, reserved in sorted({(d.priority, d.min_role.rank) for d in candidates}, reverse=True):
        strategy = request.strategy_for(tier)
        group = [d for d in candidates if (d.priority, d.min_role.rank) == (tier, reserved)]
        params = request.params_for(tier, strategy)
        ordered = order(strategy, group, replace(inputs, params=params), rng)
        if inputs.notes is not None:
            ids = tuple(d.id for d in group)
            inputs.notes.ordered(Group(tier, strategy.value, ids, tuple(d.id for d in ordered)))
        if ordered:
            return Pick(ordered[0], tier, strategy, ranked=tuple(d.id for d in ordered))
    return None


def _blocked(
    deployments: Sequence[Deployment],
    statuses: Mapping[str, Eligibility],
    skip: Collection[str],
    *,
    weight_excluded: bool,
) -> Blocked:
    every = tuple(statuses[d.id] for d in deployments)
    compatible = [s for s in every if s.status is not Status.INCOMPATIBLE]
    if not compatible:
        return Blocked(BlockReason.INCOMPATIBLE, None, every)
    blocked = [s for s in compatible if not s.eligible and s.deployment_id not in skip]
    if not blocked:
        # Eligible deployments exist but every strategy dropped them (weight 0: drained).
        return Blocked(
            BlockReason.UNAVAILABLE if weight_excluded else BlockReason.EXHAUSTED, None, every
        )
    # A drained deployment waits for an operator; the others say when they free up.
    retry_after = min(s.retry_after for s in blocked)
    if all(s.circuit_blocked for s in blocked):
        if all(s.cause is OpenCause.CONFIGURATION for s in blocked):
            return Blocked(BlockReason.UNAVAILABLE, retry_after, every)
        return Blocked(BlockReason.OVERLOADED, retry_after, every)
    return Blocked(BlockReason.RATE_LIMITED, retry_after, every)
