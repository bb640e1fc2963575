"""Client keys as plain values, and every rule about what a key may do (pure).

The edge hashes a presented key once (``affinity.key_digest``); the store
keeps only that digest. A key's public id is the digest's first 16 hex
characters (it names the key in the admin API without being usable as one).

    >>> refusal(key, now)             # None, or why a key cannot be used at all
    >>> key.allows("gpt-4o")          # may it ask for this public model
    >>> usage_block(key, usage, now)  # over its tpm limit or spend budget?
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.roles import Role

KEY_PREFIX = "ep-"
ID_CHARS = 16  # hex characters of the digest that form the public id
DISPLAY_CHARS = 8  # characters of the key kept for display (``ep-AbCdEfGh...``)
TOKENS_PER_PRICE_UNIT = 1_000_000  # prices are per million tokens


def key_id_of(digest: str) -> str:
    """The public id of the key with this sha256 hex digest."""
    return digest[:ID_CHARS]


def display_prefix(key: str) -> str:
    """What listings show of a key: its first characters, never enough to use it."""
    return key[: len(KEY_PREFIX) + DISPLAY_CHARS] + "..."


@dataclass(frozen=True, slots=True)
class ClientKey:
    """A client key as stored (no secret: ``digest`` is the sha256 of the key).

    ``models``: the public models it may use (None: every model). Limits are
    per minute; ``budget_usd`` caps its total spend; times are epoch seconds.
    """

    digest: str
    name: str
    role: Role = Role.FREE
    prefix: str = ""
    models: frozenset[str] | None = None
    rpm_limit: int | None = None
    tpm_limit: int | None = None
    budget_usd: float | None = None
    expires_at: float | None = None
    revoked: bool = False
    created_at: float = 0.0
    last_used_at: float = 0.0

    @property
    def id(self) -> str:
        """The public id (first 16 hex characters of the digest)."""
        return key_id_of(self.digest)

    @property
    def tracks_usage(self) -> bool:
        """Whether requests must read its usage (it has a tpm limit or a budget)."""
        return self.tpm_limit is not None or self.budget_usd is not None

    def allows(self, model: str) -> bool:
        """Whether it may ask for ``model`` (``model:group`` counts as ``model``)."""
        if self.models is None:
            return True
        return model in self.models or model.split(":", 1)[0] in self.models


class KeyRefusal(StrEnum):
    REVOKED = "revoked"
    EXPIRED = "expired"


def refusal(key: ClientKey, now: float) -> KeyRefusal | None:
    """Why ``key`` cannot be used at ``now`` at all, or None."""
    if key.revoked:
        return KeyRefusal.REVOKED
    if key.expires_at is not None and now >= key.expires_at:
        return KeyRefusal.EXPIRED
    return None


@dataclass(frozen=True, slots=True)
class KeyUsage:
    """A key's counters as read with the pool: tokens this minute, spend so far."""

    minute: int
    tokens: int = 0
    spend_usd: float = 0.0


class UsageBlock(StrEnum):
    TPM = "tpm"  # 429 rate_limit_exceeded until the next minute
    BUDGET = "budget"  # 429 insufficient_quota, until an admin raises the budget


def usage_block(key: ClientKey, usage: KeyUsage, now: float) -> tuple[UsageBlock, float] | None:
    """Whether ``key`` is over its tpm limit or budget; with the seconds until it lifts.

    The budget never lifts by itself (its wait is 0: no Retry-After).
    """
    if key.budget_usd is not None and usage.spend_usd >= key.budget_usd:
        return UsageBlock.BUDGET, 0.0
    if key.tpm_limit is not None and usage.tokens >= key.tpm_limit:
        return UsageBlock.TPM, seconds_to_next_minute(now)
    return None


def seconds_to_next_minute(now: float) -> float:
    """Seconds until the next minute bucket starts (when per-minute limits reset)."""
    return (int(now // 60) + 1) * 60.0 - now


def cost_usd(dep: Deployment, prompt_tokens: int, completion_tokens: int) -> float:
    """What an answer cost at ``dep``'s prices (0 when it has none)."""
    price_in = dep.input_price_per_mtok or 0.0
    price_out = dep.output_price_per_mtok or 0.0
    return (prompt_tokens * price_in + completion_tokens * price_out) / TOKENS_PER_PRICE_UNIT


def reachable(dep: Deployment, role: Role) -> bool:
    """Whether a caller of ``role`` may select ``dep`` (its ``min_role`` reservation)."""
    return role.at_least(dep.min_role)
