"""The next deployment to try for one request, given what it already tried.

Order of preference for each attempt:

1. the caller's valid sticky binding, if its deployment is eligible, untried,
   one its tier's strategy would pick at all (``weight: 0`` under a weighted
   strategy is not) and in the highest tier that has such a deployment: a
   binding made during a failover never holds a caller below a recovered tier
   (003's tier order first, then the binding within the tier);
2. untried eligible deployments, priority tiers high to low, each tier
   ordered by its strategy (a pool of exactly one deployment skips the
   strategy);
3. only when every eligible deployment was tried: reuse, least-tried first
   (the caller waits ``backoff.retry_delay(pick.tries, ...)`` before it).

When nothing is eligible the answer is a ``Blocked`` saying why, so the
service can answer 503 ``model_overloaded`` (every circuit open, with
Retry-After), 503 ``model_unavailable`` (every circuit opened by
misconfiguration, every deployment disabled, or nothing routable by weight) or 429
``rate_limit_exceeded`` (capacity or rpm/tpm limits are the blocker, or
every deployment is reserved for roles above the caller's: ``min_role``).
Reserved deployments are filtered out before anything else, so a lower
caller's request never counts against their health or circuits.
Disabled deployments (``enabled: false``) are excluded by eligibility under
every strategy, binding and probe alike.

Usage::

    pick = next_deployment(pool, snapshot, RouteRequest(caller=cid), now, rng, tried=tried)
    if isinstance(pick, Blocked): ...
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.policies import Operation
from edgeproxy.config.roles import Role
from edgeproxy.config.strategies import Strategy, StrategyParams
from edgeproxy.routing.access import reachable
from edgeproxy.routing.affinity import binding_valid
from edgeproxy.routing.blockage import Blocked as Blocked
from edgeproxy.routing.blockage import BlockReason as BlockReason
from edgeproxy.routing.blockage import blocked_by
from edgeproxy.routing.eligibility import DEFAULT_QUOTA_MAX_AGE, assess
from edgeproxy.routing.explain.notes import Group, Notes
from edgeproxy.routing.explain.reasons import Cause, Reason, account
from edgeproxy.routing.health import with_usable_health
from edgeproxy.routing.ordering.strategies import StrategyInputs, order
from edgeproxy.routing.prefill.choice import binding_kept, prefill_params
from edgeproxy.routing.prefill.hints import Hint
from edgeproxy.routing.snapshot import PoolSnapshot

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
    incompatible, so no attempt is spent on them. ``features``: what the
    request uses that some adapters cannot carry (``routing.features``):
    deployments whose provider kind cannot are incompatible the same way. ``prompt_tokens`` and
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
    features: frozenset[str] = frozenset()
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
            features=request.features,
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
        if bound is not None and _holds(bound, usable, counts, len(deployments), request, inputs):
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
    blocked = blocked_by(deployments, statuses, skip, weight_excluded=bool(usable))
    return replace(blocked, reasons=reasons())


def _holds(
    bound: Deployment,
    usable: Sequence[Deployment],
    counts: Mapping[str, int],
    pool_size: int,
    request: RouteRequest,
    inputs: StrategyInputs,
) -> bool:
    """Whether the binding's deployment takes this attempt before any strategy runs.

    Untried, pickable by its own tier's strategy, and no higher tier has an
    untried deployment its strategy would pick (the primary is back).
    """
    if counts.get(bound.id, 0) or not _pickable(bound, pool_size, request, inputs):
        return False
    return not any(
        d.priority > bound.priority
        and not counts.get(d.id, 0)
        and _pickable(d, pool_size, request, inputs)
        for d in usable
    )


def _pickable(
    dep: Deployment, pool_size: int, request: RouteRequest, inputs: StrategyInputs
) -> bool:
    """Whether ``dep``'s tier strategy would rank it at all (weighted ones drop ``weight: 0``)."""
    if pool_size == 1:
        return True  # no strategy runs
    strategy = request.strategy_for(dep.priority)
    alone = replace(inputs, params=request.params_for(dep.priority, strategy), notes=None)
    # One candidate: the order is fixed, so the rng is a throwaway (the request's stays untouched).
    return bool(order(strategy, [dep], alone, random.Random(0)))


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
    for tier, reserved in sorted(
        {(d.priority, d.reserved_for.rank) for d in candidates}, reverse=True
    ):
        strategy = request.strategy_for(tier)
        group = [d for d in candidates if (d.priority, d.reserved_for.rank) == (tier, reserved)]
        params = request.params_for(tier, strategy)
        ordered = order(strategy, group, replace(inputs, params=params), rng)
        if inputs.notes is not None:
            ids = tuple(d.id for d in group)
            inputs.notes.ordered(Group(tier, strategy.value, ids, tuple(d.id for d in ordered)))
        if ordered:
            return Pick(ordered[0], tier, strategy, ranked=tuple(d.id for d in ordered))
    return None
