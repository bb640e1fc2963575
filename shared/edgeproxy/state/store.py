"""The store protocol: the small interface every state backend implements.

Behaviour (what to write, when) lives above it in ``service/``; an
implementation only translates these calls to its database. The protocol is
split by audience, so each caller depends on what it uses only:

    ConfigSource   load_config                       every audience
    ConfigStore    save_config, and ConfigSource     the operators' edits
    KeyStore       get_client_key, admit_key,        the request path's key check
                   touch_client_key
    KeySlotStore   take_key_slot, release_key_slot   a key's requests in flight, fleet-wide
    QuotaSink      put_quota                         quota readings
    UsageSource    read_usage                        past usage buckets
    RequestStore   the request path's calls          the request path as a whole
                   (``request_store``: PoolBatches, Admitter, Slots,
                   CounterSink, SpendSink, StandingWrites), KeyStore,
                   KeySlotStore, QuotaSink
    RouterStore    PoolSource, Admitter, Slots,      the router
                   CounterSink, UsageSource
    CounterStore   CounterSink, SpendSink            a counter buffer
    OutcomeStore   CounterSink, SpendSink,           the outcome writer
                   QuotaSink, StandingWrites
    JobStore       note_quota_failure, put_health,   the scheduled jobs
                   and ConfigSource,
                   UsageSource, QuotaSink
    BindingResets  bump_pool_generation, and         an operator's binding resets
                   BindingDrops
    AuditLog       record_audit, read_audit,         the audit log
                   read_circuit, write_circuit_audited
    KeyFinder      find_client_key                   a key by its public id
    KeyRegistry    put/list_client_key(s),           the operators' key calls
                   read_key_usage, and KeyFinder
    AdminStore     ConfigStore, UsageSource,         the CLI and the admin API
                   PoolSource, BindingResets,
                   AuditLog, KeyRegistry
    KeyReserveStore    reserve_key_tokens/spend      a key's reservations
    KeyLifecycleStore  update/rotate_client_key,     key updates and rotations
                       and KeyFinder
    TeamStore      get/list/create/update/delete_    organizations, teams, key moves
                   group, move_key, move_team,
                   update/create_member_key
    AlertStore     claim_alert, pending_alerts,      budget alerts: who sends, what is owed
                   undelivered_alerts,
                   alert_delivered/failed
    LeaseStore     read/take/finish/release_lease    idempotency keys' leases (``state/leases``)
    AnswerStore    put_answer, get_answer            stored answers (``state/answers.py``)
    Store          all of them                       what a backend implements

Each call is declared by one protocol, and the composed ones (``RouterStore``,
``AdminStore``...) declare none of their own; ``DynamoStore`` implements each
protocol in one class (``state/dynamodb/dynamo.py`` lists which).

Every method that changes routing state or the configuration is a
conditional or commutative write: a lost race comes back as the current
value (or as "not written"), never as a silent overwrite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from edgeproxy.routing.access import ClientKey, KeyUsage
from edgeproxy.routing.alerts import Alert, PendingAlert
from edgeproxy.routing.hierarchy import Group, Level
from edgeproxy.routing.snapshot import (
    Circuit,
    Health,
    Quota,
    Usage,
)
from edgeproxy.state.answers import AnswerStore
from edgeproxy.state.audit import AuditEntry
from edgeproxy.state.leases import LeaseStore as LeaseStore
from edgeproxy.state.levels import LevelStore as LevelStore
from edgeproxy.state.reads import SnapshotRequest as SnapshotRequest

# Re-exported: each caller imports the protocols it names from here.
from edgeproxy.state.request_store import Admitter as Admitter
from edgeproxy.state.request_store import BindingDrops as BindingDrops
from edgeproxy.state.request_store import CounterSink as CounterSink
from edgeproxy.state.request_store import PoolBatches as PoolBatches
from edgeproxy.state.request_store import PoolSource as PoolSource
from edgeproxy.state.request_store import Slots as Slots
from edgeproxy.state.request_store import SpendSink as SpendSink
from edgeproxy.state.request_store import StandingWrites as StandingWrites
from edgeproxy.state.request_store import UsageDelta as UsageDelta


@dataclass(frozen=True, slots=True)
class StoredConfig:
    document: str
    version: int


class ConfigSource(Protocol):
    """Where every audience reads the configuration document from."""

    async def load_config(self) -> StoredConfig | None:
        """The stored configuration document, or None if none was loaded."""
        ...


class QuotaSink(Protocol):
    """Where quota readings go: the refresh job's, and those answers' headers carry."""

    async def put_quota(self, quota: Quota) -> bool:
        """Store one unit's reading of a credential's quota; False if a newer one is stored."""
        ...


class KeyStore(Protocol):
    """The request path's client-key calls: look a key up, admit it, note its use."""

    async def get_client_key(self, digest: str) -> ClientKey | None:
        """The key whose sha256 is ``digest`` (revoked and expired ones too), or None."""
        ...

    async def admit_key(self, key_id: str, minute: int, rpm_limit: int, expires_at: float) -> bool:
        """Count one request of the key in bucket ``minute`` only while it is under ``rpm_limit``."""
        ...

    async def touch_client_key(self, digest: str, now: float) -> None:
        """Set the key's last-used time (callers do it at most once a minute per key)."""
        ...


class KeySlotStore(Protocol):
    """A client key's slots of requests in flight (its ``max_parallel_requests``)."""

    async def take_key_slot(
        self, key_id: str, order: Sequence[int], holder: str, until: float, now: float
    ) -> int | None:
        """Take the first of the key's slots ``order`` free at ``now`` (held by ``holder``
        until ``until`` at most); None when every one is held."""
        ...

    async def release_key_slot(self, key_id: str, slot: int, holder: str) -> None:
        """Free the key's ``slot`` if ``holder`` still holds it."""
        ...


class RequestStore(
    ConfigSource,
    KeyStore,
    SpendSink,
    KeySlotStore,
    QuotaSink,
    PoolBatches,
    Admitter,
    Slots,
    CounterSink,
    StandingWrites,
    Protocol,
):
    """What the request path needs: one read, then counters and conditional writes."""


class UsageSource(Protocol):
    """Reads past usage buckets (the health job, the binding-share report, and the router
    after a failure the request may have caused: who else the deployment served)."""

    async def read_usage(
        self, deployment_id: str, first_minute: int, last_minute: int, shards: int = 1
    ) -> list[Usage]:
        """Usage buckets of one deployment in ``[first_minute, last_minute]`` (shards summed)."""
        ...


class RouterStore(PoolSource, Admitter, Slots, CounterSink, UsageSource, Protocol):
    """The router's calls: the pool read, admission, capacity slots, the in-flight counts
    and a deployment's recent usage (``read_usage``, on the failure path only)."""


class CounterStore(CounterSink, SpendSink, Protocol):
    """The commutative counters: what a counter buffer sums and flushes."""


class OutcomeStore(CounterSink, SpendSink, QuotaSink, StandingWrites, Protocol):
    """What an attempt's outcome writes: counters, a key's spend, quota, circuits, bindings."""


class JobStore(ConfigSource, UsageSource, QuotaSink, Protocol):
    """What the scheduled jobs need: usage in, health scores and quota snapshots out."""

    async def note_quota_failure(self, credential: str, error: str, at: float) -> None:
        """Record a failed refresh; the last good readings stay as they are."""
        ...

    async def put_health(self, health: Health, expires_at: float) -> bool:
        """Store the health job's result for one deployment; False if a run for
        ``health.minute`` or a later one already stored its own."""
        ...


class ConfigStore(ConfigSource, Protocol):
    """The configuration document, read and conditionally replaced (the operators' edits)."""

    async def save_config(
        self, document: str, expected_version: int, audit: AuditEntry | None = None
    ) -> int | None:
        """Store ``document`` if the stored version is still ``expected_version`` (0: none yet).

        Returns the new version (``expected_version + 1``), or None when the
        stored version differs (nothing written). ``audit`` is stored in the
        same atomic write, with the new version.
        """
        ...


class BindingResets(BindingDrops, Protocol):
    """An operator's binding resets: one binding (``delete_binding``), or a pool's at once."""

    async def bump_pool_generation(self, pool: str) -> int:
        """Invalidate every binding of ``pool`` at once; returns the new generation."""
        ...


class AuditLog(Protocol):
    """The audit log, and the operator's circuit change written atomically with its entry."""

    async def read_circuit(self, deployment_id: str) -> Circuit:
        """One deployment's circuit as stored (version 0 if never written)."""
        ...

    async def write_circuit_audited(
        self, new: Circuit, expected_version: int, audit: AuditEntry
    ) -> bool:
        """An operator's circuit change, if the stored version is still ``expected_version``.

        Atomic with its audit entry; False when the circuit changed meanwhile.
        """
        ...

    async def record_audit(self, entry: AuditEntry) -> None:
        """Store one audit entry."""
        ...

    async def read_audit(
        self, limit: int, before: str | None = None
    ) -> tuple[list[AuditEntry], str | None]:
        """Up to ``limit`` entries newest first, older than cursor ``before``; the next cursor."""
        ...


class KeyFinder(Protocol):
    """A client key by its public id (the operators' lookups before a change)."""

    async def find_client_key(self, key_id: str) -> ClientKey | None:
        """The key with public id ``key_id``, or None."""
        ...


class KeyRegistry(KeyFinder, Protocol):
    """The operators' client-key calls: create, list, and a key's usage (a revocation is a
    key update, ``KeyLifecycleStore``)."""

    async def put_client_key(self, key: ClientKey) -> bool:
        """Create ``key``; False (nothing written) if a key with its digest exists."""
        ...

    async def list_client_keys(self) -> list[ClientKey]:
        """Every client key, revoked ones included, oldest first."""
        ...

    async def read_key_usage(self, key_id: str, minute: int) -> KeyUsage:
        """The key's tokens in bucket ``minute`` and its spend so far."""
        ...


class AdminStore(
    ConfigStore, UsageSource, PoolSource, BindingResets, AuditLog, KeyRegistry, Protocol
):
    """What operators change through the CLI and the admin views (``read_pool``: the same
    one-round-trip read the request path makes, for the status views)."""


class KeyReserveStore(Protocol):
    """A client key's token and spend reservations (``state/dynamo_key_reserve.py``)."""

    async def reserve_key_tokens(
        self, key_id: str, minute: int, tokens: int, tpm_limit: int, expires_at: float
    ) -> bool:
        """ADD ``tokens`` to the key's bucket ``minute`` if it stays within ``tpm_limit``."""
        ...

    async def reserve_key_spend(
        self, key_id: str, tokens: int, spend_usd: float, budget_usd: float | None
    ) -> bool:
        """ADD ``spend_usd`` and ``tokens`` to the key's spend, within ``budget_usd`` if set."""
        ...


class KeyLifecycleStore(KeyFinder, Protocol):
    """A client key's conditional updates and rotations (``state/dynamo_key_lifecycle.py``)."""

    async def update_client_key(self, key: ClientKey, expected_version: int) -> bool:
        """Store ``key``'s settings if it is still at ``expected_version``; False if not."""
        ...

    async def rotate_client_key(
        self, key: ClientKey, expected_version: int, previous: str | None, retired_until: float
    ) -> bool:
        """Add ``key.secret_digest`` as its secret, store ``key``, retire ``previous``."""
        ...


class TeamStore(KeyFinder, Protocol):
    """Organizations, teams and moving keys between teams (``state/dynamo_teams.py``)."""

    async def get_group(self, kind: Level, group_id: str) -> Group | None:
        """The organization or team ``group_id``, or None."""
        ...

    async def list_groups(self, kind: Level) -> list[Group]:
        """Every organization (or team), by id."""
        ...

    async def create_group(self, group: Group, audit: AuditEntry) -> bool:
        """Create ``group`` with ``audit``; False (nothing written) if its id is taken or its
        organization is gone."""
        ...

    async def update_group(self, group: Group, expected_version: int, audit: AuditEntry) -> bool:
        """Store ``group`` over ``expected_version`` and its ``members_rev``; False if either
        changed."""
        ...

    async def move_team(self, team: Group, into: Group, audit: AuditEntry) -> bool:
        """Move ``team`` (at its version) into organization ``into`` (at its version), counted
        out of its old one; False (nothing written) if any of them changed."""
        ...

    async def delete_group(self, group: Group, audit: AuditEntry) -> bool:
        """Delete ``group`` at its version if it owns nothing; False if not."""
        ...

    async def move_key(self, key: ClientKey, into: Group | None, audit: AuditEntry) -> bool:
        """Move ``key`` (as read) into team ``into`` (None: out); False on any lost race."""
        ...

    async def update_member_key(self, key: ClientKey, expected_version: int, team: Group) -> bool:
        """Store ``key`` (of ``team``) over ``expected_version`` while ``team`` is unchanged."""
        ...

    async def create_member_key(self, key: ClientKey, team: Group, audit: AuditEntry) -> bool:
        """Create ``key`` into ``team`` (at its version read) with ``audit``; False if not."""
        ...


class AlertStore(Protocol):
    """Budget alerts (``service.alerts``): the fleet-wide claim, and what is still owed."""

    async def claim_alert(self, alert: Alert, expires_at: float) -> bool:
        """Write ``alert`` if no process has; True: this caller sends it."""
        ...

    async def pending_alerts(self, now: float) -> list[PendingAlert]:
        """Undelivered alerts whose next attempt is due at ``now``."""
        ...

    async def undelivered_alerts(self) -> list[PendingAlert]:
        """Every alert not delivered yet: pending or given up."""
        ...

    async def alert_delivered(
        self, alert: PendingAlert, now: float, sent: frozenset[str] = frozenset()
    ) -> None:
        """Mark ``alert`` delivered (``sent``: the destinations that took it now) and drop it
        from the pending ones."""
        ...

    async def alert_failed(
        self, alert: PendingAlert, next_at: float | None, sent: frozenset[str] = frozenset()
    ) -> None:
        """Count a failed attempt (``sent``: the destinations that took it all the same); due
        again at ``next_at`` (None: given up)."""
        ...


class Store(
    RequestStore,
    JobStore,
    AdminStore,
    KeyReserveStore,
    LevelStore,
    KeyLifecycleStore,
    TeamStore,
    AlertStore,
    LeaseStore,
    AnswerStore,
    Protocol,
):
    """Everything a backend implements (``DynamoStore``); each caller asks for its part."""
