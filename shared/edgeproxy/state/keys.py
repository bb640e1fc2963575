"""Item layout of the state table: which key holds what.

One table, string keys ``pk`` (partition) and ``sk`` (sort), TTL attribute
``expires_at`` (epoch seconds). The attribute *names* come from
``TableSchema``; the key *values* are built here and nowhere else. Every item
of one deployment shares a partition, so a deployment's usage buckets are one
``Query`` away.

==================  ===========================  ===================  =========================
item                pk                           sk                   attributes
==================  ===========================  ===================  =========================
circuit             ``dep#<id>``                 ``circuit``          state, failures,
                                                                      window_start, open_until,
                                                                      level, probe_owner,
                                                                      probe_until, cause,
                                                                      version, opened_at
                                                                      (no TTL)
usage bucket        ``dep#<id>``                 ``usage#<minute>``   requests, inflight,
                                                                      prompt_tokens,
                                                                      completion_tokens,
                                                                      successes, failures,
                                                                      latency_ms_sum,
                                                                      output_tokens_per_s_sum,
                                                                      throughput_samples,
                                                                      sticky_hits,
                                                                      reserved_tokens,
                                                                      prefill_tokens,
                                                                      prefill_elephants,
                                                                      transient_failures,
                                                                      configuration_failures,
                                                                      throttles, request_errors,
                                                                      latency_le_<ms> ...
                                                                      latency_over_30000,
                                                                      s<ss>n, s<ss>l, s<ss>r,
                                                                      s<ss>t (per second of
                                                                      the minute: answers,
                                                                      latency, rated, tokens/s),
                                                                      expires_at
capacity slot       ``dep#<id>`` / ``key#<id>``  ``slot#<k>``         holder, until, expires_at
health              ``dep#<id>``                 ``health``           score, ewma_latency_ms,
                                                                      ewma_tokens_per_s,
                                                                      updated_at, expires_at,
                                                                      credential_rejections
capacity circuit    ``domain#<name>``            ``capacity``         throttled_until, version,
                                                                      expires_at
binding             ``bind#<caller>#<pool>#      ``binding``          deployment_id, expires_at,
                    <protocol>``                                      generation, version
pool generation     ``pool#<pool>``              ``meta``             generation
credential quota    ``cred#<credential>``        ``quota``            per unit (requests, tokens,
                                                                      usd): <unit>_remaining,
                                                                      <unit>_limit,
                                                                      <unit>_reset_at,
                                                                      <unit>_source,
                                                                      <unit>_fetched_at; error,
                                                                      error_at (last failed
                                                                      refresh; no TTL)
configuration       ``config``                   ``current``          document, version
audit entry         ``audit``                    ``<ms>#<id>``        id, at, actor, action,
                                                                      target, changes, version
                                                                      (no TTL)
client key          ``keys``                     ``<digest>``         name, role, prefix, models,
                                                                      rpm_limit, tpm_limit,
                                                                      max_parallel_requests,
                                                                      budget_usd, budget_period,
                                                                      key_expires_at, revoked,
                                                                      created_at, last_used_at,
                                                                      version, secret_digest,
                                                                      rotated_at, grace_until,
                                                                      retired_until, team_id,
                                                                      admin_of, admin_read_only
                                                                      (no TTL)
organization        ``orgs``                     ``<org id>``         see ``state/teams.py``
team                ``teams``                    ``<team id>``        see ``state/teams.py``
key secret          ``keys``                     ``<digest>``         key_of, prefix, created_at,
                                                                      retired_until (no TTL)
key usage bucket    ``key#<id>``                 ``usage#<minute>``   requests, tokens, expires_at
key spend           ``key#<id>``                 ``spend``            spend_usd, tokens (no TTL)
key period spend    ``key#<id>``                 ``spend#<start>``    spend_usd, tokens (no TTL)
idempotency lease   ``idem#<scope>#<hash>``      ``lease``            request_hash, owner, state,
                                                                      lease_until, answer,
                                                                      expires_at
==================  ===========================  ===================  =========================

``prefill_tokens`` / ``prefill_elephants``: 001's prefill lease (only while a tier runs
``simple-shuffle`` with ``prefill``): an attempt adds its uncached prompt estimate (and 1 if large)
in its start count's ``ADD``, moves it with its in-flight count and gives it back at its first
token, so readers sum the last two buckets as they do for in-flight and a dead process's lease
stops counting within two minutes.

``circuit.reason`` is set only while an operator forced the circuit open (``cause`` =
``maintenance``, ``open_until`` = the end of the window). ``health.credential_rejections`` counts
consecutive upstream 401/403 answers (ADD 1 in the outcome write; set to 0 by the next success,
written only when the read showed a non-zero count); the health job's writes set their own
attributes and leave it alone.

Audit entries: one per admin change, all in one partition (admin writes are
rare, a few per minute at most), sorted by time: ``<ms>`` is the change's
epoch milliseconds zero-padded to 13 digits and ``<id>`` a random hex id,
so a ``Query`` with ``ScanIndexForward=False`` lists them newest first and
a sort key is the page cursor. ``actor`` is the admin key's name or
``key:<first 12 hex of its sha256>``, never the key; ``changes`` is a JSON
list (``[{"path", "old", "new"}]`` for configuration edits, at most
``MAX_CHANGES`` entries, then a ``{"truncated": n}`` marker). Entries are
kept until deleted.

``<minute>`` is ``epoch_seconds // 60``, zero-padded to ten digits so that the string order of sort
keys is the numeric order (``BETWEEN`` works on it). ``<caller>`` is already a hash or an IP
bucket, never a raw key.

Client keys: ``<digest>`` is the sha256 hex digest of the key (the key itself
is never stored; ``prefix`` keeps its first characters for display) and
``<id>``, the public id, is the digest's first 16 hex characters. Every key
shares the partition ``keys``: a lookup is one GetItem on the digest, the
listing one Query, and ``GET /admin/keys/{id}`` one Query with
``begins_with(sk, id)``. The partition is read at most once per key per
cache TTL per process and written only by admins and the last-used touch
(at most once a minute per key and process), far below a partition's limits.
A rotated key keeps its item (and so its id, limits and spend): the new
secret gets a *key secret* item at its own digest whose ``key_of`` names the
key's item, and the key's ``secret_digest`` names the current secret. A
previous secret is accepted until its item's ``retired_until`` (the key
item's own for the first secret); a key secret item that is neither current
nor retired (a rotation that lost its conditional write) is ignored.
A periodic budget (``budget_period``: daily, weekly, monthly) is counted in
``spend#<start>``, the UTC date its period began: a new period starts at
zero with no job or reset write; ``total`` keeps ``spend``.
A key's expiry is ``key_expires_at``, not the TTL attribute: an expired key
stays listable (and refusable with a clear message) until an admin deletes it.
The usage bucket is written only for keys with an rpm limit (conditional
admission, like a deployment's) or a tpm limit (tokens, after the answer);
the spend item gathers every answer's cost at the serving deployment's prices. Any ``#`` or
``%`` inside a component is percent-escaped, so two different tuples can
never produce the same key. ``version`` counts conditional writes of an item
(0 means absent); counters change only with ``ADD``.

Sharded hot counters
--------------------
One partition takes about 1000 write units per second, and every attempt of one deployment adds to
the same usage bucket (two writes per attempt: admit and record), so one item tops out near 400-500
attempts per second. A deployment with ``counter_shards: N`` (N > 1) spreads its usage bucket over
N items: shard 0 is the usual ``dep#<id>`` / ``usage#<minute>`` item, shard ``k`` (1 <= k < N) is
``dep#<id>#<k>`` / ``usage#<minute>``. The shard is in the *partition* key, so the shards hash to
different partitions from the first write (a sort-key shard would share its partition until
DynamoDB splits it for heat). ``#`` inside an id is escaped, so ``dep#a#1`` can only be shard 1 of
``a``. Admission takes per-shard allowances (``routing.allowance``); outcome writes go to a
random shard; readers fetch every shard in the same BatchGetItem (N times the usage keys) or one
Query per shard and sum them, so everything above the store sees one bucket. Circuits, health and
bindings are written only on transitions and stay unsharded, like the client keys' buckets.

Idempotency leases
------------------
A request with an ``Idempotency-Key`` (``routing.idempotency``): ``<scope>`` is the client key's
id (a YAML key's digest, an anonymous caller's IP bucket), ``<hash>`` the first 32 hex of the
sha256 of the header's value, so a client's text never becomes a key and every key of one client
spreads over partitions. ``state`` is ``running`` while the first call executes (until
``lease_until``, its deadline plus a margin) and ``done`` once its answer is stored (``answer``:
the zlib-compressed ``StoredAnswer`` of ``api/reply.py`` as base64, at most 290 KB compressed);
``expires_at`` is 24 h after the first call, and a reader ignores the item after it.

Capacity slots
--------------
``max_parallel_requests: N``: N items ``slot#0`` .. ``slot#<N-1>`` in the deployment's partition
(a client key's: in ``key#<id>``). An attempt takes one before its start count (a key's request:
once admitted, trying them in a random order) with a conditional write (free, or its ``until``
passed) and deletes it when it ends (only while it holds it): at most N hold one at once,
fleet-wide. ``until`` is the request's deadline, so a crashed instance's slot lapses by itself;
the pool read fetches a deployment's slots, so a full deployment is skipped.
"""

from __future__ import annotations

import hashlib

from edgeproxy.routing.access import ACCOUNT_SEP, account_key_id
from edgeproxy.routing.snapshot import BindingKey

Key = tuple[str, str]

CIRCUIT = "circuit"
HEALTH = "health"
CAPACITY = "capacity"
BINDING = "binding"
META = "meta"
QUOTA = "quota"
USAGE_PREFIX = "usage#"
MINUTE_DIGITS = 10


def _part(value: str) -> str:
    # '%' first, so that an escaped '#' is not escaped twice.
    return value.replace("%", "%25").replace("#", "%23")


def deployment_pk(deployment_id: str) -> str:
    """Partition of every item of one deployment."""
    return f"dep#{_part(deployment_id)}"


def circuit_key(deployment_id: str) -> Key:
    """Circuit-breaker state of one deployment."""
    return deployment_pk(deployment_id), CIRCUIT


def usage_sk(minute: int) -> str:
    """Sort key of the usage bucket ``minute`` (epoch seconds // 60)."""
    return f"{USAGE_PREFIX}{minute:0{MINUTE_DIGITS}d}"


def usage_key(deployment_id: str, minute: int) -> Key:
    """Counters of one deployment in one minute bucket."""
    return deployment_pk(deployment_id), usage_sk(minute)


def usage_shard_pk(deployment_id: str, shard: int) -> str:
    """Partition of shard ``shard`` of a deployment's usage buckets (0: ``deployment_pk``)."""
    if shard < 0:
        raise ValueError(f"negative shard {shard}")
    return deployment_pk(deployment_id) if shard == 0 else f"{deployment_pk(deployment_id)}#{shard}"


def usage_shard_key(deployment_id: str, minute: int, shard: int) -> Key:
    """Shard ``shard`` of one deployment's minute bucket (shard 0 is ``usage_key``)."""
    return usage_shard_pk(deployment_id, shard), usage_sk(minute)


def usage_shard_keys(deployment_id: str, minute: int, shards: int) -> list[Key]:
    """Every shard of one minute bucket, shard 0 first."""
    return [usage_shard_key(deployment_id, minute, s) for s in range(max(1, shards))]


def minute_of(sk: str) -> int:
    """The minute of a usage sort key (inverse of ``usage_sk``)."""
    if not sk.startswith(USAGE_PREFIX):
        raise ValueError(f"not a usage sort key: {sk!r}")
    return int(sk[len(USAGE_PREFIX) :].split("#", 1)[0])


SLOT_PREFIX = "slot#"


def slot_key(deployment_id: str, slot: int) -> Key:
    """Capacity slot ``slot`` (0 <= slot < ``max_parallel_requests``) of one deployment."""
    if slot < 0:
        raise ValueError(f"negative slot {slot}")
    return deployment_pk(deployment_id), f"{SLOT_PREFIX}{slot}"


def key_slot_key(key_id: str, slot: int) -> Key:
    """Slot ``slot`` (0 <= slot < ``max_parallel_requests``) of one client key's requests."""
    return f"key#{_part(key_id)}", slot_key(key_id, slot)[1]


def health_key(deployment_id: str) -> Key:
    """Scores the health job wrote for one deployment."""
    return deployment_pk(deployment_id), HEALTH


def capacity_key(domain: str) -> Key:
    """Capacity circuit of one failure domain."""
    return f"domain#{_part(domain)}", CAPACITY


def binding_key(key: BindingKey) -> Key:
    """Sticky binding of (caller, pool, protocol)."""
    parts = "#".join(_part(p) for p in (key.caller, key.pool, key.protocol))
    return f"bind#{parts}", BINDING


def pool_key(pool: str) -> Key:
    """Per-pool metadata: the binding generation."""
    return f"pool#{_part(pool)}", META


def quota_key(credential: str) -> Key:
    """Every unit's quota of one credential (``credential``: ``credential_key`` of its reference)."""
    return f"cred#{_part(credential)}", QUOTA


def config_key() -> Key:
    """The current configuration document."""
    return "config", "current"


AUDIT_PK = "audit"
AUDIT_MS_DIGITS = 13


def audit_sk(at: float, entry_id: str) -> str:
    """Sort key of an audit entry: time first, so string order is time order."""
    return f"{int(at * 1000):0{AUDIT_MS_DIGITS}d}#{_part(entry_id)}"


def audit_key(at: float, entry_id: str) -> Key:
    """One audit entry (every entry shares the ``audit`` partition)."""
    return AUDIT_PK, audit_sk(at, entry_id)


KEYS_PK = "keys"
SPEND = "spend"


def client_key_key(digest: str) -> Key:
    """A client key, by the sha256 hex digest of the key."""
    return KEYS_PK, digest


ORGS_PK = "orgs"
TEAMS_PK = "teams"


def organization_key(org_id: str) -> Key:
    """An organization, by its id (``routing.hierarchy.GROUP_ID``)."""
    return ORGS_PK, _part(org_id)


def team_key(team_id: str) -> Key:
    """A team, by its id (``routing.hierarchy.GROUP_ID``)."""
    return TEAMS_PK, _part(team_id)


def key_usage_key(key_id: str, minute: int) -> Key:
    """Requests and tokens of one client key in one minute bucket (``key_id``: or its account)."""
    return f"key#{_part(account_key_id(key_id))}", usage_sk(minute)


def key_spend_key(account: str) -> Key:
    """Spend (USD) and tokens of one client key's spend account (``access.spend_account``).

    ``<id>``: its lifetime spend (``spend``); ``<id>@<period start>``: one budget
    period's (``spend#<YYYY-MM-DD>``), in the same partition.
    """
    key_id, _, period = account.partition(ACCOUNT_SEP)
    return f"key#{_part(key_id)}", f"{SPEND}#{_part(period)}" if period else SPEND


LEASE = "lease"


def idempotency_key(scope: str, key: str) -> Key:
    """The lease of idempotency key ``key`` (the header's value) in ``scope`` (the client key)."""
    digest = hashlib.sha256(key.encode("ascii", "replace")).hexdigest()[:32]
    return f"idem#{_part(scope)}#{digest}", LEASE


ALERTS_PENDING_PK = "alerts#pending"


def alert_key(level: str, level_id: str, name: str) -> Key:
    """One budget alert (``routing.alerts.Alert.name``), in its level's partition (``key#<id>``)."""
    return f"{_part(level)}#{_part(level_id)}", name


def pending_alert_key(level: str, level_id: str, name: str) -> Key:
    """The sweep's pointer to an alert not delivered yet (one partition: alerts are rare)."""
    return ALERTS_PENDING_PK, f"{_part(level)}#{_part(level_id)}#{name}"
