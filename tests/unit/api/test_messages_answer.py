"""OpenAI chat.completion -> Anthropic message, and errors in Anthropic's JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edgeproxy.api.surfaces.messages_answer import error_response, error_type, to_message
from edgeproxy.errors import (
    AuthenticationError,
    BodyTooLarge,
    DeadlineExceeded,
    EdgeproxyError,
    ModelNotFound,
    ModelOverloaded,
    ModelUnavailable,
    PermissionDenied,
    RateLimited,
    RequestError,
    UpstreamError,
)


def completion(message: dict[str, Any], finish: str | None = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "mock-small",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }


def test_text_answer() -> None:
    message = to_message(completion({"role": "assistant", "content": "Hi there"}))
    assert message == {
        "id": "chatcmpl-1",
        "type": "message",
        "role": "assistant",
        "model": "mock-small",
        "content": [{"type": "text", "text": "Hi there"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 5},
    }


def test_tool_calls_become_tool_use_blocks_with_parsed_input() -> None:
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "noop", "arguments": "{bad"}},
    ]
    message = to_message(
        completion({"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls")
    )
    assert message["stop_reason"] == "tool_use"
    assert message["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "call_2", "name": "noop", "input": {}},
    ]


@pytest.mark.parametrize(
    ("finish", "stop_reason"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("tool_calls", "tool_use"),
        ("function_call", "tool_use"),
        ("content_filter", "refusal"),
        (None, "end_turn"),
        ("something_new", "end_turn"),
    ],
)
def test_stop_reasons(finish: str | None, stop_reason: str) -> None:
    message = to_message(completion({"role": "assistant", "content": "x"}, finish))
    assert message["stop_reason"] == stop_reason


def test_empty_answer_has_no_blocks_and_routing_metadata_is_kept() -> None:
    answer = {**completion({"role": "assistant", "content": ""}), "unified_routing": {"a": 1}}
    message = to_message(answer)
    assert message["content"] == []
    assert message["unified_routing"] == {"a": 1}


def test_content_parts_and_refusals_are_text() -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert to_message(completion({"content": parts}))["content"][0]["text"] == "ab"
    refused = to_message(completion({"content": None, "refusal": "No."}, "content_filter"))
    assert refused["content"] == [{"type": "text", "text": "No."}]


@pytest.mark.parametrize(
    ("exc", "status", "kind"),
    [
        (RequestError("bad"), 400, "invalid_request_error"),
        (BodyTooLarge("big"), 413, "request_too_large"),
        (ModelNotFound("gone"), 404, "not_found_error"),
        (AuthenticationError("who"), 401, "authentication_error"),
        (PermissionDenied("no"), 403, "permission_error"),
        (RateLimited("slow", retry_after=1.2), 429, "rate_limit_error"),
        (ModelOverloaded("busy", retry_after=7), 503, "overloaded_error"),
        (ModelUnavailable("config"), 503, "api_error"),
        (DeadlineExceeded("late"), 504, "api_error"),
        (UpstreamError("upstream 503", status=503), 503, "overloaded_error"),
        (
            UpstreamError("upstream 529", status=529, type="overloaded_error"),
            529,
            "overloaded_error",
        ),
        (UpstreamError("upstream 422", status=422), 422, "invalid_request_error"),
        (UpstreamError("upstream 500", status=500, type="server_error"), 500, "api_error"),
    ],
)
def test_error_response_keeps_status_and_uses_anthropic_types(
    exc: EdgeproxyError, status: int, kind: str
) -> None:
    response = error_response(exc, {"request-id": "r1"})
    assert response.status_code == status
    assert json.loads(response.body) == {
        "type": "error",
        "error": {"type": kind, "message": exc.message},
    }
    assert response.headers["request-id"] == "r1"


def test_retry_after_is_preserved_and_rounded_up() -> None:
    response = error_response(ModelOverloaded("busy", retry_after=6.2), {})
    assert response.headers["retry-after"] == "7"
    assert "retry-after" not in error_response(RequestError("bad"), {}).headers


def test_internal_errors_never_show_their_text() -> None:
    response = error_response(EdgeproxyError("secret detail sk-123"), {})
    assert response.status_code == 500
    body = json.loads(response.body)
    assert body["error"]["type"] == "api_error"
    assert "secret" not in body["error"]["message"]


def test_in_band_errors_map_by_code_then_type() -> None:
    assert error_type(None, "server_error", "model_overloaded") == "overloaded_error"
    assert error_type(None, "rate_limit_error", None) == "rate_limit_error"
    assert error_type(None, "invalid_request_error", "invalid_api_key") == "authentication_error"
    assert error_type(None, "invalid_request_error", None) == "invalid_request_error"
    assert error_type(None, "api_error", "upstream_stream_truncated") == "api_error"
    assert error_type(None, None, None) == "api_error"
