"""Client keys as plain values, and every rule about what a key may do (pure).

The edge hashes a presented key once (``affinity.key_digest``); the store
keeps only that digest. A key's public id is the digest's first 16 hex
characters (it names the key in the admin API without being usable as one).

    >>> refusal(key, now)             # None, or why a key cannot be used at all
    >>> key.allows("gpt-4o")          # may it ask for this public model
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
# A refused request tries every slot item once (one conditional write each): keep it small.
MAX_PARALLEL_REQUESTS = 64


def key_id_of(digest: str) -> str:
    """The public id of the key with this sha256 hex digest."""
    return digest[:ID_CHARS]


def display_prefix(key: str) -> str:
    """What listings show of a key: its first characters, never enough to use it."""
    return key[: len(KEY_PREFIX) + DISPLAY_CHARS] + "..."


class BudgetPeriod(StrEnum):
    """Over what ``budget_usd`` is counted: a UTC day, ISO week (from Monday), month, or ever."""

    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"
    TOTAL = "total"


@dataclass(frozen=True, slots=True)
class ClientKey:
    """A client key as stored (no secret: ``digest`` is the sha256 of the key's first secret).

    ``models``: the public models it may use (None: every model). Limits are
    per minute; ``budget_usd`` caps its spend per ``budget_period``;
    ``max_parallel_requests`` caps its requests in flight across every
    gateway process (``service.limits.parallel``); times are epoch seconds. ``version`` counts its conditional admin writes.
    Rotation (``secret_digest``: the current secret's sha256 when rotated;
    ``rotated_at``, ``grace_until``: when, and until when the previous
    secret is still accepted). ``secret_expires_at``: until when the secret
    it was looked up by is accepted (None: the current secret).
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
    budget_period: BudgetPeriod = BudgetPeriod.TOTAL
    version: int = 0
    secret_digest: str | None = None
    rotated_at: float | None = None
    grace_until: float | None = None
    secret_expires_at: float | None = None
    max_parallel_requests: int | None = None
    team_id: str | None = None  # the team that owns it (``routing.hierarchy``), if any
    # Admin rights scoped to a level (``routing.hierarchy.AdminScope``): ``team:<id>``,
    # ``organization:<id>`` or ``gateway`` (read-only only); None: no scoped rights.
    admin_of: str | None = None
    admin_read_only: bool = False

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
    ROTATED = "rotated"  # a previous secret, past its grace period


def refusal(key: ClientKey, now: float) -> KeyRefusal | None:
    """Why ``key`` (as looked up by the secret presented) cannot be used at ``now``, or None."""
    if key.revoked:
        return KeyRefusal.REVOKED
    if key.expires_at is not None and now >= key.expires_at:
        return KeyRefusal.EXPIRED
    if key.secret_expires_at is not None and now >= key.secret_expires_at:
        return KeyRefusal.ROTATED
    return None


def key_status(key: ClientKey, now: float) -> str:
    """What listings call the key: revoked, expired, rotating (a grace period runs) or active."""
    refused = refusal(key, now)
    if refused is KeyRefusal.REVOKED or refused is KeyRefusal.EXPIRED:
        return refused.value
    if key.grace_until is not None and now < key.grace_until:
        return "rotating"
    return "active"


DAY_S = 86_400


def _civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of ``days`` since 1970-01-01 (proleptic Gregorian, UTC)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, doy - (153 * mp + 2) // 5 + 1


def _days(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a UTC date (the inverse of ``_civil``)."""
    year -= 1 if month <= 2 else 0
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146_097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719_468


def _period_days(period: BudgetPeriod, now: float) -> tuple[int, int] | None:
    """First day and first day after the period holding ``now`` (days since the epoch)."""
    today = int(now // DAY_S)
    if period is BudgetPeriod.DAILY:
        return today, today + 1
    if period is BudgetPeriod.WEEKLY:
        monday = today - (today + 3) % 7  # 1970-01-01 was a Thursday
        return monday, monday + 7
    if period is BudgetPeriod.MONTHLY:
        year, month, _ = _civil(today)
        after = (year + 1, 1) if month == 12 else (year, month + 1)
        return _days(year, month, 1), _days(*after, 1)
    return None


def period_end(period: BudgetPeriod, now: float) -> float | None:
    """When the budget period holding ``now`` ends (epoch seconds, a UTC boundary; None: total)."""
    days = _period_days(period, now)
    return None if days is None else float(days[1] * DAY_S)


def utc_moment(days: int) -> str:
    """The UTC midnight starting day ``days`` since the epoch, as ISO 8601 (``...T00:00:00Z``).

    >>> utc_moment(0)
    '1970-01-01T00:00:00Z'
    """
    year, month, day = _civil(days)
    return f"{year:04d}-{month:02d}-{day:02d}T00:00:00Z"


ACCOUNT_SEP = "@"


def spend_account(key: ClientKey, now: float) -> str:
    """Where the key's spend at ``now`` is counted: its id, plus the period's start if it resets.

    >>> spend_account(ClientKey("0123456789abcdef00", "k"), 0.0)
    '0123456789abcdef'
    >>> spend_account(ClientKey("0123456789abcdef00", "k", budget_period=BudgetPeriod.DAILY), 0.0)
    '0123456789abcdef@1970-01-01'
    """
    return period_account(key.id, key.budget_period, now)


def period_account(owner: str, period: BudgetPeriod, now: float) -> str:
    """``owner``'s spend account at ``now`` under ``period``: ``owner``, plus the period's
    start if it resets (a key's, a team's, an end user's)."""
    days = _period_days(period, now)
    if days is None:
        return owner
    year, month, day = _civil(days[0])
    return f"{owner}{ACCOUNT_SEP}{year:04d}-{month:02d}-{day:02d}"


def account_key_id(account: str) -> str:
    """The key id of a spend account (``spend_account``)."""
    return account.split(ACCOUNT_SEP, 1)[0]


@dataclass(frozen=True, slots=True)
class KeyUsage:
    """A key's counters as the admin views read them: tokens this minute, spend so far."""

    minute: int
    tokens: int = 0
    spend_usd: float = 0.0


def seconds_to_next_minute(now: float) -> float:
    """Seconds until the next minute bucket starts (when per-minute limits reset)."""
    return (int(now // 60) + 1) * 60.0 - now


def cost_usd(
    dep: Deployment,
    prompt_tokens: int,
    completion_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float:
    """What an answer cost at ``dep``'s prices (0 when it has none).

    ``prompt_tokens`` counts every input token (cache reads and writes included, as
    OpenAI counts); the uncached rest is priced at the input price, reads and writes
    at their own (the input price when the deployment states none).
    """
    price_in = dep.input_price_per_mtok or 0.0
    price_out = dep.output_price_per_mtok or 0.0
    read = max(0, cache_read_tokens)
    write = max(0, cache_write_tokens)
    uncached = max(0, prompt_tokens - read - write)
    price_read = dep.cache_read_price_per_mtok
    price_write = dep.cache_write_price_per_mtok
    return (
        uncached * price_in
        + read * (price_in if price_read is None else price_read)
        + write * (price_in if price_write is None else price_write)
        + completion_tokens * price_out
    ) / TOKENS_PER_PRICE_UNIT


def reachable(dep: Deployment, role: Role) -> bool:
    """Whether a caller of ``role`` may select ``dep``: its reservation, the strictest
    ``min_role`` among the deployments sharing its credential (``Deployment.reserved_for``)."""
    return role.at_least(dep.reserved_for)
