"""Explain one routing decision: the router's own read and core, without its writes.

``explain`` opens the pool exactly as the router does (``pool.open_pool``:
one state read, the same snapshot request) and asks the core the router
asks (``routing.step.next_step`` with ``pool.route_request``) for the first
step of a fresh request; the answer's ``reasons`` are the core's own account
of its decision (``routing.explain``). Deployments whose context window cannot
hold the request are ruled out first, by the router's own rule
(``routing.estimates.window.unfit``, each deployment's calibration for the
request's protocol, as the run has it): ``too_small`` names them, and when that is all of them the request
is ``blocked`` by the judge's ``context_window`` reason, with that chain's
fallbacks, as the router would answer it without a call. Nothing else happens: no probe lease,
no admission count, no upstream call, no binding written, no outcome.

Usage::

    who = await subject(store, key_id="3f2a...", caller=None, role=None)
    report = await explain(store, config, request_for(who, ...), now=now, rng=rng)
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgeproxy.config.models import FallbackReason, GatewayConfig
from edgeproxy.config.roles import Role
from edgeproxy.errors import ModelNotFound, NotFound, RequestError
from edgeproxy.routing.access import ClientKey, key_id_of
from edgeproxy.routing.affinity import binding_valid, caller_id
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.estimates.calibration import Calibration
from edgeproxy.routing.estimates.window import unfit
from edgeproxy.routing.explain.reasons import Reason
from edgeproxy.routing.judge.reasons import Reason as Refused
from edgeproxy.routing.judge.ruling import model_refusal
from edgeproxy.routing.ordering.registry import REGISTRY
from edgeproxy.routing.selection import Blocked
from edgeproxy.routing.step import AttemptLog, Stop, Try, next_step
from edgeproxy.service.pool import PoolContext, open_pool, route_request
from edgeproxy.service.request import ProxyRequest
from edgeproxy.service.run import Run
from edgeproxy.service.trace import Trace
from edgeproxy.state.store import AdminStore


@dataclass(frozen=True, slots=True)
class Subject:
    """Who the request is explained for: affinity identity, role and key (if a table key)."""

    caller: str
    role: Role
    key: ClientKey | None = None


async def subject(
    store: AdminStore, *, key_id: str | None, caller: str | None, role: Role | None
) -> Subject:
    """The caller to explain for: a table key by id, or an affinity identity as stored.

    ``role`` overrides the key's role (an identity that is no table key is
    ``free`` unless given). A ``key:<digest>`` identity of a table key takes its role.
    """
    if key_id:
        key = await store.find_client_key(key_id)
        if key is None:
            raise NotFound(f"No API key has the id `{key_id}`.", param="key_id")
        return Subject(caller_id(key.digest, None, None), role or key.role, key)
    if not caller:
        raise RequestError("Name the caller: `key_id` or `caller`.", param="key_id")
    key = None
    if caller.startswith("key:"):
        key = await store.find_client_key(key_id_of(caller.removeprefix("key:")))
    return Subject(caller, role or (key.role if key else Role.FREE), key)


async def explain(
    store: AdminStore, config: GatewayConfig, run: Run, *, now: float, rng: random.Random
) -> dict[str, Any]:
    """The first routing step of ``run``'s request at ``now``, with every candidate's reason."""
    req = run.req
    if not config.pool(req.model):
        raise ModelNotFound(f"The model `{req.model}` does not exist.", param="model")
    ctx = await open_pool(store, run, req.model, now)
    small, unfit_pool = unfit(ctx.deployments, req.body, req.operation, run.calibrated)
    if unfit_pool is not None:  # the router answers this without a call: no step to explain
        return {
            **_header(req, config, now),
            "chosen": None,
            "strategy": None,
            "sticky": False,
            "probe": False,
            "blocked": {"reason": Refused.CONTEXT_WINDOW.value, "retry_after_ms": None},
            "too_small": sorted(small),
            "binding": _binding(ctx, now),
            "fallbacks": config.fallback_chain(req.model, FallbackReason.CONTEXT_WINDOW),
            "candidates": [],
        }
    step = next_step(
        ctx.deployments,
        ctx.snapshot,
        route_request(run, ctx),
        AttemptLog(skip=small),
        ctx.circuit,
        run.budget,
        now=now,
        rng=rng,
        limits=ctx.limits,
    )
    chosen, blocked = None, None
    reasons: tuple[Reason, ...] = ()
    if isinstance(step, Try):
        chosen, reasons = step.pick, step.pick.reasons
    elif isinstance(step, Stop) and step.failure.blocked is not None:
        blocked = step.failure.blocked
        reasons = blocked.reasons
    return {
        **_header(req, config, now),
        "chosen": chosen.deployment.id if chosen else None,
        "strategy": chosen.strategy.value if chosen and chosen.strategy else None,
        "sticky": bool(chosen and chosen.sticky),
        "probe": bool(chosen and chosen.probe),
        "blocked": _blocked(blocked),
        "too_small": sorted(small),
        "binding": _binding(ctx, now),
        "fallbacks": [] if chosen else config.fallback_chain(req.model, FallbackReason.GENERAL),
        "candidates": [_candidate(r, config, req.model) for r in reasons],
    }


def _header(req: ProxyRequest, config: GatewayConfig, now: float) -> dict[str, Any]:
    """What every report starts with: the request explained, for whom, and when."""
    return {
        "model": req.model,
        "operation": req.operation.value,
        "caller": req.caller,
        "role": req.role.value,
        "key_allows_model": key_allows(req, config),
        "at": now,
    }


def key_allows(req: ProxyRequest, config: GatewayConfig) -> bool:
    """Whether the request's key may ask for its model, by the judge's own rule (the edge
    refuses by the same ``routing.judge.model_refusal``: any name of the model counts)."""
    names = config.names_of(config.canonical(req.model))
    return model_refusal(req.key, req.model, names) is None


def new_run(
    req: ProxyRequest,
    config: GatewayConfig,
    now: float,
    calibrated: Mapping[str, Calibration] | None = None,
) -> Run:
    """A ``Run`` for ``req`` as the gateway would start it at ``now`` (owner ``explain``);
    ``calibrated``: the process's prompt calibrations for the request's protocol, by
    deployment, as its runs get them."""
    policies = config.router.execution_policies[req.operation]
    deadline = policies.stream if req.stream else policies.json_
    budget = Budget.from_deadline(deadline, now)
    trace = Trace(requested_model=req.model)
    return Run(req, config, budget, trace, owner="explain", calibrated=calibrated or {})


def _blocked(blocked: Blocked | None) -> dict[str, Any] | None:
    if blocked is None:
        return None
    after = blocked.retry_after
    return {
        "reason": blocked.reason.value,
        "retry_after_ms": None if after is None else int(after * 1000),
    }


def _binding(ctx: PoolContext, now: float) -> dict[str, Any] | None:
    binding = ctx.snapshot.binding
    if ctx.binding_key is None or binding is None:
        return None
    return {
        "deployment": binding.deployment_id,
        "valid": binding_valid(binding, now, ctx.snapshot.pool_generation),
        "expires_in_s": max(0, int(binding.expires_at - now)),
    }


def _candidate(reason: Reason, config: GatewayConfig, model: str) -> dict[str, Any]:
    out = reason.as_dict()
    if reason.strategy is not None:
        out["strategy_summary"] = next(
            (s.summary for s in REGISTRY if s.name.value == reason.strategy), ""
        )
    dep = next((d for d in config.pool(model) if d.id == reason.deployment_id), None)
    if dep is not None:
        out["weight"] = dep.weight
    return out
