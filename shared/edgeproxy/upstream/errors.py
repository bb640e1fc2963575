"""The one place ``UpstreamFault`` (drawn in ``edgeproxy/errors.py``) is made.

(Bedrock's botocore errors are translated beside it, in ``bedrock_errors``,
with the ``fault`` and ``sanitize`` of this module.)

Every foreign error (httpx transport errors, the deadline's TimeoutError, an
upstream's error answer, unparseable JSON or SSE) becomes an ``UpstreamFault``
here: transport errors in ``translate_errors``, error answers in
``http_fault``. Every text field of an upstream error (message, type, code,
param) is sanitized before it is stored: no deployment credential, nothing
key-shaped (``sk-...``, ``ep-...``, bearer tokens, ``api_key=...``), no
upstream URL. ``hide_secrets`` removes the credential from success answers
and stream chunks, for upstreams that echo their request headers back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from edgeproxy.anthropic_errors import status_of
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import Fault, FaultKind

_REDACTED = "[redacted]"
_MAX_MESSAGE = 2000
_KEYISH = (
    re.compile(r"\b(?:sk|ep)-[A-Za-z0-9*_-]{3,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=*-]+"),
    re.compile(r"(?i)\b(x-api-key|api[_-]?key|authorization)(\s*[:=]\s*)[^\s,;\"']+"),
)


@dataclass(frozen=True, slots=True)
class Phase:
    """Where in an attempt an error happened decides what it means."""

    name: str
    on_timeout: FaultKind
    on_drop: FaultKind


HEADERS = Phase("waiting for the upstream's answer", FaultKind.TIMEOUT, FaultKind.RESET)
BODY = Phase("reading the upstream's answer", FaultKind.TIMEOUT, FaultKind.TRUNCATED)
STREAM = Phase("reading the upstream's stream", FaultKind.IDLE, FaultKind.TRUNCATED)


@contextmanager
def translate_errors(phase: Phase) -> Iterator[None]:
    """Turn transport errors raised inside the block into ``UpstreamFault``.

    Most specific first: connect failures before timeouts (``ConnectTimeout``
    is both), timeouts before other transport errors. The builtin
    ``TimeoutError`` is what ``asyncio.timeout`` raises for our own deadlines.
    Messages are fixed texts: httpx's may name the upstream host.
    """
    try:
        yield
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise fault(FaultKind.CONNECT, "could not connect to the upstream") from exc
    except (TimeoutError, httpx.TimeoutException) as exc:
        raise fault(phase.on_timeout, f"deadline passed while {phase.name}") from exc
    except httpx.DecodingError as exc:
        raise fault(FaultKind.MALFORMED, "the upstream's answer could not be decoded") from exc
    except httpx.TransportError as exc:
        raise fault(phase.on_drop, f"connection dropped while {phase.name}") from exc


def fault(kind: FaultKind, message: str, **details: Any) -> UpstreamFault:
    """Shorthand for an ``UpstreamFault`` around a new ``Fault``."""
    return UpstreamFault(Fault(kind=kind, message=message, **details))


def sanitize(message: str, secrets: Sequence[str | None] = ()) -> str:
    """Remove anything credential-like and the given ``secrets`` (key, URL, host)."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        message = message.replace(secret, _REDACTED)
    message = _KEYISH[0].sub(_REDACTED, message)
    message = _KEYISH[1].sub("Bearer " + _REDACTED, message)
    message = _KEYISH[2].sub(lambda m: m.group(1) + m.group(2) + _REDACTED, message)
    if len(message) > _MAX_MESSAGE:
        message = message[:_MAX_MESSAGE] + "..."
    return message


def http_fault(
    status: int,
    content: bytes,
    *,
    retry_after: float | None,
    secrets: Sequence[str | None] = (),
) -> UpstreamFault:
    """The fault for an error answer: the upstream's status and its error JSON.

    Understands OpenAI ``{"error": {...}}``, Anthropic
    ``{"type": "error", "error": {...}}`` and the ``{"detail": ...}`` /
    ``{"message": ...}`` bodies of some compatible servers. An answer that is
    neither a success nor an error (a 3xx redirect, a stray 1xx) is a 502:
    redirects are not followed, and relaying one would hand the client the
    upstream's ``Location``.
    """
    if status < 400:
        return fault(
            FaultKind.HTTP,
            f"The upstream answered with HTTP {status}, which the gateway does not relay or "
            "follow (a redirect: is the deployment's base_url right?).",
            status=502,
            type="api_error",
            code="upstream_redirect" if 300 <= status < 400 else "upstream_error",
        )
    try:
        payload: Any = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        payload = None
    return _error_fault(payload, status, retry_after, secrets)


def stream_error_fault(payload: Mapping[str, Any], secrets: Sequence[str | None]) -> UpstreamFault:
    """The fault for an error event inside a 200 stream (status inferred from its type)."""
    error = payload.get("error")
    kind = error.get("type") if isinstance(error, Mapping) else None
    status = status_of(kind) if isinstance(kind, str) else 500
    return _error_fault(payload, status, None, secrets)


def _error_fault(
    payload: Any, status: int, retry_after: float | None, secrets: Sequence[str | None]
) -> UpstreamFault:
    message: Any = None
    error: Mapping[str, Any] = {}
    if isinstance(payload, Mapping):
        inner = payload.get("error")
        if isinstance(inner, Mapping):
            error = inner
            message = inner.get("message")
        elif isinstance(inner, str):
            message = inner
        else:
            message = payload.get("message") or payload.get("detail")
    if not isinstance(message, str) or not message:
        message = f"The upstream answered with HTTP {status}."
    type_ = _text(error.get("type")) or _default_type(status)
    code = _text(error.get("code"))
    if code is None and status == 400 and message.startswith("prompt is too long"):
        code = "context_length_exceeded"  # Anthropic's context-window error has no code
    param = _text(error.get("param"))
    return fault(
        FaultKind.HTTP,
        sanitize(message, secrets),
        status=status,
        type=_field(type_, secrets),
        code=_field(code, secrets),
        param=_field(param, secrets),
        retry_after=retry_after,
    )


def hide_secrets(value: Any, secrets: Sequence[str | None]) -> Any:
    """``value`` (parsed JSON) with every occurrence of ``secrets`` in its strings redacted.

    For success answers, which may echo the request's headers (and so the
    deployment's key). Only the exact secrets are replaced: key-shaped text in
    a model's answer ("sk-..." in a code sample) is content, not a leak.
    """
    wanted = [s for s in secrets if s]
    if not wanted:
        return value

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            for secret in wanted:
                if secret in item:
                    item = item.replace(secret, _REDACTED)
            return item
        if isinstance(item, dict):
            return {clean(k): clean(v) for k, v in item.items()}
        if isinstance(item, list):
            return [clean(v) for v in item]
        return item

    return clean(value)  # depth is bounded: answers are parsed by strict_json


def _field(value: str | None, secrets: Sequence[str | None]) -> str | None:
    return None if value is None else sanitize(value, secrets)[:200]


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    return str(value)


def _default_type(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"
