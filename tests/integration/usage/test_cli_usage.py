"""``edgeproxy usage`` against a running gateway (``--url``) and on its table (``--table``)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at
from tests.fixtures.cli import run_cli as run
from tests.fixtures.clock import FleetClock
from tests.integration.usage.helpers import (
    ADMIN_KEY,
    ENV,
    chat,
    gateway_config,
    new_key,
    priced,
    records,
)
from tests.integration.usage.test_usage_report import settled_report


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str, gateway_table: str) -> None:
    point_the_cli_at(monkeypatch, dynamo_endpoint, gateway_table, admin_key=ADMIN_KEY)


def test_usage_prints_the_same_report_over_http_and_from_the_table(
    start_gateway, capsys, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    key = new_key(gw.base_url)
    for _ in range(2):
        assert chat(gw.base_url, key["key"]).status_code == 200
    expected = settled_report(gw.base_url, 2)
    [row] = expected["rows"]
    for where in (["--url", gw.base_url], ["--table", gw.table]):
        status, out, err = run(capsys, "usage", *where, "--format", "json")
        assert (status, err) == (0, "")
        assert json.loads(out) == expected
        status, out, _ = run(capsys, "usage", *where)
        assert status == 0
        lines = out.splitlines()
        assert lines[1].split() == [
            "period",
            "key_name",
            "model",
            "requests",
            "failures",
            "tokens",
            "cache_read",
            "cache_write",
            "cost_usd",
            "cache_hits",
            "saved_usd",
        ]
        assert lines[2].split() == [
            row["period"],
            "billing-app",
            "fast-chat",
            "2",
            "0",
            str(row["tokens"]),
            "0",
            "0",
            f"{row['cost_usd']:.6f}",
            "0",
            "0.000000",
        ]
        assert lines[3].split()[0] == "total"
        status, out, _ = run(capsys, "usage", *where, "--format", "csv", "--group-by", "key")
        assert status == 0
        [parsed] = list(csv.DictReader(io.StringIO(out)))
        assert (parsed["key_id"], parsed["requests"]) == (key["id"], "2")


def test_usage_log_lists_this_hours_records(
    start_gateway, capsys, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    key = new_key(gw.base_url)
    answer = chat(gw.base_url, key["key"])
    records(gw.base_url, clock.now(), 1)
    named = chat(gw.base_url, key["key"], user="alice")
    records(gw.base_url, clock.now(), 2)
    for where in (["--url", gw.base_url], ["--table", gw.table]):
        status, out, _ = run(capsys, "usage", *where, "--log", "--limit", "5")
        assert status == 0
        assert [r["request_id"] for r in json.loads(out)["data"]] == [
            named.headers["x-request-id"],
            answer.headers["x-request-id"],
        ]
        # --end-user: only the requests naming that end user.
        status, out, _ = run(capsys, "usage", *where, "--log", "--end-user", "alice")
        assert status == 0
        [record] = json.loads(out)["data"]
        assert (record["request_id"], record["end_user"]) == (
            named.headers["x-request-id"],
            "alice",
        )


def test_a_bad_range_is_one_line_on_stderr(start_gateway, capsys, upstream_a: MockUpstream) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    status, out, err = run(capsys, "usage", "--url", gw.base_url, "--from", "not-a-time")
    assert status == 1
    assert out == ""
    assert err.startswith("edgeproxy: 400:")
    assert err.count("\n") == 1
