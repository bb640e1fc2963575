"""``LeaseStore``: the idempotency lease items (``routing.idempotency``'s rules live above it).

One item per (scope, idempotency key): ``keys.idempotency_key``. The store
only translates the four calls to conditional writes and a consistent read;
which call may take, finish or release a lease is decided by the caller
from ``routing.idempotency.decide`` and the conditions here.
"""

from __future__ import annotations

from typing import Protocol

from edgeproxy.routing.idempotency import Lease


class LeaseStore(Protocol):
    """Take, read, finish and release idempotency leases."""

    async def read_lease(self, scope: str, key: str) -> Lease | None:
        """The stored lease of ``key`` in ``scope`` (a strongly consistent read), or None."""
        ...

    async def take_lease(
        self, scope: str, key: str, lease: Lease, now: float
    ) -> tuple[bool, Lease | None]:
        """Write ``lease`` if none is held at ``now``: no item, an expired one, or a running
        one whose lease lapsed (a finished one is kept until it expires).

        ``(True, lease)`` when taken; ``(False, stored)`` with the lease that
        blocked the write (None if it vanished in between: try again).
        """
        ...

    async def finish_lease(self, scope: str, key: str, owner: str, answer: bytes) -> bool:
        """Mark ``owner``'s running lease DONE, holding its ``answer`` (encoded, at most
        ``api.reply.MAX_REPLY_BYTES``); False if it is no longer ``owner``'s (it lapsed and
        another call took it)."""
        ...

    async def release_lease(self, scope: str, key: str, owner: str) -> None:
        """Delete ``owner``'s running lease (an error answer: the next call executes again)."""
        ...
