"""Foreign errors become UpstreamFault: transport errors, error answers, sanitization."""

from __future__ import annotations

import json

import httpx
import pytest

from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.errors import (
    BODY,
    HEADERS,
    STREAM,
    Phase,
    http_fault,
    sanitize,
    stream_error_fault,
    translate_errors,
)

SECRET_HOST = "internal-llm.corp.example:8443"


def raised(exc: BaseException, phase: Phase) -> UpstreamFault:
    with pytest.raises(UpstreamFault) as info, translate_errors(phase):
        raise exc
    assert info.value.__cause__ is exc
    return info.value


@pytest.mark.parametrize(
    ("exc", "phase", "kind"),
    [
        (httpx.ConnectError("refused"), HEADERS, FaultKind.CONNECT),
        (httpx.ConnectTimeout("slow handshake"), HEADERS, FaultKind.CONNECT),
        (httpx.ReadTimeout("r"), HEADERS, FaultKind.TIMEOUT),
        (httpx.PoolTimeout("p"), HEADERS, FaultKind.TIMEOUT),
        (TimeoutError(), HEADERS, FaultKind.TIMEOUT),
        (httpx.RemoteProtocolError("no response"), HEADERS, FaultKind.RESET),
        (httpx.ReadError("reset by peer"), HEADERS, FaultKind.RESET),
        (httpx.ReadError("cut"), BODY, FaultKind.TRUNCATED),
        (TimeoutError(), BODY, FaultKind.TIMEOUT),
        (TimeoutError(), STREAM, FaultKind.IDLE),
        (httpx.ReadTimeout("r"), STREAM, FaultKind.IDLE),
        (httpx.RemoteProtocolError("incomplete chunked read"), STREAM, FaultKind.TRUNCATED),
        (httpx.DecodingError("bad gzip"), BODY, FaultKind.MALFORMED),
    ],
)
def test_transport_errors_by_phase(exc: BaseException, phase: Phase, kind: FaultKind) -> None:
    assert raised(exc, phase).fault.kind is kind


def test_transport_messages_never_carry_the_library_text() -> None:
    fault = raised(httpx.ConnectError(f"cannot reach {SECRET_HOST}"), HEADERS).fault
    assert SECRET_HOST not in fault.message
    assert fault.status is None


def test_other_exceptions_pass_through() -> None:
    with pytest.raises(KeyError), translate_errors(HEADERS):
        raise KeyError("not ours")


@pytest.mark.parametrize(
    ("text", "leak"),
    [
        ("Incorrect API key provided: sk-proj-abc123XYZ789.", "sk-proj-abc123XYZ789"),
        ("key sk-ant-api03-AAAA_bbbb-cccc rejected", "sk-ant-api03-AAAA_bbbb-cccc"),
        ("sent header Authorization: Bearer eyJhbGciOi.payload.sig", "eyJhbGciOi"),
        ("x-api-key: 0123456789abcdef was invalid", "0123456789abcdef"),
        ("bad api_key=hunter2hunter2 supplied", "hunter2hunter2"),
    ],
)
def test_sanitize_removes_keys(text: str, leak: str) -> None:
    cleaned = sanitize(text)
    assert leak not in cleaned
    assert "[redacted]" in cleaned


def test_sanitize_removes_given_secrets_and_keeps_the_rest() -> None:
    text = f"upstream https://{SECRET_HOST}/v1 refused credential TOPSECRET: model busy"
    cleaned = sanitize(text, [f"https://{SECRET_HOST}/v1", SECRET_HOST, "TOPSECRET", None])
    assert SECRET_HOST not in cleaned
    assert "TOPSECRET" not in cleaned
    assert cleaned.endswith("model busy")


def test_sanitize_keeps_a_sentence_period_after_a_masked_key() -> None:
    assert sanitize("Incorrect API key provided: sk-abc***xyz.") == (
        "Incorrect API key provided: [redacted]."
    )


def body(payload: object) -> bytes:
    return json.dumps(payload).encode()


def test_openai_error_answer() -> None:
    payload = {
        "error": {
            "message": "This model's maximum context length is 8192 tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    fault = http_fault(400, body(payload), retry_after=None).fault
    assert fault.kind is FaultKind.HTTP
    assert (fault.status, fault.type, fault.code, fault.param) == (
        400,
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
    )
    assert fault.message == "This model's maximum context length is 8192 tokens."


def test_anthropic_error_answer() -> None:
    payload = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    fault = http_fault(529, body(payload), retry_after=3.0).fault
    assert (fault.status, fault.type, fault.message, fault.retry_after) == (
        529,
        "overloaded_error",
        "Overloaded",
        3.0,
    )


def test_anthropic_prompt_too_long_gets_the_openai_code() -> None:
    payload = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens"},
    }
    assert http_fault(400, body(payload), retry_after=None).fault.code == (
        "context_length_exceeded"
    )


@pytest.mark.parametrize(
    ("status", "content", "message", "type_"),
    [
        (502, b"<html>Bad gateway</html>", "The upstream answered with HTTP 502.", "server_error"),
        (422, body({"detail": "field required"}), "field required", "invalid_request_error"),
        (429, body({"error": "slow down"}), "slow down", "rate_limit_error"),
        (500, b"", "The upstream answered with HTTP 500.", "server_error"),
    ],
)
def test_other_error_bodies(status: int, content: bytes, message: str, type_: str) -> None:
    fault = http_fault(status, content, retry_after=None).fault
    assert (fault.status, fault.message, fault.type) == (status, message, type_)


def test_numeric_codes_become_strings() -> None:
    fault = http_fault(400, body({"error": {"message": "m", "code": 1234}}), retry_after=None)
    assert fault.fault.code == "1234"


def test_error_message_is_sanitized() -> None:
    payload = {"error": {"message": "key sk-live-0123456789 invalid for https://10.0.0.7/v1"}}
    fault = http_fault(401, body(payload), retry_after=None, secrets=["https://10.0.0.7/v1"])
    assert "0123456789" not in fault.fault.message
    assert "10.0.0.7" not in fault.fault.message


def test_error_event_inside_a_stream_takes_its_status_from_the_type() -> None:
    payload = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert stream_error_fault(payload, []).fault.status == 529
    openai_style = {"error": {"message": "server hiccup", "type": "server_error"}}
    assert stream_error_fault(openai_style, []).fault.status == 500
