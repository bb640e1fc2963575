"""Usage reports: the hourly aggregates grouped by key, model, deployment, the labels (team,
organization: ``state.usage_log.LABELS``) and day or hour.

A report reads only the aggregates (``state/usage_log.py``: one Query per
day of the range), never the request log, so its cost grows with the
number of days and distinct (key, model, deployment) combinations, not
with the number of requests.

    >>> query = ReportQuery.parse({"from": "2026-11-01", "to": "2026-12-01",
    ...                            "group_by": "key,model"}, now=1_764_600_000)
    >>> report = await usage_report(store, query, now)            # doctest: +SKIP
    >>> report_csv(report)                                        # doctest: +SKIP

``from`` is inclusive, ``to`` exclusive; both are whole hours (a time inside
an hour takes the whole hour). Costs are decimal sums of the same figures
the keys' spend got; JSON shows them as numbers rounded to 1e-6 USD, CSV
as decimal text. A query may be held to one label's value (``ReportQuery.only``:
a team admin's report is its team's rows only, an organization admin's its
organization's), applied to the aggregates before they are summed.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from edgeproxy.errors import RequestError
from edgeproxy.state.usage_log import DAY_S, HOUR_S, LABELS, UsageLogStore, UsageRow

DIMENSIONS = ("key", "model", "deployment", *LABELS)
GRANULARITIES = ("hour", "day")
FORMATS = ("json", "csv")
MAX_DAYS = 400
COLUMNS = (
    "period",
    "key_id",
    "key_name",
    "model",
    "deployment",
    *LABELS,
    "requests",
    "failures",
    "prompt_tokens",
    "completion_tokens",
    "tokens",
    "cost_usd",
    # Of prompt_tokens: prompt-cache reads, writes, and the uncached rest (priced apart).
    "cache_read_tokens",
    "cache_write_tokens",
    "uncached_prompt_tokens",
    # Requests the response cache answered (no upstream call) and what they had cost.
    "cache_hits",
    "saved_usd",
)
COUNTERS = COLUMNS[COLUMNS.index("requests") :]
MICRO = Decimal("0.000001")


def parse_time(value: str, param: str) -> float:
    """Epoch seconds of an ISO date or time (UTC unless it says otherwise), or of a number."""
    try:
        return float(value)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise RequestError(
            f"`{param}` must be an ISO date or time (2026-12-01, 2026-12-01T13:00Z) "
            "or epoch seconds.",
            param=param,
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _choice(params: dict[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = params.get(name) or default
    if value not in allowed:
        raise RequestError(f"`{name}` must be one of: {', '.join(allowed)}.", param=name)
    return value


@dataclass(frozen=True, slots=True)
class ReportQuery:
    """What a report covers: hours ``[first_hour, last_hour]``, grouping, periods, format."""

    first_hour: int
    last_hour: int
    group_by: tuple[str, ...]
    granularity: str
    format: str = "json"
    only: tuple[str, str] | None = None  # (label, value): the rows of that value only

    @classmethod
    def parse(
        cls, params: dict[str, str], now: float, only: tuple[str, str] | None = None
    ) -> ReportQuery:
        """The query of ``/admin/usage``'s parameters (a 400 for anything malformed).

        Defaults: the last 24 hours, grouped by key and model, per day, JSON.
        """
        end = parse_time(params["to"], "to") if params.get("to") else now
        start = parse_time(params["from"], "from") if params.get("from") else end - DAY_S
        if start >= end:
            raise RequestError("`from` must be before `to`.", param="from")
        if end - start > MAX_DAYS * DAY_S:
            raise RequestError(f"A report covers at most {MAX_DAYS} days.", param="from")
        raw = params.get("group_by", "key,model")
        group = tuple(g.strip() for g in raw.split(",") if g.strip())
        unknown = [g for g in group if g not in DIMENSIONS]
        if unknown or len(set(group)) != len(group):
            raise RequestError(
                f"`group_by` lists any of: {', '.join(DIMENSIONS)} (each once).", param="group_by"
            )
        return cls(
            first_hour=int(start // HOUR_S),
            last_hour=int(-(-end // HOUR_S)) - 1,
            group_by=tuple(d for d in DIMENSIONS if d in group),
            granularity=_choice(params, "granularity", GRANULARITIES, "day"),
            format=_choice(params, "format", FORMATS, "json"),
            only=only,
        )


def period_of(hour: int, granularity: str) -> str:
    """``2026-12-01`` (day) or ``2026-12-01T13:00Z`` (hour)."""
    at = datetime.fromtimestamp(hour * HOUR_S, UTC)
    return at.strftime("%Y-%m-%d") if granularity == "day" else at.strftime("%Y-%m-%dT%H:00Z")


@dataclass(frozen=True, slots=True)
class ReportRow:
    period: str
    key_id: str | None
    key_name: str | None
    model: str | None
    deployment: str | None
    counters: UsageRow
    labels: tuple[str | None, ...] = (None,) * len(LABELS)  # in ``LABELS`` order

    def as_dict(self) -> dict[str, Any]:
        c = self.counters
        return {
            "period": self.period,
            "key_id": self.key_id,
            "key_name": self.key_name,
            "model": self.model,
            "deployment": self.deployment,
            **dict(zip(LABELS, self.labels, strict=True)),
            "requests": c.requests,
            "failures": c.failures,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "tokens": c.prompt_tokens + c.completion_tokens,
            "cost_usd": c.cost_usd,
            "cache_read_tokens": c.cache_read_tokens,
            "cache_write_tokens": c.cache_write_tokens,
            "uncached_prompt_tokens": max(
                0, c.prompt_tokens - c.cache_read_tokens - c.cache_write_tokens
            ),
            "cache_hits": c.cache_hits,
            "saved_usd": c.saved_usd,
        }


def grouped(rows: list[UsageRow], query: ReportQuery) -> list[ReportRow]:
    """``rows`` summed per period and the query's dimensions (the others left None), only
    the rows of ``query.only``'s label value when it names one."""
    Bucket = tuple[str, str | None, str | None, str | None, tuple[str | None, ...]]
    sums: dict[Bucket, UsageRow] = {}
    names: dict[str, str] = {}
    for row in sorted(rows, key=lambda r: r.hour):
        if not query.first_hour <= row.hour <= query.last_hour:
            continue
        if query.only is not None and row.label(query.only[0]) != query.only[1]:
            continue
        if row.key_name:
            names[row.key_id] = row.key_name  # the latest name of the key
        key = row.key_id if "key" in query.group_by else None
        model = row.model if "model" in query.group_by else None
        dep = row.deployment if "deployment" in query.group_by else None
        labels = tuple(row.label(n) if n in query.group_by else None for n in LABELS)
        bucket = (period_of(row.hour, query.granularity), key, model, dep, labels)
        held = sums.get(bucket)
        plain = UsageRow(
            0, "", "", "", "", *_counts(row), cache_hits=row.cache_hits, saved_usd=row.saved_usd
        )
        sums[bucket] = plain if held is None else held.plus(plain)
    return [
        ReportRow(period, key, names.get(key, "") if key else None, model, dep, counters, labels)
        for (period, key, model, dep, labels), counters in sorted(sums.items(), key=_order)
    ]


def _order(item: tuple[tuple[Any, ...], UsageRow]) -> tuple[str, ...]:
    """Per period, by label (a team's rows together), then key, model and deployment."""
    period, *plain, labels = item[0]
    return tuple(p or "" for p in (period, *labels, *plain))


def _counts(row: UsageRow) -> tuple[int, int, int, int, Decimal, int, int]:
    return (
        row.requests,
        row.failures,
        row.prompt_tokens,
        row.completion_tokens,
        row.cost_usd,
        row.cache_read_tokens,
        row.cache_write_tokens,
    )


async def usage_report(store: UsageLogStore, query: ReportQuery, now: float) -> dict[str, Any]:
    """The report of ``query`` (rows and totals; ``cost_usd`` as Decimal)."""
    rows = grouped(await store.read_usage_rows(query.first_hour, query.last_hour, now), query)
    total = UsageRow(0, "", "", "")
    for row in rows:
        total = total.plus(row.counters)
    totals = ReportRow("total", None, None, None, None, total).as_dict()
    return {
        "from": period_of(query.first_hour, "hour"),
        "to": period_of(query.last_hour + 1, "hour"),
        "granularity": query.granularity,
        "group_by": list(query.group_by),
        "rows": [r.as_dict() for r in rows],
        "totals": {k: v for k, v in totals.items() if k in COUNTERS},
    }


def json_ready(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with each cost a JSON number rounded to 1e-6 USD."""

    def money(row: dict[str, Any]) -> dict[str, Any]:
        cost = float(Decimal(row["cost_usd"]).quantize(MICRO))
        saved = float(Decimal(row.get("saved_usd", 0)).quantize(MICRO))
        return {**row, "cost_usd": cost, "saved_usd": saved}

    return {**report, "rows": [money(r) for r in report["rows"]], "totals": money(report["totals"])}


def report_csv(report: dict[str, Any]) -> str:
    """The report's rows as CSV (a header line, then one line per row; exact decimal costs)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in report["rows"]:
        writer.writerow(["" if row[c] is None else _cell(row[c]) for c in COLUMNS])
    return out.getvalue()


def _cell(value: Any) -> str:
    if isinstance(value, float):  # a cost that came through JSON: its shortest decimal
        value = Decimal(repr(value))
    if isinstance(value, Decimal):
        return format(value.normalize(), "f") if value else "0"
    text = str(value)
    # A cell a spreadsheet would run as a formula is kept as text.
    formula = len(text) > 1 and text[0] in "=+-@" and not text[1].isdigit()
    return "'" + text if formula else text
