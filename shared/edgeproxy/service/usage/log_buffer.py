"""Log records and aggregate increments of a long-lived process, written once per window.

``add`` only buffers; a flush runs ``window_s`` after the first addition of
a window, or at once when ``MAX_RECORDS`` records wait, and at shutdown.
Aggregates are summed per bucket (``UsageRow.plus``: ADD is commutative),
records go 25 to a BatchWriteItem. What a failed flush held goes back for
the next one (at least ``RETRY_S`` later); after ``GIVE_UP_S`` of failures,
or when the shutdown's flush fails, it is dropped and logged (counts only:
a record's fields stay out of the process log). A write the store refuses
(not unavailable: invalid for it) is dropped at once and alone: a batch of
records it refuses is written again one by one, so one record that cannot
be written never holds back the others or their aggregates. A crash loses
one window.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from edgeproxy.errors import StoreError, StoreUnavailable
from edgeproxy.state.usage_log import RequestRecord, UsageLogStore, UsageRow

logger = logging.getLogger(__name__)

MAX_RECORDS = 500
RETRY_S = 1.0
GIVE_UP_S = 120.0
Bucket = tuple[int, str, str, str]


class LogBuffer:
    """Buffers records and summed aggregates; see the module doc."""

    def __init__(
        self,
        store: UsageLogStore,
        window_s: float,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._window = window_s
        self._monotonic = monotonic
        self._records: list[RequestRecord] = []
        self._rows: dict[Bucket, tuple[UsageRow, float]] = {}
        self._since: float | None = None
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self.writes = 0  # store calls sent (for tests and the benchmark)

    @property
    def pending(self) -> int:
        return len(self._records) + len(self._rows)

    def add(self, record: RequestRecord, row: UsageRow, expires_at: float) -> None:
        """Buffer one request's record and aggregate increment."""
        self._keep([record], {row.bucket: (row, expires_at)}, self._monotonic())
        due = 0.0 if len(self._records) >= MAX_RECORDS else self._window
        if self._timer is None or self._timer.done():
            self._timer = asyncio.ensure_future(self._after(due))

    def _keep(
        self, records: list[RequestRecord], rows: dict[Bucket, tuple[UsageRow, float]], since: float
    ) -> None:
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

    async def flush(self, *, last: bool = False) -> bool:
        """Write everything buffered; True if a write failed (kept for a retry unless ``last``)."""
        async with self._lock:
            records, rows, since = self._records, self._rows, self._since
            self._records, self._rows, self._since = [], {}, None
            if not records and not rows:
                return False
            writes = [self._store.add_usage(row, expires) for row, expires in rows.values()]
            if records:
                writes.append(self._put_records(records))
            self.writes += len(rows) + (len(records) + 24) // 25
            results = await asyncio.gather(*writes, return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException) and not isinstance(result, StoreError):
                    raise result
            row_results = results[: len(rows)]
            _drop_rejected([r for r in row_results if _rejected(r)], "aggregates")
            # Keep what the store could not take now (an ADD that failed did not apply;
            # a retried PutItem only rewrites); what it refused is never retried.
            failed_rows = {b: rows[b] for b, r in zip(rows, row_results, strict=True) if _down(r)}
            failed_records = records if records and _down(results[-1]) else []
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
