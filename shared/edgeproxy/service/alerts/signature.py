"""The webhook body's signature: HMAC-SHA256 over ``<timestamp>.<raw body>``.

Header ``x-edgeproxy-signature: t=<unix seconds>,v1=<hex>``; a receiver
recomputes it with the shared secret and refuses an old ``t`` (replay).
"""

from __future__ import annotations

import hashlib
import hmac

HEADER = "x-edgeproxy-signature"


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """The header value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify(secret: bytes, header: str, body: bytes) -> bool:
    """Whether ``header`` signs ``body`` under ``secret`` (a receiver's check)."""
    fields = dict(part.partition("=")[::2] for part in header.split(","))
    stamp = fields.get("t", "")
    if not stamp.isdigit() or "v1" not in fields:
        return False
    return hmac.compare_digest(sign(secret, int(stamp), body), header)
