"""``edgeproxy config export|diff|load`` on a running gateway (``--url``) and on its table.

The export is the file a load takes back: secrets redacted (and kept when
loaded), its base version in its header; a load never silently reverts an
admin change made since that base.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgeproxy.cli import main
from edgeproxy.config.loader import load_config_file
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at
from tests.fixtures.configs import config, deployment
from tests.fixtures.secrets import remember
from tests.integration.admin.helpers import ADMIN_KEY, admin, chat, keys, ok

SECRET = remember("cf-tenant-0123456789abcdef")
QUERY_SECRET = remember("qs-tenant-fedcba9876543210")  # a query value is as secret as a header


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str, gateway_table: str) -> None:
    point_the_cli_at(monkeypatch, dynamo_endpoint, admin_key=ADMIN_KEY)


@pytest.fixture
def gateway(start_gateway: Any, upstream_a: MockUpstream) -> Any:
    dep = deployment(
        "a", upstream_a, headers={"x-tenant-key": SECRET}, query={"sig": QUERY_SECRET}, weight=2
    )
    return start_gateway(config(dep, gateway=keys(), router={"circuit": {"cooldown_seconds": 5}}))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert SECRET not in out + err  # never shown, whatever the command
    assert QUERY_SECRET not in out + err
    return status, out, err


def export(capsys: pytest.CaptureFixture[str], path: Path, *target: str) -> str:
    status, out, err = run(capsys, "config", "export", *target)
    assert (status, err) == (0, "")
    path.write_text(out)
    return out


def cooldown(gateway: Any) -> int:
    settings = ok(admin(gateway.base_url, "GET", "/admin/router-settings"))
    return int(settings["circuit"]["cooldown_seconds"])


def admin_change(gateway: Any, seconds: int) -> None:
    version = ok(admin(gateway.base_url, "GET", "/admin/router-settings"))["version"]
    body = {"circuit": {"cooldown_seconds": seconds}, "version": version}
    ok(admin(gateway.base_url, "PUT", "/admin/router-settings", json=body))


def test_export_redacts_secrets_and_loads_back_unchanged(
    gateway: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "live.yaml"
    text = export(capsys, path, "--url", gateway.base_url)
    assert "# edgeproxy-base-version: 1\n" in text
    assert yaml.safe_load(text)["deployments"][0]["headers"] == {"x-tenant-key": "[redacted]"}
    assert yaml.safe_load(text)["deployments"][0]["query"] == {"sig": "[redacted]"}
    served = ok(admin(gateway.base_url, "GET", "/admin/config"))["document"]["deployments"][0]
    assert served["query"] == {"sig": "[redacted]"}
    assert load_config_file(path).deployments[0].weight == 2  # `config check` takes it
    status, out, _ = run(capsys, "config", "load", str(path), "--url", gateway.base_url)
    assert (status, out) == (
        0,
        f"no changes: the stored configuration (version 1) matches {path}\n",
    )


def test_load_refuses_admin_changes_made_since_the_base_unless_forced(
    gateway: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = ("--url", gateway.base_url)
    path = tmp_path / "live.yaml"
    export(capsys, path, *url)
    admin_change(gateway, 10)  # version 2, after the file's base

    status, _, err = run(capsys, "config", "load", str(path), *url)
    assert status == 1
    assert "version 2) has 1 admin change(s) since version 1" in err
    assert "v2 router-settings.update router by ops" in err
    assert cooldown(gateway) == 10  # nothing reverted

    for argv in (("diff", str(path)), ("load", str(path), "--dry-run")):
        status, out, _ = run(capsys, "config", *argv, *url)
        assert status == 0
        assert "  router.circuit.cooldown_seconds: 10 -> 5\n" in out
        assert "would overwrite (refused without --force) 1 admin change(s)" in out
        assert out.endswith("nothing stored\n")
    assert cooldown(gateway) == 10

    status, out, _ = run(capsys, "config", "load", str(path), "--force", *url)
    assert status == 0
    assert out.startswith("stored configuration version 3 (1 changes):\n")
    assert "overwrote 1 admin change(s) made since the file's base" in out
    assert cooldown(gateway) == 5


def test_an_edited_export_keeps_its_redacted_secrets(
    gateway: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, upstream_a: MockUpstream
) -> None:
    url = ("--url", gateway.base_url)
    path = tmp_path / "live.yaml"
    text = export(capsys, path, *url)
    path.write_text(text.replace("weight: 2", "weight: 3"))
    status, out, _ = run(capsys, "config", "load", str(path), *url)
    assert status == 0
    assert "  deployments[a].weight: 2.0 -> 3.0\n" in out
    stored = ok(admin(gateway.base_url, "GET", "/admin/deployments/a"))
    assert stored["weight"] == 3
    assert stored["headers"] == {"x-tenant-key": "[redacted]"}  # admin reads never show it
    # The stored value was kept: the upstream still receives it.
    assert chat(gateway.base_url).status_code == 200
    assert upstream_a.requests()[-1]["headers"]["x-tenant-key"] == SECRET
    assert upstream_a.requests()[-1]["query"] == {"sig": QUERY_SECRET}


def test_a_changed_secret_shows_in_a_diff_by_its_path_only(
    gateway: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "live.yaml"
    new_secret = remember("cf-tenant-fedcba9876543210")
    path.write_text(
        export(capsys, path, "--url", gateway.base_url).replace("[redacted]", new_secret)
    )
    status, out, _ = run(capsys, "config", "diff", str(path), "--url", gateway.base_url)
    assert status == 0
    assert '  deployments[a].headers.x-tenant-key: "[redacted]" -> "[redacted] (changed)"\n' in out
    assert new_secret not in out


def test_a_file_without_a_base_is_refused_after_admin_changes_since_the_last_load(
    gateway: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, upstream_a: MockUpstream
) -> None:
    url = ("--url", gateway.base_url)
    path = tmp_path / "hand-written.yaml"
    dep = deployment("a", upstream_a, weight=4, headers={"x-tenant-key": SECRET})
    path.write_text(json.dumps(config(dep, gateway=keys())))
    assert run(capsys, "config", "load", str(path), *url)[0] == 0  # only loads before: fine
    admin_change(gateway, 20)
    status, _, err = run(capsys, "config", "load", str(path), *url)
    assert status == 1
    assert "since the last `config load`" in err
    assert cooldown(gateway) == 20
    assert run(capsys, "config", "load", str(path), "--force", *url)[0] == 0
    assert cooldown(gateway) != 20


def test_the_same_round_trip_on_the_table(
    gateway: Any,
    gateway_table: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    upstream_a: MockUpstream,
) -> None:
    table = ("--table", gateway_table)
    path = tmp_path / "live.yaml"
    text = export(capsys, path, *table)
    assert re.search(r"^# edgeproxy-base-version: 1$", text, re.M)
    assert f"# edgeproxy configuration exported from table {gateway_table}\n" in text
    assert "[redacted]" in text
    admin_change(gateway, 10)
    status, _, err = run(capsys, "config", "load", str(path), *table)
    assert status == 1
    assert "v2 router-settings.update router by ops" in err
    status, out, _ = run(capsys, "config", "load", str(path), "--force", *table)
    assert (status, out.splitlines()[0]) == (0, "stored configuration version 3 (1 changes):")
    assert cooldown(gateway) == 5
    stored = ok(admin(gateway.base_url, "GET", "/admin/deployments/a"))
    assert stored["headers"] == {"x-tenant-key": "[redacted]"}
    assert chat(gateway.base_url).status_code == 200  # the stored value was kept
    assert upstream_a.requests()[-1]["headers"]["x-tenant-key"] == SECRET


def test_a_redacted_value_with_nothing_stored_to_keep_is_refused(
    gateway: Any, gateway_table: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "live.yaml"
    text = export(capsys, path, "--table", gateway_table)
    document = yaml.safe_load(text)
    document["deployments"][0]["id"] = "renamed"  # no stored header under this id
    path.write_text(yaml.safe_dump(document))
    status, _, err = run(capsys, "config", "load", str(path), "--table", gateway_table, "--force")
    assert status == 2
    assert "deployments[0].headers.x-tenant-key: says [redacted] but the stored" in err
    status, _, err = run(capsys, "config", "load", str(path), "--url", gateway.base_url, "--force")
    assert status == 1
    assert "400: " in err
    assert "deployments[0].headers.x-tenant-key: says [redacted]" in err
