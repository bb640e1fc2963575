"""001's prefill-aware extras in the pure core: two choices by prefill load, large requests,
the affinity ceiling and prompt-size hints with their TTL (time is ``now``)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.strategies import PrefillParams
from edgeproxy.routing.ordering.strategies import weighted_draw
from edgeproxy.routing.prefill.hints import Hint, uncached
from edgeproxy.routing.prefill.load import PrefillLoad, choose, keep_binding

SETTINGS = PrefillParams()
HINT_TTL_SECONDS = SETTINGS.hint_ttl_seconds


def dep(dep_id: str, weight: int = 1) -> Deployment:
    return Deployment.model_validate(
        {
            "id": dep_id,
            "model": "chat",
            "provider": "openai",
            "base_url": "https://x.test/v1",
            "upstream_model": "m",
            "weight": weight,
        }
    )


HEAVY, LIGHT = dep("heavy", 10), dep("light", 1)


def split(loads: dict[str, PrefillLoad], n: int = 4000, **kw: int) -> Counter[str]:
    rng = random.Random(7)
    sizes = {"heavy": kw.get("uncached", 1000), "light": kw.get("uncached", 1000)}
    return Counter(
        choose([HEAVY, LIGHT], loads, sizes, SETTINGS, rng, weighted_draw).id for _ in range(n)
    )


def test_below_the_threshold_the_weights_decide_alone() -> None:
    idle = split({})
    busy = split({"heavy": PrefillLoad(tokens=49_999)})
    for counts in (idle, busy):
        assert 0.88 < counts["heavy"] / 4000 < 0.94  # 10:1 -> 90.9 %
    assert idle == busy  # the same draws: the load did not enter


def test_past_the_threshold_the_lighter_of_two_draws_wins() -> None:
    counts = split({"heavy": PrefillLoad(tokens=60_000)})
    # heavy is kept only when both draws are heavy: (10/11)^2 = 82.6 %
    assert 0.79 < counts["heavy"] / 4000 < 0.86
    both = split({"heavy": PrefillLoad(tokens=60_000), "light": PrefillLoad(tokens=70_000)})
    # Now heavy is the lighter: it wins every mixed draw, light only (1/11)^2 = 0.8 %.
    assert 0.98 < both["heavy"] / 4000 < 1


def test_a_large_request_skips_a_deployment_at_its_limit() -> None:
    loads = {"heavy": PrefillLoad(tokens=10, elephants=1)}
    counts = split(loads, uncached=250_000)
    assert counts == Counter({"light": 4000})
    small = split(loads, uncached=1000)  # not large: the limit does not apply
    assert small["heavy"] > 3000


def test_when_every_candidate_is_at_its_limit_the_least_loaded_is_chosen() -> None:
    loads = {
        "heavy": PrefillLoad(tokens=400_000, elephants=1),
        "light": PrefillLoad(tokens=300_000, elephants=1),
    }
    assert split(loads, n=50, uncached=250_000) == Counter({"light": 50})  # never a refusal


def test_a_warmed_continuation_is_not_a_large_prefill_until_its_hint_expires() -> None:
    book = {"heavy": Hint(240_000, at=1000.0)}  # alice's hints, by deployment
    ttl = HINT_TTL_SECONDS
    assert uncached(book, "heavy", 250_000, now=1000.0 + 60, ttl=ttl) == 10_000
    assert uncached(book, "light", 250_000, now=1060.0, ttl=ttl) == 250_000  # other deployment
    expired = 1000.0 + HINT_TTL_SECONDS
    assert uncached(book, "heavy", 250_000, now=expired - 0.001, ttl=ttl) == 10_000
    assert uncached(book, "heavy", 250_000, now=expired, ttl=ttl) == 250_000
    assert uncached(book, "heavy", 250_000, now=1060.0, ttl=30.0) == 250_000  # a shorter TTL

    # The hint decides whether the limit applies: warm on heavy, the request may go there.
    loads = {"heavy": PrefillLoad(elephants=1)}
    rng = random.Random(3)
    warm = {d.id: uncached(book, d.id, 250_000, 1060.0, ttl) for d in (HEAVY, LIGHT)}
    picks = Counter(
        choose([HEAVY, LIGHT], loads, warm, SETTINGS, rng, weighted_draw).id for _ in range(200)
    )
    assert picks["heavy"] > 150
    cold = {d.id: uncached(book, d.id, 250_000, expired, ttl) for d in (HEAVY, LIGHT)}
    picks = Counter(
        choose([HEAVY, LIGHT], loads, cold, SETTINGS, rng, weighted_draw).id for _ in range(200)
    )
    assert picks == Counter({"light": 200})


@pytest.mark.parametrize(("tokens", "kept"), [(0, True), (150_000, True), (150_001, False)])
def test_a_binding_is_given_up_above_the_affinity_ceiling(tokens: int, kept: bool) -> None:
    assert keep_binding(PrefillLoad(tokens=tokens), SETTINGS) is kept
