"""Idempotency keys: the lease rules, as pure functions of (lease, request, now).

A request with an ``Idempotency-Key`` header (the IETF httpapi draft's field)
is executed once per (client key, idempotency key): the first call takes a
lease item with a conditional write; every other call with the same key reads
that item and is decided here:

    no lease, or its record expired (KEY_TTL_S)     -> TAKE   (execute, holding the lease)
    different request hash                          -> CONFLICT (422)
    done (the first call's answer is stored)        -> REPLAY (its status and body)
    running, lease not lapsed                       -> WAIT   (poll again after ``poll_delay``)
    running, lease lapsed (its owner died)          -> TAKE   (take it over)

A lease lapses at ``lease_until``: the first call's own deadline plus a
margin, so an instance that crashed (a Lambda timeout) holds nobody up for
longer than the operation could have run. A released lease (an error answer)
is deleted, so the next call finds none and takes it. Every rule reads
``now`` from its caller; nothing here reads a clock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from edgeproxy.errors import RequestError

HEADER = "Idempotency-Key"
MAX_KEY_CHARS = 255  # the printable-ASCII length the gateway accepts, stated in docs
KEY_TTL_S = 24 * 3600  # a key's record (and its stored answer) is kept this long
LEASE_MARGIN_S = 5.0  # past the owner's deadline: its outcome write may still be landing
FIRST_POLL_S = 0.05
MAX_POLL_S = 1.0


class LeaseState(enum.Enum):
    """A lease item's state: the first call is executing, or its answer is stored."""

    RUNNING = "running"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class Lease:
    """One stored lease item (``state/keys.py`` "idempotency lease").

    ``request_hash``: sha256 of the first call's surface and canonical body.
    ``owner``: the executing call's id (its completion and release name it).
    ``lease_until``: when a RUNNING lease lapses. ``expires_at``: when the
    record itself is gone (readers ignore it after that; TTL deletion is lazy).
    ``answer``: the stored answer (an encoded ``state.answers.StoredAnswer``, ``api.reply``) once DONE.
    """

    request_hash: str
    owner: str
    state: LeaseState
    lease_until: float
    expires_at: float
    answer: bytes | None = None


class Decision(enum.Enum):
    """What a call with an idempotency key does next."""

    TAKE = "take"
    WAIT = "wait"
    REPLAY = "replay"
    CONFLICT = "conflict"


def decide(lease: Lease | None, request_hash: str, now: float) -> Decision:
    """The call's next step given the stored ``lease`` (None: no item).

    >>> decide(None, "h", 0.0)
    <Decision.TAKE: 'take'>
    """
    if lease is None or lease.expires_at <= now:
        return Decision.TAKE
    if lease.request_hash != request_hash:
        return Decision.CONFLICT
    if lease.state is LeaseState.DONE:
        return Decision.REPLAY
    if lease.lease_until <= now:
        return Decision.TAKE
    return Decision.WAIT


def lease_until(now: float, deadline_s: float) -> float:
    """When a lease taken at ``now`` by a call with ``deadline_s`` to run lapses."""
    return now + deadline_s + LEASE_MARGIN_S


def poll_delay(polls: int) -> float:
    """Seconds before the ``polls``-th re-read of a running lease (0-based): doubling, capped.

    >>> [poll_delay(n) for n in range(6)]
    [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    """
    return min(FIRST_POLL_S * 2.0 ** min(polls, 16), MAX_POLL_S)


def wait_step(polls: int, now: float, give_up_at: float) -> float | None:
    """The next poll's delay, cut to the deadline; None once the deadline is reached."""
    if now >= give_up_at:
        return None
    return min(poll_delay(polls), give_up_at - now)


def checked_key(value: str | None) -> str | None:
    """The header's value if it is a valid key (1-255 printable ASCII); raises 400 if not.

    >>> checked_key("order-7"), checked_key(None)
    ('order-7', None)
    """
    if value is None:
        return None
    if not 1 <= len(value) <= MAX_KEY_CHARS or not all(" " <= c <= "~" for c in value):
        raise RequestError(
            f"The {HEADER} header must be 1 to {MAX_KEY_CHARS} printable ASCII characters.",
            param=HEADER,
            code="invalid_idempotency_key",
        )
    return value
