"""OpenAI chat bodies as Bedrock Converse requests, and Converse answers as ``chat.completion``s.

    OpenAI                                  Converse
    system / developer messages             system: [{text}]
    user text, image_url (data: URLs)       {text}, {image: {format, source: {bytes}}}
    assistant content, tool_calls           {text}, {toolUse: {toolUseId, name, input}}
    tool messages                           user turn of {toolResult: {toolUseId, content}}
    max_completion_tokens / max_tokens      inferenceConfig.maxTokens
    temperature, top_p, stop                inferenceConfig.temperature, topP, stopSequences
    tools, tool_choice                      toolConfig.tools[].toolSpec, toolConfig.toolChoice
    cache_control marks (cache_marks)       a {cachePoint: {type: default}} after the marked
                                            block, message (its end), system text or tool

What has no Converse equivalent is dropped (``presence_penalty``, ``seed``,
``logprobs``, ...), as for Anthropic; what would change the answer's meaning
if dropped is declared in ``config.providers.CARRIAGE`` (routing never picks
Bedrock for it) and refused here as INCOMPATIBLE: ``n > 1``, a
``response_format`` other than text, image URLs that are not ``data:`` URLs
(Converse takes image bytes, not links), other content parts; so is a
``data:`` image that is not base64 png, jpeg, gif or webp.
``tool_choice: none`` sends no tools (unless the history holds tool calls,
which Converse only accepts with the tools declared).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from edgeproxy import strict_json
from edgeproxy.config.providers import PART, ProviderKind
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.cache_marks import mark_of
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.adapter import check_carried, refused
from edgeproxy.upstream.call import UpstreamCall, Usage
from edgeproxy.upstream.errors import fault

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}


def to_converse(call: UpstreamCall) -> dict[str, Any]:
    """The keyword arguments of ``converse`` / ``converse_stream`` for an OpenAI chat call."""
    check_carried(call)
    body = call.body
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for message in body.get("messages") or []:
        role = message.get("role")
        if role in ("system", "developer"):
            system.extend(_system_blocks(message))
        elif role == "tool":
            result = {
                "toolUseId": str(message.get("tool_call_id", "")),
                "content": [{"text": _text_of(message.get("content")) or " "}],
            }
            _append(messages, "user", _ending_marked([{"toolResult": result}], message))
        elif role == "assistant":
            _append(messages, "assistant", _ending_marked(_assistant_blocks(message), message))
        else:
            _append(messages, "user", _ending_marked(_blocks(message.get("content")), message))
    out: dict[str, Any] = {"modelId": call.deployment.upstream_model, "messages": messages}
    if system:
        out["system"] = system
    inference = _inference(body)
    if inference:
        out["inferenceConfig"] = inference
    tools = _tool_config(body, messages)
    if tools:
        out["toolConfig"] = tools
    return out


def to_chat_completion(
    answer: Mapping[str, Any], model: str, answer_id: str, created: int
) -> dict[str, Any]:
    """A ``converse`` answer as an OpenAI ``chat.completion``."""
    message = (answer.get("output") or {}).get("message") or {}
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for block in message.get("content") or []:
        if "text" in block:
            texts.append(str(block["text"]))
        elif "toolUse" in block:
            use = block["toolUse"]
            tool_calls.append(
                {
                    "id": use.get("toolUseId"),
                    "type": "function",
                    "function": {
                        "name": use.get("name"),
                        "arguments": json.dumps(use.get("input") or {}),
                    },
                }
            )
    reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if tool_calls:
        reply["tool_calls"] = tool_calls
    usage = usage_of(answer.get("usage"))
    return {
        "id": answer_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": reply,
                "finish_reason": finish_reason(answer.get("stopReason")),
                "logprobs": None,
            }
        ],
        "usage": usage.openai_fields(),
    }


def finish_reason(stop_reason: Any) -> str | None:
    """The OpenAI ``finish_reason`` for a Converse ``stopReason`` (unknown ones: ``stop``)."""
    if not isinstance(stop_reason, str):
        return None
    return FINISH_REASONS.get(stop_reason, "stop")


def usage_of(usage: Any) -> Usage:
    """The tokens of a Converse ``usage`` object (0 when missing). Its ``inputTokens``
    leave out ``cacheReadInputTokens`` and ``cacheWriteInputTokens``, as Anthropic's do."""
    if not isinstance(usage, Mapping):
        return Usage()
    return Usage.from_anthropic(
        {
            "input_tokens": usage.get("inputTokens"),
            "output_tokens": usage.get("outputTokens"),
            "cache_read_input_tokens": usage.get("cacheReadInputTokens"),
            "cache_creation_input_tokens": usage.get("cacheWriteInputTokens"),
        }
    )


def _incompatible(message: str) -> UpstreamFault:
    return fault(FaultKind.INCOMPATIBLE, message)


def _append(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    # Converse wants user and assistant turns to alternate; OpenAI bodies may
    # repeat a role (several tool results in a row), so same-role turns merge.
    if not blocks:
        return
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].extend(blocks)
    else:
        messages.append({"role": role, "content": blocks})


def _system_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, list) and any(mark_of(p) is not None for p in content):
        blocks: list[dict[str, Any]] = []
        for part in content:
            if part.get("type") == "text" and part.get("text"):
                blocks.append({"text": str(part["text"])})
            if mark_of(part) is not None and blocks:
                blocks.append(_cache_point())
        return _ending_marked(blocks, message)
    text = _text_of(content)
    return _ending_marked([{"text": text}] if text else [], message)


def _cache_point() -> dict[str, Any]:
    """Converse's cache checkpoint: everything before it is cached (``cache_control``'s place)."""
    return {"cachePoint": {"type": "default"}}


def _ending_marked(
    blocks: list[dict[str, Any]], message: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """``blocks`` and a cache point after them when ``message`` itself is marked."""
    if mark_of(message) is None or not blocks or "cachePoint" in blocks[-1]:
        return blocks
    return [*blocks, _cache_point()]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return ""


def _blocks(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):
                blocks.append({"text": str(part["text"])})
        elif kind == "image_url":
            blocks.append(_image(part.get("image_url") or {}))
        else:
            raise refused(ProviderKind.BEDROCK, {f"{PART}{kind}"})
        if mark_of(part) is not None and blocks and "cachePoint" not in blocks[-1]:
            blocks.append(_cache_point())
    return blocks


def _image(image: Mapping[str, Any]) -> dict[str, Any]:
    url = str(image.get("url", ""))
    header, _, data = url.partition(",")
    media_type = header[5:].split(";")[0] if header.startswith("data:") else ""
    image_format = _IMAGE_FORMATS.get(media_type)
    if image_format is None or ";base64" not in header:
        raise _incompatible(
            "Bedrock deployments take images as base64 data: URLs (png, jpeg, gif, webp)"
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _incompatible("an image data: URL is not valid base64") from None
    return {"image": {"format": image_format, "source": {"bytes": raw}}}


def _assistant_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    blocks = _blocks(message.get("content"))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = strict_json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        blocks.append(
            {
                "toolUse": {
                    "toolUseId": str(call.get("id", "")),
                    "name": str(function.get("name", "")),
                    "input": arguments if isinstance(arguments, dict) else {},
                }
            }
        )
    return blocks


def _inference(body: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    if isinstance(max_tokens, int):
        out["maxTokens"] = max_tokens
    for name, key in (("temperature", "temperature"), ("top_p", "topP")):
        if isinstance(body.get(name), int | float):
            out[key] = body[name]
    stop = body.get("stop")
    if stop:
        out["stopSequences"] = [stop] if isinstance(stop, str) else list(stop)
    return out


def _tool_config(body: Mapping[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    tools = body.get("tools") or []
    choice = body.get("tool_choice")
    history = any("toolUse" in b or "toolResult" in b for m in messages for b in m["content"])
    if not tools or (choice == "none" and not history):
        return {}
    specs: list[dict[str, Any]] = []
    for tool in tools:
        specs.append({"toolSpec": _tool_spec(tool)})
        if mark_of(tool) is not None:
            specs.append(_cache_point())
    out: dict[str, Any] = {"tools": specs}
    if choice == "required":
        out["toolChoice"] = {"any": {}}
    elif choice == "auto":
        out["toolChoice"] = {"auto": {}}
    elif isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name")
        if name:
            out["toolChoice"] = {"tool": {"name": str(name)}}
    return out


def _tool_spec(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    spec: dict[str, Any] = {
        "name": str(function.get("name", "")),
        "inputSchema": {"json": function.get("parameters") or {"type": "object", "properties": {}}},
    }
    if function.get("description"):
        spec["description"] = str(function["description"])
    return spec
