"""Anthropic Messages request bodies, checked shallowly and rewritten as OpenAI chat bodies.

    system (string or text blocks)      -> a leading ``system`` message
    user text / image blocks            -> ``user`` content parts (``image_url``)
    user tool_result blocks             -> ``tool`` messages, ahead of the user's other parts
    assistant text / tool_use blocks    -> ``assistant`` content and ``tool_calls``
    max_tokens, temperature, top_p      -> the same names
    stop_sequences                      -> ``stop``
    tools / tool_choice                 -> function tools / auto, required, none, function
    tool_choice.disable_parallel_tool_use -> ``parallel_tool_calls: false``

    cache_control marks                 -> kept on the parts, messages and tools
                                           (``routing.cache_marks``): Anthropic and
                                           Bedrock deployments get them, others not

Dropped, because no OpenAI chat field means the same: ``top_k`` (OpenAI's own
API rejects it), ``metadata``, ``thinking``,
``tool_result.is_error`` and assistant ``thinking`` blocks echoed from earlier
turns. Documents and server tools cannot be expressed and are rejected (400).
A ``cache_control`` that is not ``{"type": "ephemeral"}`` (with an optional
``ttl`` of ``5m`` or ``1h``) is a 400, as Anthropic answers it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from edgeproxy.api.codec import Parsed
from edgeproxy.api.parsing import model_problem
from edgeproxy.errors import RequestError
from edgeproxy.routing.cache_marks import MARK, mark_of

SURFACE = "anthropic.messages"
_TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
_ECHOED_ONLY = frozenset({"thinking", "redacted_thinking"})
_MARK_TTLS = frozenset({"5m", "1h"})
Located = tuple[str, dict[str, Any]]  # a content block and where it sits in the body


def to_chat_request(body: Mapping[str, Any]) -> Parsed:
    """Validate a Messages body and translate it; raises ``RequestError`` (400).

    >>> to_chat_request({"model": "m", "max_tokens": 5,
    ...                  "messages": [{"role": "user", "content": "hi"}]}).body["messages"]
    [{'role': 'user', 'content': 'hi'}]
    """
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise _invalid("model", "field required (a non-empty string)")
    if (problem := model_problem(model)) is not None:
        raise _invalid("model", problem)
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise _invalid("max_tokens", "field required (an integer >= 1)")
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise _invalid("stream", "must be a boolean")
    modalities = {"text"}
    messages = _system(body.get("system"))
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise _invalid("messages", "field required (a non-empty array)")
    for index, message in enumerate(raw):
        messages.extend(_message(message, f"messages.{index}", modalities))
    out: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens}
    for name in ("temperature", "top_p"):
        if body.get(name) is not None:
            out[name] = _number(body[name], name)
    stops = body.get("stop_sequences")
    if stops:
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise _invalid("stop_sequences", "must be an array of strings")
        out["stop"] = list(stops)
    if body.get("tools"):
        out["tools"] = _tools(body["tools"])
    if body.get("tool_choice") is not None:
        out.update(_tool_choice(body["tool_choice"], bool(out.get("tools"))))
    if stream:
        out["stream"] = True
        # Without it an OpenAI stream carries no usage, and message_delta needs it.
        out["stream_options"] = {"include_usage": True}
    return Parsed(model, out, bool(stream), frozenset(modalities))


def _invalid(param: str, problem: str) -> RequestError:
    return RequestError(f"{param}: {problem}", param=param)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(name, "must be a number")
    return value


def _system(system: Any) -> list[dict[str, Any]]:
    if system is None or system == "" or system == []:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    if isinstance(system, list):
        blocks = _blocks(system, "system")
        if all(b["type"] == "text" for _, b in blocks):
            if any(MARK in b for _, b in blocks):  # kept as parts: each mark stays where it was
                return [{"role": "system", "content": [_text(b) for _, b in blocks]}]
            return [{"role": "system", "content": "\n\n".join(b["text"] for _, b in blocks)}]
    raise _invalid("system", "must be a string or an array of text blocks")


def _message(message: Any, where: str, modalities: set[str]) -> list[dict[str, Any]]:
    if not isinstance(message, dict):
        raise _invalid(where, "must be an object")
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise _invalid(f"{where}.role", "must be 'user' or 'assistant'")
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise _invalid(f"{where}.content", "must be a string or an array of content blocks")
    blocks = _blocks(content, f"{where}.content")
    if role == "assistant":
        return [_assistant(blocks)]
    return _user(blocks, modalities)


def _blocks(blocks: list[Any], where: str) -> list[Located]:
    """Each block with its location (for error messages), its shape checked."""
    out: list[Located] = []
    for index, block in enumerate(blocks):
        at = f"{where}.{index}"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _invalid(at, "must be a content block object with a 'type'")
        kind = block["type"]
        if kind == "text" and not isinstance(block.get("text"), str):
            raise _invalid(f"{at}.text", "must be a string")
        if kind == "tool_use" and not (isinstance(block.get("id"), str) and block.get("name")):
            raise _invalid(at, "a tool_use block needs 'id' and 'name'")
        if kind == "tool_result" and not isinstance(block.get("tool_use_id"), str):
            raise _invalid(f"{at}.tool_use_id", "must be a string")
        if kind not in ("text", "image", "tool_use", "tool_result", *_ECHOED_ONLY):
            raise _invalid(f"{at}.type", f"content blocks of type '{kind}' are not supported here")
        _check_mark(block, at)
        out.append((at, block))
    return out


def _check_mark(value: dict[str, Any], at: str) -> None:
    if MARK not in value:
        return
    mark = value[MARK]
    ttl = mark.get("ttl") if isinstance(mark, dict) else None
    if (
        not isinstance(mark, dict)
        or mark.get("type") != "ephemeral"
        or set(mark) - {"type", "ttl"}
        or (ttl is not None and ttl not in _MARK_TTLS)
    ):
        raise _invalid(f"{at}.{MARK}", "must be {type: ephemeral} with an optional ttl (5m, 1h)")


def _marked(out: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """``out`` carrying ``source``'s cache mark, if it has one."""
    mark = mark_of(source)
    return out if mark is None else {**out, MARK: mark}


def _text(block: dict[str, Any]) -> dict[str, Any]:
    return _marked({"type": "text", "text": block["text"]}, block)


def _user(blocks: list[Located], modalities: set[str]) -> list[dict[str, Any]]:
    # OpenAI wants tool answers right after the assistant turn that asked, so
    # tool_result blocks become tool messages ahead of the user's other parts.
    tools: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for where, block in blocks:
        if block["type"] == "tool_result":
            text, images = _tool_result(block.get("content"), where)
            answer = {"role": "tool", "tool_call_id": block["tool_use_id"], "content": text}
            tools.append(_marked(answer, block))
            parts.extend(images)
        elif block["type"] == "text":
            parts.append(_text(block))
        elif block["type"] == "image":
            parts.append(_marked(_image(block, where), block))
        elif block["type"] == "tool_use":
            raise _invalid(where, "tool_use blocks belong in assistant messages")
    if any(p["type"] == "image_url" for p in parts):
        modalities.add("image")
    return tools + ([{"role": "user", "content": parts}] if parts else [])


def _tool_result(content: Any, where: str) -> tuple[str, list[dict[str, Any]]]:
    if content is None or isinstance(content, str):
        return content or "", []
    if not isinstance(content, list):
        raise _invalid(f"{where}.content", "must be a string or an array of content blocks")
    blocks = _blocks(content, f"{where}.content")
    text = "\n".join(b["text"] for _, b in blocks if b["type"] == "text")
    return text, [_image(b, at) for at, b in blocks if b["type"] == "image"]


def _image(block: dict[str, Any], at: str) -> dict[str, Any]:
    source = block.get("source")
    where = f"{at}.source"
    if isinstance(source, dict) and source.get("type") == "base64":
        media, data = source.get("media_type"), source.get("data")
        if not (isinstance(media, str) and isinstance(data, str)):
            raise _invalid(where, "a base64 image needs 'media_type' and 'data'")
        return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{data}"}}
    if isinstance(source, dict) and source.get("type") == "url":
        if not isinstance(source.get("url"), str):
            raise _invalid(f"{where}.url", "must be a string")
        return {"type": "image_url", "image_url": {"url": source["url"]}}
    raise _invalid(where, "must be a base64 or url image source")


def _assistant(blocks: list[Located]) -> dict[str, Any]:
    for where, block in blocks:
        if block["type"] in ("image", "tool_result"):
            raise _invalid(where, "assistant messages hold only text and tool_use blocks")
    texts = [b["text"] for _, b in blocks if b["type"] == "text"]
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})},
        }
        for _, b in blocks
        if b["type"] == "tool_use"
    ]
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    marks = [m for _, b in blocks if (m := mark_of(b)) is not None]
    if marks:  # a turn's marks apply at its end (its last block is where Anthropic caches to)
        out[MARK] = marks[-1]
    return out


def _tools(tools: Any) -> list[dict[str, Any]]:
    if not isinstance(tools, list):
        raise _invalid("tools", "must be an array")
    out = []
    for index, tool in enumerate(tools):
        where = f"tools.{index}"
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise _invalid(where, "must be an object with a 'name'")
        if tool.get("type") not in (None, "custom"):
            raise _invalid(f"{where}.type", f"server tools ('{tool['type']}') are not supported")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            raise _invalid(f"{where}.input_schema", "field required (a JSON Schema object)")
        function: dict[str, Any] = {"name": tool["name"], "parameters": schema}
        if isinstance(tool.get("description"), str):
            function["description"] = tool["description"]
        _check_mark(tool, where)
        out.append(_marked({"type": "function", "function": function}, tool))
    return out


def _tool_choice(choice: Any, has_tools: bool) -> dict[str, Any]:
    kind = choice.get("type") if isinstance(choice, dict) else None
    mapped: str | dict[str, Any]
    if kind in _TOOL_CHOICES:
        mapped = _TOOL_CHOICES[kind]
    elif kind == "tool" and isinstance(choice.get("name"), str):
        mapped = {"type": "function", "function": {"name": choice["name"]}}
    else:
        raise _invalid("tool_choice", "must be {type: auto|any|none} or {type: tool, name}")
    # OpenAI rejects tool_choice and parallel_tool_calls on a request without tools.
    if not has_tools:
        return {}
    out: dict[str, Any] = {"tool_choice": mapped}
    if choice.get("disable_parallel_tool_use") is True:
        out["parallel_tool_calls"] = False
    return out
