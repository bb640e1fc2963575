"""Log records and aggregate increments of a long-lived process, written once per window.

``add`` only buffers; a flush runs on its own task ``window_s`` after the
first addition of a window, or at once when ``MAX_RECORDS`` records wait,
and at shutdown. One flush is in flight at a time, on the log's own store
client (``runtime.build_gateway``), so no request's store call queues behind
it; its batches go out ``PARALLEL_WRITES`` at a time, each encoded and
signed as it is sent, so the loop is never held by one huge encode.
Aggregates are summed per bucket (``UsageRow.plus``: ADD is commutative),
records go 25 to a BatchWriteItem. What a failed flush held goes back for
the next one (at least ``RETRY_S`` later); after ``GIVE_UP_S`` of failures,
or when the shutdown's flush fails, it is dropped and logged (counts only:
a record's fields stay out of the process log). A write the store refuses
(not unavailable: invalid for it) is dropped at once and alone: a batch of
records it refuses is written again one by one, so one record that cannot
be written never holds back the others or their aggregates. A crash loses
one window.

The buffer is bounded: past ``max_records`` held records a new record is
dropped (its aggregate increment is still summed), past ``max_rows`` held
buckets a new bucket's increment is dropped too. Records go first because
the aggregates are what reports and bills read, and they are small. Each
drop is counted (``dropped_records``, ``dropped_rows``), sent as the
``RequestLogDropped`` metric (``kind``: records or aggregates) and logged
at most once per ``REPORT_EVERY_S``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from edgeproxy.errors import StoreError, StoreUnavailable
from edgeproxy.service.telemetry import NoTelemetry, Telemetry
from edgeproxy.state.usage_log import Bucket, RequestRecord, UsageLogStore, UsageRow

logger = logging.getLogger(__name__)

MAX_RECORDS = 500  # a flush starts at once when this many records wait
MAX_HELD_RECORDS = 20_000  # records held at most (a store far behind): about 20 s at 1,000 req/s
MAX_HELD_ROWS = 20_000  # aggregate buckets held at most
PARALLEL_WRITES = 2  # a flush's store calls in flight at once: few, so a store that serves
# one call at a time (the embedded one) queues at most two of them ahead of a request's read
BATCH = 25  # records per BatchWriteItem
RETRY_S = 1.0
GIVE_UP_S = 120.0
REPORT_EVERY_S = 10.0  # drops are logged at most this often


class LogBuffer:
    """Buffers records and summed aggregates; see the module doc."""

    def __init__(
        self,
        store: UsageLogStore,
        window_s: float,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        telemetry: Telemetry | None = None,
        max_records: int = MAX_HELD_RECORDS,
        max_rows: int = MAX_HELD_ROWS,
    ) -> None:
        self._store = store
        self._window = window_s
        self._monotonic = monotonic
        self._telemetry = telemetry or NoTelemetry()
        self.max_records = max_records
        self.max_rows = max_rows
        self._records: list[RequestRecord] = []
        self._rows: dict[Bucket, tuple[UsageRow, float]] = {}
        self._since: float | None = None
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self.writes = 0  # store calls sent (for tests and the benchmark)
        self.dropped_records = 0  # records the bound dropped (since the start)
        self.dropped_rows = 0  # aggregate increments the bound dropped
        self._unreported = (0, 0)
        self._reported_at: float | None = None

    @property
    def pending(self) -> int:
        return len(self._records) + len(self._rows)

    def add(self, record: RequestRecord, row: UsageRow, expires_at: float) -> None:
        """Buffer one request's record and aggregate increment (or drop them: the bound)."""
        records = [record]
        if len(self._records) >= self.max_records:
            records = []
            self._dropped(1, 0)
        rows = {row.bucket: (row, expires_at)}
        if row.bucket not in self._rows and len(self._rows) >= self.max_rows:
            rows = {}
            self._dropped(0, 1)
        self._keep(records, rows, self._monotonic())
        due = 0.0 if len(self._records) >= MAX_RECORDS else self._window
        if self._timer is None or self._timer.done():
            self._timer = asyncio.ensure_future(self._after(due))

    def _dropped(self, records: int, rows: int) -> None:
        self.dropped_records += records
        self.dropped_rows += rows
        kind = "records" if records else "aggregates"
        self._telemetry.count("RequestLogDropped", records + rows, kind=kind)
        held_records, held_rows = self._unreported
        self._unreported = (held_records + records, held_rows + rows)
        now = self._monotonic()
        if self._reported_at is None or now - self._reported_at >= REPORT_EVERY_S:
            self._reported_at = now
            logger.error(
                "request log buffer full (the store is behind): dropped %d records and "
                "%d aggregate increments since the last report (%d and %d in all)",
                *self._unreported,
                self.dropped_records,
                self.dropped_rows,
            )
            self._unreported = (0, 0)

    def _keep(
        self, records: list[RequestRecord], rows: dict[Bucket, tuple[UsageRow, float]], since: float
    ) -> None:
        room = self.max_records - len(self._records)
        if len(records) > room:  # a failed flush's records coming back to a refilled buffer
            self._dropped(len(records) - max(room, 0), 0)
            records = records[: max(room, 0)]
        self._records.extend(records)
        for bucket, (row, expires) in rows.items():
            held = self._rows.get(bucket)
            self._rows[bucket] = (
                (row, expires) if held is None else (held[0].plus(row), max(held[1], expires))
            )
        self._since = since if self._since is None else min(self._since, since)

    async def _after(self, delay: float) -> None:
        await asyncio.sleep(delay)
        failed = await asyncio.shield(self.flush())
        if self.pending:
            self._timer = asyncio.ensure_future(
                self._after(max(self._window, RETRY_S) if failed else self._window)
            )

    async def _limited(self, writes: list[Coroutine[Any, Any, None]]) -> list[BaseException | None]:
        """Run ``writes`` ``PARALLEL_WRITES`` at a time; each one's error or None, in order."""
        gate = asyncio.Semaphore(PARALLEL_WRITES)

        async def one(write: Coroutine[Any, Any, None]) -> BaseException | None:
            async with gate:
                try:
                    await write
                except StoreError as exc:
                    return exc
                return None

        return list(await asyncio.gather(*(one(w) for w in writes)))

    async def flush(self, *, last: bool = False) -> bool:
        """Write everything buffered; True if a write failed (kept for a retry unless ``last``)."""
        async with self._lock:
            records, rows, since = self._records, self._rows, self._since
            self._records, self._rows, self._since = [], {}, None
            if not records and not rows:
                return False
            chunks = [records[i : i + BATCH] for i in range(0, len(records), BATCH)]
            writes = [self._store.add_usage(row, expires) for row, expires in rows.values()]
            writes += [self._put_records(chunk) for chunk in chunks]
            self.writes += len(writes)
            results = await self._limited(writes)
            row_results, record_results = results[: len(rows)], results[len(rows) :]
            _drop_rejected([r for r in row_results if _rejected(r)], "aggregates")
            _drop_rejected([r for r in record_results if _rejected(r)], "records")
            # Keep what the store could not take now (an ADD that failed did not apply;
            # a retried PutItem only rewrites); what it refused is never retried.
            failed_rows = {b: rows[b] for b, r in zip(rows, row_results, strict=True) if _down(r)}
            failed_records = [
                record
                for chunk, r in zip(chunks, record_results, strict=True)
                if _down(r)
                for record in chunk
            ]
            if not failed_rows and not failed_records:
                return False
            old = since is not None and self._monotonic() - since >= GIVE_UP_S
            if last or old:
                logger.error(
                    "request log lost (store unavailable): %d records, %d aggregates",
                    len(failed_records),
                    len(failed_rows),
                )
                return True
            self._keep(
                failed_records, failed_rows, since if since is not None else self._monotonic()
            )
            logger.warning("could not write the request log (store unavailable); kept for a retry")
            return True

    async def _put_records(self, records: list[RequestRecord]) -> None:
        """Store the records; if the store refuses a batch, each on its own, so that one
        record it cannot take never holds back the others."""
        try:
            await self._store.put_requests(records)
        except StoreUnavailable:
            raise
        except StoreError:
            if len(records) == 1:
                raise
            alone = await asyncio.gather(
                *(self._store.put_requests([r]) for r in records), return_exceptions=True
            )
            _drop_rejected([r for r in alone if _rejected(r)], "records")
            if any(_down(r) for r in alone):
                raise StoreUnavailable("some request log records could not be written") from None

    async def aclose(self) -> None:
        """Flush what is buffered (shutdown); what still fails is logged as lost."""
        if self._timer is not None:
            self._timer.cancel()
        if await self.flush():
            await self.flush(last=True)


def _down(result: object) -> bool:
    """A write the store could not take now (unavailable): kept for a retry."""
    return isinstance(result, StoreUnavailable)


def _rejected(result: object) -> bool:
    """A write the store refused (invalid for it): retrying cannot help."""
    return isinstance(result, StoreError) and not isinstance(result, StoreUnavailable)


def _drop_rejected(errors: list[object], what: str) -> None:
    if errors:
        logger.error("request log: the store refused %d %s; dropped", len(errors), what)
