"""Deterministic answers of the mock upstream, in OpenAI and Anthropic shapes.

Content is an echo naming the upstream ("Hello from a! You said: ..."), the
``model`` is the requested one, ``system_fingerprint`` is ``mock-<name>``, and
token counts are derived from text length, so tests can assert on all of them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

_PIECE = re.compile(r"\S+\s*|\s+")
# name, seq, model, content, finish_reason, prompt tokens: what every answer builder takes
Args = tuple[str, int, str, str, str | None, int]
FINISH_TO_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def count_tokens(text: str) -> int:
    """A stand-in tokenizer: about four characters a token, at least one."""
    return max(1, (len(text) + 3) // 4)


def pieces(content: str) -> list[str]:
    """The content split into stream deltas (one word and its trailing space each)."""
    return _PIECE.findall(content)


def limited(content: str, finish: str | None, body: Mapping[str, Any]) -> tuple[str, str | None]:
    """``content`` cut at the request's output limit (a word a token), and its finish reason."""
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    parts = pieces(content)
    if isinstance(limit, int) and len(parts) > limit:
        return "".join(parts[:limit]), "length"
    return content, finish


def last_user_text(body: Mapping[str, Any]) -> str:
    """The text of the last user message (OpenAI or Anthropic body), or a completion's prompt."""
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], str):
        return prompt[-1]
    for message in reversed(body.get("messages") or []):
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def prefill(body: Mapping[str, Any]) -> str | None:
    """The assistant text a request ends with (a prefill to continue), if it does."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else None
    if not isinstance(last, Mapping) or last.get("role") != "assistant":
        return None
    content = last.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return None


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """Prompt size: the serialized messages (plus Anthropic's system and tools), or prompt."""
    text = json.dumps(body.get("messages") or []) + str(body.get("system") or "")
    if body.get("tools"):
        text += json.dumps(body["tools"])
    if body.get("prompt") is not None:
        text += json.dumps(body["prompt"])
    return count_tokens(text)


def chat_completion(
    name: str, seq: int, model: str, content: str, finish: str | None, prompt: int
) -> dict[str, Any]:
    """A ``chat.completion`` answer."""
    completion = len(pieces(content))
    return {
        "id": f"chatcmpl-mock-{name}-{seq}",
        "object": "chat.completion",
        "created": 1_700_000_000 + seq,
        "model": model,
        "system_fingerprint": f"mock-{name}",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": finish,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def chat_chunks(
    name: str,
    seq: int,
    model: str,
    content: str,
    finish: str | None,
    prompt: int,
    include_usage: bool,
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` sequence for ``content`` (without ``[DONE]``)."""

    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-mock-{name}-{seq}",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000 + seq,
            "model": model,
            "system_fingerprint": f"mock-{name}",
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}],
        }

    parts = pieces(content)
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": part}) for part in parts]
    if finish is not None:
        chunks.append(chunk({}, finish))
    if include_usage:
        usage = chunk({})
        usage["choices"] = []
        usage["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": len(parts),
            "total_tokens": prompt + len(parts),
        }
        chunks.append(usage)
    return chunks


def text_completion(
    name: str, seq: int, model: str, content: str, finish: str | None, prompt: int
) -> dict[str, Any]:
    """A legacy ``text_completion`` answer."""
    completion = len(pieces(content))
    return {
        "id": f"cmpl-mock-{name}-{seq}",
        "object": "text_completion",
        "created": 1_700_000_000 + seq,
        "model": model,
        "system_fingerprint": f"mock-{name}",
        "choices": [{"index": 0, "text": content, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def text_chunks(
    name: str,
    seq: int,
    model: str,
    content: str,
    finish: str | None,
    prompt: int,
    include_usage: bool,
) -> list[dict[str, Any]]:
    """The streamed ``text_completion`` objects for ``content`` (without ``[DONE]``)."""

    def chunk(text: str, reason: str | None = None) -> dict[str, Any]:
        return {
            "id": f"cmpl-mock-{name}-{seq}",
            "object": "text_completion",
            "created": 1_700_000_000 + seq,
            "model": model,
            "system_fingerprint": f"mock-{name}",
            "choices": [{"index": 0, "text": text, "finish_reason": reason, "logprobs": None}],
        }

    parts = pieces(content)
    chunks = [chunk(part) for part in parts]
    if finish is not None:
        chunks.append(chunk("", finish))
    if include_usage:
        usage = chunk("")
        usage["choices"] = []
        usage["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": len(parts),
            "total_tokens": prompt + len(parts),
        }
        chunks.append(usage)
    return chunks


def anthropic_message(
    name: str, seq: int, model: str, content: str, finish: str | None, prompt: int
) -> dict[str, Any]:
    """An Anthropic Messages answer."""
    return {
        "id": f"msg_mock_{name}_{seq}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": content}] if content else [],
        "stop_reason": FINISH_TO_STOP.get(finish or ""),
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": len(pieces(content))},
    }


def anthropic_events(
    name: str, seq: int, model: str, content: str, finish: str | None, prompt: int
) -> list[dict[str, Any]]:
    """The Messages stream events for ``content`` (without ``message_stop``)."""
    message = anthropic_message(name, seq, model, "", None, prompt)
    message["usage"]["output_tokens"] = 1
    parts = pieces(content)
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
    ]
    events += [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
        for p in parts
    ]
    events += [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": FINISH_TO_STOP.get(finish or ""), "stop_sequence": None},
            "usage": {"output_tokens": len(parts)},
        },
    ]
    return events


def embeddings(model: str, inputs: Any) -> dict[str, Any]:
    """An embeddings answer: 8 floats per input, derived from its hash."""
    items = inputs if isinstance(inputs, list) else [inputs]
    data = []
    tokens = 0
    for index, item in enumerate(items):
        text = item if isinstance(item, str) else json.dumps(item)
        tokens += count_tokens(text)
        digest = hashlib.sha256(text.encode()).digest()
        vector = [round(b / 255.0 - 0.5, 6) for b in digest[:8]]
        data.append({"object": "embedding", "index": index, "embedding": vector})
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def with_cache(usage: dict[str, Any], anthropic: bool, read: int, write: int) -> None:
    """Make ``usage`` report ``read`` and ``write`` prompt-cache tokens beside its prompt,
    as each provider does: Anthropic apart from ``input_tokens``; OpenAI counts reads inside
    ``prompt_tokens`` (``prompt_tokens_details.cached_tokens``) and reports no writes."""
    if not read and not write:
        return
    if anthropic:
        usage["cache_read_input_tokens"] = read
        usage["cache_creation_input_tokens"] = write
        return
    usage["prompt_tokens"] += read
    usage["total_tokens"] = usage["prompt_tokens"] + usage.get("completion_tokens", 0)
    usage["prompt_tokens_details"] = {"cached_tokens": read}


def sse_frames(
    anthropic: bool,
    args: Args,
    body: Mapping[str, Any],
    *,
    text: bool = False,
    cache: tuple[int, int] = (0, 0),
) -> list[bytes]:
    """The encoded SSE events of a streamed answer, without the end marker.

    ``text``: a legacy completion's stream (``text_completion`` objects); ``cache``: the
    prompt-cache reads and writes its usage reports (``with_cache``).
    """
    if anthropic:
        events = anthropic_events(*args)
        with_cache(events[0]["message"]["usage"], True, *cache)  # message_start's
        return [
            f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
        ]
    options = body.get("stream_options")
    include_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
    build = text_chunks if text else chat_chunks
    chunks = build(*args, include_usage=include_usage)
    for chunk in chunks:
        if isinstance(chunk.get("usage"), dict):
            with_cache(chunk["usage"], False, *cache)
    return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]


def tool_result(body: Mapping[str, Any]) -> str | None:
    """The tool result a chat or Messages conversation ends with, if it does."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else None
    if not isinstance(last, Mapping):
        return None
    if last.get("role") == "tool":
        return str(last.get("content"))
    content = last.get("content")
    for block in content if last.get("role") == "user" and isinstance(content, list) else []:
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            inner = block.get("content")
            if isinstance(inner, list):
                return "".join(str(b.get("text", "")) for b in inner if isinstance(b, Mapping))
            return str(inner)
    return None


def tool_call_answer(anthropic: bool, args: Args, call: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON answer calling ``call["name"]`` with ``call["arguments"]`` (a JSON string)."""
    name, seq = args[0], args[1]
    arguments = str(call.get("arguments", "{}"))
    if anthropic:
        message = anthropic_message(*args)
        block = {"type": "tool_use", "id": f"toolu_mock_{name}_{seq}", "name": call["name"]}
        message["content"] = [{**block, "input": json.loads(arguments)}]
        message["stop_reason"] = "tool_use"
        return message
    completion = chat_completion(*args)
    function = {"name": call["name"], "arguments": arguments}
    reply = {"role": "assistant", "content": None, "tool_calls": [_chat_call(name, seq, function)]}
    completion["choices"][0].update(message=reply, finish_reason="tool_calls")
    return completion


def _chat_call(name: str, seq: int, function: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": f"call_mock_{name}_{seq}", "type": "function", "function": dict(function)}


def tool_call_frames(anthropic: bool, args: Args, call: Mapping[str, Any]) -> list[bytes]:
    """The streamed form of ``tool_call_answer`` (without the end marker)."""
    name, seq = args[0], args[1]
    arguments = str(call.get("arguments", "{}"))
    if anthropic:
        message = anthropic_message(*args[:3], "", None, args[5])
        block = {"type": "tool_use", "id": f"toolu_mock_{name}_{seq}", "name": call["name"]}
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": message},
            {"type": "content_block_start", "index": 0, "content_block": {**block, "input": {}}},
        ]
        events += [
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in pieces(arguments)
        ]
        events += [
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 3},
            },
        ]
        return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    first = chat_chunks(*args[:3], "", None, args[5], include_usage=False)[0]
    chunks = [first]
    opened = _chat_call(name, seq, {"name": call["name"], "arguments": ""})
    chunks.append(_with_delta(first, {"tool_calls": [{"index": 0, **opened}]}, None))
    for part in pieces(arguments):
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": part}}]}
        chunks.append(_with_delta(first, delta, None))
    chunks.append(_with_delta(first, {}, "tool_calls"))
    return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]


def _with_delta(
    chunk: Mapping[str, Any], delta: dict[str, Any], reason: str | None
) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}
    return {**chunk, "choices": [choice]}
