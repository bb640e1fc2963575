"""OpenAI answers and errors, rewritten in the Anthropic Messages shape.

    finish_reason    stop_reason
    stop          -> end_turn (OpenAI does not say whether a stop sequence matched)
    length        -> max_tokens
    tool_calls    -> tool_use (also the legacy function_call)
    content_filter-> refusal (what Anthropic says when its own classifiers stop a turn)
    null / other  -> end_turn

Errors keep the HTTP status the OpenAI surface gives; the Anthropic ``type``
comes from the error's code when it is specific, else from the status
(``anthropic_errors``, the one status/type table).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse

from edgeproxy import strict_json
from edgeproxy.anthropic_errors import STATUS_BY_TYPE, type_of
from edgeproxy.api.errors import error_headers
from edgeproxy.errors import EdgeproxyError
from edgeproxy.service.stream.events import Usage

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
_BY_CODE = {
    "model_not_found": "not_found_error",
    "invalid_api_key": "authentication_error",
    "permission_denied": "permission_error",
    "rate_limit_exceeded": "rate_limit_error",
    "model_overloaded": "overloaded_error",
    "model_unavailable": "api_error",  # misconfiguration: waiting will not help
    "request_too_large": "request_too_large",
}
# Our own 503 (every deployment cooling down) is what Anthropic calls overloaded.
_OVERLOADED_STATUS = 503


def stop_reason(finish_reason: Any) -> str:
    """The Anthropic ``stop_reason`` for an OpenAI ``finish_reason``."""
    return STOP_REASONS.get(finish_reason, "end_turn") if finish_reason else "end_turn"


def error_type(status: int | None, openai_type: Any = None, code: Any = None) -> str:
    """The Anthropic error ``type`` for an error seen as (HTTP status, OpenAI type, code)."""
    if isinstance(code, str) and code in _BY_CODE:
        return _BY_CODE[code]
    if status is not None:
        if status == _OVERLOADED_STATUS:
            return "overloaded_error"
        return type_of(status) or ("api_error" if status >= 500 else "invalid_request_error")
    # In-band errors carry no status; Anthropic upstreams' own types pass through.
    if isinstance(openai_type, str) and openai_type in STATUS_BY_TYPE:
        return openai_type
    return "api_error"


def error_body(kind: str, message: str) -> dict[str, Any]:
    """Anthropic's error JSON."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def from_openai_error(error: Mapping[str, Any], status: int | None = None) -> dict[str, Any]:
    """Anthropic's error JSON for an OpenAI ``{"message", "type", "code"}`` object."""
    kind = error_type(status, error.get("type"), error.get("code"))
    return error_body(kind, str(error.get("message") or "The request failed."))


def error_json(exc: EdgeproxyError, status: int | None) -> dict[str, Any]:
    """Anthropic's error JSON for ``exc``; ``status`` is None for an in-band stream error."""
    error = exc.body()["error"]
    assert isinstance(error, dict)  # body() always builds this object; it also hides secrets
    return from_openai_error(error, status)


def error_response(exc: EdgeproxyError, headers: Mapping[str, str]) -> JSONResponse:
    """The Messages client's view of ``exc``: its status, Anthropic's body, Retry-After."""
    out = {**headers, **error_headers(exc)}
    return JSONResponse(error_json(exc, exc.status), status_code=exc.status, headers=out)


def to_message(completion: Mapping[str, Any]) -> dict[str, Any]:
    """An Anthropic ``message`` for an OpenAI ``chat.completion`` (its first choice).

    >>> answer = {"id": "c1", "model": "m", "choices": [
    ...     {"message": {"content": "hi"}, "finish_reason": "length"}]}
    >>> message = to_message(answer)
    >>> message["content"], message["stop_reason"]
    ([{'type': 'text', 'text': 'hi'}], 'max_tokens')
    """
    choices = completion.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], Mapping) else {}
    reply = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    text = _text(reply.get("content")) or _text(reply.get("refusal"))
    if text:
        content.append({"type": "text", "text": text})
    for call in reply.get("tool_calls") or []:
        function = call.get("function") or {}
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{uuid.uuid4().hex[:24]}",
                "name": function.get("name") or "",
                "input": tool_input(function.get("arguments")),
            }
        )
    usage = Usage.from_openai(completion.get("usage")) or Usage()
    message: dict[str, Any] = {
        "id": completion.get("id") or f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": completion.get("model"),
        "content": content,
        "stop_reason": stop_reason(choice.get("finish_reason")),
        "stop_sequence": None,
        "usage": {**usage.anthropic_fields(), "output_tokens": usage.completion_tokens},
    }
    if "unified_routing" in completion:
        message["unified_routing"] = completion["unified_routing"]
    return message


def tool_input(arguments: Any) -> dict[str, Any]:
    """A tool call's ``arguments`` JSON as the object Anthropic's ``input`` must be.

    Unparseable or non-object arguments become ``{}``, as the Anthropic upstream
    adapter does in the other direction.
    """
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        value = strict_json.loads(arguments) if isinstance(arguments, str) and arguments else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Some OpenAI-compatible servers answer with content parts, not a string.
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    return ""
