"""The client's view of failed requests: final error mapping."""

from __future__ import annotations

from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.refusal import RouteFailure, fault_error, final_error
from edgeproxy.routing.selection import Blocked, BlockReason
from edgeproxy.routing.step import PoolFailure


def failure(fault: Fault | None = None, blocked: Blocked | None = None) -> RouteFailure:
    pool = PoolFailure(fault=fault, blocked=blocked)
    return RouteFailure(primary=pool, last_fault=fault, failures=[pool])


def test_the_last_upstream_answer_wins() -> None:
    fault = Fault(FaultKind.HTTP, "overloaded", status=529, type="overloaded_error", retry_after=3)
    error = final_error(failure(fault, Blocked(BlockReason.OVERLOADED, 9.0)), now=0.0)
    assert (error.status, error.retry_after) == (529, 3)
    assert error.body()["error"]["message"] == "overloaded"


def test_blockers_without_an_upstream_answer() -> None:
    overloaded = final_error(failure(blocked=Blocked(BlockReason.OVERLOADED, 4.2)), now=0.0)
    assert (overloaded.status, overloaded.code, overloaded.retry_after) == (
        503,
        "model_overloaded",
        4.2,
    )
    unavailable = final_error(failure(blocked=Blocked(BlockReason.UNAVAILABLE, 100.0)), now=0.0)
    assert (unavailable.status, unavailable.code) == (503, "model_unavailable")
    assert unavailable.retry_after is None  # misconfiguration: no honest retry time
    limited = final_error(failure(blocked=Blocked(BlockReason.RATE_LIMITED, 7.0)), now=0.0)
    assert (limited.status, limited.code, limited.retry_after) == (429, "rate_limit_exceeded", 7.0)


def test_connection_level_faults_have_gateway_statuses() -> None:
    assert fault_error(Fault(FaultKind.TIMEOUT, "t")).status == 504
    assert fault_error(Fault(FaultKind.IDLE, "i")).status == 504
    assert fault_error(Fault(FaultKind.TRUNCATED, "x")).code == "upstream_stream_truncated"
    assert fault_error(Fault(FaultKind.RESET, "r")).status == 502


def test_an_incompatible_request_is_the_clients_to_change() -> None:
    error = fault_error(Fault(FaultKind.INCOMPATIBLE, "cannot return n > 1 choices", param="n"))
    assert (error.status, error.type, error.param) == (400, "invalid_request_error", "n")
    assert "n > 1" in error.body()["error"]["message"]


def test_an_rpm_refusal_says_when_the_next_minute_bucket_starts() -> None:
    pool = PoolFailure(rate_limited=True)
    limited = final_error(RouteFailure(primary=pool, last_fault=None), now=6_000_017.5)
    assert (limited.status, limited.retry_after) == (429, 42.5)


def test_an_upstream_rejecting_the_gateways_credential_says_so() -> None:
    fault = Fault(FaultKind.HTTP, "Incorrect API key provided", 401, code="invalid_api_key")
    error = fault_error(fault, "openai-east")
    assert error.status == 401  # 000's status
    assert error.code == "upstream_credential_rejected"
    assert "gateway's upstream credential" in error.message
    assert "openai-east" in error.message
    assert fault_error(Fault(FaultKind.HTTP, "no", 403)).code == "upstream_access_denied"


def test_a_gateway_failure_says_the_gateway_failed() -> None:
    from edgeproxy.routing.verdict import CREDENTIAL_UNAVAILABLE

    error = fault_error(CREDENTIAL_UNAVAILABLE, "a")
    assert (error.status, error.code) == (500, "credential_unavailable")
    assert error.public
    assert "gateway" in error.message
    assert "credential" in error.message


def test_a_malformed_answer_is_named_as_such() -> None:
    error = fault_error(Fault(FaultKind.MALFORMED, "bad"))
    assert error.code == "upstream_malformed"
    assert "malformed" in error.message
    assert "reached" not in error.message
