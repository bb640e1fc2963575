"""The mock upstream's Responses API (``POST /v1/responses``), JSON and typed SSE events.

The answer is the same echo as the other protocols ("Hello from a! You said:
..."), or a function call when the fault asks for one (``tool_call``). Ids are
``resp_mock_<name>_<seq>``; the stream has no ``[DONE]``: it ends with
``response.completed`` (left out under ``no_done``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from edgeproxy_dev.mock_answers import Args, count_tokens, pieces


def input_text(body: Mapping[str, Any]) -> str:
    """The text of the last user input (a string ``input`` or the last user message item)."""
    raw = body.get("input")
    if isinstance(raw, str):
        return raw
    for item in reversed(raw if isinstance(raw, list) else []):
        if isinstance(item, Mapping) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            parts = content if isinstance(content, list) else []
            return " ".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping))
    return ""


def tool_output(body: Mapping[str, Any]) -> str | None:
    """The output of a function call the input ends with, if it does."""
    raw = body.get("input")
    last = raw[-1] if isinstance(raw, list) and raw else None
    if isinstance(last, Mapping) and last.get("type") == "function_call_output":
        return str(last.get("output"))
    return None


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """Prompt size: the serialized input plus the instructions."""
    return count_tokens(json.dumps(body.get("input") or "") + str(body.get("instructions") or ""))


def _items(args: Args, call: Mapping[str, Any] | None, status: str) -> list[dict[str, Any]]:
    name, seq, _, content, _, _ = args
    if call is not None:
        return [
            {
                "id": f"fc_mock_{name}_{seq}",
                "type": "function_call",
                "call_id": f"call_mock_{name}_{seq}",
                "name": str(call.get("name", "")),
                "arguments": str(call.get("arguments", "{}")),
                "status": status,
            }
        ]
    text = {"type": "output_text", "text": content, "annotations": [], "logprobs": []}
    return [
        {
            "id": f"msg_mock_{name}_{seq}",
            "type": "message",
            "role": "assistant",
            "status": status,
            "content": [text],
        }
    ]


def response(
    args: Args, call: Mapping[str, Any] | None, status: str = "completed"
) -> dict[str, Any]:
    """A ``response`` object (``status: in_progress`` has no output and no usage)."""
    name, seq, model, content, _, prompt = args
    done = status != "in_progress"
    output = len(pieces(str(call.get("arguments", "")))) if call else len(pieces(content))
    usage = {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + output,
    }
    return {
        "id": f"resp_mock_{name}_{seq}",
        "object": "response",
        "created_at": 1_700_000_000 + seq,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": _items(args, call, status) if done else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage if done else None,
        "store": True,
    }


def events(args: Args, call: Mapping[str, Any] | None, terminal: bool) -> list[dict[str, Any]]:
    """The typed events of a streamed response (the terminal one only if ``terminal``)."""
    content = args[3]
    started = response(args, call, "in_progress")
    out: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    [item] = _items(args, call, "completed")
    opened = {**item, "status": "in_progress"}
    where = {"item_id": item["id"], "output_index": 0}
    if call is not None:
        out.append({"type": "response.output_item.added", "output_index": 0, "item": opened})
        arguments = str(call.get("arguments", "{}"))
        out += [
            {"type": "response.function_call_arguments.delta", **where, "delta": part}
            for part in pieces(arguments)
        ]
        out.append(
            {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
        )
    else:
        part = {"type": "output_text", "text": "", "annotations": []}
        out.append(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**opened, "content": []},
            }
        )
        out.append(
            {"type": "response.content_part.added", **where, "content_index": 0, "part": part}
        )
        out += [
            {
                "type": "response.output_text.delta",
                **where,
                "content_index": 0,
                "delta": p,
                "logprobs": [],
            }
            for p in pieces(content)
        ]
        out.append(
            {
                "type": "response.output_text.done",
                **where,
                "content_index": 0,
                "text": content,
                "logprobs": [],
            }
        )
        out.append(
            {
                "type": "response.content_part.done",
                **where,
                "content_index": 0,
                "part": item["content"][0],
            }
        )
    out.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    if terminal:
        out.append({"type": "response.completed", "response": response(args, call)})
    return [{**event, "sequence_number": i} for i, event in enumerate(out)]


def frames(args: Args, call: Mapping[str, Any] | None, terminal: bool) -> list[bytes]:
    """The encoded SSE events (``event: <type>`` and its JSON data)."""
    return [
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
        for e in events(args, call, terminal)
    ]
