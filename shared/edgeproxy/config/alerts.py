"""``gateway.alerts``: where budget alerts go (``routing.alerts`` says when).

    gateway:
      alerts:
        webhook_url: https://hooks.example.com/edgeproxy
        key_soft_budget_ratio: 0.8   # every key budget alerts at 80% and at 100%
        webhook_secret_ref: env:EDGEPROXY_CRED_ALERT_HOOK   # HMAC-SHA256 key, never logged

The URL is judged by the upstream egress rule (``config.egress``): a private,
loopback or metadata literal is refused unless ``gateway.egress.allow`` names
it, names are judged again at connect time, and plain ``http`` is allowed
only to a host the egress allowance names (the tests' loopback receivers) or
under ``make run``'s runner. The secret is a credential reference, resolved
like an upstream credential (``service.alerts.webhook`` judges the URL).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, field_validator

from edgeproxy.config.base import Strict
from edgeproxy.config.credential_refs import reference_problem
from edgeproxy.config.egress import (
    EgressSettings,
    literal_address,
    local_loopback,
    url_host,
    url_problem,
)

MAX_URL = 2048


class AlertSettings(Strict):
    """The webhook budget alerts are posted to (None: alerts are recorded, not sent)."""

    webhook_url: str | None = None
    webhook_secret_ref: str | None = None
    # Client keys carry no soft threshold of their own: every key budget alerts at this
    # share of it (None: at 100% only). Teams and organizations carry soft_budget_ratio.
    key_soft_budget_ratio: float | None = Field(default=0.8, gt=0, lt=1, allow_inf_nan=False)

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


def webhook_problem(url: str, egress: EgressSettings) -> str | None:
    """Why ``url`` may not receive alerts (None: it may); the text names the field."""
    if not url.isprintable() or any(char.isspace() for char in url):
        return "webhook_url holds a control or space character"
    parts = urlsplit(url)
    host = url_host(url)
    if parts.scheme not in ("https", "http") or not host:
        return "webhook_url must be an https URL with a host"
    if parts.username or parts.password:
        return "webhook_url must not carry credentials"
    address = literal_address(host)
    allowed = egress.allows_host(host) or (address is not None and egress.allows_address(address))
    if parts.scheme == "http" and not (allowed or local_loopback()):
        return "webhook_url must use https"
    reason = url_problem(url, egress)
    return None if reason is None else f"webhook_url is refused by the egress rule: {reason}"
