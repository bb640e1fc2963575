"""Every reason a request is refused before any upstream call, and the error each one is.

    reason              status  code                 Retry-After
    no_key              401     invalid_api_key      -
    malformed_key       401     invalid_api_key      -
    unknown_key         401     invalid_api_key      -
    revoked / expired   401     invalid_api_key      -
    rotated             401     invalid_api_key      -
    model_not_allowed   404     model_not_found      - (as if the model were absent)
    context_window      400     context_length_exceeded - (no deployment's window holds it)
    share               429     rate_limit_exceeded  1 s (the process's share of the key)
    parallel            429     rate_limit_exceeded  1 s (``max_parallel_requests``)
    rpm / tpm           429     rate_limit_exceeded  to the next minute
    budget              429     insufficient_quota   - (its period's end is in the message)
    pool_slots          429     rate_limit_exceeded  1 s (every capacity slot of the pool held)
    pool_rpm            429     rate_limit_exceeded  to the next minute (lost an rpm race)
    pool_limits         429     rate_limit_exceeded  until a deployment's limit lifts
    reserved            429     rate_limit_exceeded  - (capacity only for higher roles)
    overloaded          503     model_overloaded     until a circuit closes
    disabled            503     model_unavailable    - (every deployment drained)
    incompatible        503     model_unavailable    - (none serves this kind of request)
    misconfigured       503     model_unavailable    -
    deadline            504     timeout              - (nothing was tried in time)

``Refusal.error`` is the one error each reason becomes; every surface renders
it with its own codec (OpenAI's JSON, Anthropic's, the Responses API's).
``refused`` is the one map from a conditional write whose condition failed
(``Write``) to its refusal.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from edgeproxy.errors import (
    AuthenticationError,
    DeadlineExceeded,
    EdgeproxyError,
    ModelNotFound,
    ModelOverloaded,
    ModelUnavailable,
    QuotaExceeded,
    RateLimited,
    RequestError,
)
from edgeproxy.routing.access import (
    DAY_S,
    ClientKey,
    period_end,
    seconds_to_next_minute,
    utc_moment,
)

SLOT_RETRY_AFTER_S = 1.0  # a held slot is given back when one request ends: retry soon


class Reason(StrEnum):
    """Why a request was refused before any upstream call."""

    NO_KEY = "no_key"
    MALFORMED_KEY = "malformed_key"
    UNKNOWN_KEY = "unknown_key"
    REVOKED = "revoked"
    EXPIRED = "expired"
    ROTATED = "rotated"
    MODEL_NOT_ALLOWED = "model_not_allowed"
    # The pool's: no deployment's context window (or output cap) holds the request
    # (``routing.estimates.window``); it fails as an upstream's 400 would, so the
    # ``context_window`` fallback chain may run.
    CONTEXT_WINDOW = "context_window"
    SHARE = "share"
    PARALLEL = "parallel"
    RPM = "rpm"
    TPM = "tpm"
    BUDGET = "budget"
    # The pool's own (``routing.judge.pool``): what blocked every deployment of the model.
    POOL_SLOTS = "pool_slots"
    POOL_RPM = "pool_rpm"
    POOL_LIMITS = "pool_limits"
    OVERLOADED = "overloaded"
    RESERVED = "reserved"
    DISABLED = "disabled"
    INCOMPATIBLE = "incompatible"
    MISCONFIGURED = "misconfigured"
    DEADLINE = "deadline"


class Write(StrEnum):
    """A conditional write that enforces a key's limit; its failure is a refusal."""

    SHARE = "share"  # a place in the process's share of the key (in memory)
    PARALLEL = "parallel"  # one of the key's fleet slots
    RPM = "rpm"  # +1 in the key's minute bucket, under its rpm limit
    TOKENS = "tokens"  # the estimate in the key's minute bucket, under its tpm limit
    SPEND = "spend"  # the cost estimate on the key's spend, under its budget


_UNAUTHENTICATED = {
    Reason.NO_KEY: "You didn't provide an API key.",
    Reason.MALFORMED_KEY: "Malformed API key.",
    Reason.UNKNOWN_KEY: "Incorrect API key provided.",
    Reason.REVOKED: "This API key has been revoked.",
    Reason.EXPIRED: "This API key has expired.",
    Reason.ROTATED: "This API key has been rotated; use its new secret.",
}


_ERRORS: dict[Reason, type[EdgeproxyError]] = {
    **dict.fromkeys(_UNAUTHENTICATED, AuthenticationError),
    Reason.MODEL_NOT_ALLOWED: ModelNotFound,
    Reason.CONTEXT_WINDOW: RequestError,
    Reason.BUDGET: QuotaExceeded,
    Reason.OVERLOADED: ModelOverloaded,
    Reason.DISABLED: ModelUnavailable,
    Reason.INCOMPATIBLE: ModelUnavailable,
    Reason.MISCONFIGURED: ModelUnavailable,
    Reason.DEADLINE: DeadlineExceeded,
}  # every other reason is a 429 rate_limit_exceeded
_PARAMS = {Reason.MODEL_NOT_ALLOWED: "model", Reason.CONTEXT_WINDOW: "messages"}
_CODES = {Reason.CONTEXT_WINDOW: "context_length_exceeded"}


@dataclass(frozen=True, slots=True)
class Refusal:
    """One reason a request is refused, the message it says and the wait it names."""

    reason: Reason
    message: str
    retry_after: float | None = None
    model: str | None = None  # the model named by a ``model_not_allowed`` refusal
    level: str | None = None  # the level above the key that refused (``routing.judge.levels``)

    def error(self) -> EdgeproxyError:
        """The one error this refusal is, on every surface."""
        kind = _ERRORS.get(self.reason, RateLimited)
        return kind(
            self.message,
            param=_PARAMS.get(self.reason),
            code=_CODES.get(self.reason),
            retry_after=self.retry_after,
        )


def not_allowed(model: str) -> Refusal:
    """The refusal of a request for ``model`` its key may not use, or that no pool serves:
    the same 404, so a key cannot tell a model kept from it from one that is absent."""
    return Refusal(
        Reason.MODEL_NOT_ALLOWED,
        f"The model `{model}` does not exist or you do not have access to it.",
        model=model,
    )


def unauthenticated(reason: Reason) -> Refusal:
    """The refusal of a caller whose key is missing, malformed or unknown (401)."""
    return Refusal(reason, _UNAUTHENTICATED[reason])


def refused(write: Write, now: float, key: ClientKey | None = None, cap: int = 0) -> Refusal:
    """The refusal of a request whose ``write`` found its condition false at ``now``.

    ``cap``: the slots there were (``share``: the process's share of a key,
    ``parallel``: the key's ``max_parallel_requests``).
    """
    if write is Write.SHARE or write is Write.PARALLEL:
        return slots_full(write, cap)
    if write is Write.RPM:
        return Refusal(
            Reason.RPM,
            "Rate limit reached for this API key (requests per minute).",
            seconds_to_next_minute(now),
        )
    if write is Write.TOKENS:
        return Refusal(
            Reason.TPM,
            "Rate limit reached for this API key (tokens per minute).",
            seconds_to_next_minute(now),
        )
    return Refusal(Reason.BUDGET, budget_message(key, now))


def slots_full(write: Write, cap: int) -> Refusal:
    """The refusal of a request that found every one of its key's ``cap`` slots held: the
    process's share of the key (``share``) or its fleet slots (``parallel``); it does not
    depend on the time (a slot is given back when one request ends)."""
    if write is Write.SHARE:
        return Refusal(
            Reason.SHARE,
            f"Too many requests in progress for this API key (at most {cap} at once "
            "per gateway process); retry when one has finished.",
            SLOT_RETRY_AFTER_S,
        )
    return Refusal(
        Reason.PARALLEL,
        f"Too many requests in flight for this API key (max_parallel_requests: {cap}); "
        "retry when one has finished.",
        SLOT_RETRY_AFTER_S,
    )


def too_long(prompt: int, output: int, largest: int) -> Refusal:
    """The refusal of a request no deployment of its model can hold: its ``prompt``
    estimate plus its requested ``output`` is over the ``largest`` context window (or its
    output over every output cap)."""
    return Refusal(
        Reason.CONTEXT_WINDOW,
        f"This request needs about {prompt + output} tokens (prompt estimate {prompt}, "
        f"output {output}); the largest context window of this model is {largest}. "
        "Shorten the messages or lower max_tokens.",
    )


def budget_message(key: ClientKey | None, now: float) -> str:
    """The refusal of a spent budget: when it resets, for a periodic one."""
    end = None if key is None else period_end(key.budget_period, now)
    if key is None or end is None:
        return "This API key has used its whole budget."
    moment = utc_moment(int(end // DAY_S))  # a period ends at a UTC midnight
    return f"This API key has used its {key.budget_period.value} budget; it resets at {moment}."
