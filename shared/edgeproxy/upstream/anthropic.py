"""Anthropic Messages upstreams: OpenAI chat bodies translated both ways.

Only what maps cleanly is translated: system messages, text and image parts,
tools and tool results, sampling knobs, stop sequences. OpenAI-only knobs with
no Messages equivalent (``presence_penalty``, ``logprobs``, ...) are dropped,
as Anthropic's own OpenAI-compatibility layer does. What it cannot carry
(``n > 1``, content parts other than text and images) is declared in
``config.providers.CARRIAGE``: routing never picks it for such a request, and
``prepare`` refuses one as INCOMPATIBLE (an admin's pin).

Prompt-cache marks (``routing.cache_marks``) are carried as Anthropic's
``cache_control``: a part's on its block, a message's on that message's last
block, a tool's on the tool; a marked system message makes ``system`` a list
of text blocks (otherwise it stays one string).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from edgeproxy import strict_json
from edgeproxy.config.providers import PART, ProviderKind
from edgeproxy.routing.cache_marks import MARK, mark_of
from edgeproxy.upstream.adapter import Prepared, check_carried, refused
from edgeproxy.upstream.anthropic_stream import FINISH_REASONS, AnthropicChunks
from edgeproxy.upstream.call import UpstreamCall, Usage

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096


class AnthropicAdapter:
    """``POST {base_url}/messages`` with ``x-api-key`` and ``anthropic-version``."""

    def prepare(self, call: UpstreamCall) -> Prepared:
        """The Messages request for an OpenAI chat call; what it cannot carry is INCOMPATIBLE."""
        check_carried(call)
        headers = {
            "anthropic-version": API_VERSION,
            "accept": "text/event-stream" if call.stream else "application/json",
        }
        if call.credential:
            headers["x-api-key"] = call.credential
        body = to_messages_request(call.body, call.deployment.upstream_model, call.stream)
        return Prepared(path="/messages", headers=headers, body=body)

    def response(self, payload: dict[str, Any], created: int) -> dict[str, Any]:
        """The Messages answer as a ``chat.completion``."""
        return to_chat_completion(payload, created)

    def translator(
        self, created: int, secrets: Sequence[str | None], include_usage: bool = False
    ) -> AnthropicChunks:
        """A translator for one Messages event stream (a usage chunk at its end if asked)."""
        return AnthropicChunks(created, secrets, include_usage=include_usage)


def count_tokens_request(call: UpstreamCall) -> Prepared:
    """``POST {base_url}/messages/count_tokens`` for a client's Messages body, as it came.

    Only the model is replaced; ``stream`` and ``max_tokens`` are not part of
    this API's body.
    """
    headers = {"anthropic-version": API_VERSION, "accept": "application/json"}
    if call.credential:
        headers["x-api-key"] = call.credential
    body = {k: v for k, v in call.body.items() if k not in ("stream", "max_tokens")}
    body["model"] = call.deployment.upstream_model
    return Prepared(path="/messages/count_tokens", headers=headers, body=body)


def to_messages_request(body: Mapping[str, Any], model: str, stream: bool) -> dict[str, Any]:
    """Translate an OpenAI chat body to an Anthropic Messages body.

    The body must be one Anthropic can carry (``prepare`` checks it first:
    ``check_carried``); ``n`` is not read.
    """
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for message in body.get("messages") or []:
        role = message.get("role")
        if role in ("system", "developer"):
            system.extend(_system_blocks(message))
            continue
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id", ""),
                "content": _text_of(message.get("content")),
            }
            _append(messages, "user", _ending_marked([block], message))
        elif role == "assistant":
            _append(messages, "assistant", _ending_marked(_assistant_blocks(message), message))
        else:
            _append(messages, "user", _ending_marked(_blocks(message.get("content")), message))
    out: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": body.get("max_completion_tokens")
        or body.get("max_tokens")
        or DEFAULT_MAX_TOKENS,
    }
    if any(MARK in b for b in system):
        out["system"] = system
    elif system:
        out["system"] = "\n\n".join(b["text"] for b in system)
    for name in ("temperature", "top_p", "top_k"):
        if body.get(name) is not None:
            out[name] = body[name]
    stop = body.get("stop")
    if stop:
        out["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if body.get("tools"):
        out["tools"] = [_tool(t) for t in body["tools"]]
    choice = _tool_choice(body.get("tool_choice"))
    if choice is not None:
        out["tool_choice"] = choice
    if isinstance(body.get("user"), str):
        out["metadata"] = {"user_id": body["user"]}
    if stream:
        out["stream"] = True
    return out


def to_chat_completion(message: Mapping[str, Any], created: int) -> dict[str, Any]:
    """Translate an Anthropic Messages answer to an OpenAI ``chat.completion``."""
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for block in message.get("content") or []:
        if block.get("type") == "text":
            texts.append(block.get("text", ""))
        elif block.get("type") == "tool_use":
            tool_calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    "function": {
                        "name": block.get("name"),
                        "arguments": json.dumps(block.get("input") or {}),
                    },
                }
            )
    reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if tool_calls:
        reply["tool_calls"] = tool_calls
    usage = Usage.from_anthropic(message.get("usage"))
    return {
        "id": message.get("id"),
        "object": "chat.completion",
        "created": created,
        "model": message.get("model"),
        "choices": [
            {
                "index": 0,
                "message": reply,
                "finish_reason": FINISH_REASONS.get(message.get("stop_reason") or ""),
                "logprobs": None,
            }
        ],
        "usage": usage.openai_fields(),
    }


def _append(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    # Messages wants user and assistant turns to alternate; OpenAI bodies may
    # repeat a role (several tool results in a row), so same-role turns merge.
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].extend(blocks)
    else:
        messages.append({"role": role, "content": blocks})


def _system_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A system message as text blocks: one per part when a part is marked, else one."""
    content = message.get("content")
    if isinstance(content, list) and any(mark_of(p) is not None for p in content):
        blocks = [_with_mark({"type": "text", "text": p.get("text", "")}, p) for p in content]
        blocks = [b for b in blocks if b["text"]]
    else:
        blocks = [{"type": "text", "text": _text_of(content)}]
    return _ending_marked(blocks, message)


def _with_mark(block: dict[str, Any], source: Any) -> dict[str, Any]:
    mark = mark_of(source)
    return block if mark is None else {**block, MARK: mark}


def _ending_marked(
    blocks: list[dict[str, Any]], message: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """``blocks`` with ``message``'s own mark on the last one (a mark applies at its end)."""
    mark = mark_of(message)
    if mark is None or not blocks:
        return blocks
    return [*blocks[:-1], {**blocks[-1], MARK: mark}]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""


def _blocks(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            blocks.append(_with_mark({"type": "text", "text": part.get("text", "")}, part))
        elif kind == "image_url":
            blocks.append(_with_mark(_image(part.get("image_url") or {}), part))
        else:
            raise refused(ProviderKind.ANTHROPIC, {f"{PART}{kind}"})
    return blocks


def _image(image: Mapping[str, Any]) -> dict[str, Any]:
    url = str(image.get("url", ""))
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type = header[5:].split(";")[0]
        source = {"type": "base64", "media_type": media_type, "data": data}
    else:
        source = {"type": "url", "url": url}
    return {"type": "image", "source": source}


def _assistant_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    blocks = [b for b in _blocks(message.get("content")) if b.get("text") != ""]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = strict_json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id", ""),
                "name": function.get("name", ""),
                "input": arguments,
            }
        )
    return blocks


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    out: dict[str, Any] = {
        "name": function.get("name", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if function.get("description"):
        out["description"] = function["description"]
    return _with_mark(out, tool)


def _tool_choice(choice: Any) -> dict[str, Any] | None:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name")
        if name:
            return {"type": "tool", "name": name}
    return None
