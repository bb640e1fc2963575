"""Rate-limit header values, read as seconds: numbers, OpenAI's durations, Anthropic's instants.

Shared by the upstream side (``upstream/headers.py`` reads what a provider
reports) and the surfaces (``api/rate_headers.py`` writes the same numbers
under the other family's names). Pure: an instant is read against the
``now`` it is given. An unparseable value is ``None``, never an error.
"""

from __future__ import annotations

import re
from datetime import datetime

# OpenAI's reset durations look like "1s", "6m0s", "20ms", "1h2m3.5s".
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(value: str | None) -> float | None:
    """Seconds in an OpenAI-style duration (``"6m0s"``), or in plain seconds."""
    if value is None:
        return None
    plain = number(value)
    if plain is not None:
        return plain
    text = value.strip()
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def number(value: str | None) -> float | None:
    """A finite, non-negative number in a header value; None if it is not one."""
    if value is None:
        return None
    try:
        parsed = float(value.strip())
    except ValueError:
        return None
    if parsed != parsed or parsed in (float("inf"), float("-inf")):
        return None
    return max(0.0, parsed)


def seconds_until(value: str | None, now: float) -> float | None:
    """Seconds until an RFC 3339 instant (Anthropic's reset headers)."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)
