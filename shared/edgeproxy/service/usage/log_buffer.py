"""Log records and aggregate increments of a long-lived process, written once per window.

``add`` only buffers; a flush runs ``window_s`` after the first addition of
a window, or at once when ``MAX_RECORDS`` records wait, and at shutdown.
Aggregates are summed per bucket (``UsageRow.plus``: ADD is commutative),
records go 25 to a BatchWriteItem. What a failed flush held goes back for
the next one (at least ``RETRY_S`` later); after ``GIVE_UP_S`` of failures,
or when the shutdown's flush fails, it is dropped and logged (counts only:
a record's fields stay out of the process log). A crash loses one window.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from edgeproxy.errors import StoreError
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
                writes.append(self._store.put_requests(records))
            self.writes += len(rows) + (len(records) + 24) // 25
            results = await asyncio.gather(*writes, return_exceptions=True)
            errors = [r for r in results if isinstance(r, BaseException)]
            if not errors:
                return False
            for error in errors:
                if not isinstance(error, StoreError):
                    raise error
            old = since is not None and self._monotonic() - since >= GIVE_UP_S
            if last or old:
                logger.error(
                    "request log lost (%s): %d records, %d aggregates",
                    type(errors[0]).__name__,
                    len(records),
                    len(rows),
                )
                return True
            # Keep all of it: an ADD that failed did not apply; a retried PutItem only rewrites.
            failed_rows = {
                b: rows[b]
                for b, r in zip(rows, results, strict=False)
                if isinstance(r, BaseException)
            }
            failed_records = records if isinstance(results[-1], BaseException) and records else []
            self._keep(
                failed_records, failed_rows, since if since is not None else self._monotonic()
            )
            logger.warning(
                "could not write the request log (%s); kept for a retry", type(errors[0]).__name__
            )
            return True

    async def aclose(self) -> None:
        """Flush what is buffered (shutdown); what still fails is logged as lost."""
        if self._timer is not None:
            self._timer.cancel()
        if await self.flush():
            await self.flush(last=True)
