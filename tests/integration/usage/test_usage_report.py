"""Usage reports: the aggregates against the log, the keys' budgets, ranges, groupings, CSV."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from typing import Any

import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.table import TableView, wait_for
from tests.integration.usage.helpers import (
    ENV,
    admin_get,
    chat,
    gateway_config,
    key_spend,
    new_key,
    priced,
    records,
)

CHEAP = {"input_price_per_mtok": 0.15, "output_price_per_mtok": 0.6}


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def report(base_url: str, **params: str) -> dict[str, Any]:
    answer = admin_get(base_url, "/admin/usage", **params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def settled_report(base_url: str, requests: int, **params: str) -> dict[str, Any]:
    """The report once ``requests`` requests are in its totals (aggregates land after answers)."""
    return wait_for(
        lambda: report(base_url, **params),
        lambda r: r["totals"]["requests"] >= requests,
        f"{requests} requests in the report",
    )


def test_the_report_agrees_with_the_log_and_with_the_keys_spend_to_the_cent(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        gateway_config(priced("a", upstream_a, priority=1), priced("b", upstream_b, **CHEAP)),
        env=ENV,
    )
    billing, search = new_key(gw.base_url, budget_usd=50), new_key(gw.base_url, "search")
    started = clock.now()
    for i in range(4):
        assert chat(gw.base_url, billing["key"], stream=i % 2 == 1).status_code == 200
    upstream_a.set_faults([], persistent={"status": 503})  # b serves from now on, cheaper
    for _ in range(3):
        assert chat(gw.base_url, billing["key"]).status_code == 200
    assert chat(gw.base_url, search["key"]).status_code == 200
    upstream_a.set_faults([], persistent={})
    logged = records(gw.base_url, clock.now(), 8)
    found = settled_report(gw.base_url, 8, group_by="key,deployment", **{"from": iso(started - 60)})
    by = {(r["key_id"], r["deployment"]): r for r in found["rows"]}
    assert set(by) == {(billing["id"], "a"), (billing["id"], "b"), (search["id"], "b")}
    for (key_id, dep), row in by.items():
        mine = [r for r in logged if (r["key_id"], r["deployment"]) == (key_id, dep)]
        assert row["requests"] == len(mine)
        assert row["prompt_tokens"] == sum(r["prompt_tokens"] for r in mine)
        assert row["completion_tokens"] == sum(r["completion_tokens"] for r in mine)
        assert row["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in mine), abs=1e-6)
    assert by[(billing["id"], "a")]["key_name"] == "billing-app"
    # The key's budget counter and the report: the same spend, to the cent.
    for key in (billing, search):
        spent = wait_for(lambda k=key: key_spend(gw.base_url, k["id"]), bool, "spend")
        reported = sum(r["cost_usd"] for r in found["rows"] if r["key_id"] == key["id"])
        assert spent > 0
        assert round(reported, 2) == round(spent, 2)
        assert reported == pytest.approx(spent, abs=1e-6)


def test_a_report_reads_the_aggregates_never_the_log(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, table: TableView
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    key = new_key(gw.base_url)
    for _ in range(3):
        assert chat(gw.base_url, key["key"]).status_code == 200
    before = settled_report(gw.base_url, 3)
    records(gw.base_url, clock.now(), 3)
    pk = table.schema.pk
    for item in table.scan():
        if item[pk]["S"].startswith("log#"):
            table.client.delete_item(
                TableName=table.name, Key={pk: item[pk], table.schema.sk: item[table.schema.sk]}
            )
    assert records(gw.base_url, clock.now(), 0) == []
    assert report(gw.base_url) == before


def test_ranges_groupings_and_hours_follow_the_clock(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        gateway_config(
            priced("a", upstream_a), priced("b", upstream_b, model="other-chat", **CHEAP)
        ),
        env=ENV,
    )
    clock.advance(3600 - clock.now() % 3600 + 60)  # one minute into a fresh hour
    key = new_key(gw.base_url)
    first_hour = clock.now() - 60
    assert chat(gw.base_url, key["key"]).status_code == 200
    assert chat(gw.base_url, key["key"], model="other-chat").status_code == 200
    settled_report(gw.base_url, 2, **{"from": iso(first_hour)})
    clock.advance(3600)  # the next hour
    assert chat(gw.base_url, key["key"]).status_code == 200
    settled_report(gw.base_url, 3, **{"from": iso(first_hour)})
    clock.advance(2 * 86400)  # two days later
    assert chat(gw.base_url, key["key"]).status_code == 200
    window = {"from": iso(first_hour), "to": iso(clock.now() + 3600)}
    hourly = settled_report(gw.base_url, 4, granularity="hour", group_by="model", **window)
    rows = [(r["period"], r["model"], r["requests"]) for r in hourly["rows"]]
    hour = datetime.fromtimestamp(first_hour, UTC)
    h0 = hour.strftime("%Y-%m-%dT%H:00Z")
    h1 = datetime.fromtimestamp(first_hour + 3600, UTC).strftime("%Y-%m-%dT%H:00Z")
    h2 = datetime.fromtimestamp(clock.now(), UTC).strftime("%Y-%m-%dT%H:00Z")
    assert rows == [
        (h0, "fast-chat", 1),
        (h0, "other-chat", 1),
        (h1, "fast-chat", 1),
        (h2, "fast-chat", 1),
    ]
    assert all(r["key_id"] is None and r["deployment"] is None for r in hourly["rows"])
    daily = report(gw.base_url, granularity="day", group_by="", **window)
    assert sum(r["requests"] for r in daily["rows"]) == 4
    assert len(daily["rows"]) == len({h0[:10], h1[:10], h2[:10]})
    # A range that ends before the last hour leaves it out; one that starts after the
    # first leaves that out.
    early = report(
        gw.base_url, group_by="model", **{"from": iso(first_hour), "to": iso(first_hour + 3600)}
    )
    assert [(r["model"], r["requests"]) for r in early["rows"]] == [
        ("fast-chat", 1),
        ("other-chat", 1),
    ]
    late = report(
        gw.base_url, group_by="deployment", **{"from": iso(first_hour + 3600), "to": window["to"]}
    )
    assert late["totals"]["requests"] == 2
    assert {r["deployment"] for r in late["rows"]} == {"a"}


def test_csv_has_a_header_and_exact_decimal_costs(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    key = new_key(gw.base_url, name="=HYPERLINK(evil)")
    assert chat(gw.base_url, key["key"]).status_code == 200
    as_json = settled_report(gw.base_url, 1, group_by="key,model,deployment")
    answer = admin_get(gw.base_url, "/admin/usage", group_by="key,model,deployment", format="csv")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(answer.text)))
    [row] = lines
    [expected] = as_json["rows"]
    assert row["key_id"] == key["id"]
    assert row["key_name"] == "'=HYPERLINK(evil)"  # never a live formula in a spreadsheet
    assert (row["model"], row["deployment"]) == ("fast-chat", "a")
    assert int(row["requests"]) == 1
    assert int(row["tokens"]) == expected["tokens"]
    assert float(row["cost_usd"]) == pytest.approx(expected["cost_usd"], abs=1e-6)


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"group_by": "tenant"}, "group_by"),
        ({"granularity": "week"}, "granularity"),
        ({"format": "xml"}, "format"),
        ({"from": "yesterday"}, "from"),
        ({"from": "2026-12-02", "to": "2026-12-01"}, "from"),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "from"),
    ],
)
def test_a_malformed_query_is_an_openai_400(
    start_gateway, upstream_a: MockUpstream, params: dict[str, str], param: str
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    answer = admin_get(gw.base_url, "/admin/usage", **params)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param
