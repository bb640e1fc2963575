"""Error headers: Retry-After rounded up, x-should-retry only where a retry cannot help."""

from __future__ import annotations

from edgeproxy.api.errors import error_headers, should_retry
from edgeproxy.errors import (
    AuthenticationError,
    DeadlineExceeded,
    EdgeproxyError,
    GatewayFailure,
    ModelNotFound,
    ModelOverloaded,
    ModelUnavailable,
    QuotaExceeded,
    RateLimited,
    RequestError,
    UpstreamError,
)


def test_errors_a_retry_cannot_fix_say_so() -> None:
    for error in (
        RequestError("bad"),
        ModelNotFound("none"),
        AuthenticationError("key"),
        ModelUnavailable("misconfigured"),
        UpstreamError("no", status=401, code="upstream_credential_rejected"),
        # The gateway already spent its deadline on its own attempts and failovers.
        DeadlineExceeded("The upstream did not answer in time."),
        QuotaExceeded("Budget spent."),
        GatewayFailure("no credential", code="credential_unavailable"),
    ):
        assert not should_retry(error), error
        assert error_headers(error)["x-should-retry"] == "false"


def test_errors_a_retry_may_fix_leave_the_sdk_to_decide() -> None:
    for error in (
        RateLimited("slow", retry_after=2.2),
        ModelOverloaded("busy", retry_after=0.2),
        UpstreamError("down", status=503),
        UpstreamError("timeout", status=408),
        EdgeproxyError("internal"),
    ):
        assert should_retry(error), error
        assert "x-should-retry" not in error_headers(error)
    assert error_headers(RateLimited("slow", retry_after=2.2))["retry-after"] == "3"
    assert error_headers(ModelOverloaded("busy", retry_after=0.2))["retry-after"] == "1"


def test_a_throttle_whose_retries_the_gateway_made_tells_the_sdk_not_to_repeat_them() -> None:
    throttled = UpstreamError("Rate limit reached.", status=429, retry_after=1.98)
    assert should_retry(throttled)  # the gateway has not retried it: the SDK may
    throttled.retries_spent = True
    assert error_headers(throttled) == {"x-should-retry": "false", "retry-after": "2"}
