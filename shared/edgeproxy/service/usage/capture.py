"""Prompts and answers in the request log: only for opted-in pools, redacted, size-bounded.

A pool listed in ``gateway.request_log.bodies`` keeps its requests' prompt
(the client's JSON body, ``model`` included) and answer (the JSON answer, or
a stream's text) in the log. Before anything is stored, every string that
looks like a credential is replaced by ``[redacted]``: API keys of the
common providers (``sk-...``, ``sk-ant-...``, ``AKIA...``), edgeproxy keys
(``ep-...``), bearer tokens, JWTs, and the value after ``api_key=``,
``password:`` and the like. The result is cut to ``body_bytes`` UTF-8 bytes
(a cut one ends with ``...[truncated]``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from edgeproxy.config.request_log import RequestLogSettings

REDACTED = "[redacted]"
TRUNCATED = "...[truncated]"
_CREDENTIALS = re.compile(
    r"(?:sk-ant-[A-Za-z0-9_\-]{8,}"
    r"|sk-(?:proj-)?[A-Za-z0-9_\-]{16,}"
    r"|ep-[A-Za-z0-9_\-]{20,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*)"
)
_ASSIGNED = re.compile(
    r"(?i)((?:api[_-]?key|secret|password|passwd|token|authorization)[\"']?\s*[:=]\s*[\"']?)"
    r"[^\s\"',;}]{4,}"
)


def redacted(text: str) -> str:
    """``text`` with every credential-like string replaced."""
    text = _CREDENTIALS.sub(REDACTED, text)
    return _ASSIGNED.sub(lambda m: m.group(1) + REDACTED, text)


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` UTF-8 bytes (never inside a character)."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    keep = max(0, limit - len(TRUNCATED))
    return raw[:keep].decode(errors="ignore") + TRUNCATED


def kept(settings: RequestLogSettings, pool: str, value: Any) -> str | None:
    """What the log keeps of ``value`` (a JSON value or text) for ``pool``: None unless opted in."""
    if pool not in settings.bodies or value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return bounded(redacted(text), settings.body_bytes)


def stream_text(chunk: dict[str, Any]) -> str:
    """The answer text one OpenAI-shaped stream chunk carries (empty when none)."""
    parts = []
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") if isinstance(choice, dict) else None
        content = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(content, str):
            parts.append(content)
    return "".join(parts)
