"""Anthropic prompt-cache marks (``cache_control``) inside the gateway's OpenAI-format chat body.

The Messages surface keeps a client's marks where the OpenAI-format body can
hold them (LiteLLM's convention, so an OpenAI-surface client may send them
too):

    a system / user / assistant content part    {"type": "text", ..., "cache_control": {...}}
    a whole message (a tool result, a turn)     {"role": ..., "cache_control": {...}}
    a tool                                      {"type": "function", ..., "cache_control": {...}}

A message-level mark applies at the end of that message. Anthropic
deployments get the marks on the blocks they translate to; Bedrock Converse
deployments get a ``cachePoint`` block after each marked one; every other
provider cannot take them, so they are removed from the body it gets
(``without_marks``) and the request log notes ``DROPPED``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MARK = "cache_control"
DROPPED = "cache_control_dropped"  # the request log's note on the attempt that lost its marks


def mark_of(value: Any) -> dict[str, Any] | None:
    """The mark ``value`` (a part, a message, a tool) carries, if it is an object."""
    if not isinstance(value, Mapping):
        return None
    mark = value.get(MARK)
    return dict(mark) if isinstance(mark, Mapping) else None


def has_marks(body: Mapping[str, Any]) -> bool:
    """Whether any message, content part or tool of a chat ``body`` carries a mark.

    >>> has_marks({"messages": [{"role": "user", "content": "hi"}]})
    False
    """
    for message in _list(body.get("messages")):
        if mark_of(message) is not None:
            return True
        if any(mark_of(part) is not None for part in _list(_content(message))):
            return True
    return any(mark_of(tool) is not None for tool in _list(body.get("tools")))


def without_marks(body: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``body`` with every mark removed (the rest unchanged).

    >>> without_marks({"messages": [{"role": "user", "cache_control": {"type": "ephemeral"},
    ...                              "content": "hi"}]})
    {'messages': [{'role': 'user', 'content': 'hi'}]}
    """
    out = dict(body)
    if isinstance(body.get("messages"), list):
        out["messages"] = [_unmarked_message(m) for m in body["messages"]]
    if isinstance(body.get("tools"), list):
        out["tools"] = [_unmarked(t) for t in body["tools"]]
    return out


def _unmarked_message(message: Any) -> Any:
    message = _unmarked(message)
    content = _content(message)
    if isinstance(content, list):
        message = {**message, "content": [_unmarked(p) for p in content]}
    return message


def _unmarked(value: Any) -> Any:
    if isinstance(value, Mapping) and MARK in value:
        return {k: v for k, v in value.items() if k != MARK}
    return value


def _content(message: Any) -> Any:
    return message.get("content") if isinstance(message, Mapping) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
