"""``POST /v1/messages/count_tokens`` bodies: checked shallowly, and estimated when no
Anthropic deployment can count them.

The estimate (``estimate``) is characters / 4, rounded up, over the text of
``system``, every message and every tool, plus a flat ``IMAGE_TOKENS`` per
image:

    system                text (a string, or its text blocks)
    text blocks           their text
    tool_use blocks       the name and the JSON of the input
    tool_result blocks    their text (a string, or their text blocks; images count flat)
    other blocks          their JSON (documents, thinking, ...)
    tools                 name, description and the JSON of input_schema

It is a rough guide (real tokenizers give 3 to 5 characters a token in
English, fewer in other scripts and code), never less than 1.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from edgeproxy.api.parsing import model_problem
from edgeproxy.errors import RequestError

IMAGE_TOKENS = 1600  # Anthropic's figure for an image of about 1.15 megapixels
CHARS_PER_TOKEN = 4


def check_count_request(body: Mapping[str, Any]) -> str:
    """The model of a valid count body; raises ``RequestError`` (400).

    Only what a count needs is checked (a model, a non-empty ``messages``
    array of user/assistant turns); the rest goes to the upstream as it came.
    """
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise RequestError("model: field required (a non-empty string)", param="model")
    if (problem := model_problem(model)) is not None:
        raise RequestError(f"model: {problem}", param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages: field required (a non-empty array)", param="messages")
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise RequestError(f"{where}: must be a user or assistant message", param=where)
        if not isinstance(message.get("content"), str | list):
            raise RequestError(
                f"{where}.content: must be a string or an array of content blocks",
                param=f"{where}.content",
            )
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise RequestError("tools: must be an array", param="tools")
    return model


def estimate(body: Mapping[str, Any]) -> int:
    """The documented estimate of a (checked) count body's input tokens.

    >>> estimate({"model": "m", "messages": [{"role": "user", "content": "Hello, world"}]})
    3
    """
    texts: list[str] = []
    images = _content(body.get("system"), texts)
    for message in body.get("messages") or []:
        images += _content(message.get("content"), texts)
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping):
            texts.append(str(tool.get("name") or ""))
            texts.append(str(tool.get("description") or ""))
            if tool.get("input_schema") is not None:
                texts.append(json.dumps(tool["input_schema"]))
    chars = sum(len(t) for t in texts)
    return max(1, math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS)


def _content(content: Any, texts: list[str]) -> int:
    """Append the text of ``content`` (a string or blocks) to ``texts``; returns its images."""
    if isinstance(content, str):
        texts.append(content)
        return 0
    images = 0
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "image":
            images += 1
        elif kind == "tool_use":
            texts.append(str(block.get("name") or ""))
            texts.append(json.dumps(block.get("input") or {}))
        elif kind == "tool_result":
            images += _content(block.get("content") or "", texts)
        else:
            texts.append(json.dumps(block))
    return images
