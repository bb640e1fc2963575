"""The gateway's own secrets, which no upstream credential may equal.

An upstream credential is sent to the deployment's host. Whatever reference
reaches it, its value must not be the bootstrap admin key (which cannot be
revoked) nor the process's AWS credentials (the function's role).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence

AWS_PREFIX = "AWS_"
_MIN_SECRET = 8  # shorter AWS_* values are settings (regions, flags), not credentials


def protected_values(environ: Mapping[str, str], bootstrap: str | None) -> list[str]:
    """The values no upstream credential may have."""
    values = [
        value
        for name, value in environ.items()
        if name.upper().startswith(AWS_PREFIX) and len(value) >= _MIN_SECRET
    ]
    if bootstrap:
        values.append(bootstrap)
    return values


def same_secret(value: str, protected: Sequence[str]) -> bool:
    """Whether ``value`` equals one of ``protected`` (compared in constant time)."""
    candidate = value.strip().encode()
    return any(hmac.compare_digest(candidate, other.strip().encode()) for other in protected)
