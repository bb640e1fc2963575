"""``RequestLog``: where each request's record and its aggregate increment go.

``window_s`` = 0 (every Lambda): a request's record (one PutItem) and its
aggregate (one UpdateItem ADD) are written when the request ends, alongside
its outcome write; the answer never waits for them (a JSON answer waits for
its binding write only). ``window_s`` > 0 (a
long-lived process): both are buffered (``LogBuffer``) and written once per
``LOG_WINDOW_S`` (nothing routes on them, so they can wait longer than the
counters' window; a crash loses at most that much): records 25 to a
BatchWriteItem, aggregates summed per hour, key, model and deployment into
one ADD each, on the log's own store client and task (``LogBuffer``: bounded;
what it drops is counted, sent as a metric and logged).

A store failure costs the record (logged, never raised): the answer is the client's.

Each record is labelled with its key's team and the team's organization
(``state.usage_log.LABELS``; the organization from ``TeamOrganizations``, a
cached lookup: a key without a team costs nothing more).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal

from edgeproxy.errors import StoreError
from edgeproxy.service.run import Run, Served
from edgeproxy.service.telemetry import Telemetry
from edgeproxy.service.usage.entry import Entry
from edgeproxy.service.usage.log_buffer import LogBuffer
from edgeproxy.service.usage.organizations import TeamOrganizations
from edgeproxy.state.usage_log import (
    DAY_S,
    HOUR_S,
    NO_KEY,
    NONE_SERVED,
    RequestRecord,
    UsageLogStore,
    UsageRow,
)

logger = logging.getLogger(__name__)

LOG_WINDOW_S = 1.0  # a long-lived process's flush window of the request log


def usage_row(record: RequestRecord) -> UsageRow:
    """The aggregate increment of one record (its cost as the exact decimal the spend got)."""
    return UsageRow(
        hour=record.hour,
        key_id=record.key_id or NO_KEY,
        model=record.model,
        deployment=record.deployment or NONE_SERVED,
        key_name=record.key_name or "",
        requests=1,
        failures=0 if record.outcome == "success" else 1,
        prompt_tokens=record.prompt_tokens,
        completion_tokens=record.completion_tokens,
        cost_usd=Decimal(repr(record.cost_usd)),
        cache_read_tokens=record.cache_read_tokens,
        cache_write_tokens=record.cache_write_tokens,
        labels=record.labels,
        cache_hits=1 if record.cache == "hit" else 0,
        saved_usd=Decimal(repr(record.saved_usd)),
    )


def row_expiry(row: UsageRow, report_days: int) -> float:
    return float((row.hour + 1) * HOUR_S + report_days * DAY_S)


class RequestLog:
    """Opens each request's entry and writes what it ends as (see the module doc)."""

    def __init__(
        self,
        store: UsageLogStore | None,
        clock: Callable[[], float],
        window_s: float = 0.0,
        *,
        telemetry: Telemetry | None = None,
        observe: Callable[[RequestRecord, Run], None] | None = None,
        organizations: TeamOrganizations | None = None,
    ) -> None:
        """``store`` None: no log (tests and tools that build a gateway by hand).

        ``organizations``: where a team's organization is looked up (None: records carry
        the team only).

        ``telemetry``: where the buffer's drops are counted (``RequestLogDropped``).
        ``observe``: told every request's record, whether or not it is stored
        (the metrics of a long-lived process count what the log records).
        """
        self.store = store
        self._clock = clock
        self._observe = observe
        self._organizations = organizations
        self.buffer: LogBuffer | None = None
        if store is not None and window_s > 0:
            self.buffer = LogBuffer(store, max(window_s, LOG_WINDOW_S), telemetry=telemetry)

    def begin(self, run: Run) -> Entry | None:
        """The request's entry (None when there is no log, or the configuration turned it off)."""
        settings = run.config.gateway.request_log
        stored = self.store is not None and settings.enabled
        if not stored and self._observe is None:
            return None
        return Entry(run, settings, self._clock, run.budget.started_at, stored=stored)

    async def failed(self, entry: Entry | None, exc: BaseException) -> None:
        """Write the record of a request that ended in ``exc`` (a refusal, a failure, a cancel)."""
        if entry is not None:
            await self.write(entry, entry.failed(exc))

    async def answered(self, entry: Entry | None, served: Served) -> None:
        """Write the record of a JSON answer (its tokens: the ones its success write counts)."""
        response = served.answer.response
        if entry is None or response is None:
            return
        body = response.body if entry.captures else None
        usage = response.usage
        record = entry.served(
            served.attempt.deployment.id,
            usage.prompt_tokens,
            usage.completion_tokens,
            answer=body,
            cache=(usage.cache_read_tokens, usage.cache_write_tokens),
        )
        await self.write(entry, record)

    async def write(self, entry: Entry | None, record: RequestRecord) -> None:
        """Write ``record`` (once per entry) now, or into the buffer."""
        if entry is None or entry.done:
            return
        entry.done = True
        if self._observe is not None:
            self._observe(record, entry.run)
        if self.store is None or not entry.stored:
            return
        if record.team is not None and self._organizations is not None:
            record = replace(record, organization=await self._organizations.of(record.team))
        row = usage_row(record)
        expires = row_expiry(row, entry.settings.report_days)
        if self.buffer is not None:
            self.buffer.add(record, row, expires)
            return
        try:
            await asyncio.shield(
                asyncio.gather(
                    self.store.put_requests([record]), self.store.add_usage(row, expires)
                )
            )
        except StoreError as exc:
            logger.warning("could not write a request's log record: %s", type(exc).__name__)

    async def aclose(self) -> None:
        """Write what is buffered (shutdown); call before the store's client closes."""
        if self.buffer is not None:
            await self.buffer.aclose()
