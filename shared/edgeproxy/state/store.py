"""The store protocol: the small interface every state backend implements.

Behaviour (what to write, when) lives above it in ``service/``; an
implementation only translates these calls to its database. Every method that
changes routing state is a conditional or commutative write: a lost race comes
back as the current value, never as a silent overwrite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from edgeproxy.routing.snapshot import (
    Binding,
    BindingKey,
    Capacity,
    Circuit,
    Health,
    PoolSnapshot,
    Usage,
)


@dataclass(frozen=True, slots=True)
class SnapshotRequest:
    """What to read for one routing decision."""

    pool: str
    deployment_ids: Sequence[str]
    domains: Sequence[str]
    minute: int
    binding: BindingKey | None = None


UsageDelta: TypeAlias = Usage
"""Counter increments for one attempt's outcome, applied with ``ADD`` only."""


@dataclass(frozen=True, slots=True)
class StoredConfig:
    document: str
    version: int


class Store(Protocol):
    """Shared routing state. Implementations: ``DynamoStore``."""

    async def read_pool(self, request: SnapshotRequest) -> PoolSnapshot:
        """Read every item one routing decision needs, in one round trip.

        Items whose lease or TTL has passed are still returned as stored; the
        pure core ignores what has expired (TTL deletion is lazy).
        """
        ...

    async def admit(
        self, deployment_id: str, minute: int, rpm_limit: int | None, expires_at: float
    ) -> bool:
        """Count one attempt start (requests +1, inflight +1) in bucket ``minute``.

        With ``rpm_limit`` the increment is conditional on the bucket being under
        it; returns False (and changes nothing) when the limit is reached.
        """
        ...

    async def record(self, delta: UsageDelta, expires_at: float) -> None:
        """Apply ``delta`` to its bucket with ADD (commutative; no lost updates)."""
        ...

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

    async def delete_binding(self, key: BindingKey, deployment_id: str | None = None) -> None:
        """Drop a binding (only if it still names ``deployment_id``, when given)."""
        ...

    async def bump_pool_generation(self, pool: str) -> int:
        """Invalidate every binding of ``pool`` at once; returns the new generation."""
        ...

    async def read_usage(
        self, deployment_id: str, first_minute: int, last_minute: int
    ) -> list[Usage]:
        """Usage buckets of one deployment in ``[first_minute, last_minute]``."""
        ...

    async def put_health(self, health: Health, expires_at: float) -> None:
        """Store the health job's result for one deployment."""
        ...

    async def read_capacity(self, domain: str) -> Capacity:
        """One failure domain's capacity circuit (for status views)."""
        ...

    async def load_config(self) -> StoredConfig | None:
        """The stored configuration document, or None if none was loaded."""
        ...

    async def save_config(self, document: str) -> int:
        """Store a new configuration document; returns its version."""
        ...
