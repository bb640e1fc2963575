"""The features of a request that some provider kinds cannot carry (pure).

Computed once from the OpenAI-format body a deployment would receive and
matched against each provider kind's declaration (``config.providers.CARRIAGE``):
by routing, before selection, and by the adapter, as its last guard.

    >>> sorted(request_features(Operation.CHAT, {"n": 2, "messages": []}))
    ['n']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edgeproxy.config.policies import Operation
from edgeproxy.config.providers import CHOICES, IMAGE_LINK, PART, RESPONSE_FORMAT

MAX_PART_TYPE = 64  # a part type is the client's text: named in a refusal, so kept short
# Their content is read as text only by every translation (non-text parts are dropped).
_TEXT_ONLY_ROLES = frozenset({"system", "developer", "tool"})


def request_features(operation: Operation, body: Mapping[str, Any]) -> frozenset[str]:
    """The features of ``body`` sent as ``operation`` (only chat bodies have any)."""
    if operation is not Operation.CHAT:
        return frozenset()
    found: set[str] = set()
    if body.get("n") not in (None, 1):
        found.add(CHOICES)
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping) and response_format.get("type") not in (None, "text"):
        found.add(RESPONSE_FORMAT)
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, Mapping) and message.get("role") not in _TEXT_ONLY_ROLES:
            found.update(_part_features(message.get("content")))
    return frozenset(found)


def _part_features(content: Any) -> set[str]:
    found: set[str] = set()
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        found.add(PART + (kind[:MAX_PART_TYPE] if isinstance(kind, str) else "?"))
        if kind == "image_url" and not _is_data_url(part.get("image_url")):
            found.add(IMAGE_LINK)
    return found


def _is_data_url(image: Any) -> bool:
    url = image.get("url") if isinstance(image, Mapping) else None
    return isinstance(url, str) and url.startswith("data:")
