"""What the store is asked for the levels above a key (``state/dynamodb/dynamo_levels.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from edgeproxy.routing.judge.levels import LevelCharge, LevelCounts
from edgeproxy.routing.judge.reasons import Write


@dataclass(frozen=True, slots=True)
class Failed:
    """Which write of which charge found its condition false (None, None: the transaction
    lost to a concurrent one on the same item; nothing was decided)."""

    charge: int | None
    write: Write | None


@dataclass(frozen=True, slots=True)
class Settlement:
    """What one level's settlement adds: the actual usage minus the reserved estimate, and
    the slot it frees (None: none held)."""

    charge: LevelCharge
    tokens: int
    spend_usd: float
    slot: int | None = None


class LevelStore(Protocol):
    """The counters of the teams, organizations and end users above keys."""

    async def reserve_levels(
        self,
        charges: Sequence[LevelCharge],
        slots: Sequence[int | None],
        holder: str,
        until: float,
        now: float,
    ) -> Failed | None:
        """Every charge's writes in one transaction (``slots[i]``: the slot charge ``i``
        takes); None when all landed, else what failed (nothing landed)."""
        ...

    async def free_level_slots(self, partition: str, cap: int, now: float) -> list[int]:
        """The slots below ``cap`` of the level's ``partition`` free at ``now``."""
        ...

    async def level_counts(self, charges: Sequence[LevelCharge], now: float) -> list[LevelCounts]:
        """What each charge's counters hold at ``now`` (a read only: the explainer's)."""
        ...

    async def settle_levels(self, settled: Sequence[Settlement], holder: str) -> None:
        """Add each settlement's difference and free its slot, in one transaction."""
        ...
