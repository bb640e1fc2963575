"""The explainer and the router reach the same refusal for the same pool state (hypothesis).

Over the pool states ``tests/unit/routing/test_explain_property.py`` generates
(tiers, weights, drained, reserved and incompatible deployments, rpm limits,
throttled domains, circuits in every state), the core's first step for a
fresh request stops or tries. When it stops, the explainer's ``blocked``
(``service/explainer``: its reason and ``retry_after_ms``) and the router's
final error for that stop (``routing.refusal.final_error``) say the same:
the judge's reason for it (``routing.judge.pool``) names the explainer's
block, and the error's status, code and Retry-After are the ones the
explainer's block stands for (the spec's final error mapping, restated here).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from edgeproxy.config.policies import Operation, default_execution_policies
from edgeproxy.config.roles import Role
from edgeproxy.config.router import CircuitSettings
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.judge.pool import pool_refusal
from edgeproxy.routing.judge.reasons import Reason
from edgeproxy.routing.ordering.registry import REGISTRY
from edgeproxy.routing.refusal import RouteFailure, final_error
from edgeproxy.routing.selection import RouteRequest
from edgeproxy.routing.step import AttemptLog, Stop, next_step
from edgeproxy.service.explainer import _blocked
from tests.unit.routing.test_explain_property import (
    CALLER,
    NOW,
    Spec,
    _deployment,
    _snapshot,
    specs,
)

# The explainer's block -> (the judge's reason, status, code): 000's final error mapping.
MAPPING = {
    "overloaded": (Reason.OVERLOADED, 503, "model_overloaded"),
    "rate_limited": (Reason.POOL_LIMITS, 429, "rate_limit_exceeded"),
    "reserved": (Reason.RESERVED, 429, "rate_limit_exceeded"),
    "disabled": (Reason.DISABLED, 503, "model_unavailable"),
    "incompatible": (Reason.INCOMPATIBLE, 503, "model_unavailable"),
    "unavailable": (Reason.MISCONFIGURED, 503, "model_unavailable"),
}
WAITS = {"overloaded", "rate_limited"}  # the blocks whose error names the explainer's wait


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
@settings(max_examples=400, derandomize=True, deadline=None)
@given(
    states=st.lists(specs, min_size=1, max_size=6),
    strategy=st.sampled_from([spec.name for spec in REGISTRY]),
    images=st.booleans(),
    role=st.sampled_from([Role.FREE, Role.PRO]),
    seed=st.integers(0, 2**16),
)
def test_a_blocked_pool_is_explained_as_the_router_refuses_it(
    states: list[Spec], strategy: object, images: bool, role: Role, seed: int
) -> None:
    deps = [_deployment(n, s) for n, s in enumerate(states)]
    route = RouteRequest(
        operation=Operation.CHAT,
        modalities=frozenset({"text", "image"} if images else {"text"}),
        caller=CALLER,
        strategy=strategy,  # type: ignore[arg-type]
        role=role,
        protocol="openai.chat",
    )
    budget = Budget.from_deadline(default_execution_policies()[Operation.CHAT].json_, NOW)
    step = next_step(
        deps,
        _snapshot(deps, states, None, False),
        route,
        AttemptLog(),
        CircuitSettings(),
        budget,
        now=NOW,
        rng=random.Random(seed),
    )
    if not isinstance(step, Stop) or step.failure.blocked is None:
        event("tried")
        return
    explained = _blocked(step.failure.blocked)
    assert explained is not None
    event(f"blocked: {explained['reason']}")
    reason, status, code = MAPPING[explained["reason"]]
    error = final_error(RouteFailure(step.failure, None), now=NOW)
    assert pool_refusal(step.failure, NOW).reason is reason
    assert (error.status, error.code) == (status, code)
    wait = explained["retry_after_ms"]
    if explained["reason"] in WAITS and wait is not None:
        assert error.retry_after is not None
        assert int(error.retry_after * 1000) == wait
    elif explained["reason"] not in WAITS:
        assert error.retry_after is None
