"""Who is calling: key check, admin rights and the caller's network address."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from starlette.requests import Request

from edgeproxy.config.models import GatewaySettings
from edgeproxy.errors import AuthenticationError


@dataclass(frozen=True, slots=True)
class Identity:
    api_key: str | None
    admin: bool
    grant_id: str | None
    client_ip: str | None


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
    admin = False
    if settings.api_keys:
        if key is None:
            raise AuthenticationError("You didn't provide an API key.")
        digest = hashlib.sha256(key.encode()).hexdigest()
        match = next((k for k in settings.api_keys if hmac.compare_digest(k.sha256, digest)), None)
        if match is None:
            raise AuthenticationError("Incorrect API key provided.")
        admin = match.admin
    return Identity(
        api_key=key,
        admin=admin,
        grant_id=request.headers.get("x-grant-id") or None,
        client_ip=client_ip(request, trust_forwarded_for),
    )
