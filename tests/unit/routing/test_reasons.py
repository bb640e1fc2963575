"""The selection's reasons: each exclusion kind, the ranking's own scores, stickiness, tiers.

Every case calls the core with ``now=`` and a seeded rng, and checks the
reasons against the decision returned beside them: the chosen reason names the
picked deployment and the ranked reasons follow ``Pick.ranked``.
"""

from __future__ import annotations

import random

import pytest

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.policies import Operation
from edgeproxy.config.roles import Role
from edgeproxy.config.strategies import Strategy, WeightedDrawParams
from edgeproxy.routing.eligibility import assess
from edgeproxy.routing.explain.reasons import Cause, Outcome, Reason, compact
from edgeproxy.routing.selection import Blocked, BlockReason, Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import (
    Binding,
    BindingKey,
    Capacity,
    Circuit,
    CircuitState,
    OpenCause,
    PoolSnapshot,
    Quota,
    QuotaStatus,
    Usage,
    credential_key,
)

from .builders import dep

NOW = 60_000.0 + 15.0  # 15 s into minute 1000
MINUTE = 1000
REQ = RouteRequest(strategy=Strategy.WEIGHT_PRIORITY, caller="key:x", role=Role.FREE)


def decide(
    deps: list[Deployment],
    snap: PoolSnapshot | None = None,
    req: RouteRequest = REQ,
    *,
    seed: int = 0,
    **kw: object,
) -> Pick | Blocked:
    return next_deployment(deps, snap or PoolSnapshot(), req, NOW, random.Random(seed), **kw)  # type: ignore[arg-type]


def of(result: Pick | Blocked, dep_id: str) -> Reason:
    return next(r for r in result.reasons if r.deployment_id == dep_id)


def test_every_deployment_gets_one_reason_in_pool_order() -> None:
    deps = [dep("a"), dep("b", weight=2), dep("c", priority=-1)]
    got = decide(deps)
    assert [r.deployment_id for r in got.reasons] == ["a", "b", "c"]


def test_role_reserved_deployment_is_excluded_as_role() -> None:
    got = decide([dep("a", min_role=Role.PRO), dep("b")])
    assert isinstance(got, Pick)
    assert got.deployment.id == "b"
    reason = of(got, "a")
    assert (reason.outcome, reason.cause) == (Outcome.EXCLUDED, Cause.ROLE)
    assert "pro" in reason.detail


def test_everything_reserved_blocks_with_role_reasons() -> None:
    got = decide([dep("a", min_role=Role.INTERNAL)])
    assert isinstance(got, Blocked)
    assert got.reason is BlockReason.RESERVED
    assert [r.cause for r in got.reasons] == [Cause.ROLE]


def test_operation_native_and_modality_exclusions_name_what_is_missing() -> None:
    deps = [
        dep("emb", operations=frozenset({Operation.EMBEDDINGS})),
        dep("txt"),
        dep("vision", modalities=frozenset({"text", "image"})),
    ]
    req = RouteRequest(caller="c", modalities=frozenset({"text", "image"}))
    got = decide(deps, req=req)
    assert isinstance(got, Pick)
    assert got.deployment.id == "vision"
    assert (of(got, "emb").cause, of(got, "emb").detail) == (Cause.OPERATION, "chat")
    assert (of(got, "txt").cause, of(got, "txt").detail) == (Cause.MODALITY, "image")

    native = RouteRequest(operation=Operation.RESPONSES, native=True, caller="c")
    chat_only = [dep("chat"), dep("resp", operations=frozenset({Operation.RESPONSES}))]
    got = decide(chat_only, req=native)
    assert isinstance(got, Pick)
    assert got.deployment.id == "resp"
    assert (of(got, "chat").cause, of(got, "chat").detail) == (Cause.NATIVE, "responses")


def test_open_circuit_is_excluded_with_its_cause_and_retry_after() -> None:
    circuit = Circuit(
        "a", CircuitState.OPEN, open_until=NOW + 12, opened_at=NOW - 1, cause=OpenCause.MAINTENANCE
    )
    got = decide([dep("a"), dep("b")], PoolSnapshot(circuits={"a": circuit}))
    reason = of(got, "a")
    assert (reason.outcome, reason.cause) == (Outcome.EXCLUDED, Cause.CIRCUIT)
    assert reason.retry_after == pytest.approx(12.0)
    assert "maintenance" in reason.detail
    assert of(got, "b").outcome is Outcome.CHOSEN


def test_half_open_circuit_with_the_probe_taken_is_excluded_and_a_free_one_would_probe() -> None:
    taken = Circuit(
        "a", CircuitState.OPEN, open_until=NOW - 1, probe_owner="other", probe_until=NOW + 5
    )
    free = Circuit("b", CircuitState.OPEN, open_until=NOW - 1)
    got = decide([dep("a"), dep("b")], PoolSnapshot(circuits={"a": taken, "b": free}))
    assert isinstance(got, Pick)
    assert got.deployment.id == "b"
    assert got.probe
    assert of(got, "a").cause is Cause.CIRCUIT
    assert "probe" in of(got, "a").detail
    assert "probe lease" in of(got, "b").detail


def test_capacity_quota_rpm_and_tpm_exclusions() -> None:
    deps = [
        dep("cap", failure_domain="region-1"),
        dep("quo", credential="env:KEY_Q"),
        dep("rpm", rpm_limit=3),
        dep("tpm", tpm_limit=100),
        dep("ok"),
    ]
    spent = Quota(
        credential_key("env:KEY_Q"), "requests", remaining=0, reset_at=NOW + 20, fetched_at=NOW - 1
    )
    snap = PoolSnapshot(
        capacities={"region-1": Capacity("region-1", throttled_until=NOW + 7)},
        quotas={credential_key("env:KEY_Q"): QuotaStatus(credential_key("env:KEY_Q"), (spent,))},
        usage={
            "rpm": [Usage("rpm", MINUTE, requests=3)],
            "tpm": [Usage("tpm", MINUTE, prompt_tokens=100)],
        },
    )
    got = decide(deps, snap)
    assert isinstance(got, Pick)
    assert got.deployment.id == "ok"
    causes = {r.deployment_id: (r.cause, round(r.retry_after)) for r in got.reasons}
    assert causes["cap"] == (Cause.CAPACITY, 7)
    assert causes["quo"] == (Cause.QUOTA, 20)
    assert causes["rpm"] == (Cause.RPM, 45)  # the rest of the minute
    assert causes["tpm"] == (Cause.TPM, 45)


def test_every_candidate_rate_limited_blocks_with_the_same_reasons() -> None:
    got = decide(
        [dep("a", rpm_limit=1)], PoolSnapshot(usage={"a": [Usage("a", MINUTE, requests=1)]})
    )
    assert isinstance(got, Blocked)
    assert got.reason is BlockReason.RATE_LIMITED
    assert [(r.outcome, r.cause) for r in got.reasons] == [(Outcome.EXCLUDED, Cause.RPM)]


def test_ruled_out_tried_and_lower_tier_reasons() -> None:
    deps = [dep("a", priority=1), dep("b", priority=1), dep("c", priority=1), dep("low")]
    got = decide(deps, skip={"a"}, tried={"b": 1})
    assert isinstance(got, Pick)
    assert got.deployment.id == "c"
    assert of(got, "a").cause is Cause.RULED_OUT
    assert (of(got, "b").cause, of(got, "b").detail) == (Cause.TRIED, "tried 1")
    assert (of(got, "c").outcome, of(got, "c").cause) == (Outcome.CHOSEN, Cause.STRATEGY)
    assert (of(got, "low").outcome, of(got, "low").cause) == (Outcome.RANKED, Cause.TIER)


def test_zero_weight_is_excluded_as_weight() -> None:
    req = RouteRequest(strategy=Strategy.SIMPLE_SHUFFLE, caller="c")
    got = decide([dep("a", weight=0), dep("b")], req=req)
    assert (of(got, "a").outcome, of(got, "a").cause) == (Outcome.EXCLUDED, Cause.WEIGHT)


def test_a_valid_binding_chooses_and_the_rest_rank_behind_it() -> None:
    binding = Binding(BindingKey("c", "gpt", "openai.chat"), "b", expires_at=NOW + 60)
    got = decide([dep("a", weight=9), dep("b")], PoolSnapshot(binding=binding))
    assert isinstance(got, Pick)
    assert got.sticky
    assert got.deployment.id == "b"
    assert (of(got, "b").outcome, of(got, "b").cause, of(got, "b").bound) == (
        Outcome.CHOSEN,
        Cause.STICKY,
        True,
    )
    assert (of(got, "a").outcome, of(got, "a").cause) == (Outcome.RANKED, Cause.STICKY)


def test_a_binding_to_an_open_circuit_says_so_and_the_strategy_decides() -> None:
    binding = Binding(BindingKey("c", "gpt", "openai.chat"), "b", expires_at=NOW + 60)
    circuit = Circuit("b", CircuitState.OPEN, open_until=NOW + 30, opened_at=NOW - 1)
    got = decide([dep("a"), dep("b")], PoolSnapshot(binding=binding, circuits={"b": circuit}))
    assert isinstance(got, Pick)
    assert not got.sticky
    assert (of(got, "b").cause, of(got, "b").bound) == (Cause.CIRCUIT, True)
    assert of(got, "a").cause is Cause.STRATEGY


def test_metric_scores_are_the_numbers_the_strategy_ranked_by() -> None:
    req = RouteRequest(strategy=Strategy.LEAST_BUSY, caller="c")
    usage = {
        "a": [Usage("a", MINUTE, inflight=5)],
        "b": [Usage("b", MINUTE, inflight=1)],
        "c": [Usage("c", MINUTE, inflight=3)],
    }
    got = decide([dep("a"), dep("b"), dep("c")], PoolSnapshot(usage=usage), req)
    assert isinstance(got, Pick)
    assert got.ranked == ("b", "c", "a")
    assert [(r.deployment_id, r.rank, r.score) for r in got.reasons] == [
        ("a", 3, 5),
        ("b", 1, 1),
        ("c", 2, 3),
    ]
    assert of(got, "b").outcome is Outcome.CHOSEN
    assert of(got, "b").strategy == "least-busy"


@pytest.mark.parametrize("strategy", list(Strategy))
@pytest.mark.parametrize("seed", range(5))
def test_the_reasons_follow_the_decision_for_every_strategy(strategy: Strategy, seed: int) -> None:
    deps = [dep("a", weight=3), dep("b", weight=1), dep("c", weight=2, input_price_per_mtok=1.0)]
    usage = {d.id: [Usage(d.id, MINUTE, inflight=i, requests=i)] for i, d in enumerate(deps)}
    got = decide(
        deps, PoolSnapshot(usage=usage), RouteRequest(strategy=strategy, caller="c"), seed=seed
    )
    assert isinstance(got, Pick)
    ranked = sorted((r for r in got.reasons if r.rank is not None), key=lambda r: r.rank or 0)
    assert tuple(r.deployment_id for r in ranked) == got.ranked
    chosen = [r for r in got.reasons if r.outcome is Outcome.CHOSEN]
    assert [r.deployment_id for r in chosen] == [got.deployment.id]


def test_power_of_two_choices_swap_is_remarked() -> None:
    params = WeightedDrawParams(intervene_inflight=2)
    req = RouteRequest(strategy=Strategy.SIMPLE_SHUFFLE, caller="c", params=lambda t, s: params)
    usage = {"busy": [Usage("busy", MINUTE, inflight=9)]}
    deps = [dep("busy", weight=1), dep("idle", weight=1)]
    remarks = set()
    for seed in range(20):
        got = decide(deps, PoolSnapshot(usage=usage), req, seed=seed)
        remarks |= {r.detail for r in got.reasons if r.detail}
    assert "p2c: 9 in flight on busy" in remarks


def test_compact_marks_chosen_rank_score_retry_and_binding() -> None:
    reasons = (
        Reason("a", Outcome.CHOSEN, Cause.STRATEGY, 0, rank=1, score=3.0, bound=True),
        Reason("b", Outcome.RANKED, Cause.STRATEGY, 0, rank=2, score=5.5),
        Reason("c", Outcome.EXCLUDED, Cause.CIRCUIT, 0, retry_after=12.2),
        Reason("d", Outcome.EXCLUDED, Cause.ROLE, 0),
    )
    assert compact(reasons) == "*a:strategy#1=3^ b:strategy#2=5.5 c:circuit(12s) d:role"


def test_assess_names_the_missing_modalities() -> None:
    status = assess(dep("a"), PoolSnapshot(), NOW, MINUTE, modalities={"text", "audio", "image"})
    assert status.detail == "modality:audio,image"
