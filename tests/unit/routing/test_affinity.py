from __future__ import annotations

import hashlib

import pytest

from edgeproxy.routing.affinity import (
    after_success,
    binding_valid,
    caller_id,
    key_digest,
    new_binding,
    should_renew,
)
from edgeproxy.routing.snapshot import Binding, BindingKey

KEY = BindingKey("key:abc", "gpt", "openai.chat")


def test_key_hash_wins_and_the_raw_key_never_appears() -> None:
    secret = "sk-live-supersecret-0123"
    cid = caller_id(key_digest(secret), "g-1", "10.0.0.1")
    assert cid == "key:" + hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in cid
    assert caller_id(key_digest("sk-other"), None, None) != cid


def test_grant_before_ip() -> None:
    assert caller_id(None, "grant-42", "10.0.0.1") == "grant:grant-42"
    assert caller_id("", "grant-42", None) == "grant:grant-42"


@pytest.mark.parametrize(
    ("ip", "expected"),
    [
        ("203.0.113.7", "ip:203.0.113.7"),
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "ip:2001:db8:1:2::/64"),
        ("2001:db8:1:2::1", "ip:2001:db8:1:2::/64"),
        ("::ffff:198.51.100.4", "ip:198.51.100.4"),
        ("not-an-ip", "ip:unknown"),
        ("", "ip:unknown"),
    ],
)
def test_ip_buckets(ip: str, expected: str) -> None:
    assert caller_id(None, None, ip or None) == expected


def test_rotating_ipv6_privacy_addresses_share_a_bucket() -> None:
    a = caller_id(None, None, "2001:db8:0:7:1111:2222:3333:4444")
    b = caller_id(None, None, "2001:db8:0:7:9999:8888:7777:6666")
    c = caller_id(None, None, "2001:db8:0:8:1111:2222:3333:4444")
    assert a == b != c


def test_binding_validity_by_expiry_and_generation() -> None:
    b = Binding(KEY, "d1", expires_at=200.0, generation=3)
    assert binding_valid(b, 199.9, pool_generation=3)
    assert not binding_valid(b, 200.0, pool_generation=3)  # expired (TTL deletion is lazy)
    assert not binding_valid(b, 100.0, pool_generation=4)  # pool invalidated since
    assert binding_valid(b, 100.0, pool_generation=2)  # our read of the pool was older
    assert not binding_valid(None, 100.0, 0)


def test_renewal_past_the_slack_after_the_last_write() -> None:
    b = Binding(KEY, "d1", expires_at=1000.0 + 3600)
    assert not should_renew(b, 1000.0, 3600)
    assert not should_renew(b, 1059.0, 3600)  # within RENEW_SLACK_S of the write
    assert should_renew(b, 1060.0, 3600)


def test_new_binding_versions_follow_the_stored_one() -> None:
    first = new_binding(KEY, "d1", 100.0, 60.0, 2, None)
    assert (first.expires_at, first.generation, first.version) == (160.0, 2, 1)
    second = new_binding(KEY, "d2", 130.0, 60.0, 2, first)
    assert (second.deployment_id, second.version) == ("d2", 2)


def test_after_success_writes_only_when_needed() -> None:
    fresh = Binding(KEY, "d1", expires_at=1000.0 + 3600, generation=1, version=4)
    assert after_success(KEY, fresh, "d1", 1001.0, 3600, 1) is None
    renewed = after_success(KEY, fresh, "d1", 3000.0, 3600, 1)
    assert renewed is not None
    assert renewed.expires_at == 6600.0
    assert renewed.version == 5
    moved = after_success(KEY, fresh, "d2", 1001.0, 3600, 1)
    assert moved is not None
    assert moved.deployment_id == "d2"
    stale = after_success(KEY, fresh, "d1", 1001.0, 3600, 2)
    assert stale is not None
    assert stale.generation == 2
    created = after_success(KEY, None, "d1", 10.0, 3600, 0)
    assert created is not None
    assert created.version == 1
