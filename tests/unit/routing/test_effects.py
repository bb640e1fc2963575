"""What an outcome writes, decided without a store: counters, circuit, binding, throttle."""

from __future__ import annotations

import random

from edgeproxy.config.router import CircuitSettings
from edgeproxy.routing.effects import AttemptFacts, PoolFacts, on_failure, on_success
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.snapshot import (
    Binding,
    BindingKey,
    Circuit,
    CircuitState,
    Health,
    PoolSnapshot,
)
from edgeproxy.routing.verdict import judge

NOW = 1_000_000.0
KEY = BindingKey("caller", "m", "openai.chat")
ATTEMPT = AttemptFacts("d1", started_at=NOW - 2, probe=False, sticky=False, owner="req-1")


def _pool(snapshot: PoolSnapshot | None = None, *, allowed_fails: int = 3) -> PoolFacts:
    return PoolFacts(
        snapshot or PoolSnapshot(), KEY, 600.0, CircuitSettings(allowed_fails=allowed_fails)
    )


def _fail(status: int, *, retry_after: float | None = None) -> Fault:
    return Fault(FaultKind.HTTP, "upstream error", status=status, retry_after=retry_after)


def test_a_success_counts_its_tokens_and_gives_back_the_unused_reservation() -> None:
    reserved = AttemptFacts("d1", NOW - 2, probe=False, sticky=True, owner="r", reserved=100)
    effects = on_success(
        reserved, _pool(), prompt_tokens=10, completion_tokens=30, latency_s=2.0, now=NOW
    )
    assert effects.reconcile == 40 - 100
    assert effects.counters["successes"] == 1
    assert effects.counters["output_tokens_per_s_sum"] == 15.0
    assert effects.counters["sticky_hits"] == 1
    assert effects.counters["latency_ms_sum"] == 2000
    # No usage reported: the estimate stands.
    silent = on_success(
        reserved, _pool(), prompt_tokens=0, completion_tokens=0, latency_s=2.0, now=NOW
    )
    assert silent.reconcile == 0
    assert silent.counters["throughput_samples"] == 0


def test_a_stream_that_ended_without_a_finish_reason_counts_as_unfinished() -> None:
    cut = on_success(
        ATTEMPT,
        _pool(),
        prompt_tokens=1,
        completion_tokens=1,
        latency_s=1.0,
        now=NOW,
        anomalies=("missing_finish_reason",),
    )
    assert cut.counters["unfinished_streams"] == 1
    assert cut.counters["successes"] == 1  # still an answer: counted, not a failure
    whole = on_success(
        ATTEMPT, _pool(), prompt_tokens=1, completion_tokens=1, latency_s=1.0, now=NOW
    )
    assert "unfinished_streams" not in whole.counters


def test_a_healthy_success_writes_no_circuit_and_no_rejections() -> None:
    effects = on_success(
        ATTEMPT, _pool(), prompt_tokens=1, completion_tokens=1, latency_s=1.0, now=NOW
    )
    assert effects.circuit is None
    assert not effects.clear_rejections
    assert effects.renewed is not None  # a new binding for the caller
    assert (effects.renewed.deployment_id, effects.renewed.expires_at) == ("d1", NOW + 600)


def test_a_probe_success_closes_the_circuit_and_clears_rejections() -> None:
    half_open = Circuit(
        "d1", CircuitState.HALF_OPEN, probe_owner="req-1", probe_until=NOW + 5, version=4
    )
    snapshot = PoolSnapshot(
        circuits={"d1": half_open}, health={"d1": Health("d1", credential_rejections=2)}
    )
    probe = AttemptFacts("d1", NOW - 1, probe=True, sticky=False, owner="req-1")
    effects = on_success(
        probe, _pool(snapshot), prompt_tokens=1, completion_tokens=1, latency_s=1.0, now=NOW
    )
    assert effects.circuit is not None
    assert effects.circuit.current == half_open
    assert (effects.circuit.new.state, effects.circuit.new.version) == (CircuitState.CLOSED, 5)
    assert effects.clear_rejections


def test_a_fresh_binding_is_not_renewed() -> None:
    fresh = Binding(KEY, "d1", expires_at=NOW + 590)
    effects = on_success(
        ATTEMPT,
        _pool(PoolSnapshot(binding=fresh)),
        prompt_tokens=1,
        completion_tokens=1,
        latency_s=1.0,
        now=NOW,
    )
    assert effects.renewed is None


def test_the_first_transient_failure_counts_toward_the_circuit_a_repeat_does_not() -> None:
    verdict = judge(_fail(502))
    rng = random.Random(1)
    first = on_failure(ATTEMPT, _pool(allowed_fails=0), verdict, now=NOW, rng=rng, first=True)
    assert first.circuit is not None
    assert first.circuit.new.state is CircuitState.OPEN
    assert first.counters == {"failures": 1, "transient_failures": 1}
    again = on_failure(ATTEMPT, _pool(allowed_fails=0), verdict, now=NOW, rng=rng, first=False)
    assert again.circuit is None
    assert again.counters == first.counters  # still counted in the usage bucket
    assert not first.count_rejection
    assert first.throttled_until is None


def test_a_lost_circuit_race_is_re_decided_from_the_winner() -> None:
    effects = on_failure(
        ATTEMPT, _pool(), judge(_fail(502)), now=NOW, rng=random.Random(1), first=True
    )
    assert effects.circuit is not None
    assert effects.circuit.new.failures == 1
    winner = Circuit("d1", failures=3, window_start=NOW - 5, version=7)
    redo = effects.circuit.decide(winner)
    assert redo is not None
    assert (redo.state, redo.version) == (CircuitState.OPEN, 8)  # past allowed_fails (3): open


def test_a_throttle_marks_the_domain_and_leaves_the_circuit_and_health_alone() -> None:
    reserved = AttemptFacts("d1", NOW - 1, probe=False, sticky=False, owner="r", reserved=50)
    effects = on_failure(
        reserved,
        _pool(),
        judge(_fail(429, retry_after=30.0)),
        now=NOW,
        rng=random.Random(1),
        first=True,
    )
    assert effects.throttled_until == NOW + 30
    assert effects.circuit is None
    assert effects.counters == {"failures": 0, "throttles": 1}
    assert effects.reconcile == -50  # a failed call used no reservation


def test_a_credential_rejection_is_counted_and_drops_only_this_deployments_binding() -> None:
    mine = PoolSnapshot(binding=Binding(KEY, "d1", expires_at=NOW + 100))
    theirs = PoolSnapshot(binding=Binding(KEY, "d2", expires_at=NOW + 100))
    verdict = judge(_fail(401))
    effects = on_failure(ATTEMPT, _pool(mine), verdict, now=NOW, rng=random.Random(1), first=True)
    assert effects.count_rejection
    assert effects.drop_binding
    other = on_failure(ATTEMPT, _pool(theirs), verdict, now=NOW, rng=random.Random(1), first=True)
    assert not other.drop_binding


def test_a_health_neutral_answer_hands_the_probe_on() -> None:
    half_open = Circuit(
        "d1", CircuitState.HALF_OPEN, probe_owner="req-1", probe_until=NOW + 5, version=3
    )
    probe = AttemptFacts("d1", NOW - 1, probe=True, sticky=False, owner="req-1")
    effects = on_failure(
        probe,
        _pool(PoolSnapshot(circuits={"d1": half_open})),
        judge(_fail(400)),
        now=NOW,
        rng=random.Random(1),
        first=False,
    )
    assert effects.circuit is not None
    assert effects.circuit.new.probe_owner is None
    assert effects.circuit.new.state is CircuitState.HALF_OPEN
