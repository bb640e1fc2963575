"""A revocable admin key cannot move the boundary it works inside (issue 39, item 1).

The probe: a table admin key loaded a document widening ``gateway.egress.allow``
to ``0.0.0.0/0`` with ``force: true``, and planted a ``gateway.api_keys``
admin entry that kept its admin rights after the planter was revoked and was
never listed. Here every route is refused with 403 naming the section,
nothing changes, and the refusal is audited; the owner (the bootstrap key)
may change both, and its admin entries become listed, revocable table keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from edgeproxy.cli import main
from edgeproxy.errors import PermissionDenied
from edgeproxy.routing.access import key_id_of
from edgeproxy.runtime import open_store, process_rng
from edgeproxy.service.admin.config_edit import ConfigEditor
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.runner import local_session, local_settings
from tests.fixtures.configs import config, deployment
from tests.integration.admin.helpers import ADMIN_KEY, admin, keys, ok

BOOTSTRAP = "ep-bootstrap-owner-0123456789abcdef"
ENV = {"EDGEPROXY_TEST_OWNER": BOOTSTRAP, "EDGEPROXY_ADMIN_KEY_REF": "env:EDGEPROXY_TEST_OWNER"}
PLANTED = "sk-planted-admin-0123456789"
WIDE = {"allow": ["0.0.0.0/0", "::/0"]}


def _sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _planted_entry() -> dict[str, Any]:
    return {"name": "planted", "sha256": _sha(PLANTED), "admin": True}


def _stored(base_url: str) -> dict[str, Any]:
    return ok(admin(base_url, "GET", "/admin/config"))


def _put(base_url: str, document: dict[str, Any], key: str = ADMIN_KEY, **order: Any) -> Any:
    return admin(base_url, "PUT", "/admin/config", key=key, json={"document": document, **order})


def _forbidden(answer: httpx.Response, section: str) -> None:
    assert answer.status_code == 403, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == ("permission_denied", section)
    assert section in error["message"]


def _refusals(base_url: str) -> list[dict[str, Any]]:
    entries = ok(admin(base_url, "GET", "/admin/audit?limit=50"))["data"]
    return [e for e in entries if e["action"] in ("config.refused", "key.refused")]


@pytest.fixture
def gw(start_gateway, upstream_a: MockUpstream) -> Any:
    return start_gateway(config(deployment("a", upstream_a), gateway=keys()), env=ENV)


def test_a_table_admin_key_cannot_widen_egress_by_any_load(gw: Any) -> None:
    before = _stored(gw.base_url)
    wide = {**before["document"]}
    wide["gateway"] = {**wide["gateway"], "egress": WIDE}
    for order in ({"force": True}, {}, {"dry_run": True}, {"base_version": before["version"]}):
        _forbidden(_put(gw.base_url, wide, **order), "gateway.egress")
    after = _stored(gw.base_url)
    assert after == before  # nothing changed, not even the version
    refused = _refusals(gw.base_url)
    assert len(refused) == 4
    assert {(e["target"], e["actor"].split()[0]) for e in refused} == {("gateway.egress", "ops")}


def test_the_cli_load_through_the_gateway_is_refused_the_same_way(
    gw: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EDGEPROXY_ADMIN_KEY", ADMIN_KEY)  # the table admin key, not the owner's
    before = _stored(gw.base_url)
    wide = {**before["document"], "gateway": {**before["document"]["gateway"], "egress": WIDE}}
    path = tmp_path / "wide.yaml"
    path.write_text(json.dumps(wide))
    status = main(["config", "load", str(path), "--force", "--url", gw.base_url])
    _, err = capsys.readouterr()
    assert status != 0
    assert "gateway.egress" in err
    assert _stored(gw.base_url) == before


def test_the_editor_refuses_every_route_that_would_touch_the_owners_sections(
    gw: Any, dynamo_endpoint: str, gateway_table: str
) -> None:
    # Every admin PATCH/PUT/POST/DELETE of the document is one ConfigEditor.edit; a change
    # that reaches gateway.egress through any of them is refused the same way.
    def widen(document: dict[str, Any]) -> None:
        document["gateway"]["egress"] = WIDE

    def plant(document: dict[str, Any]) -> None:
        document["gateway"]["api_keys"].append(_planted_entry())

    async def attempt() -> list[str]:
        seen: list[str] = []
        settings = local_settings(dynamo_endpoint, gateway_table)
        async with contextlib.AsyncExitStack() as stack:
            store = await open_store(settings, stack, local_session(), rng=process_rng())
            editor = ConfigEditor(store, lambda: 0.0)  # not the owner: the default
            version = (await editor.current()).version
            for change in (widen, plant):
                with pytest.raises(PermissionDenied) as refused:
                    await editor.edit(version, change, actor="t", action="x", target="y")
                seen.append(str(refused.value.param))
            assert (await editor.current()).version == version
        return seen

    assert asyncio.run(attempt()) == ["gateway.egress", "gateway.api_keys"]


def test_a_table_admin_key_cannot_plant_an_admin_key(gw: Any) -> None:
    before = _stored(gw.base_url)
    planted = {**before["document"]}
    planted["gateway"] = {
        **planted["gateway"],
        "api_keys": [*planted["gateway"].get("api_keys", []), _planted_entry()],
    }
    _forbidden(_put(gw.base_url, planted, force=True), "gateway.api_keys")
    assert _stored(gw.base_url) == before
    assert admin(gw.base_url, "GET", "/admin/keys", key=PLANTED).status_code == 401
    # Nor as a table key: creating, promoting or rotating an admin key is the owner's.
    create = {"name": "planted", "role": "admin"}
    _forbidden(admin(gw.base_url, "POST", "/admin/keys", json=create), "role")
    plain = ok(admin(gw.base_url, "POST", "/admin/keys", json={"name": "plain"}), 201)
    promote = admin(gw.base_url, "PATCH", f"/admin/keys/{plain['id']}", json={"role": "admin"})
    _forbidden(promote, "role")
    ops_id = key_id_of(_sha(ADMIN_KEY))
    _forbidden(admin(gw.base_url, "POST", f"/admin/keys/{ops_id}/rotate"), "role")
    assert len(_refusals(gw.base_url)) == 4
    listed = ok(admin(gw.base_url, "GET", "/admin/keys"))["data"]
    assert sorted((k["name"], k["role"]) for k in listed) == [("ops", "admin"), ("plain", "free")]
    # Revoking the would-be planter leaves no admin key behind it.
    ok(admin(gw.base_url, "POST", f"/admin/keys/{ops_id}/revoke", key=BOOTSTRAP))
    for key in (ADMIN_KEY, PLANTED):
        assert admin(gw.base_url, "GET", "/admin/keys", key=key).status_code == 401


def test_the_owner_moves_the_boundary_and_its_admin_entries_become_table_keys(gw: Any) -> None:
    before = _stored(gw.base_url)
    document = {**before["document"]}
    document["gateway"] = {
        **document["gateway"],
        "egress": {"allow": ["127.0.0.0/8", "10.0.0.0/8"]},
        "api_keys": [*document["gateway"].get("api_keys", []), _planted_entry()],
    }
    result = ok(_put(gw.base_url, document, key=BOOTSTRAP))
    assert result["stored"] is True
    stored = _stored(gw.base_url)["document"]["gateway"]
    assert stored["egress"]["allow"] == ["127.0.0.0/8", "10.0.0.0/8"]
    # No admin entry stays in the document: it is a table key, listed and revocable.
    assert all(not k.get("admin") for k in stored.get("api_keys", []))
    listed = {k["name"]: k for k in ok(admin(gw.base_url, "GET", "/admin/keys"))["data"]}
    assert listed["planted"]["role"] == "admin"
    assert admin(gw.base_url, "GET", "/admin/keys", key=PLANTED).status_code == 200
    ok(admin(gw.base_url, "POST", f"/admin/keys/{listed['planted']['id']}/revoke"))
    assert admin(gw.base_url, "GET", "/admin/keys", key=PLANTED).status_code == 401
    # Loading the same file again does not bring the revoked key back.
    ok(_put(gw.base_url, document, key=BOOTSTRAP, force=True))
    assert admin(gw.base_url, "GET", "/admin/keys", key=PLANTED).status_code == 401


def test_only_the_owner_points_budget_alerts_somewhere(gw: Any) -> None:
    # The alert webhook is a destination beside the upstreams, signed with a credential the
    # document names: a revocable admin key must not redirect it (nor rekey it).
    before = _stored(gw.base_url)
    document = {**before["document"]}
    document["gateway"] = {
        **document["gateway"],
        "alerts": {
            "webhook_url": "https://hooks.example.com/edgeproxy",
            "webhook_secret_ref": "env:EDGEPROXY_CRED_ALERT_HOOK",
        },
    }
    for order in ({"force": True}, {}):
        _forbidden(_put(gw.base_url, document, **order), "gateway.alerts")
    assert _stored(gw.base_url) == before
    assert {e["target"] for e in _refusals(gw.base_url)} == {"gateway.alerts"}
    assert ok(_put(gw.base_url, document, key=BOOTSTRAP))["stored"] is True
    stored = _stored(gw.base_url)["document"]["gateway"]["alerts"]
    assert stored["webhook_url"] == "https://hooks.example.com/edgeproxy"
