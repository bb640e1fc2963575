"""The docs' per-million-requests cost table for the deployed stack, from its inputs.

Every row is a formula over a few inputs: list prices (us-east-1, June 2025,
as docs/deploying.md states), the stack's configuration (memory, log retention, PITR), and what
was measured: the bytes each Lambda invocation writes to its log
(``tests/handlers/test_log_bytes.py`` measures them through the handler and
fails when they drift from ``MEASURED``) and the DynamoDB size of each item
kind the request path leaves behind. ``python -m bench.deploy_cost`` prints
the table; ``tests/unit/bench/test_deploy_cost.py`` checks that docs/deploying.md
(and docs/performance.md, the item sizes) hold exactly this text.

Storage is billed per GB-month while an item lives, so a million requests'
share is ``10^6 x bytes x (days kept / 30) / 10^9`` GB-months: the steady
state's bill at a million requests a month.
"""

# The docs write products with the multiplication sign; the rows are its text.
# ruff: noqa: RUF001

from __future__ import annotations

from dataclasses import dataclass

LAMBDA_ARM64_USD_PER_GB_S = 0.0000133334
LAMBDA_USD_PER_M_REQUESTS = 0.20
HTTP_API_USD_PER_M = 1.00
DYNAMO_USD_PER_M_RRU = 0.125
DYNAMO_USD_PER_M_WRU = 0.625
DYNAMO_STORAGE_USD_PER_GB_MONTH = 0.25  # Standard table class; first 25 GB a month free
PITR_USD_PER_GB_MONTH = 0.20  # continuous backups, billed on the table's size
LOGS_INGEST_USD_PER_GB = 0.50  # Standard class (Lambda's logs: the first tier of vended logs)
LOGS_STORE_USD_PER_GB_MONTH = 0.03  # billed compressed: the raw bytes are an upper bound
ITEM_OVERHEAD_BYTES = 100  # DynamoDB's per-item storage overhead (indexing)
MONTH_DAYS = 30


@dataclass(frozen=True)
class Measured:
    """Bytes per request, measured through the Lambda handler (2026-12-07)."""

    json_log_bytes: int = 1292  # chat.json: Powertools' "routed" line and two EMF documents
    stream_log_bytes: int = 1296  # chat_stream.json: the same three lines
    record_bytes: int = 389  # a request log record's DynamoDB item size (no bodies)
    aggregate_bytes: int = (
        228  # an hour x key x model x deployment aggregate (cache hits and savings included)
    )
    counter_bytes: int = 205  # a deployment's minute bucket of counters, before its seconds
    counter_second_bytes: int = 33  # each second of the minute that saw traffic adds this
    binding_bytes: int = 160  # a caller's sticky binding


MEASURED = Measured()

# What Lambda's platform writes per invocation besides the function (START, END,
# REPORT), and what the HTTP API's access log writes per request with the
# template's format: example lines of the documented shapes, not measured.
REQUEST_ID = "8f5e2b1c-3a4d-4e6f-9a0b-1c2d3e4f5a6b"
PLATFORM_LINES = (
    f"START RequestId: {REQUEST_ID} Version: $LATEST\n"
    f"END RequestId: {REQUEST_ID}\n"
    f"REPORT RequestId: {REQUEST_ID}\tDuration: 2003.52 ms\tBilled Duration: 2004 ms\t"
    "Memory Size: 512 MB\tMax Memory Used: 118 MB\t\n"
)
ACCESS_LOG_LINE = (
    '{"requestId":"Kx9LwhXyIAMEbRw=","ip":"203.0.113.17",'
    '"time":"07/Dec/2026:18:40:06 +0000","method":"POST",'
    '"path":"/v1/chat/completions","status":"200",'
    '"latencyMs":"2010","integrationMs":"2004",'
    '"integrationError":"-","bytes":"712"}\n'
)


@dataclass(frozen=True)
class Stack:
    """The stack's defaults (template.yaml) and the request log's configuration."""

    memory_gb: float = 0.5
    log_retention_days: int = 30  # LogRetentionDays
    pitr: bool = True  # PointInTimeRecoveryEnabled
    record_retention_days: int = 30  # request_log.retention_days
    report_days: int = 400  # request_log.report_days
    binding_ttl_s: int = 3600  # sticky.idle_ttl_seconds
    read_units: float = 1.01
    write_units: float = 5.4


def _usd(value: float) -> str:
    return f"${value:,.2f}"


def _per_m_storage(item_bytes: float, days: float, usd_per_gb_month: float) -> float:
    return 1e6 * item_bytes * days / MONTH_DAYS / 1e9 * usd_per_gb_month


def table(stack: Stack = Stack(), measured: Measured = MEASURED) -> str:
    """The cost table (markdown), its header included; one row per charge."""
    gb = stack.memory_gb
    json_s, stream_s = 2, 30
    platform = len(PLATFORM_LINES.encode())
    access = len(ACCESS_LOG_LINE.encode())
    json_log = measured.json_log_bytes + platform + access
    stream_log = measured.stream_log_bytes + platform
    record = measured.record_bytes + ITEM_OVERHEAD_BYTES
    days = stack.record_retention_days
    logs_days = stack.log_retention_days
    rows = [
        "| per 1M requests | 2 s JSON call (`ApiUrl`) | 30 s stream (`StreamUrl`) | price used |",
        "|---|---:|---:|---|",
        f"| Lambda duration | {gb:g} GB × {json_s} s = {gb * json_s:g} GB-s each: "
        f"{_usd(1e6 * gb * json_s * LAMBDA_ARM64_USD_PER_GB_S)} | {gb:g} GB × {stream_s} s = "
        f"{gb * stream_s:g} GB-s each: {_usd(1e6 * gb * stream_s * LAMBDA_ARM64_USD_PER_GB_S)} "
        f"(1024 MB: {_usd(1e6 * 1.0 * stream_s * LAMBDA_ARM64_USD_PER_GB_S)}) "
        f"| ${LAMBDA_ARM64_USD_PER_GB_S:.10f} per GB-s (arm64) |",
        f"| Lambda requests | {_usd(LAMBDA_USD_PER_M_REQUESTS)} | {_usd(LAMBDA_USD_PER_M_REQUESTS)} "
        f"| {_usd(LAMBDA_USD_PER_M_REQUESTS)} per 1M |",
        f"| API Gateway HTTP API | {_usd(HTTP_API_USD_PER_M)} | - "
        f"| {_usd(HTTP_API_USD_PER_M)} per 1M (up to 512 KB each; first 300M a month) |",
        "| Function URL | - | $0.00 | no charge beyond the function's own |",
        f"| DynamoDB reads: {stack.read_units:g} read units a request "
        f"| {_usd(stack.read_units * DYNAMO_USD_PER_M_RRU)} | {_usd(stack.read_units * DYNAMO_USD_PER_M_RRU)} "
        f"| ${DYNAMO_USD_PER_M_RRU} per 1M read request units (on-demand) |",
        f"| DynamoDB writes: {stack.write_units:g} write units a request (3.4 with the request log off) "
        f"| {_usd(stack.write_units * DYNAMO_USD_PER_M_WRU)} | {_usd(stack.write_units * DYNAMO_USD_PER_M_WRU)} "
        f"| ${DYNAMO_USD_PER_M_WRU} per 1M write request units (on-demand) |",
        f"| CloudWatch Logs ingestion: 10⁶ × bytes a request ({json_log:,} B: the function's "
        f"{measured.json_log_bytes:,} + Lambda's {platform} + the access log's {access}; "
        f"stream {stream_log:,} B: {measured.stream_log_bytes:,} + {platform}) "
        f"| {_usd(1e6 * json_log / 1e9 * LOGS_INGEST_USD_PER_GB)} "
        f"| {_usd(1e6 * stream_log / 1e9 * LOGS_INGEST_USD_PER_GB)} "
        f"| ${LOGS_INGEST_USD_PER_GB:.2f} per GB ingested (Standard) |",
        f"| CloudWatch Logs storage: the same bytes × {logs_days} days kept (`LogRetentionDays`) / 30 "
        f"| {_usd(_per_m_storage(json_log, logs_days, LOGS_STORE_USD_PER_GB_MONTH))} "
        f"| {_usd(_per_m_storage(stream_log, logs_days, LOGS_STORE_USD_PER_GB_MONTH))} "
        f"| ${LOGS_STORE_USD_PER_GB_MONTH:.2f} per GB-month (billed compressed: at most this) |",
        f"| DynamoDB storage: 10⁶ records × {record} B ({measured.record_bytes} + 100 per item) "
        f"× {days} days (`retention_days`) / 30 "
        f"| {_usd(_per_m_storage(record, days, DYNAMO_STORAGE_USD_PER_GB_MONTH))} "
        f"| {_usd(_per_m_storage(record, days, DYNAMO_STORAGE_USD_PER_GB_MONTH))} "
        f"| ${DYNAMO_STORAGE_USD_PER_GB_MONTH:.2f} per GB-month (first 25 GB free) |",
    ]
    pitr = _per_m_storage(record, days, PITR_USD_PER_GB_MONTH) if stack.pitr else 0.0
    rows.append(
        f"| DynamoDB PITR ({'on' if stack.pitr else 'off'} in template.yaml): the same GB-months "
        f"| {_usd(pitr)} | {_usd(pitr)} | ${PITR_USD_PER_GB_MONTH:.2f} per GB-month of table size |"
    )
    json_total = sum(_column(row, 1) for row in rows[2:])
    stream_total = sum(_column(row, 2) for row in rows[2:])
    rows.append(f"| **total** | **{_usd(json_total)}** | **{_usd(stream_total)}** | |")
    return "\n".join(rows) + "\n"


def items_table(stack: Stack = Stack(), measured: Measured = MEASURED) -> str:
    """What the request path keeps in the table: each kind's size, lifetime and count."""
    record = measured.record_bytes + ITEM_OVERHEAD_BYTES
    per_day = 1e6
    live_gb = per_day * stack.record_retention_days * record / 1e9
    storage = live_gb * DYNAMO_STORAGE_USD_PER_GB_MONTH
    pitr = live_gb * PITR_USD_PER_GB_MONTH if stack.pitr else 0.0
    hours = 24 * stack.report_days
    busy = measured.counter_bytes + 60 * measured.counter_second_bytes
    rows = [
        "| item | bytes (DynamoDB size; +100 stored) | lives | live at once |",
        "|---|---:|---|---|",
        f"| request log record (no bodies) | {measured.record_bytes} "
        f"| `request_log.retention_days` ({stack.record_retention_days} d) "
        f"| requests in that window: at 1 M a day {per_day * stack.record_retention_days / 1e6:g} M, "
        f"{live_gb:.1f} GB: {_usd(storage)} a month storage + {_usd(pitr)} PITR |",
        f"| hourly aggregate | {measured.aggregate_bytes} "
        f"| `request_log.report_days` ({stack.report_days} d) "
        f"| 24 × {stack.report_days} = {hours:,} per key × model × deployment that had traffic: "
        f"{hours * (measured.aggregate_bytes + ITEM_OVERHEAD_BYTES) / 1e6:.1f} MB each |",
        f"| counter bucket (a deployment's minute) | {measured.counter_bytes} "
        f"+ {measured.counter_second_bytes} per second with traffic "
        f"(all 60: {busy / 1000:.1f} KB) | 1 h "
        f"| 60 per deployment and `counter_shards` shard: at most "
        f"{60 * (busy + ITEM_OVERHEAD_BYTES) / 1e6:.2f} MB each |",
        f"| sticky binding | {measured.binding_bytes} "
        f"| `sticky.idle_ttl_seconds` ({stack.binding_ttl_s / 3600:g} h) after its last use "
        "| callers × pools active in the last hour |",
    ]
    return "\n".join(rows) + "\n"


def _column(row: str, index: int) -> float:
    """The dollar figure a row's cell ends its first amount with (``-``: none)."""
    cell = row.split(" | ")[index].strip()
    if cell == "-":
        return 0.0
    amount = cell.split("$")[1].split(" ")[0]
    return float(amount.replace(",", ""))


def item_bytes(item: dict[str, dict[str, object]]) -> int:
    """An item's DynamoDB size (low-level JSON form): names plus values, by AWS's rules."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: dict[str, object]) -> int:
    ((kind, raw),) = value.items()
    if kind == "S":
        return len(str(raw).encode())
    if kind == "N":  # up to 38 digits: about one byte per two significant digits, plus one
        digits = str(raw).lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(raw) if isinstance(raw, bytes) else len(str(raw)) * 3 // 4
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        assert isinstance(raw, list)
        return 3 + sum(1 + _value_bytes(v) for v in raw)
    if kind == "M":
        assert isinstance(raw, dict)
        return 3 + sum(len(k.encode()) + 1 + _value_bytes(v) for k, v in raw.items())
    raise ValueError(f"unknown DynamoDB type {kind}")


if __name__ == "__main__":
    print(table(), items_table(), sep="\n", end="")
