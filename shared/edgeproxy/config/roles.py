"""Caller roles, lowest to highest: ``free`` < ``pro`` < ``internal`` < ``admin``.

A client key carries one role; a deployment may carry ``min_role`` to keep
its capacity for callers of that role and above (key reservation).
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    FREE = "free"
    PRO = "pro"
    INTERNAL = "internal"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        """Position in the order (``free`` is 0)."""
        return _ORDER.index(self)

    def at_least(self, other: Role) -> bool:
        """Whether this role is ``other`` or above it."""
        return self.rank >= other.rank


_ORDER = (Role.FREE, Role.PRO, Role.INTERNAL, Role.ADMIN)
