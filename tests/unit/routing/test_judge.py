"""The refusal judge: snapshots in, one verdict out, on a virtual ``now`` (no clock is read).

Each row is a snapshot (the key as looked up, the model asked for and its
names, the estimate) at a moment; its verdict is an admission with the plan
of the writes that enforce the key's limits, or one refusal. The refusals'
errors are the ones clients got before the judge (status, body, Retry-After).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from edgeproxy.errors import EdgeproxyError
from edgeproxy.routing.access import BudgetPeriod, ClientKey
from edgeproxy.routing.estimates.window import Need, window_fault
from edgeproxy.routing.judge.reasons import (
    Reason,
    Refusal,
    Write,
    refused,
    slots_full,
    too_long,
)
from edgeproxy.routing.judge.ruling import (
    KEY_USAGE_RETENTION_S,
    Admit,
    Estimate,
    KeyPlan,
    KeySnapshot,
    Refuse,
    judge,
    model_refusal,
)
from edgeproxy.routing.refusal import fault_error

DIGEST = "0123456789abcdef" + "0" * 48
KEY_ID = DIGEST[:16]
MINUTE = 29_000_000  # a minute bucket around 2025; ``NOW`` is 15 s into it
NOW = MINUTE * 60.0 + 15.0
ESTIMATE = Estimate(tokens=120, spend_usd=0.0006)
KEY = ClientKey(DIGEST, "k")


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def snap(key: ClientKey | None = KEY, model: str = "gpt", **kw: object) -> KeySnapshot:
    return KeySnapshot(key, model, **kw)  # type: ignore[arg-type]


def plan(minute: int = MINUTE, **kw: object) -> KeyPlan:
    expires = minute * 60.0 + KEY_USAGE_RETENTION_S
    return KeyPlan(KEY_ID, minute, expires, **kw)  # type: ignore[arg-type]


ROWS = [
    # (id, snapshot, now, verdict: Admit(plan) or the refusal's reason)
    ("no table key", snap(None), NOW, Admit()),
    ("a key without limits makes no write", snap(), NOW, Admit()),
    ("revoked", snap(replace(KEY, revoked=True)), NOW, Reason.REVOKED),
    ("expired at its moment", snap(replace(KEY, expires_at=NOW)), NOW, Reason.EXPIRED),
    ("not yet expired", snap(replace(KEY, expires_at=NOW + 0.5)), NOW, Admit()),
    (
        "a previous secret past its grace",
        snap(replace(KEY, secret_expires_at=NOW - 1)),
        NOW,
        Reason.ROTATED,
    ),
    (
        "its status comes before its models",
        snap(replace(KEY, revoked=True, models=frozenset({"other"}))),
        NOW,
        Reason.REVOKED,
    ),
    (
        "a model it may not use",
        snap(replace(KEY, models=frozenset({"o"}))),
        NOW,
        Reason.MODEL_NOT_ALLOWED,
    ),
    (
        "a model it may use by an alias",
        snap(replace(KEY, models=frozenset({"fast"})), names=("gpt", "fast")),
        NOW,
        Admit(),
    ),
    (
        "a route group counts as its model",
        snap(replace(KEY, models=frozenset({"gpt"})), model="gpt:eu"),
        NOW,
        Admit(),
    ),
    ("rpm alone", snap(replace(KEY, rpm_limit=5)), NOW, Admit(plan(rpm=5))),
    (
        "rpm, tpm and budget together, one minute for all",
        snap(replace(KEY, rpm_limit=5, tpm_limit=1000, budget_usd=2.0), estimate=ESTIMATE),
        NOW,
        Admit(
            plan(
                rpm=5,
                tpm=1000,
                tokens=120,
                spend=True,
                account=KEY_ID,
                spend_usd=0.0006,
                budget=2.0,
            )
        ),
    ),
    (
        "a tpm limit: the spend is counted without a cap",
        snap(replace(KEY, tpm_limit=1000), estimate=ESTIMATE),
        NOW,
        Admit(plan(tpm=1000, tokens=120, spend=True, account=KEY_ID, spend_usd=0.0006)),
    ),
    (
        "a daily budget: this day's account",
        snap(
            replace(KEY, budget_usd=1.0, budget_period=BudgetPeriod.DAILY),
            estimate=ESTIMATE,
        ),
        NOW,
        Admit(
            plan(
                tokens=120,
                spend=True,
                account=f"{KEY_ID}@2025-02-19",
                spend_usd=0.0006,
                budget=1.0,
            )
        ),
    ),
    (
        "no estimate (a token count): its rpm only",
        snap(replace(KEY, rpm_limit=5, tpm_limit=1000, budget_usd=2.0)),
        NOW,
        Admit(plan(rpm=5, budget=2.0)),
    ),
    (
        "a capped key: a fleet slot, before its rpm count",
        snap(replace(KEY, max_parallel_requests=3, rpm_limit=5)),
        NOW,
        Admit(plan(parallel=3, rpm=5)),
    ),
    (
        "a token count is not routed: no fleet slot",
        snap(replace(KEY, max_parallel_requests=3, rpm_limit=5), routed=False),
        NOW,
        Admit(plan(rpm=5)),
    ),
    (
        "a capped key that may not use the model: refused before its slot",
        snap(replace(KEY, max_parallel_requests=3, models=frozenset({"o"}))),
        NOW,
        Reason.MODEL_NOT_ALLOWED,
    ),
    (
        "an estimate for a key that tracks nothing: no write",
        snap(estimate=ESTIMATE),
        NOW,
        Admit(),
    ),
]


@pytest.mark.parametrize(
    ("snapshot", "now", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_a_snapshot_gets_one_verdict(
    snapshot: KeySnapshot, now: float, expected: Admit | Reason
) -> None:
    verdict = judge(snapshot, now)
    if isinstance(expected, Admit):
        assert verdict == expected
    else:
        assert isinstance(verdict, Refuse)
        assert verdict.refusal.reason is expected


def test_the_plan_names_its_writes_in_the_order_they_are_made() -> None:
    everything = plan(rpm=5, tpm=10, tokens=1, spend=True, account=KEY_ID)
    assert everything.writes == (Write.RPM, Write.TOKENS, Write.SPEND)
    capped = plan(parallel=2, rpm=5, tpm=100, spend=True, account=KEY_ID)
    assert capped.writes == (Write.PARALLEL, Write.RPM, Write.TOKENS, Write.SPEND)
    assert plan(spend=True, account=KEY_ID).writes == (Write.SPEND,)
    assert plan(rpm=1).writes == (Write.RPM,)


def test_the_minute_is_the_moment_s_own() -> None:
    key = replace(KEY, rpm_limit=1)
    before = judge(snap(key), MINUTE * 60.0 - 0.001)
    after = judge(snap(key), MINUTE * 60.0)
    assert isinstance(before, Admit)
    assert isinstance(after, Admit)
    assert (before.plan, after.plan) == (plan(rpm=1, minute=MINUTE - 1), plan(rpm=1))


def _error(refusal: Refusal) -> tuple[int, dict[str, object], float | None]:
    return _error_of(refusal.error())


def _error_of(error: EdgeproxyError) -> tuple[int, dict[str, object], float | None]:
    return error.status, error.body()["error"], error.retry_after  # type: ignore[return-value]


def _body(message: str, type_: str, code: str, param: str | None = None) -> dict[str, object]:
    return {"message": message, "type": type_, "param": param, "code": code}


@pytest.mark.parametrize(
    ("write", "now", "key", "expected"),
    [
        (
            Write.RPM,
            NOW,
            KEY,
            (
                429,
                _body(
                    "Rate limit reached for this API key (requests per minute).",
                    "rate_limit_error",
                    "rate_limit_exceeded",
                ),
                45.0,
            ),
        ),
        (
            Write.TOKENS,
            NOW + 44.5,
            KEY,
            (
                429,
                _body(
                    "Rate limit reached for this API key (tokens per minute).",
                    "rate_limit_error",
                    "rate_limit_exceeded",
                ),
                0.5,
            ),
        ),
        (
            Write.SPEND,
            NOW,
            KEY,
            (
                429,
                _body(
                    "This API key has used its whole budget.",
                    "insufficient_quota",
                    "insufficient_quota",
                ),
                None,
            ),
        ),
        (
            Write.SPEND,
            at("2026-12-06T23:00:00"),
            replace(KEY, budget_period=BudgetPeriod.WEEKLY),
            (
                429,
                _body(
                    "This API key has used its weekly budget; it resets at 2026-12-07T00:00:00Z.",
                    "insufficient_quota",
                    "insufficient_quota",
                ),
                None,
            ),
        ),
        (
            Write.SPEND,
            at("2026-12-31T23:59:59"),
            replace(KEY, budget_period=BudgetPeriod.MONTHLY),
            (
                429,
                _body(
                    "This API key has used its monthly budget; it resets at 2027-01-01T00:00:00Z.",
                    "insufficient_quota",
                    "insufficient_quota",
                ),
                None,
            ),
        ),
    ],
    ids=["rpm", "tpm", "total budget", "weekly budget", "monthly budget"],
)
def test_a_failed_write_is_the_refusal_clients_got(
    write: Write, now: float, key: ClientKey, expected: tuple[int, dict[str, object], float | None]
) -> None:
    assert _error(refused(write, now, key)) == expected


def test_full_slots_are_refused_for_a_second_whatever_the_time() -> None:
    share = slots_full(Write.SHARE, 128)
    assert _error(share) == (
        429,
        _body(
            "Too many requests in progress for this API key (at most 128 at once per gateway "
            "process); retry when one has finished.",
            "rate_limit_error",
            "rate_limit_exceeded",
        ),
        1.0,
    )
    parallel = refused(Write.PARALLEL, NOW, KEY, cap=3)
    assert parallel == slots_full(Write.PARALLEL, 3)
    assert _error(parallel) == (
        429,
        _body(
            "Too many requests in flight for this API key (max_parallel_requests: 3); "
            "retry when one has finished.",
            "rate_limit_error",
            "rate_limit_exceeded",
        ),
        1.0,
    )


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (replace(KEY, revoked=True), "This API key has been revoked."),
        (replace(KEY, expires_at=NOW), "This API key has expired."),
        (
            replace(KEY, secret_expires_at=NOW),
            "This API key has been rotated; use its new secret.",
        ),
    ],
    ids=["revoked", "expired", "rotated"],
)
def test_a_key_that_cannot_be_used_is_401(key: ClientKey, message: str) -> None:
    verdict = judge(snap(key), NOW)
    assert isinstance(verdict, Refuse)
    assert _error(verdict.refusal) == (
        401,
        _body(message, "invalid_request_error", "invalid_api_key"),
        None,
    )


def test_a_model_the_key_may_not_use_is_404_as_if_absent() -> None:
    refusal = model_refusal(replace(KEY, models=frozenset({"a"})), "gpt", ("gpt", "fast"))
    assert refusal is not None
    assert _error(refusal) == (
        404,
        _body(
            "The model `gpt` does not exist or you do not have access to it.",
            "invalid_request_error",
            "model_not_found",
            "model",
        ),
        None,
    )


def test_a_request_no_window_holds_is_the_judge_s_one_400() -> None:
    refusal = too_long(900, 200, 1024)
    assert refusal.reason is Reason.CONTEXT_WINDOW
    message = (
        "This request needs about 1100 tokens (prompt estimate 900, output 200); the "
        "largest context window of this model is 1024. Shorten the messages or lower max_tokens."
    )
    assert _error(refusal) == (
        400,
        {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        },
        None,
    )
    # The pool's failure (no deployment: the largest window is 0) is that refusal, and the
    # client gets it through the router's error mapping unchanged.
    fault = window_fault(Need(900, 200), [])
    assert _error(too_long(900, 200, 0)) == _error_of(fault_error(fault))
