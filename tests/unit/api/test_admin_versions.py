"""Where an admin write's version comes from, and the CLI's settings patch syntax."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import Request

from edgeproxy.api.admin.guard import AdminCall, version_of
from edgeproxy.cli.admin import settings_patch
from edgeproxy.errors import RequestError, UsageError, VersionRequired


def _call(headers: dict[str, str] | None = None, query: str = "") -> AdminCall:
    scope = {
        "type": "http",
        "method": "PUT",
        "path": "/admin/router-settings",
        "query_string": query.encode(),
        "headers": [(k.encode(), v.encode()) for k, v in (headers or {}).items()],
    }
    return AdminCall(Request(scope), None, None, None, "ops")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("headers", "body", "query", "version"),
    [
        ({"if-match": '"3"'}, {}, "", 3),
        ({"if-match": 'W/"3"'}, None, "", 3),
        ({"if-match": "3"}, {"version": 3}, "", 3),
        ({}, {"version": 0}, "", 0),
        ({}, None, "version=7", 7),
    ],
)
def test_the_version_comes_from_if_match_the_body_or_the_query(
    headers: dict[str, str], body: dict[str, Any] | None, query: str, version: int
) -> None:
    assert version_of(_call(headers, query), body) == version
    assert body is None or "version" not in body  # removed before validation


def test_a_missing_version_is_428_and_a_bad_one_400() -> None:
    with pytest.raises(VersionRequired):
        version_of(_call(), {})
    for headers, body in (
        ({"if-match": '"x"'}, {}),
        ({"if-match": '"2"'}, {"version": 3}),
        ({}, {"version": "3"}),
        ({}, {"version": -1}),
        ({}, {"version": True}),
    ):
        with pytest.raises(RequestError):
            version_of(_call(headers), body)


def test_settings_patch_builds_nested_json_values() -> None:
    assert settings_patch(
        ["strategy=least-busy", "circuit.cooldown_seconds=10", "sticky.enabled=false"],
        '{"max_fallback_depth": 2}',
    ) == {
        "max_fallback_depth": 2,
        "strategy": "least-busy",
        "circuit": {"cooldown_seconds": 10},
        "sticky": {"enabled": False},
    }
    for pairs, body in ((["novalue"], None), ([], None), ([], "[1]")):
        with pytest.raises(UsageError):
            settings_patch(pairs, body)
