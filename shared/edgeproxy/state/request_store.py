"""The request path's store calls, one small protocol per kind of call.

Each caller names the protocols it uses (``state/store.py`` composes them
per caller), so a wrapper such as ``CoalescingStore`` implements only the
calls it changes and a test double only what its caller makes.

    PoolSource      read_pool                     one routing decision's read
    PoolBatches     read_pools                    several decisions' reads in one
    Admitter        admit                         an attempt's start, under its limits
    Slots           take_slot, release_slot       a capacity slot (``max_parallel_requests``)
    CounterSink     record                        counter increments (ADD)
    SpendSink       record_key_usage              a client key's tokens and spend (ADD)
    BindingDrops    delete_binding                a binding dropped (an outcome's, an operator's)
    StandingWrites  write_circuit, extend_capacity, put_binding, count_rejection,
                    clear_rejections, and BindingDrops
                                                  what an outcome changes that routing reads
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeAlias

from edgeproxy.routing.snapshot import Binding, BindingKey, Circuit, PoolSnapshot, Usage
from edgeproxy.state.reads import SnapshotRequest

UsageDelta: TypeAlias = Usage
"""Counter increments for one attempt's outcome, applied with ``ADD`` only."""


class PoolSource(Protocol):
    """One routing decision's read (the router's pool, the gateway's views)."""

    async def read_pool(self, request: SnapshotRequest) -> PoolSnapshot:
        """Read every item one routing decision needs, in one round trip.

        Items whose lease or TTL has passed are still returned as stored; the
        pure core ignores what has expired (TTL deletion is lazy).
        """
        ...


class PoolBatches(PoolSource, Protocol):
    """Several decisions' reads from one round trip (what single-flight reads share)."""

    async def read_pools(self, requests: Sequence[SnapshotRequest]) -> list[PoolSnapshot]:
        """``read_pool`` of several requests from one read of the union of their items."""
        ...


class Admitter(Protocol):
    """The start of an attempt, counted under its deployment's rpm and tpm limits."""

    async def admit(
        self,
        deployment_id: str,
        minute: int,
        rpm_limit: int | None,
        expires_at: float,
        *,
        tpm_limit: int | None = None,
        reserve: int = 0,
        shards: int = 1,
        prefill: tuple[int, int] = (0, 0),
    ) -> bool:
        """Count one attempt start (requests +1, inflight +1) in bucket ``minute``.

        ``shards``: the deployment's ``counter_shards`` (its bucket's item count).
        ``prefill``: 001's prefill lease (uncached prompt tokens, 1 if large), added
        to ``prefill_tokens`` and ``prefill_elephants`` in the same write.

        With ``rpm_limit`` the increment is conditional on the bucket being under
        it. ``reserve`` tokens are added to ``reserved_tokens``; with
        ``tpm_limit`` only if the bucket's reservations then stay within it.
        Returns False (and changes nothing) when a limit has no room.
        """
        ...


class Slots(Protocol):
    """A deployment's capacity slots: at most ``max_parallel_requests`` held at once."""

    async def take_slot(
        self, deployment_id: str, order: Sequence[int], holder: str, until: float, now: float
    ) -> int | None:
        """Take the first slot of ``order`` free at ``now`` (held by ``holder`` until
        ``until`` at most); None when every one is held."""
        ...

    async def release_slot(self, deployment_id: str, slot: int, holder: str) -> None:
        """Free ``slot`` if ``holder`` still holds it."""
        ...


class CounterSink(Protocol):
    """Commutative counter increments (an attempt's in-flight count and its outcome)."""

    async def record(self, delta: UsageDelta, expires_at: float) -> None:
        """Apply ``delta`` to its bucket with ADD (commutative; no lost updates)."""
        ...


class SpendSink(Protocol):
    """A client key's tokens and spend, added after each answer."""

    async def record_key_usage(
        self, key_id: str, minute: int | None, tokens: int, spend_usd: float, expires_at: float
    ) -> None:
        """ADD an answer's tokens to the key's bucket ``minute`` (None: none) and to its spend."""
        ...


class BindingDrops(Protocol):
    """Where a binding is dropped: an outcome that ends it, an operator who resets it."""

    async def delete_binding(self, key: BindingKey, deployment_id: str | None = None) -> None:
        """Drop a binding (only if it still names ``deployment_id``, when given)."""
        ...


class StandingWrites(BindingDrops, Protocol):
    """The conditional writes an outcome makes to what routing reads next."""

    async def write_circuit(self, new: Circuit, expected_version: int) -> Circuit | None:
        """Store ``new`` if the stored version is still ``expected_version`` (0: absent).

        Returns None on success, else the circuit as currently stored (the
        winner of the race), so the caller can re-decide without another read.
        ``new.version`` must be ``expected_version + 1``.
        """
        ...

    async def extend_capacity(self, domain: str, until: float) -> None:
        """Mark ``domain`` throttled until ``until``; never shortens a longer throttle."""
        ...

    async def put_binding(self, binding: Binding, expected: Binding | None) -> Binding:
        """Create or renew a binding if the stored one is still ``expected``.

        Returns the binding now stored: ``binding`` itself, or the winner when
        another instance changed it first.
        """
        ...

    async def count_rejection(self, deployment_id: str) -> None:
        """Add one consecutive upstream credential rejection (401/403) to the deployment."""
        ...

    async def clear_rejections(self, deployment_id: str) -> None:
        """Reset the deployment's consecutive credential rejections (after a success)."""
        ...
