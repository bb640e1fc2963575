"""The rules between a key, its team and its organization (pure)."""

from __future__ import annotations

from dataclasses import replace

from edgeproxy.config.roles import Role
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.hierarchy import (
    AdminScope,
    Effective,
    Group,
    Level,
    effective,
    effective_models,
    models_outside,
    more_rights,
    scope_of,
)

KEY = ClientKey(
    digest="ab" * 32, name="k", rpm_limit=100, tpm_limit=None, models=frozenset({"a", "b"})
)
TEAM = Group(
    Level.TEAM,
    "t",
    "T",
    parent="o",
    rpm_limit=50,
    tpm_limit=9000,
    models=frozenset({"a", "b", "c"}),
)
ORG = Group(
    Level.ORGANIZATION,
    "o",
    "O",
    rpm_limit=80,
    tpm_limit=5000,
    budget_usd=10.0,
    models=frozenset({"a"}),
)


def test_the_strictest_level_wins_and_is_named() -> None:
    limits = effective(KEY, TEAM, ORG)
    assert limits["rpm_limit"] == Effective(50, Level.TEAM)
    assert limits["tpm_limit"] == Effective(5000, Level.ORGANIZATION)
    assert limits["budget_usd"] == Effective(10.0, Level.ORGANIZATION)
    assert limits["max_parallel_requests"] == Effective(None, None)


def test_a_key_without_a_team_has_its_own_limits() -> None:
    assert effective(KEY, None, None)["rpm_limit"] == Effective(100, Level.KEY)


def test_a_tie_is_the_key_s_own() -> None:
    team = Group(Level.TEAM, "t", "T", rpm_limit=100)
    assert effective(KEY, team, None)["rpm_limit"] == Effective(100, Level.KEY)


def test_models_are_what_every_level_allows() -> None:
    assert effective_models(KEY, TEAM, ORG) == (
        frozenset({"a"}),
        [Level.KEY, Level.TEAM, Level.ORGANIZATION],
    )
    assert effective_models(ClientKey(digest="cd" * 32, name="all"), None, None) == (None, [])


def test_models_outside_a_group() -> None:
    assert models_outside(frozenset({"a", "x:eu"}), TEAM) == ["x:eu"]
    assert models_outside(frozenset({"c:eu"}), TEAM) == []
    assert models_outside(None, TEAM) is None
    assert models_outside(None, Group(Level.TEAM, "open", "Open")) == []


def test_scopes_cover_their_level_only() -> None:
    team = scope_of(ClientKey(digest="ef" * 32, name="t", admin_of="team:a"))
    org = scope_of(ClientKey(digest="ef" * 32, name="o", admin_of="organization:acme"))
    assert team == AdminScope(Level.TEAM, "a")
    assert team.covers("a", "acme")
    assert not team.covers("b", "acme")
    assert org is not None
    assert org.covers("b", "acme")
    assert not org.covers("c", "other")
    assert scope_of(ClientKey(digest="ef" * 32, name="g", admin_of="gateway")) is None
    assert scope_of(ClientKey(digest="ef" * 32, name="x", admin_of="team:A#b")) is None


def test_more_rights_names_the_first_field() -> None:
    minter = ClientKey(
        digest="ab" * 32,
        name="m",
        role=Role.PRO,
        models=frozenset({"a"}),
        rpm_limit=10,
        admin_of="team:a",
    )
    same = ClientKey(
        digest="cd" * 32, name="n", role=Role.PRO, models=frozenset({"a"}), rpm_limit=10
    )
    assert more_rights(minter, same) is None
    assert more_rights(minter, replace(same, role=Role.INTERNAL)) == "role"
    assert more_rights(minter, replace(same, models=None)) == "models"
    assert more_rights(minter, replace(same, rpm_limit=11)) == "rpm_limit"
    assert more_rights(minter, replace(same, admin_of="organization:acme")) == "admin_of"
    assert more_rights(minter, replace(same, admin_of="team:a")) is None
