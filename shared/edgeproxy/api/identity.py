"""Who is calling: key check, admin rights and the caller's affinity identity.

The client key is hashed here, once; only its digest (inside ``caller``)
travels on to the service.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from starlette.requests import Request

from edgeproxy.config.models import GatewaySettings
from edgeproxy.errors import AuthenticationError
from edgeproxy.routing.affinity import caller_id, key_digest


@dataclass(frozen=True, slots=True)
class Identity:
    """An authenticated caller: ``caller`` is its affinity id (key digest, grant or IP)."""

    caller: str
    admin: bool


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return request.headers.get("x-api-key") or request.headers.get("api-key") or None


def client_ip(request: Request, trust_forwarded_for: bool) -> str | None:
    """The caller's IP: the connection's peer (API Gateway's sourceIp under Mangum).

    ``X-Forwarded-For`` is spoofable, so it is used only when the operator says
    a trusted proxy sets it (and then its first entry).
    """
    if trust_forwarded_for:
        forwarded = request.headers.get("x-forwarded-for", "")
        first = forwarded.split(",")[0].strip()
        if first:
            return first
    return request.client.host if request.client else None


def identify(request: Request, settings: GatewaySettings, trust_forwarded_for: bool) -> Identity:
    """Authenticate the request against the configured keys (if any)."""
    key = _bearer(request)
    digest = key_digest(key) if key else None
    admin = False
    if settings.api_keys:
        if digest is None:
            raise AuthenticationError("You didn't provide an API key.")
        match = next((k for k in settings.api_keys if hmac.compare_digest(k.sha256, digest)), None)
        if match is None:
            raise AuthenticationError("Incorrect API key provided.")
        admin = match.admin
    grant = request.headers.get("x-grant-id") or None
    return Identity(
        caller=caller_id(digest, grant, client_ip(request, trust_forwarded_for)),
        admin=admin,
    )
