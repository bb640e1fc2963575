from __future__ import annotations

import pytest

from edgeproxy.config.models import FallbackReason
from edgeproxy.routing.failures import classify, fallback_reason
from edgeproxy.routing.faults import FailureClass, Fault, FaultKind
from edgeproxy.routing.verdict import judge


def clears_binding(fault: Fault) -> bool:
    return judge(fault).clears_binding


def http(status: int, code: str | None = None, type_: str | None = None, msg: str = "x") -> Fault:
    return Fault(FaultKind.HTTP, msg, status, type=type_, code=code)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, FailureClass.REQUEST),
        (404, FailureClass.REQUEST),
        (409, FailureClass.REQUEST),
        (413, FailureClass.REQUEST),
        (422, FailureClass.REQUEST),
        (401, FailureClass.CONFIGURATION),
        (403, FailureClass.CONFIGURATION),
        (429, FailureClass.THROTTLE),
        (408, FailureClass.TRANSIENT),
        (500, FailureClass.TRANSIENT),
        (502, FailureClass.TRANSIENT),
        (503, FailureClass.TRANSIENT),
        (524, FailureClass.TRANSIENT),
        (529, FailureClass.TRANSIENT),
    ],
)
def test_http_status_classes(status: int, expected: FailureClass) -> None:
    assert classify(http(status)) is expected


@pytest.mark.parametrize(
    "kind",
    [
        FaultKind.CONNECT,
        FaultKind.RESET,
        FaultKind.TIMEOUT,
        FaultKind.IDLE,
        FaultKind.TRUNCATED,
        FaultKind.MALFORMED,
    ],
)
def test_network_and_protocol_faults_are_transient(kind: FaultKind) -> None:
    fault = Fault(kind, "boom")
    assert classify(fault) is FailureClass.TRANSIENT
    assert clears_binding(fault)
    assert fallback_reason(fault) is FallbackReason.GENERAL


def test_incompatible_is_its_own_class_and_keeps_binding() -> None:
    fault = Fault(FaultKind.INCOMPATIBLE, "cannot take audio")
    assert classify(fault) is FailureClass.INCOMPATIBLE
    assert not clears_binding(fault)
    verdict = judge(fault)
    assert verdict.tries_another
    assert verdict.rules_out  # the deployment cannot serve this shape: not tried again
    assert not verdict.lowers_health


@pytest.mark.parametrize(
    "fault",
    [
        http(404, code="model_not_found", type_="invalid_request_error"),
        http(404, code="DeploymentNotFound"),
        # vLLM: numeric code, the message names the model
        http(404, code="404", type_="NotFoundError", msg="The model `x` does not exist."),
        http(400, code="model_not_found"),
    ],
)
def test_wrong_upstream_model_is_configuration_and_keeps_the_binding(fault: Fault) -> None:
    assert classify(fault) is FailureClass.CONFIGURATION
    assert judge(fault).lowers_health  # quarantined: the binding's deployment is skipped
    assert not clears_binding(fault)  # 003: a 404 (or 400) keeps the binding


def test_plain_404_without_model_signal_is_a_request_error() -> None:
    fault = http(404, code="file_not_found", msg="The file does not exist")
    assert classify(fault) is FailureClass.REQUEST
    assert not clears_binding(fault)
    assert fallback_reason(fault) is None


def test_context_window_by_code_and_by_anthropic_message() -> None:
    for fault in (
        http(400, code="context_length_exceeded", type_="invalid_request_error"),
        http(400, type_="invalid_request_error", msg="prompt is too long: 210000 tokens > 200000"),
    ):
        assert classify(fault) is FailureClass.REQUEST
        assert fallback_reason(fault) is FallbackReason.CONTEXT_WINDOW


def test_a_code_decides_before_message_text() -> None:
    fault = http(400, code="invalid_value", msg="maximum context length mentioned in passing")
    assert fallback_reason(fault) is None


@pytest.mark.parametrize(
    "fault",
    [
        http(400, code="content_filter"),
        http(400, code="content_policy_violation"),
        http(400, code="ResponsibleAIPolicyViolation"),
        http(400, type_="content_policy_error"),
        http(403, code="content_filter"),  # a content verdict, not bad credentials
        http(400, msg="Output blocked by content filtering policy"),
    ],
)
def test_content_policy(fault: Fault) -> None:
    assert classify(fault) is FailureClass.REQUEST
    assert fallback_reason(fault) is FallbackReason.CONTENT_POLICY


@pytest.mark.parametrize(
    ("status", "clears"),
    [
        (429, True),
        (401, True),
        (403, True),
        (500, True),
        (503, True),
        (524, True),
        (400, False),
        (404, False),
        (422, False),
    ],
)
def test_clears_binding_per_003(status: int, clears: bool) -> None:
    assert clears_binding(http(status)) is clears


def test_fallback_reasons_for_pool_failures() -> None:
    assert fallback_reason(http(503)) is FallbackReason.GENERAL
    assert fallback_reason(http(429)) is FallbackReason.GENERAL
    assert fallback_reason(http(401)) is FallbackReason.GENERAL
    assert fallback_reason(http(400)) is None


def test_which_verdicts_move_on_rule_out_and_count() -> None:
    request, transient, throttle, config = (judge(http(s)) for s in (400, 503, 429, 401))
    assert not request.tries_another
    assert transient.tries_another
    assert throttle.tries_another
    assert config.tries_another
    assert config.rules_out
    assert not transient.rules_out
    assert not throttle.rules_out
    assert transient.lowers_health
    assert config.lowers_health
    assert not throttle.lowers_health
    assert not request.lowers_health


def test_the_verdict_names_the_fallback_chain() -> None:
    too_long = Fault(FaultKind.HTTP, "too long", 400, code="context_length_exceeded")
    assert judge(too_long).fallback is FallbackReason.CONTEXT_WINDOW
    assert judge(http(503)).fallback is FallbackReason.GENERAL
    assert judge(http(400)).fallback is None
