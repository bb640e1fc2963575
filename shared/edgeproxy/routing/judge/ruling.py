"""The refusal judge: whether a caller's key stops its request before any upstream call.

One pure function of what was read (``KeySnapshot``: the key as looked up,
the model asked for and its names, the request's estimate) and ``now``
(``judge``) gives one ``Verdict``: ``Refuse`` with one ``Refusal``
(``routing.judge.reasons``), or ``Admit`` with the ``KeyPlan`` of the
conditional writes that enforce the key's limits together (a slot of its
``max_parallel_requests``, its rpm count, its tokens this minute, its
spend). The service performs the plan's writes in order (``service.limits.enforcement``); a write whose condition fails is
refused by ``reasons.refused``, so every reason and message a key's refusal
can have is decided here. The edge asks the same rules at their own moments
(``key_refusal`` before a body is read, ``model_refusal`` once the body
names its model), and the explainer asks ``model_refusal`` as the edge does.

A pool's own refusals (circuits, its limits, quotas) are the routing
core's (``routing.step``, ``routing.judge.pool`` and
``routing.refusal.final_error``); the context window's is decided by
``routing.estimates.window`` and says ``reasons.too_long``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edgeproxy.routing.access import ClientKey, KeyRefusal, refusal, spend_account
from edgeproxy.routing.judge.reasons import (
    Reason,
    Refusal,
    Write,
    not_allowed,
    unauthenticated,
)

KEY_USAGE_RETENTION_S = 3600  # a key's minute buckets outlive their minute by this much

_KEY_REFUSALS = {
    KeyRefusal.REVOKED: Reason.REVOKED,
    KeyRefusal.EXPIRED: Reason.EXPIRED,
    KeyRefusal.ROTATED: Reason.ROTATED,
}


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a routed request is expected to use: tokens, and their cost at the pool's top price."""

    tokens: int
    spend_usd: float


@dataclass(frozen=True, slots=True)
class KeySnapshot:
    """What the judge decides on: the key as looked up (None: no table key), the model
    asked for and the names it goes by, and the request's estimate (None: a request
    without one is held to its key's rpm, and to its ``max_parallel_requests`` when
    ``routed``; a token count is not routed and is held to its rpm only)."""

    key: ClientKey | None
    model: str
    names: Sequence[str] = ()
    estimate: Estimate | None = None
    routed: bool = True  # a routed request holds a fleet slot while it runs; a token count not


@dataclass(frozen=True, slots=True)
class KeyPlan:
    """The conditional writes that hold a key to its limits, in the order they are made.

    ``parallel``: the key's ``max_parallel_requests``, one of whose slots the request
    holds until its answer is over (None: no cap). ``rpm``: the rpm limit to count one request under (None: none). ``tpm``: the
    tpm limit the estimate's tokens are reserved under (None: none). ``spend``:
    whether the cost estimate is reserved on the key's spend ``account`` (its
    ``budget``: None, counted without a cap). Every count goes in ``minute``'s
    bucket and expires at ``expires``.
    """

    key_id: str
    minute: int
    expires: float
    parallel: int | None = None
    rpm: int | None = None
    tpm: int | None = None
    tokens: int = 0
    spend: bool = False
    account: str = ""
    spend_usd: float = 0.0
    budget: float | None = None

    @property
    def writes(self) -> tuple[Write, ...]:
        """The writes to make, in order (a failed one stops the rest)."""
        return (
            *((Write.PARALLEL,) if self.parallel is not None else ()),
            *((Write.RPM,) if self.rpm is not None else ()),
            *((Write.TOKENS,) if self.tpm is not None else ()),
            *((Write.SPEND,) if self.spend else ()),
        )


@dataclass(frozen=True, slots=True)
class Admit:
    """The key lets the request through; ``plan``: the writes that hold it to its limits."""

    plan: KeyPlan | None = None


@dataclass(frozen=True, slots=True)
class Refuse:
    """The request is refused before any upstream call."""

    refusal: Refusal


Verdict = Admit | Refuse


def key_refusal(key: ClientKey, now: float) -> Refusal | None:
    """Why ``key`` (as looked up by the secret presented) cannot be used at ``now``, or None."""
    refused = refusal(key, now)
    return None if refused is None else unauthenticated(_KEY_REFUSALS[refused])


def model_refusal(key: ClientKey | None, model: str, names: Sequence[str] = ()) -> Refusal | None:
    """404 (as if absent) when ``key`` may not use ``model`` by any of its ``names``."""
    if key is None or key.allows(model) or any(key.allows(n) for n in names):
        return None
    return not_allowed(model)


def judge(snapshot: KeySnapshot, now: float) -> Verdict:
    """The key's verdict on one request at ``now``: its status, its models, then the plan of
    the writes that enforce its fleet slots, rpm, tpm and budget together."""
    key = snapshot.key
    if key is None:
        return Admit()
    refused = key_refusal(key, now) or model_refusal(key, snapshot.model, snapshot.names)
    if refused is not None:
        return Refuse(refused)
    minute = int(now // 60)
    estimate = snapshot.estimate
    usage = estimate is not None and key.tracks_usage
    plan = KeyPlan(
        key_id=key.id,
        minute=minute,
        expires=minute * 60.0 + KEY_USAGE_RETENTION_S,
        parallel=key.max_parallel_requests if snapshot.routed else None,
        rpm=key.rpm_limit,
        tpm=key.tpm_limit if usage else None,
        tokens=estimate.tokens if estimate is not None and usage else 0,
        spend=usage,
        account=spend_account(key, now) if usage else "",
        spend_usd=estimate.spend_usd if estimate is not None and usage else 0.0,
        budget=key.budget_usd,
    )
    return Admit(plan if plan.writes else None)
