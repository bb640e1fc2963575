"""Chat completions rewritten as Responses API ``response`` objects.

    message.content / refusal   -> a ``message`` item (``output_text`` / ``refusal``)
    message.tool_calls          -> ``function_call`` items (``call_id`` is the chat call's id)
    finish_reason length        -> status ``incomplete``, reason ``max_output_tokens``
    finish_reason content_filter-> status ``incomplete``, reason ``content_filter``
    otherwise                   -> status ``completed``
    usage                       -> input_tokens / output_tokens (cached, reasoning details)

A native deployment's answer (``object: response``) is already one and is
returned as it is. Request settings are not echoed in a translated answer
(``tools: []``, ``tool_choice: auto``, ...); ``store`` is always false there.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from edgeproxy.service.stream.events import Usage

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def new_id(prefix: str) -> str:
    """A fresh id in the Responses API's style (``resp_...``, ``msg_...``, ``fc_...``)."""
    return f"{prefix}_{uuid.uuid4().hex}"


def status_of(finish_reason: Any) -> tuple[str, dict[str, str] | None]:
    """The response ``status`` and ``incomplete_details`` for a chat finish reason."""
    reason = _INCOMPLETE.get(finish_reason) if isinstance(finish_reason, str) else None
    return ("incomplete", {"reason": reason}) if reason else ("completed", None)


def usage_object(usage: Usage | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The Responses API ``usage`` for chat usage (a ``Usage`` or chat's JSON object)."""
    if usage is None:
        return None
    details: Mapping[str, Any] = {}
    if isinstance(usage, Mapping):
        read = Usage.from_openai(usage) or Usage()
        details = usage
    else:
        read = usage
    cached = (details.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (details.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    return {
        "input_tokens": read.prompt_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": read.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": read.total_tokens,
    }


def response_object(
    response_id: str,
    model: Any,
    status: str,
    output: list[dict[str, Any]],
    *,
    created_at: int,
    usage: dict[str, Any] | None = None,
    incomplete: dict[str, str] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``response`` object with the fields the SDKs read."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "error": error,
        "incomplete_details": incomplete,
        "instructions": None,
        "max_output_tokens": None,
        "model": str(model or ""),
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": None,
        "store": False,
        "temperature": None,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {},
    }


def message_item(item_id: str, text: str, status: str, *, refusal: bool = False) -> dict[str, Any]:
    """An assistant ``message`` output item holding ``text`` (or a refusal)."""
    part: dict[str, Any] = (
        {"type": "refusal", "refusal": text}
        if refusal
        else {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    )
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [part],
    }


def call_item(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    """A ``function_call`` output item."""
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def to_response(completion: Mapping[str, Any], now: float) -> dict[str, Any]:
    """A ``response`` for a ``chat.completion`` (its first choice); native answers pass.

    ``created_at`` is the completion's ``created``, or ``now`` when it has none.

    >>> answer = {"id": "c1", "model": "m", "choices": [
    ...     {"message": {"content": "hi"}, "finish_reason": "stop"}]}
    >>> response = to_response(answer, 0.0)
    >>> response["status"], response["output"][0]["content"][0]["text"]
    ('completed', 'hi')
    """
    if completion.get("object") == "response":
        return dict(completion)
    choices = completion.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], Mapping) else {}
    reply = choice.get("message") or {}
    output: list[dict[str, Any]] = []
    content, refusal = _text(reply.get("content")), _text(reply.get("refusal"))
    if content or refusal:
        text, is_refusal = (content, False) if content else (refusal, True)
        output.append(message_item(new_id("msg"), text, "completed", refusal=is_refusal))
    for call in reply.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        output.append(
            call_item(
                new_id("fc"),
                str(call.get("id") or new_id("call")),
                str(function.get("name") or ""),
                arguments if isinstance(arguments, str) else "{}",
                "completed",
            )
        )
    status, incomplete = status_of(choice.get("finish_reason"))
    created = completion.get("created")
    response = response_object(
        new_id("resp"),
        completion.get("model"),
        status,
        output,
        created_at=created if isinstance(created, int) else int(now),
        usage=usage_object(completion.get("usage") or {}),
        incomplete=incomplete,
    )
    if "unified_routing" in completion:
        response["unified_routing"] = completion["unified_routing"]
    return response


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Some OpenAI-compatible servers answer with content parts, not a string.
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    return ""
