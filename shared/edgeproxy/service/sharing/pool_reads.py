"""Single-flight pool reads: concurrent requests for one pool share one state read.

Freshness is today's: a request routes only on a read that started after it
arrived. Per pool there is at most one *open* batch, the one that accepts
arrivals; it closes the moment its read starts. A batch starts

- at once, when no read of its pool is running (a lone request waits for
  nothing: one read on its critical path, as without sharing);
- when a running read of its pool ends (requests that arrived during a read
  wait for the next one, never for the one in flight: it may have read the
  items before they arrived);
- at once, when it holds ``max_batch`` distinct requests (a burst of many
  callers runs a few reads side by side rather than one huge one).

So a request waits at most for the rest of the running read and then its
own, and under load a pool costs about one read per read's round trip,
however many requests arrive meanwhile. One exception keeps a request's
wait within one store budget when the store is down: when the running read
fails as ``StoreUnavailable`` (its budget spent, the store unreachable), the
batch waiting for it fails with the same error instead of starting a read of
its own, which would most likely spend a second budget for the same answer.

Requests of one batch may differ (binding keys, client keys, a pinned or
filtered deployment list): the batch is one ``read_pools`` call, the union of
their items in one BatchGetItem, and each request gets its own snapshot.
Identical requests share one snapshot (snapshots are never changed in place:
``PoolContext.applied`` copies).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any

from edgeproxy.errors import StoreUnavailable
from edgeproxy.routing.snapshot import PoolSnapshot
from edgeproxy.state.store import SnapshotRequest

ReadMany = Callable[[Sequence[SnapshotRequest]], Awaitable[list[PoolSnapshot]]]
MAX_BATCH = 16  # distinct requests per read (each adds at most 3 keys to the pool's ~12)


def identity(request: SnapshotRequest) -> Hashable:
    """What makes two requests read the same items (their sequences may be lists)."""
    return (
        request.pool,
        tuple(request.deployment_ids),
        tuple(request.domains),
        request.minute,
        request.binding,
        tuple(request.credentials),
    )


class _Batch:
    """The requests one read serves, each with the future of its snapshot."""

    def __init__(self) -> None:
        self.requests: dict[Hashable, tuple[SnapshotRequest, asyncio.Future[PoolSnapshot]]] = {}
        self.scheduled = False

    def join(self, request: SnapshotRequest) -> asyncio.Future[PoolSnapshot]:
        key = identity(request)
        if key not in self.requests:
            future: asyncio.Future[PoolSnapshot] = asyncio.get_running_loop().create_future()
            future.add_done_callback(_retrieve)
            self.requests[key] = (request, future)
        return self.requests[key][1]


def _retrieve(future: asyncio.Future[Any]) -> None:
    # Every member may have gone (cancelled): do not warn about an unread exception.
    if not future.cancelled():
        future.exception()


class PoolReads:
    """Reads pool snapshots through ``read_many``, sharing reads as described above."""

    def __init__(self, read_many: ReadMany, max_batch: int = MAX_BATCH) -> None:
        self._read_many = read_many
        self._max_batch = max_batch
        self._open: dict[str, _Batch] = {}
        self._running: dict[str, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.reads = 0  # reads sent (for tests and the benchmark's figures)

    async def read(self, request: SnapshotRequest) -> PoolSnapshot:
        """``request``'s snapshot, from a read that starts after this call."""
        pool = request.pool
        batch = self._open.get(pool)
        if batch is None or len(batch.requests) >= self._max_batch:
            batch = self._open[pool] = _Batch()
        future = batch.join(request)
        if not batch.scheduled and (
            not self._running.get(pool) or len(batch.requests) >= self._max_batch
        ):
            self._schedule(pool, batch)
        # A caller that goes away (client disconnect) must not cancel the others' read.
        return await asyncio.shield(future)

    def _schedule(self, pool: str, batch: _Batch) -> None:
        batch.scheduled = True
        self._running[pool] = self._running.get(pool, 0) + 1
        task = asyncio.ensure_future(self._run(pool, batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, pool: str, batch: _Batch) -> None:
        if self._open.get(pool) is batch:
            del self._open[pool]  # closed: later arrivals wait for the next read
        members = list(batch.requests.values())
        try:
            self.reads += 1
            snapshots = await self._read_many([request for request, _ in members])
        except asyncio.CancelledError:
            for _, future in members:
                future.cancel()
            raise
        except Exception as exc:  # the store's error reaches every member, as its own would
            for _, future in members:
                if not future.done():
                    future.set_exception(exc)
            waiting = self._open.get(pool)
            if isinstance(exc, StoreUnavailable) and waiting is not None and not waiting.scheduled:
                del self._open[pool]  # its members arrived during this read: one budget each
                for _, future in waiting.requests.values():
                    if not future.done():
                        future.set_exception(exc)
        else:
            for (_, future), snapshot in zip(members, snapshots, strict=True):
                if not future.done():
                    future.set_result(snapshot)
        finally:
            self._running[pool] -= 1
            if not self._running[pool]:
                del self._running[pool]
            waiting = self._open.get(pool)
            if waiting is not None and not waiting.scheduled:
                self._schedule(pool, waiting)
