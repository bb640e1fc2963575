"""The mock upstream's Bedrock side: Converse answers, ConverseStream frames, AWS errors.

    POST /model/{modelId}/converse          a Converse JSON answer
    POST /model/{modelId}/converse-stream   the same answer as event-stream frames

Requests must be SigV4-signed for the ``bedrock`` service (any credentials:
the signature itself is not checked). Errors are AWS JSON errors: the
exception name in ``x-amzn-ErrorType`` and ``{"message": ...}``; a fault's
``error.code`` picks the exception, else the status does. A fault's
``tool_call`` ({"name": ..., "arguments": {...} or JSON text}) makes the answer a tool use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from edgeproxy_dev import mock_answers as answers
from edgeproxy_dev import mock_eventstream as eventstream

STREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
_EXCEPTIONS = {
    400: (
        "ValidationException",
        "Malformed input request, please reformat your input and try again.",
    ),
    403: (
        "AccessDeniedException",
        "You don't have access to the model with the specified model ID.",
    ),
    404: (
        "ResourceNotFoundException",
        "Could not resolve the foundation model from the model identifier.",
    ),
    408: ("ModelTimeoutException", "Model has timed out in processing the request."),
    424: ("ModelErrorException", "The model failed to process the request."),
    429: ("ThrottlingException", "Too many requests, please wait before trying again."),
    500: ("InternalServerException", "The server encountered an internal error."),
    503: (
        "ServiceUnavailableException",
        "The service is temporarily unable to handle the request.",
    ),
}


def route(path: str) -> tuple[str, str] | None:
    """``(operation, model id)`` for a Bedrock runtime path, or ``None``."""
    parts = path.split("/")
    if len(parts) == 4 and parts[1] == "model" and parts[3] in ("converse", "converse-stream"):
        return parts[3], unquote(parts[2])
    return None


def signed(headers: Mapping[str, str]) -> bool:
    """Whether the request carries a SigV4 signature for the ``bedrock`` service."""
    auth = headers.get("authorization", "")
    return auth.startswith("AWS4-HMAC-SHA256 Credential=") and "/bedrock/aws4_request" in auth


def error(status: int, override: Mapping[str, Any] | None) -> tuple[dict[str, str], dict[str, Any]]:
    """Headers and body of an AWS JSON error answer."""
    name, message = _EXCEPTIONS.get(status, ("InternalServerException", f"mock error {status}"))
    if override:
        name = str(override.get("code") or name)
        message = str(override.get("message") or message)
    return {"x-amzn-errortype": f"{name}:http://internal.amazon.com/coral/com.amazon.bedrock/"}, {
        "message": message
    }


def last_text(body: Mapping[str, Any]) -> str:
    """The last user turn's text (a tool result's text when that is what it holds)."""
    for message in reversed(body.get("messages") or []):
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        texts: list[str] = []
        for block in message.get("content") or []:
            if "text" in block:
                texts.append(str(block["text"]))
            elif "toolResult" in block:
                content = block["toolResult"].get("content") or []
                texts.extend(str(part.get("text", "")) for part in content)
        return " ".join(texts)
    return ""


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """Prompt size: the serialized messages and system blocks."""
    return answers.count_tokens(
        json.dumps(body.get("messages") or []) + json.dumps(body.get("system") or [])
    )


def converse(
    content: str, finish: str | None, prompt: int, tool: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A Converse answer."""
    blocks: list[dict[str, Any]] = [{"text": content}] if content else []
    stop = _STOP_REASONS.get(finish or "", "end_turn")
    if tool is not None:
        blocks.append({"toolUse": _tool_use(tool)})
        stop = "tool_use"
    completion = len(answers.pieces(content)) + (5 if tool else 0)
    return {
        "output": {"message": {"role": "assistant", "content": blocks}},
        "stopReason": stop,
        "usage": {
            "inputTokens": prompt,
            "outputTokens": completion,
            "totalTokens": prompt + completion,
        },
        "metrics": {"latencyMs": 1},
    }


def frames(
    content: str, finish: str | None, prompt: int, tool: Mapping[str, Any] | None, *, no_done: bool
) -> list[bytes]:
    """The ConverseStream frames for the same answer (``no_done``: without the metadata event)."""
    parts = answers.pieces(content)
    out = [eventstream.event("messageStart", {"role": "assistant"})]
    out += [
        eventstream.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": part}})
        for part in parts
    ]
    out.append(eventstream.event("contentBlockStop", {"contentBlockIndex": 0}))
    stop = _STOP_REASONS.get(finish or "", "end_turn")
    if tool is not None:
        use = _tool_use(tool)
        start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
        arguments = json.dumps(use["input"])
        half = len(arguments) // 2
        out.append(eventstream.event("contentBlockStart", {"contentBlockIndex": 1, "start": start}))
        for piece in (arguments[:half], arguments[half:]):
            delta = {"contentBlockIndex": 1, "delta": {"toolUse": {"input": piece}}}
            out.append(eventstream.event("contentBlockDelta", delta))
        out.append(eventstream.event("contentBlockStop", {"contentBlockIndex": 1}))
        stop = "tool_use"
    if finish is not None or tool is not None:
        out.append(eventstream.event("messageStop", {"stopReason": stop}))
    if not no_done:
        completion = len(parts) + (5 if tool else 0)
        usage = {
            "inputTokens": prompt,
            "outputTokens": completion,
            "totalTokens": prompt + completion,
        }
        out.append(eventstream.event("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
    return out


def stream_exception(override: Mapping[str, Any] | None) -> bytes:
    """An exception frame (default ``internalServerException``); ``error.code`` picks another."""
    name = str((override or {}).get("code") or "internalServerException")
    message = str((override or {}).get("message") or "The stream failed.")
    return eventstream.exception(name[:1].lower() + name[1:], message)


def _tool_use(tool: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "toolUseId": str(tool.get("id") or "tooluse_mock_1"),
        "name": str(tool.get("name") or "tool"),
        "input": _arguments(tool.get("arguments")),
    }


def _arguments(value: Any) -> dict[str, Any]:
    """A tool call's arguments as an object (the other protocols' faults give JSON text)."""
    if isinstance(value, str):
        value = json.loads(value or "{}")
    return dict(value or {})
