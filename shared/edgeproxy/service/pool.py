"""One pool as one request sees it: read once, then changed only by the router.

The outcome writer never touches a ``PoolContext``: each write returns a
``Standing`` (what the store holds now, the race's winner included) and the
router, which owns the request's view of the pool, applies it. The rest of
the request then routes on its own writes without another read.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Deadline
from edgeproxy.config.router import CircuitSettings, StickySettings
from edgeproxy.config.strategies import PrefillParams
from edgeproxy.errors import RequestError
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.estimates.tokens import prompt_tokens
from edgeproxy.routing.ordering.strategies import reads_counters
from edgeproxy.routing.prefill.choice import prefill_params
from edgeproxy.routing.prefill.hints import Hint
from edgeproxy.routing.selection import RouteRequest
from edgeproxy.routing.snapshot import BindingKey, Capacity, Circuit, PoolSnapshot
from edgeproxy.service.attempts import features_of, untranslatable
from edgeproxy.service.request import ProxyRequest, Tally
from edgeproxy.state.store import PoolSource, SnapshotRequest, UsageSource


class RunView(Protocol):
    """What a pool takes from the request's run (``service.run.Run``, which carries
    PoolContexts: named by shape here so that this module does not import it)."""

    @property
    def req(self) -> ProxyRequest: ...

    @property
    def config(self) -> GatewayConfig: ...

    @property
    def resume(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Standing:
    """What stands in the store after one outcome write.

    ``circuits`` and ``capacities``: the items as written (or as the winner
    of a lost race left them). ``binding_dropped``: the caller's binding was
    deleted.
    """

    circuits: tuple[Circuit, ...] = ()
    capacities: tuple[Capacity, ...] = ()
    binding_dropped: bool = False

    def __add__(self, other: Standing) -> Standing:
        return Standing(
            self.circuits + other.circuits,
            self.capacities + other.capacities,
            self.binding_dropped or other.binding_dropped,
        )


NOTHING = Standing()


@dataclass(frozen=True, slots=True)
class PoolContext:
    """One pool's deployments, settings and state as this request knows it."""

    model: str
    deployments: list[Deployment]
    snapshot: PoolSnapshot
    binding_key: BindingKey | None
    sticky: StickySettings
    circuit: CircuitSettings
    key: ClientKey | None = None  # the caller's table key: its usage and spend are recorded
    limits: Mapping[str, Deadline] = field(default_factory=dict)  # each deployment's policy
    tally: Tally | None = None  # the request's actual usage, for the levels above its key

    def applied(self, standing: Standing) -> PoolContext:
        """This view with ``standing`` applied to its snapshot."""
        if standing == NOTHING:
            return self
        snapshot = self.snapshot
        snapshot = replace(
            snapshot,
            circuits={**snapshot.circuits, **{c.deployment_id: c for c in standing.circuits}},
            capacities={**snapshot.capacities, **{c.domain: c for c in standing.capacities}},
            binding=None if standing.binding_dropped else snapshot.binding,
        )
        return replace(self, snapshot=snapshot)


async def open_pool(store: PoolSource, run: RunView, model: str, now: float) -> PoolContext:
    """The pool's state for one hop of ``run``, read once (one BatchGetItem)."""
    req, config = run.req, run.config
    deployments = config.pool(model)
    if run.resume:
        # Only a deployment that continues an assistant prefill may take it: any
        # other would reject it (400) or answer from scratch.
        deployments = [d for d in deployments if d.supports_prefill]
    if req.pin is not None:
        deployments = [d for d in deployments if d.id == req.pin]
        if not deployments:
            raise RequestError(
                f"X-Route-Pin names no deployment of `{model}`.",
                param="x-route-pin",
                code="invalid_pin",
            )
    sticky = config.sticky_for(model)
    key = (
        BindingKey(req.caller, model, req.protocol)
        if sticky.enabled and req.pin is None and not run.resume
        else None
    )
    # The strategies whose ordering reads the usage counters, judged with their parameters.
    op, protocol = req.operation, req.protocol  # the model levels' capability and protocol
    tiers = {
        (d.priority, config.strategy_for(model, d.priority, op, protocol)) for d in deployments
    }
    counting = {
        s for t, s in tiers if reads_counters(s, config.params_for(model, t, s, op, protocol))
    }
    snapshot = await store.read_pool(SnapshotRequest.of(model, deployments, now, key, counting))
    # A key's tpm limit and budget were reserved against before routing (service/limits/reserve.py).
    limits = {d.id: config.policy_for(d, req.operation, req.stream) for d in deployments}
    return PoolContext(
        model, deployments, snapshot, key, sticky, config.router.circuit, req.key, limits, req.tally
    )


async def with_usage(
    store: UsageSource, snapshot: PoolSnapshot, dep: Deployment, now: float
) -> PoolSnapshot:
    """``snapshot`` with ``dep``'s last two usage buckets, read now if the pool read left them
    out (its strategies read no counters): what says whether others are served there."""
    if dep.id in snapshot.usage:
        return snapshot
    minute = int(now // 60)
    found = await store.read_usage(dep.id, minute - 1, minute, dep.counter_shards)
    return replace(snapshot, usage={**snapshot.usage, dep.id: found})


def prefill_rule(run: RunView, ctx: PoolContext, dep: Deployment) -> PrefillParams | None:
    """001's prefill rule as ``dep``'s tier runs it for ``run`` (None: off there)."""
    req, config = run.req, run.config
    strategy = config.strategy_for(ctx.model, dep.priority, req.operation, req.protocol)
    params = config.params_for(ctx.model, dep.priority, strategy, req.operation, req.protocol)
    return prefill_params(params)


def route_request(
    run: RunView, ctx: PoolContext, hints: Mapping[str, Hint] | None = None
) -> RouteRequest:
    """What the core routes ``run`` in ``ctx``'s pool by (the router and the explainer alike).

    ``hints``: the caller's prompt-size hints, for 001's prefill rule.
    """
    req, config = run.req, run.config
    prefill = any(prefill_rule(run, ctx, d) is not None for d in ctx.deployments)
    return RouteRequest(
        operation=req.operation,
        modalities=req.modalities,
        caller=req.caller,
        # 003's levels: the request's operation and protocol pick the model rules.
        strategy=functools.partial(
            config.strategy_for, ctx.model, operation=req.operation, protocol=req.protocol
        ),
        params=functools.partial(
            config.params_for, ctx.model, operation=req.operation, protocol=req.protocol
        ),
        sticky=ctx.binding_key is not None,
        quota_max_age=config.quota_max_age_seconds,
        role=req.role,
        native=untranslatable(req) is not None,
        # Read only where a deployment of the pool could refuse one (OpenAI kinds refuse none).
        features=features_of(req)
        if any(d.carriage.limited for d in ctx.deployments)
        else frozenset(),
        protocol=req.protocol,
        # The prompt is walked only when a tier of this pool runs the prefill rule.
        prompt_tokens=prompt_tokens(req.body) if prefill else 0,
        hints=hints or {},
    )
