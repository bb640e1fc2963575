"""The request log's buffer (``service/usage/log_buffer.py``) on an in-memory store.

The real table is in tests/integration/usage/; here the summing, batching and
the retry of failed writes are checked exactly.
"""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal

import pytest

from edgeproxy.errors import StoreError, StoreUnavailable
from edgeproxy.service.usage import log_buffer
from edgeproxy.service.usage.log_buffer import LogBuffer
from edgeproxy.service.usage.request_log import usage_row
from edgeproxy.state.usage_log import RequestRecord, UsageRow


class Memory:
    """``UsageLogStore``'s writes, kept in order (failing while ``down``)."""

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []
        self.rows: list[UsageRow] = []
        self.down = False
        self.calls = 0

    async def put_requests(self, records: list[RequestRecord]) -> None:
        self.calls += 1
        await asyncio.sleep(0)
        if self.down:
            raise StoreUnavailable("down", retry_after=1.0)
        if any(r.model == REFUSED_MODEL for r in records):  # as DynamoDB refuses a whole batch
            raise StoreError("DynamoDB BatchWriteItem: ValidationException")
        self.records.extend(records)

    async def add_usage(self, row: UsageRow, expires_at: float) -> None:
        self.calls += 1
        await asyncio.sleep(0)
        if self.down:
            raise StoreUnavailable("down", retry_after=1.0)
        if row.model == REFUSED_MODEL:
            raise StoreError("DynamoDB UpdateItem: ValidationException")
        self.rows.append(row)


REFUSED_MODEL = "m" * 5000  # a sort key DynamoDB refuses (over 1,024 bytes)


def record(i: int, key: str = "k1", cost: float = 0.1, model: str = "fast-chat") -> RequestRecord:
    return RequestRecord(
        at=7200.0 + i,
        request_id=f"r{i}",
        model=model,
        operation="chat",
        stream=False,
        status=200,
        outcome="success",
        expires_at=99.0,
        key_id=key,
        deployment="a",
        prompt_tokens=2,
        completion_tokens=3,
        cost_usd=cost,
    )


def add(buffer: LogBuffer, r: RequestRecord) -> None:
    buffer.add(r, usage_row(r), 1000.0)


async def test_a_window_of_requests_is_one_add_per_bucket_and_one_batch_of_records() -> None:
    store = Memory()
    buffer = LogBuffer(store, 60.0)  # type: ignore[arg-type]
    for i in range(10):
        add(buffer, record(i))
    add(buffer, record(10, key="k2"))
    await buffer.flush()
    assert len(store.records) == 11
    by_key = {r.key_id: r for r in store.rows}
    assert set(by_key) == {"k1", "k2"}
    assert (by_key["k1"].requests, by_key["k1"].prompt_tokens) == (10, 20)
    # Ten 0.1s as decimals: exactly 1.0 (a float sum would be 0.9999999999999999).
    assert by_key["k1"].cost_usd == Decimal("1.0")
    assert store.calls == 3  # two ADDs and one BatchWriteItem-sized put
    await buffer.aclose()


async def test_a_failed_flush_keeps_everything_for_the_next_one() -> None:
    store = Memory()
    buffer = LogBuffer(store, 60.0)  # type: ignore[arg-type]
    add(buffer, record(1))
    store.down = True
    assert await buffer.flush() is True
    add(buffer, record(2))
    store.down = False
    assert await buffer.flush() is False
    assert sorted(r.request_id for r in store.records) == ["r1", "r2"]
    assert [r.requests for r in store.rows] == [2]  # the failed ADD merged with the new one


async def test_a_write_the_store_refuses_is_dropped_alone_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The probe: one unwritable record was retried for 2 minutes, then dropped with every
    # aggregate buffered meanwhile. Here the rest of its batch is written in the same flush.
    store = Memory()
    buffer = LogBuffer(store, 60.0)  # type: ignore[arg-type]
    for i in range(5):
        add(buffer, record(i))
    add(buffer, record(5, model=REFUSED_MODEL))
    add(buffer, record(6, key="k2"))
    with caplog.at_level(logging.ERROR, logger=log_buffer.__name__):
        assert await buffer.flush() is False  # nothing left to retry
    assert sorted(r.request_id for r in store.records) == ["r0", "r1", "r2", "r3", "r4", "r6"]
    assert sorted((r.key_id, r.requests) for r in store.rows) == [("k1", 5), ("k2", 1)]
    assert buffer.pending == 0
    refused = sorted(r.getMessage() for r in caplog.records)
    assert refused == [
        "request log: the store refused 1 aggregates; dropped",
        "request log: the store refused 1 records; dropped",
    ]
    assert REFUSED_MODEL not in str(refused)


async def test_the_window_flushes_by_itself() -> None:
    store = Memory()
    buffer = LogBuffer(store, 0.01)  # type: ignore[arg-type]
    add(buffer, record(1))
    for _ in range(500):
        if store.records:
            break
        await asyncio.sleep(0.01)
    assert [r.request_id for r in store.records] == ["r1"]
    await buffer.aclose()


async def test_what_still_fails_at_shutdown_is_logged_as_lost_without_its_fields(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Memory()
    buffer = LogBuffer(store, 60.0)  # type: ignore[arg-type]
    add(buffer, record(1))
    store.down = True
    with caplog.at_level(logging.ERROR, logger=log_buffer.__name__):
        await buffer.aclose()
    [lost] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "1 records, 1 aggregates" in lost.getMessage()
    assert "r1" not in lost.getMessage()
    assert buffer.pending == 0


class Held(Memory):
    """Writes that wait until ``release`` is set; counts how many are in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.in_flight = 0
        self.most = 0
        self._changed = asyncio.Condition()

    async def entered(self, count: int) -> None:
        """Wait until ``count`` writes are held at once."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight >= count)

    async def put_requests(self, records: list[RequestRecord]) -> None:
        await self._held()
        await super().put_requests(records)

    async def add_usage(self, row: UsageRow, expires_at: float) -> None:
        await self._held()
        await super().add_usage(row, expires_at)

    async def _held(self) -> None:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        async with self._changed:
            self._changed.notify_all()
        try:
            await self.release.wait()
        finally:
            self.in_flight -= 1


class Counted:
    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], float] = {}

    def count(self, name: str, value: float = 1, /, **dimensions: str) -> None:
        key = (name, dimensions.get("kind", ""))
        self.counts[key] = self.counts.get(key, 0) + value


async def test_a_store_that_falls_behind_fills_the_bound_then_records_are_dropped_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Held()
    telemetry = Counted()
    buffer = LogBuffer(store, 0.01, telemetry=telemetry, max_records=5, max_rows=1)  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR, logger=log_buffer.__name__):
        add(buffer, record(0))
        await asyncio.wait_for(store.entered(1), 10)  # the first flush took record 0: held
        for i in range(1, 21):
            add(buffer, record(i))
        add(buffer, record(21, key="k2"))  # a new bucket past max_rows
    assert buffer.pending <= 5 + 1
    assert (buffer.dropped_records, buffer.dropped_rows) == (16, 1)
    assert telemetry.counts == {
        ("RequestLogDropped", "records"): 16,
        ("RequestLogDropped", "aggregates"): 1,
    }
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "dropped" in line  # once, however many were dropped (rate-limited)
    store.release.set()
    await buffer.aclose()
    # Records went first: every request of the kept bucket is still in its aggregate.
    assert sum(r.requests for r in store.rows if r.key_id == "k1") == 21
    assert len(store.records) == 1 + 5


async def test_a_big_flush_goes_out_a_few_batches_at_a_time() -> None:
    store = Held()
    buffer = LogBuffer(store, 60.0)  # type: ignore[arg-type]
    for i in range(300):
        add(buffer, record(i))
    flushing = asyncio.ensure_future(buffer.flush())
    await asyncio.wait_for(store.entered(log_buffer.PARALLEL_WRITES), 10)
    for _ in range(20):  # let any further write start, if the flush would start one
        await asyncio.sleep(0)
    assert store.most == log_buffer.PARALLEL_WRITES  # never all 13 calls at once
    store.release.set()
    assert await flushing is False
    assert (len(store.records), store.calls) == (300, 1 + 300 // 25)
