"""``gateway.alerts``: where budget alerts go (``routing.alerts`` says when).

    gateway:
      alerts:
        webhook_url: https://hooks.example.com/edgeproxy
        webhook_secret_ref: env:EDGEPROXY_CRED_ALERT_HOOK   # HMAC-SHA256 key, never logged

The URL is judged by the upstream egress rule (``config.egress``): a private,
loopback or metadata literal is refused unless ``gateway.egress.allow`` names
it, names are judged again at connect time, and plain ``http`` is allowed
only to a host the egress allowance names (the tests' loopback receivers) or
under ``make run``'s runner. The secret is a credential reference, resolved
like an upstream credential (``service.alerts.webhook`` judges the URL).
"""

from __future__ import annotations

from pydantic import field_validator

from edgeproxy.config.base import Strict
from edgeproxy.config.credential_refs import reference_problem

MAX_URL = 2048


class AlertSettings(Strict):
    """The webhook budget alerts are posted to (None: alerts are recorded, not sent)."""

    webhook_url: str | None = None
    webhook_secret_ref: str | None = None

    @field_validator("webhook_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and (not value.isprintable() or any(c.isspace() for c in value)):
            raise ValueError("webhook_url holds a control or space character")
        if value is not None and len(value) > MAX_URL:
            raise ValueError(f"webhook_url is longer than {MAX_URL} characters")
        return value

    @field_validator("webhook_secret_ref")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        problem = None if value is None else reference_problem(value)
        if problem is not None:
            raise ValueError(f"webhook_secret_ref: {problem}")
        return value
