"""SnapStart's hooks (api/snapshot.py): what they import, reseed and register."""

from __future__ import annotations

import random
import sys

import pytest
import snapshot_restore_py

from edgeproxy.api import snapshot
from edgeproxy.settings import Settings

KEYS = {
    "AWS_ACCESS_KEY_ID": "AKID",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",  # none, as on Lambda
}


@pytest.mark.parametrize(
    ("environ", "admin_key_ref", "expected"),
    [
        (KEYS, None, []),
        (KEYS, "env:EDGEPROXY_LOCAL_ADMIN_KEY", []),
        # SnapStart hands credentials over by the container endpoint, not the environment.
        ({"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1:9001/c"}, None, ["aioboto3"]),
        ({**KEYS, "AWS_PROFILE": "dev"}, None, ["aioboto3"]),
        # The template's admin key: an SSM parameter, read by the lean JSON client...
        (KEYS, "ssm:/edgeproxy/admin-key", []),
        (KEYS, " secretsmanager:edgeproxy/admin", []),
        # ... unless only botocore knows the endpoint (here: a FIPS endpoint).
        ({**KEYS, "AWS_USE_FIPS_ENDPOINT": "true"}, "ssm:/edgeproxy/admin-key", ["aioboto3"]),
    ],
)
def test_aioboto3_is_imported_before_the_snapshot_only_when_the_first_request_would(
    environ: dict[str, str], admin_key_ref: str | None, expected: list[str]
) -> None:
    assert snapshot.first_request_imports(environ, admin_key_ref) == expected


def test_after_a_restore_random_is_reseeded_and_the_gateway_closed() -> None:
    random.seed(7)
    snapshot_sequence = [random.random() for _ in range(3)]
    random.seed(7)  # the state every restore of one snapshot starts from
    closed: list[bool] = []
    snapshot.restored(lambda: closed.append(True))
    assert [random.random() for _ in range(3)] != snapshot_sequence
    assert closed == [True]


def test_both_hooks_are_registered_where_the_runtime_offers_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings.from_env({**KEYS, "EDGEPROXY_ADMIN_KEY_REF": "ssm:/edgeproxy/admin-key"})
    before = snapshot_restore_py.get_before_snapshot()
    after = snapshot_restore_py.get_after_restore()
    monkeypatch.setattr(snapshot_restore_py, "_before_snapshot_registry", [])
    monkeypatch.setattr(snapshot_restore_py, "_after_restore_registry", [])

    def close() -> None:
        pass

    assert snapshot.register(settings, close) is True
    [(prepare, args, kwargs)] = snapshot_restore_py.get_before_snapshot()
    assert (prepare, args[1], kwargs) == (snapshot.prepare, "ssm:/edgeproxy/admin-key", {})
    assert args[0]["AWS_ACCESS_KEY_ID"] == "AKID"
    assert snapshot_restore_py.get_after_restore() == [(snapshot.restored, (close,), {})]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # not on Lambda: no module
    assert snapshot.register(settings, close) is False
    monkeypatch.undo()
    assert snapshot_restore_py.get_before_snapshot() is before
    assert snapshot_restore_py.get_after_restore() is after
