"""Binding share versus configured weight (pure), and how operators name a caller."""

from __future__ import annotations

import hashlib

import pytest

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.routing.snapshot import Usage
from edgeproxy.service.admin.bindings import looks_like_caller_id, resolve_caller, share_of


def dep(dep_id: str, weight: float) -> Deployment:
    return Deployment(
        id=dep_id,
        model="gpt",
        provider=ProviderKind.OPENAI,
        base_url="https://api.example.test/v1",
        upstream_model="m",
        weight=weight,
    )


def test_share_compares_binding_share_with_weights() -> None:
    deps = [dep("a", 3), dep("b", 1)]
    usage = {
        "a": [
            Usage("a", 10, requests=2, successes=2, sticky_hits=1),
            Usage("a", 11, requests=3, successes=3, sticky_hits=3),
        ],
        "b": [Usage("b", 11, requests=5, successes=4, sticky_hits=4)],
    }
    report = share_of("gpt", deps, usage, 10, 11)
    a, b = report.deployments
    assert (a.weight_share, a.traffic_share, a.sticky_share) == (0.75, 0.5, 0.5)
    assert (b.weight_share, b.traffic_share, b.sticky_share) == (0.25, 0.5, 0.5)
    assert (a.requests, a.successes, a.sticky_hits) == (5, 5, 4)
    assert report.requests == 10
    assert report.sticky_fraction == pytest.approx(8 / 9)
    assert report.moved == pytest.approx(0.25)  # a quarter of the traffic went against weights


def test_share_of_an_idle_pool_is_all_zero() -> None:
    report = share_of("gpt", [dep("a", 1), dep("b", 0)], {}, 0, 59)
    assert report.requests == 0
    assert report.moved == 0.0
    assert report.sticky_fraction == 0.0
    assert [d.weight_share for d in report.deployments] == [1.0, 0.0]
    assert [d.traffic_share for d in report.deployments] == [0.0, 0.0]


@pytest.mark.parametrize(
    ("given", "caller"),
    [
        ("ip:203.0.113.7", "ip:203.0.113.7"),
        ("grant:g-7", "grant:g-7"),
        ("key:" + "0" * 64, "key:" + "0" * 64),
        ("203.0.113.7", "ip:203.0.113.7"),
        ("2001:db8:0:7::99", "ip:2001:db8:0:7::/64"),
        ("sk-live-abc", "key:" + hashlib.sha256(b"sk-live-abc").hexdigest()),
    ],
)
def test_a_caller_is_named_by_id_ip_or_raw_key(given: str, caller: str) -> None:
    assert resolve_caller(given) == caller


def test_only_ids_and_addresses_look_like_callers() -> None:
    assert looks_like_caller_id("ip:2001:db8::/64")
    assert looks_like_caller_id("198.51.100.1")
    assert not looks_like_caller_id("sk-live-abc")
