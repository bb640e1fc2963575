"""Usage reports (``service/usage/report.py``): query parsing, grouping, periods, CSV."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from edgeproxy.errors import RequestError
from edgeproxy.service.usage.report import ReportQuery, grouped, json_ready, report_csv
from edgeproxy.state.usage_log import UsageRow, labels_of

NOW = datetime(2026, 12, 1, 13, 30, tzinfo=UTC).timestamp()
H = int(NOW // 3600)  # 13:00 on 2026-12-01


def row(
    hour: int, key: str = "k1", model: str = "gpt-4o", dep: str = "a", **counts: object
) -> UsageRow:
    return UsageRow(hour, key, model, dep, **counts)  # type: ignore[arg-type]


def test_the_default_query_is_the_last_24_hours_by_key_and_model_per_day() -> None:
    query = ReportQuery.parse({}, NOW)
    assert (query.first_hour, query.last_hour) == (H - 24, H)  # 13:00 yesterday .. this hour
    assert (query.group_by, query.granularity, query.format) == (("key", "model"), "day", "json")


def test_a_range_takes_whole_hours_from_inclusive_to_exclusive() -> None:
    query = ReportQuery.parse({"from": "2026-12-01T10:15Z", "to": "2026-12-01T12:00:00+00:00"}, NOW)
    assert (query.first_hour, query.last_hour) == (H - 3, H - 2)  # 10:00 and 11:00
    dated = ReportQuery.parse({"from": "2026-11-30", "to": "2026-12-01"}, NOW)
    assert dated.last_hour - dated.first_hour + 1 == 24
    epoch = ReportQuery.parse({"from": str(NOW - 7200), "to": str(NOW)}, NOW)
    assert (epoch.first_hour, epoch.last_hour) == (H - 2, H)


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"group_by": "key,tenant"}, "group_by"),
        ({"group_by": "team,team"}, "group_by"),
        ({"group_by": "key,key"}, "group_by"),
        ({"granularity": "minute"}, "granularity"),
        ({"format": "xlsx"}, "format"),
        ({"from": "last tuesday"}, "from"),
        ({"to": "2026-13-01"}, "to"),
        ({"from": "2026-12-01", "to": "2026-12-01"}, "from"),
        ({"from": "2024-01-01", "to": "2026-01-01"}, "from"),
    ],
)
def test_malformed_queries_are_request_errors_naming_their_parameter(
    params: dict[str, str], param: str
) -> None:
    with pytest.raises(RequestError) as raised:
        ReportQuery.parse(params, NOW)
    assert raised.value.param == param
    assert raised.value.status == 400


def test_rows_are_summed_per_period_and_the_asked_dimensions_only() -> None:
    rows = [
        row(H - 1, requests=1, prompt_tokens=10, cost_usd=Decimal("0.1")),
        row(H - 1, dep="b", requests=2, prompt_tokens=5, cost_usd=Decimal("0.2")),
        row(H, key="k2", requests=1, failures=1),
        row(H - 30, requests=9),  # outside the range
    ]
    query = ReportQuery.parse({"group_by": "model", "granularity": "hour"}, NOW)
    out = [(r.period, r.model, r.key_id, r.counters.requests) for r in grouped(rows, query)]
    assert out == [
        ("2026-12-01T12:00Z", "gpt-4o", None, 3),
        ("2026-12-01T13:00Z", "gpt-4o", None, 1),
    ]
    [first, _] = grouped(rows, query)
    assert first.counters.cost_usd == Decimal("0.3")  # decimal: no float drift
    daily = grouped(rows, ReportQuery.parse({"group_by": "key,deployment"}, NOW))
    assert [(r.period, r.key_id, r.deployment, r.counters.requests) for r in daily] == [
        ("2026-12-01", "k1", "a", 1),
        ("2026-12-01", "k1", "b", 2),
        ("2026-12-01", "k2", "a", 1),
    ]


def labelled(hour: int, key: str, team: str | None, org: str | None, **counts: object) -> UsageRow:
    return UsageRow(hour, key, "gpt-4o", "a", labels=labels_of((team, org)), **counts)  # type: ignore[arg-type]


LABELLED = [
    labelled(H, "k1", "search", "acme", requests=1, cost_usd=Decimal("0.1")),
    labelled(H, "k2", "search", "acme", requests=2, cost_usd=Decimal("0.2")),
    labelled(H, "k3", "ads", "acme", requests=4, cost_usd=Decimal("0.4")),
    labelled(H, "k4", "web", "globex", requests=8, cost_usd=Decimal("0.8")),
    labelled(H, "k5", None, None, requests=16, cost_usd=Decimal("1.6")),
]


def test_rows_group_by_team_and_organization_like_any_dimension() -> None:
    by_team = grouped(LABELLED, ReportQuery.parse({"group_by": "team"}, NOW))
    assert [(r.as_dict()["team"], r.counters.requests) for r in by_team] == [
        (None, 16),  # requests of keys without a team: a row of their own
        ("ads", 4),
        ("search", 3),
        ("web", 8),
    ]
    assert all(r.as_dict()["organization"] is None for r in by_team)  # not asked for
    by_org = grouped(LABELLED, ReportQuery.parse({"group_by": "organization"}, NOW))
    assert [(r.as_dict()["organization"], r.counters.cost_usd) for r in by_org] == [
        (None, Decimal("1.6")),
        ("acme", Decimal("0.7")),
        ("globex", Decimal("0.8")),
    ]
    both = grouped(LABELLED, ReportQuery.parse({"group_by": "organization,team,key"}, NOW))
    assert [(r.as_dict()["organization"], r.as_dict()["team"], r.key_id) for r in both] == [
        (None, None, "k5"),
        ("acme", "ads", "k3"),
        ("acme", "search", "k1"),
        ("acme", "search", "k2"),
        ("globex", "web", "k4"),
    ]


def test_a_query_held_to_one_label_value_sees_only_its_rows() -> None:
    team = ReportQuery.parse({"group_by": "key"}, NOW, only=("team", "search"))
    assert [r.key_id for r in grouped(LABELLED, team)] == ["k1", "k2"]
    org = ReportQuery.parse({"group_by": "team"}, NOW, only=("organization", "acme"))
    assert [(r.as_dict()["team"], r.counters.requests) for r in grouped(LABELLED, org)] == [
        ("ads", 4),
        ("search", 3),
    ]
    nobody = ReportQuery.parse({}, NOW, only=("team", "gone"))
    assert grouped(LABELLED, nobody) == []


def test_the_latest_key_name_labels_its_rows() -> None:
    rows = [row(H - 2, key_name="old", requests=1), row(H - 1, key_name="new", requests=1)]
    [out] = grouped(rows, ReportQuery.parse({"group_by": "key"}, NOW))
    assert (out.key_id, out.key_name, out.counters.requests) == ("k1", "new", 2)


def _report(*rows: UsageRow) -> dict[str, object]:
    query = ReportQuery.parse({"group_by": "key,model,deployment"}, NOW)
    return {"rows": [r.as_dict() for r in grouped(list(rows), query)], "totals": {}}


def test_csv_keeps_exact_decimals_and_defuses_formulas() -> None:
    text = report_csv(
        _report(
            row(H, key="k1", key_name="=cmd()", requests=1, cost_usd=Decimal("0.0000123")),
            row(H, key="k2", key_name="-", model="-", requests=1, cost_usd=Decimal("1E+1")),
        )
    )
    lines = list(csv.DictReader(io.StringIO(text)))
    assert [(r["key_name"], r["model"], r["cost_usd"]) for r in lines] == [
        ("'=cmd()", "gpt-4o", "0.0000123"),
        ("-", "-", "10"),
    ]
    assert text.splitlines()[0].startswith(
        "period,key_id,key_name,model,deployment,team,organization,requests"
    )


def test_json_costs_are_numbers_rounded_to_a_millionth() -> None:
    report = _report(row(H, requests=1, cost_usd=Decimal("0.12345678")))
    report["totals"] = {"cost_usd": Decimal("0.12345678")}
    ready = json_ready(report)
    assert ready["rows"][0]["cost_usd"] == 0.123457
    assert ready["totals"]["cost_usd"] == 0.123457


def test_csv_of_a_report_read_back_from_json_still_writes_plain_decimals() -> None:
    report = {"rows": [{**_report(row(H, requests=1))["rows"][0], "cost_usd": 5e-06}]}  # type: ignore[index]
    [line] = list(csv.DictReader(io.StringIO(report_csv(report))))
    assert line["cost_usd"] == "0.000005"
    report["rows"][0]["cost_usd"] = 0.0
    [line] = list(csv.DictReader(io.StringIO(report_csv(report))))
    assert line["cost_usd"] == "0"
